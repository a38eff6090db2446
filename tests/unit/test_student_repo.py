"""The course version, without building anything: a digest of the notebooks and the grader, named
on every feedback page, recorded by the term at its first run and named when it changes. The
student repository as built, and checked in a clone, is tests/book/test_student_repo.py."""
from __future__ import annotations

from tests.conftest import ROOT


def test_the_course_version_follows_every_notebook_and_the_grader(tmp_path, monkeypatch):
    """Properties, not the formula again: the same notebooks and grader give the same 12 hex
    digits; one byte more in any one instructor's notebook, or another grader, gives others."""
    import re
    import shutil

    from autograder import course, versions

    names = course.assignments()
    copies = {name: tmp_path / f"{name}.ipynb" for name in names}
    for name, copy in copies.items():
        shutil.copyfile(course.source_notebook(name), copy)
    monkeypatch.setattr(course, "source_notebook", lambda name, root=ROOT: copies[name])

    def fresh() -> str:
        course.version.cache_clear()
        return course.version()

    base = fresh()
    assert re.fullmatch(r"[0-9a-f]{12}", base) and fresh() == base
    seen = {base}
    for name in (names[0], names[-1]):
        original = copies[name].read_bytes()
        copies[name].write_bytes(original + b" ")
        seen.add(fresh())
        copies[name].write_bytes(original)
        assert fresh() == base
    monkeypatch.setattr(versions, "grader_version", lambda: "another grader")
    seen.add(fresh())
    assert len(seen) == 4, seen
    course.version.cache_clear()


def test_a_feedback_page_names_the_course_version():
    from autograder import course
    from autograder.report.feedback import student_feedback

    page = student_feedback({"assignment": "02_similarity", "student": "alice", "score": 1.0, "max_score": 2.0,
                             "flags": [], "tests": [{"grade_id": "t", "description": "d", "points": 1.0,
                                                     "max_points": 2.0, "passed": False, "message": "m",
                                                     "hidden": False}]})
    assert f"Course version {course.version()}." in page


def test_the_term_records_its_first_version_and_names_a_change(tmp_path):
    from autograder.store.workspace import Workspace

    ws = Workspace(tmp_path / "grading", "02_similarity")
    assert ws.term_version("aaaaaaaaaaaa") is None
    assert (tmp_path / "grading" / "course-version").read_text() == "aaaaaaaaaaaa\n"
    assert ws.term_version("aaaaaaaaaaaa") is None
    note = ws.term_version("bbbbbbbbbbbb")
    assert "grades under course version bbbbbbbbbbbb" in note and "first run graded under aaaaaaaaaaaa" in note
    assert (tmp_path / "grading" / "course-version").read_text() == "aaaaaaaaaaaa\n"
