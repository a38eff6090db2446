"""Canvas and Moodle, without grading: their rosters as downloaded, their downloads' layouts, a
student's own file name, dates in the term's zone, copying set apart from names and spacing.
The terms graded from download to import are tests/e2e/test_lms.py."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest

from autograder.course import CourseError
from tests.builders import A, CANVAS_ROSTER, MOODLE_WORKSHEET


ORIGINAL = '''def dot_similarity(A, B):
    # my version: rows of A against rows of B
    left = np.asarray(A, dtype=float)
    right = np.asarray(B, dtype=float)
    out = left @ right.T
    return out
'''
RENAMED = '''def dot_similarity(A, B):
    a_arr = np.asarray(A,dtype=float)     # convert first

    b_arr = np.asarray(B, dtype = float)
    result = a_arr @ b_arr.T   # (n, m)
    return result
'''
OTHER = '''def dot_similarity(A, B):
    """Every pair of rows."""
    return np.einsum("ik,jk->ij", np.asarray(A, float), np.asarray(B, float))
'''


def test_lms_rosters_are_read_as_downloaded(tmp_path):
    from autograder.lms.roster import read_roster

    (tmp_path / "canvas.csv").write_text(CANVAS_ROSTER)
    canvas = read_roster(tmp_path / "canvas.csv")
    assert list(canvas) == ["s2401016", "s2401017", "s2401018", "s2401019"]
    assert canvas["s2401016"].lms_id == "31022" and canvas["s2401016"].login == "zusman"
    assert canvas["s2401016"].first_name == "Zainab" and canvas["s2401016"].section == "Section A"
    (tmp_path / "ws.csv").write_text(MOODLE_WORKSHEET)
    moodle = read_roster(tmp_path / "ws.csv")
    assert moodle["aliddell@example.org"].lms_id == "2102" and moodle["aliddell@example.org"].name == "Alice Liddell"
    (tmp_path / "gb.csv").write_text("First name,Last name,ID number,Institution,Department,Email address,"
                                     "Assignment: Similarity (Real),Last downloaded from this course\n"
                                     "Zainab,Usman,,,,zusman@example.org,-,1742000000\n")
    assert read_roster(tmp_path / "gb.csv")["zusman@example.org"].name == "Zainab Usman"
    (tmp_path / "participants.csv").write_text("Full name,Email address,Roles,Groups,Last access to course\n"
                                               "Zainab Usman,zusman@example.org,Student,No groups,2 days\n")
    assert read_roster(tmp_path / "participants.csv")["zusman@example.org"].name == "Zainab Usman"


def test_a_misspelt_assignment_in_the_term_is_refused_with_the_nearest_name(tmp_path):
    from autograder.term.settings import resolve

    (tmp_path / "term.toml").write_text('[02_simlarity]\ndue = "2025-03-14T23:59:00+01:00"\n')
    with pytest.raises(CourseError, match=r"\[02_simlarity\] is not an assignment .*did you mean \[02_similarity\]"):
        resolve(tmp_path, A)


def test_a_date_alone_is_the_end_of_that_day_in_the_terms_zone(tmp_path):
    from autograder.term.deadlines import human, set_zone
    from autograder.term.settings import resolve

    (tmp_path / "term.toml").write_text(f'timezone = "America/Toronto"\n[{A}]\ndue = "2025-03-14"\n')
    try:
        terms = resolve(tmp_path, A)
        assert terms.due == datetime(2025, 3, 15, 3, 59, 59, tzinfo=timezone.utc)   # EDT is UTC-4
        assert human(terms.due) == "2025-03-14 23:59 EDT"
        assert resolve(tmp_path, A, due="2025-03-10").due == datetime(2025, 3, 11, 3, 59, 59, tzinfo=timezone.utc)
    finally:
        set_zone(None)


def test_the_layout_of_an_lms_download_is_recognised(tmp_path):
    from autograder.lms import formats as lms

    flat = tmp_path / "canvas"
    flat.mkdir()
    for name in (f"doejane_LATE_1_10_{A}.ipynb", f"roeric_2_11_{A}-1.ipynb"):
        (flat / name).write_text("{}")
    assert lms.detect(flat) == "canvas"
    files, stray = lms.read_canvas(flat)
    assert files["1"].late and not files["2"].late and files["2"].original == f"{A}-1.ipynb" and not stray
    moodle = tmp_path / "moodle"
    (moodle / "Jane Doe_77_assignsubmission_file_").mkdir(parents=True)
    assert lms.detect(moodle) == "moodle"
    folders = tmp_path / "plain"
    (folders / "alice").mkdir(parents=True)
    assert lms.detect(folders) is None
    assert lms.canvas_name("Doe, Jane") == "doejane" == lms.canvas_name("Jane Doe")
    assert lms.normal_name("Doe,  Jane") == lms.normal_name("jane doe")


def test_a_students_own_file_name_cannot_pass_for_another_student(tmp_path):
    """What a student controls in an LMS download is the name of their file, after the LMS's
    prefix: one that imitates the prefix still belongs to its uploader."""
    from autograder.lms import formats as lms

    moodle = tmp_path / "moodle"
    moodle.mkdir()
    (moodle / "Zainab Usman_2101_assignsubmission_file_Alice Liddell_2102_assignsubmission_file_x.ipynb").write_text("{}")
    (moodle / "Alice Liddell_2102_assignsubmission_file_mine.ipynb").write_text("{}")
    files, _ = lms.read_moodle(moodle)
    assert files["2101"].name == "Zainab Usman" and [p.name for p in files["2102"].others] == []
    assert files["2102"].path.name == "Alice Liddell_2102_assignsubmission_file_mine.ipynb"
    canvas = tmp_path / "canvas"
    canvas.mkdir()
    (canvas / f"usmanzainab_31022_6789160_liddellalice_31023_9999999_{A}.ipynb").write_text("{}")
    files, _ = lms.read_canvas(canvas, A)
    assert list(files) == ["31022"] and files["31022"].attempt == 6789160
    # a second notebook uploaded later (scratch work) does not replace the assignment's
    (canvas / f"usmanzainab_31022_6789170_{A}.ipynb").write_text("{}")
    (canvas / "usmanzainab_31022_6789180_scratch.ipynb").write_text("{}")
    files, _ = lms.read_canvas(canvas, A)
    assert files["31022"].attempt == 6789170 and len(files["31022"].others) == 2
    assert lms.normal_name("Doe,  Jane") == lms.normal_name("jane doe")


def test_copying_is_found_after_names_comments_and_spacing_are_set_aside():
    from autograder.report.similarity import IDENTICAL, possible_copying

    template = {"dot": "def dot_similarity(A, B):\n    # YOUR CODE HERE\n    raise NotImplementedError()\n"}
    found = possible_copying({"ann": "x", "ben": "y", "cy": "z", "dee": "z"},
                             {"ann": {"dot": ORIGINAL}, "ben": {"dot": RENAMED}, "cy": {"dot": OTHER},
                              "dee": {"dot": OTHER}}, template)
    assert [(g.students, [(p.what, p.similarity) for p in g.pairs]) for g in found] == [
        (("ann", "ben"), [("dot_similarity", 1.0)]), (("cy", "dee"), [(IDENTICAL, 1.0), ("dot_similarity", 1.0)])]
    # an answer everyone writes, or the instructor's own, is no sign of copying
    short = "def dot_similarity(A, B):\n    return A @ B.T\n"
    assert possible_copying({}, {"ann": {"dot": short}, "ben": {"dot": short}}, template) == []
    assert possible_copying({}, {"ann": {"dot": ORIGINAL}, "ben": {"dot": RENAMED}}, template,
                            {"dot": ORIGINAL}) == []
