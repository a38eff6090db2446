"""The course version, without building anything: a digest of the notebooks and the grader, named
on every feedback page, recorded by the term at its first run and named when it changes. The
student repository as built, and checked in a clone, is tests/book/test_student_repo.py."""
from __future__ import annotations

from tests.conftest import ROOT


def test_the_course_version_is_a_digest_of_the_notebooks_and_the_grader(tmp_path, monkeypatch):
    import hashlib

    from autograder import course
    from autograder.versions import grader_version

    h = hashlib.sha256(grader_version().encode())
    for chapter in sorted(p.parent.name for p in (ROOT / "solutions").glob("*/*.ipynb")):
        h.update(f"\n{chapter} ".encode() + hashlib.sha256((ROOT / "solutions" / chapter / f"{chapter}.ipynb")
                                                           .read_bytes()).digest())
    assert course.version() == h.hexdigest()[:12]


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
