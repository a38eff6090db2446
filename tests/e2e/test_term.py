"""The instructor's term, through the real command line: deadlines (the submission time from
file times, zip entries or timestamp.txt; extensions; late policies recorded the nbgrader
way), a roster (missing rows, unrostered ids flagged), partial regrades that leave everyone
else's files byte-identical, per-test columns, LMS exports with manual adjustments, a clean
terminal, and one clear line for every bad input."""
from __future__ import annotations

import csv
import hashlib
import json
import shutil
import struct
import time
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import nbformat
import pytest

from autograder.store.gradebook import open_gradebook
from tests.conftest import needs_sandbox, read_csv, read_results
from tests.builders import (A, MAX, WRONG, autograder, base_notebook, clean_terminal, nbgrader_export, ok, rows_of,
                            submit, with_answer, write)

DUE = datetime(2025, 3, 14, 23, 0, tzinfo=timezone.utc)
TESTS = ["test_dot_similarity_torch", "test_dot_similarity_contract", "test_cosine_similarity_torch",
         "test_cosine_similarity_zero_vectors", "test_cosine_similarity_scale", "test_softmax_torch",
         "test_softmax_large_inputs", "test_softmax_neg_inf", "test_softmax_axis", "test_softmax_contract"]


def digests(ws: Path, students: list[str]) -> dict[str, tuple[str, int]]:
    """sha256 and modification time of every file a student has in the workspace."""
    out = {}
    for s in students:
        for path in [ws / "results" / A / f"{s}.json", ws / "feedback" / s / A / "feedback.html",
                     ws / "autograded" / s / A / f"{A}.ipynb"]:
            if path.exists():
                out[str(path.relative_to(ws))] = (hashlib.sha256(path.read_bytes()).hexdigest(),
                                                  path.stat().st_mtime_ns)
    return out





# --------------------------------------------------------------------------- the class
# alice on time; bob 3 h late (5% per started hour: -1.65); carol 5 h late with a 1-day
# extension (on time); gina 30 h late (the floor, 50%, stops the deduction at 5.5); dave is
# on the roster and submitted nothing; eve submitted and is not on the roster; hal is late
# and wrong (a penalty never goes below 0).
ROSTER = """id,name,email,extension,lms_id,section
alice,"Liddell, Alice",alice@example.org,,1001,A
bob,Bob Builder,bob@example.org,,1002,A
carol,Carol Danvers,carol@example.org,1d,1003,B
dave,Dave Bowman,dave@example.org,,1004,B
gina,Gina Linetti,gina@example.org,,1005,A
hal,Hal Jordan,hal@example.org,,1006,B
"""
LATE = ["--due", "2025-03-14T23:00:00Z", "--late-policy", "per-hour:5", "--late-floor", "50"]


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    base = tmp_path_factory.mktemp("term")
    subs, ws = base / "subs", base / "ws"
    submit(subs / "alice", base_notebook(), DUE - timedelta(hours=2))
    submit(subs / "bob", base_notebook(), DUE + timedelta(hours=2, minutes=30))
    submit(subs / "carol", base_notebook(), DUE + timedelta(hours=5))
    submit(subs / "eve", base_notebook(), DUE - timedelta(minutes=1))
    submit(subs / "gina", base_notebook(), DUE + timedelta(hours=30))
    submit(subs / "hal", with_answer(WRONG), DUE + timedelta(hours=1))
    (base / "roster.csv").write_text(ROSTER)
    proc = autograder("grade", A, subs, "--workspace", ws, "--workers", "2", "--roster", base / "roster.csv", *LATE)
    return {"base": base, "subs": subs, "ws": ws, "roster": base / "roster.csv", "proc": ok(proc),
            "csv": {r["student"]: r for r in read_csv(ws, A)}}


@needs_sandbox
def test_a_grading_run_prints_its_progress_and_summary_and_nothing_else(term):
    clean_terminal(term["proc"])
    assert "grading:" in term["proc"].stderr, "the progress bar is shown"
    assert "late: bob, gina, hal" in term["proc"].stdout
    assert "missing: dave; not on the roster: eve" in term["proc"].stdout


@needs_sandbox
def test_deadlines_extensions_and_the_late_policy(term):
    rows = term["csv"]
    assert {s: (r["status"], float(r["score"]), float(r["late_penalty"])) for s, r in rows.items()} == {
        "alice": ("graded", 11.0, 0.0),
        "bob": ("late", 9.35, 1.65),          # 3 started hours x 5% of 11
        "carol": ("graded", 11.0, 0.0),       # within her extension
        "dave": ("missing", 0.0, 0.0),
        "eve": ("graded", 11.0, 0.0),
        "gina": ("late", 5.5, 5.5),           # 30 hours would cost it all; the floor keeps 50%
        "hal": ("late", 0.0, 0.0),            # nothing to deduct from
    }
    assert rows["bob"]["submitted_at"] == "2025-03-15T01:30:00Z" and rows["bob"]["time_source"] == "file mtime"
    assert rows["bob"]["hours_late"] == "2.50" and rows["bob"]["due"] == "2025-03-14T23:00:00Z"
    assert rows["carol"]["due"] == "2025-03-15T23:00:00Z" and rows["carol"]["hours_late"] == ""
    feedback = (term["ws"] / "feedback" / "bob" / A / "feedback.html").read_text()
    assert "Late penalty" in feedback and "1.65" in feedback and "2 h 30 min after" in feedback
    assert "time from file mtime" in feedback and "Score: <strong>9.35 / 11</strong>" in feedback
    carol = (term["ws"] / "feedback" / "carol" / A / "feedback.html").read_text()
    assert "before the deadline 2025-03-15 23:00 UTC" in carol and "extension of 24 h" in carol
    # recorded the way nbgrader's late-submission plugins record it
    with open_gradebook(f"sqlite:///{term['ws'] / 'gradebook.db'}") as gb:
        assert gb.find_assignment(A).duedate == datetime(2025, 3, 14, 23, 0)
        bob = gb.find_submission(A, "bob")
        assert bob.timestamp == datetime(2025, 3, 15, 1, 30) and bob.total_seconds_late == 9000
        assert bob.notebooks[0].late_submission_penalty == pytest.approx(1.65)
        carol = gb.find_submission(A, "carol")
        assert carol.extension == timedelta(days=1) and carol.total_seconds_late == 0
        assert carol.notebooks[0].late_submission_penalty is None


@needs_sandbox
def test_the_roster_gives_everyone_a_row_and_flags_strangers(term):
    rows = term["csv"]
    assert list(rows) == sorted(rows) == ["alice", "bob", "carol", "dave", "eve", "gina", "hal"]
    assert rows["dave"]["status"] == "missing" and rows["dave"]["name"] == "Dave Bowman"
    assert rows["alice"]["name"] == "Liddell, Alice" and rows["alice"]["email"] == "alice@example.org"
    assert "not on the roster" in rows["eve"]["flags"] and float(rows["eve"]["score"]) == MAX
    assert all(rows[s]["flags"] == "" for s in ("alice", "bob", "carol", "gina"))
    eve = read_results(term["ws"], A)["eve"]
    assert [f["code"] for f in eve["term"]["flags"]] == ["not-on-roster"]
    assert "not on the roster" not in (term["ws"] / "feedback" / "eve" / A / "feedback.html").read_text()
    report = (term["ws"] / "reports" / A / "report.html").read_text()
    assert "No submission (1)" in report and "dave" in report and "Late submissions (3)" in report
    # nbgrader knows the rostered students too: its export lists dave with 0
    exported = nbgrader_export(term["ws"], term["base"] / "nbgrader.csv")
    assert exported["dave"]["timestamp"] == "" and float(exported["dave"]["score"]) == 0
    assert exported["dave"]["email"] == "dave@example.org"
    assert {s: float(r["score"]) for s, r in exported.items()} == {s: float(r["score"]) for s, r in rows.items()}
    assert float(exported["bob"]["late_submission_penalty"]) == pytest.approx(1.65)


@needs_sandbox
def test_grades_csv_has_a_column_per_test_beside_the_total(term):
    header = next(csv.reader(open(term["ws"] / "reports" / A / "grades.csv")))
    assert header[:7] == ["student", "name", "email", "assignment", "status", "score", "max_score"]
    assert header[7:7 + len(TESTS)] == TESTS
    results = read_results(term["ws"], A)
    for student, row in term["csv"].items():
        if row["status"] == "missing":
            assert all(row[t] == "" for t in TESTS)
            continue
        points = {t["grade_id"]: t["points"] for t in results[student]["tests"]}
        assert {t: float(row[t]) for t in TESTS} == points
        assert sum(float(row[t]) for t in TESTS) == pytest.approx(float(row["raw_score"]))
    assert float(term["csv"]["hal"]["test_softmax_axis"]) == 0 and float(term["csv"]["alice"]["test_cosine_similarity_torch"]) == 2


def _copy(term, name: str) -> Path:
    ws = term["base"] / name
    shutil.copytree(term["ws"], ws)
    return ws


@needs_sandbox
def test_regrading_one_student_leaves_everyone_else_byte_identical(term):
    ws = _copy(term, "ws-one")
    others = ["alice", "carol", "eve", "gina", "hal"]
    before = digests(ws, others)
    assert len(before) == 3 * len(others)
    log = ws / "results" / A / "graded.log"
    lines = len(log.read_text().splitlines())
    bob_before = json.loads((ws / "results" / A / "bob.json").read_text())
    # bob resubmits a wrong notebook (the same time): only he is graded again
    submit(term["base"] / "subs-one" / "bob", with_answer(WRONG), DUE + timedelta(hours=2, minutes=30))
    for s in others:
        shutil.copytree(term["subs"] / s, term["base"] / "subs-one" / s, copy_function=shutil.copy2)
    time.sleep(0.05)
    proc = ok(autograder("grade", A, term["base"] / "subs-one", "--workspace", ws, "--roster", term["roster"],
                         *LATE, "--student", "bob"))
    clean_terminal(proc)
    assert "regraded 1 of 6 submissions" in proc.stdout and "(bob); 5 others not graded again" in proc.stdout
    assert digests(ws, others) == before, "another student's result, feedback or notebook changed"
    new = log.read_text().splitlines()
    assert len(new) == lines + 1 and new[-1].startswith("bob\t")
    bob = json.loads((ws / "results" / A / "bob.json").read_text())
    assert bob["score"] == 0 and bob_before["score"] == MAX and bob["digest"] != bob_before["digest"]
    rows = {r["student"]: r for r in read_csv(ws, A)}
    assert float(rows["bob"]["score"]) == 0 and float(rows["alice"]["score"]) == MAX
    assert rows["dave"]["status"] == "missing"
    print("\nregrade of bob; the others' files, sha256 and mtime_ns, before and after:")
    for path, (h, _) in sorted(before.items()):
        print(f"  {h}  {path}")


@needs_sandbox
def test_flagged_regrades_only_the_flagged(term):
    ws = _copy(term, "ws-flagged")
    before = digests(ws, ["alice", "bob", "carol", "gina", "hal"])
    log = ws / "results" / A / "graded.log"
    lines = len(log.read_text().splitlines())
    proc = ok(autograder("grade", A, term["subs"], "--workspace", ws, "--roster", term["roster"], *LATE,
                         "--flagged", "--quiet"))
    assert "regraded 1 of 6 submissions" in proc.stdout and "(eve)" in proc.stdout
    assert log.read_text().splitlines()[lines:] == [ln for ln in log.read_text().splitlines()[lines:]
                                                    if ln.startswith("eve\t")] and \
        len(log.read_text().splitlines()) == lines + 1
    assert digests(ws, ["alice", "bob", "carol", "gina", "hal"]) == before


@needs_sandbox
def test_manual_adjustments_reach_feedback_the_csv_and_every_export(term):
    ws = _copy(term, "ws-manual")
    url = f"sqlite:///{ws / 'gradebook.db'}"
    with open_gradebook(url) as gb:                         # what formgrader does
        grade = gb.find_grade("test_softmax_axis", A, A, "alice")
        grade.manual_score = 0.5
        hal = gb.find_grade("test_softmax_axis", A, A, "hal")
        hal.manual_score = 1.0
        gina = gb.find_grade("test_cosine_similarity_torch", A, A, "gina")
        gina.manual_score = 0.0
        gb.db.commit()
    # a late student's score changed by hand: the penalty must be brought up to date first
    proc = autograder("export", A, "--format", "canvas", "--workspace", ws, "--roster", term["roster"])
    _one_line(proc, "the score of late submissions gina, hal changed by hand since the last grading run")
    # a grading run (here: a partial one; nothing else is graded again) brings penalties,
    # feedback and grades.csv up to date
    proc = ok(autograder("grade", A, term["subs"], "--workspace", ws, "--roster", term["roster"], *LATE,
                         "--student", "eve"))
    assert "regraded 1 of 6" in proc.stdout
    rows = {r["student"]: r for r in read_csv(ws, A)}
    assert float(rows["alice"]["score"]) == 10.5 and rows["alice"]["test_softmax_axis"] == "0.5"
    # gina: 9 by hand, 30 h late: the floor (5.5) now takes 3.5, not the 5.5 it took from 11
    assert (float(rows["gina"]["raw_score"]), float(rows["gina"]["late_penalty"]), float(rows["gina"]["score"])) \
        == (9.0, 3.5, 5.5)
    # hal: 1 by hand, below the floor already: nothing is deducted
    assert (float(rows["hal"]["raw_score"]), float(rows["hal"]["late_penalty"]), float(rows["hal"]["score"])) \
        == (1.0, 0.0, 1.0)
    page = (ws / "feedback" / "alice" / A / "feedback.html").read_text()
    assert "0.5 / 1" in page and "set by your instructor (tests gave 1)" in page
    assert "Score: <strong>10.5 / 11</strong>" in page
    ok(autograder("export", A, "--format", "canvas", "--workspace", ws, "--roster", term["roster"],
                  "--column", "Similarity (4821)"))
    canvas = list(csv.reader(open(ws / "reports" / A / "canvas.csv", newline="")))
    assert canvas[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Similarity (4821)"]
    assert canvas[1] == ["    Points Possible", "", "", "", "", "11"]
    body = {r[2]: r for r in canvas[2:]}
    assert list(body) == ["alice", "bob", "carol", "dave", "gina", "hal"]       # the roster, in its order
    assert body["alice"] == ["Liddell, Alice", "1001", "alice", "", "A", "10.5"]
    assert body["bob"][5] == "9.35" and body["dave"][5] == "0" and body["gina"][5] == "5.5"
    assert body["hal"][5] == "1" and body["carol"][5] == "11"
    proc = ok(autograder("export", A, "--format", "moodle", "--workspace", ws, "--roster", term["roster"]))
    assert "left out, not on the roster: eve" in proc.stdout
    moodle = list(csv.reader(open(ws / "reports" / A / "moodle.csv", newline="")))
    assert moodle[0] == ["First name", "Last name", "ID number", "Email address", A]
    assert ["Alice", "Liddell", "alice", "alice@example.org", "10.5"] in moodle
    assert ["Dave", "Bowman", "dave", "dave@example.org", "0"] in moodle
    assert ["Hal", "Jordan", "hal", "hal@example.org", "1"] in moodle
    ok(autograder("export", A, "--format", "csv", "--workspace", ws, "--to", term["base"] / "all.csv"))
    full = rows_of(term["base"] / "all.csv")
    assert set(full) == {"alice", "bob", "carol", "dave", "eve", "gina", "hal"}     # no roster: the gradebook's
    assert full["alice"]["test_softmax_axis"] == "0.5" and full["alice"]["score"] == "10.5"
    assert full["bob"]["status"] == "late" and full["bob"]["late_penalty"] == "1.65"
    assert full["dave"]["status"] == "missing" and full["hal"]["score"] == "1"
    assert full["gina"]["raw_score"] == "9" and full["gina"]["late_penalty"] == "3.5" and full["gina"]["score"] == "5.5"
    # and nbgrader's own export agrees with ours, student by student
    theirs = {s: float(r["score"]) for s, r in nbgrader_export(ws, term["base"] / "nb.csv").items()}
    assert theirs == pytest.approx({s: float(r["score"]) for s, r in full.items()})


# --------------------------------------------------------------------------- times
def _zip_entry(z: zipfile.ZipFile, name: str, data: bytes, local: tuple, utc: float | None = None) -> None:
    info = zipfile.ZipInfo(name, date_time=local)
    if utc is not None:                 # the extended-timestamp ("UT") field: a UTC modification time
        info.extra = struct.pack("<HHBi", 0x5455, 5, 1, int(utc))
    z.writestr(info, data)


@needs_sandbox
def test_submission_times_from_zip_entries_and_timestamp_txt_with_the_term_file(tmp_path):
    """A zip as an LMS exports it: each entry's own time, a UTC 'UT' time where the entry has
    one, nbgrader's timestamp.txt over both; the deadline and policy come from term.toml."""
    nb = nbformat.writes(with_answer(WRONG)).encode()
    good = nbformat.writes(base_notebook()).encode()
    due_local = datetime(2025, 3, 14, 23, 0)                 # the zip's times carry no zone: local
    archive = tmp_path / "lms.zip"
    with zipfile.ZipFile(archive, "w") as z:
        _zip_entry(z, "export/alice/a.ipynb", good, (2025, 3, 14, 22, 0, 0))
        _zip_entry(z, "export/bob/b.ipynb", good, (2025, 3, 14, 22, 0, 0),
                   utc=DUE.timestamp() + 26 * 3600)          # the UT field says: 26 h late
        _zip_entry(z, f"export/carol/{A}/{A}.ipynb", good, (2025, 3, 14, 22, 0, 0))
        _zip_entry(z, f"export/carol/{A}/timestamp.txt", b"2025-03-15 23:30:00.000000 UTC", (2025, 3, 14, 22, 0, 0))
        # a student who uploads a timestamp.txt of their own cannot make themselves early
        _zip_entry(z, f"export/fay/{A}/{A}.ipynb", good, (2025, 3, 14, 22, 0, 0), utc=DUE.timestamp() + 3 * 3600)
        _zip_entry(z, f"export/fay/{A}/timestamp.txt", b"2025-03-14 20:00:00.000000 UTC", (2025, 3, 14, 22, 0, 0))
        _zip_entry(z, "export/dan/d.ipynb", nb, (2025, 3, 14, 22, 0, 0))
        _zip_entry(z, "export/dan/timestamp.txt", b"not a time", (2025, 3, 14, 22, 0, 0))
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "term.toml").write_text(f'late_policy = "per-day:10"\n\n[{A}]\n'
                                  f'due = "{due_local.isoformat()}"\nlate_policy = "zero"\n')
    proc = ok(autograder("grade", A, archive, "--workspace", ws, "--workers", "2"))
    clean_terminal(proc)
    assert "term.toml" in proc.stdout
    rows = {r["student"]: r for r in read_csv(ws, A)}
    due = due_local.astimezone(timezone.utc)
    assert rows["alice"]["time_source"] == "zip entry" and rows["alice"]["status"] == "graded"
    assert rows["alice"]["submitted_at"] == (due - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert rows["bob"]["time_source"] == "zip entry" and rows["bob"]["status"] == "late"
    assert rows["bob"]["submitted_at"] == (DUE + timedelta(hours=26)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert float(rows["bob"]["score"]) == 0 and float(rows["bob"]["late_penalty"]) == MAX     # zero
    assert rows["carol"]["time_source"] == "timestamp.txt" and rows["carol"]["submitted_at"] == "2025-03-15T23:30:00Z"
    assert rows["dan"]["time_source"] == "zip entry" and "timestamp.txt could not be read" in rows["dan"]["flags"]
    assert rows["fay"]["time_source"] == "zip entry" and rows["fay"]["status"] == "late"
    assert float(rows["fay"]["score"]) == 0 and "earlier than the notebook's zip entry" in rows["fay"]["flags"]
    assert "timestamp.txt says" not in (ws / "feedback" / "fay" / A / "feedback.html").read_text()
    assert "time from zip entry" in (ws / "feedback" / "alice" / A / "feedback.html").read_text()


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("roster, message", [
    ("name,email\nAlice,a@x\n", "line 1: no 'id' column"),
    ("id,nmae\nalice,Alice\n", "line 1: unknown column 'nmae'"),
    ("id,name\nalice,Alice\nalice,Alice again\n", "line 3: the id 'alice' appears twice"),
    ("id,extension\nalice,next week\n", "line 2: extension 'next week' is neither a duration"),
    ("id,name\nalice,Alice,extra\n", "line 2: 3 fields where the header has 2"),
    ("id,name\n,Nobody\n", "line 2: an empty or unprintable id"),
    (b"id,name\nalice,\xff\xfe\n", "is not UTF-8 text"),
    ("", "is empty"),
    (None, "does not exist"),
])
def test_a_malformed_roster_is_one_clear_line(tmp_path, roster, message):
    (tmp_path / "subs" / "x").mkdir(parents=True)
    path = tmp_path / "roster.csv"
    if isinstance(roster, bytes):
        path.write_bytes(roster)
    elif roster is not None:
        path.write_text(roster)
    proc = autograder("grade", A, tmp_path / "subs", "--workspace", tmp_path / "ws", "--roster", path)
    _one_line(proc, message)


@pytest.mark.parametrize("options, message", [
    (["--due", "2025-03-34"], "--due '2025-03-34' is not an ISO date and time"),
    (["--due", "next friday"], "--due 'next friday' is not an ISO date and time"),
    (["--late-policy", "per-week:5"], "late policy 'per-week:5' is not one of none, zero, per-hour:P, per-day:P"),
    (["--late-policy", "per-day:150"], "expected a percentage between 0 and 100"),
    (["--late-policy", "zero", "--late-floor", "50"], "a late floor applies to per-hour and per-day policies"),
    (["--late-policy", "per-day:10", "--late-floor", "half"], "late floor 'half': expected a percentage"),
    (["--regrade", "--student", "x"], "--regrade grades everyone; --student and --flagged grade only some"),
    (["--db", "nosuchdb://x/y"], "cannot use the gradebook URL nosuchdb://x/y"),
])
def test_bad_term_options_are_one_clear_line(tmp_path, options, message):
    (tmp_path / "subs" / "x").mkdir(parents=True)
    proc = autograder("grade", A, tmp_path / "subs", "--workspace", tmp_path / "ws", *options,
                      "--unsafe-no-sandbox", "--quiet")
    _one_line(proc, message, allow_unsafe_warning=True)


@pytest.mark.parametrize("content, message", [
    ("due = [", "term.toml is not valid TOML"),
    ("dew = 1\n", "unknown setting 'dew'"),
    (f"[{A}]\ndue = \"soon\"\n", f"[{A}] due 'soon' is not an ISO date and time"),
    (f"[{A}]\nlate = \"zero\"\n", f"unknown setting 'late' for [{A}]"),
    ("late_policy = 10\n", 'term.toml: late_policy must be text, such as "per-day:10" (not 10)'),
    (f"[{A}]\nlate_policy = [\"zero\"]\n", "late_policy must be text, such as \"per-day:10\" (not ['zero'])"),
])
def test_a_bad_term_file_is_one_clear_line(tmp_path, content, message):
    (tmp_path / "subs" / "x").mkdir(parents=True)
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "term.toml").write_text(content)
    proc = autograder("grade", A, tmp_path / "subs", "--workspace", tmp_path / "ws")
    _one_line(proc, message)


@needs_sandbox
def test_an_unknown_student_to_regrade_is_one_clear_line(tmp_path):
    write(tmp_path / "subs" / "alice", with_answer(WRONG))
    proc = autograder("grade", A, tmp_path / "subs", "--workspace", tmp_path / "ws", "--student", "alcie")
    _one_line(proc, "--student alcie: no submission and no roster entry has this id")


@pytest.mark.parametrize("args, message", [
    (["--format", "xml"], "unknown export format 'xml' (known: canvas, moodle, moodle-worksheet, csv)"),
    (["--format", "canvas"], "no gradebook at"),
    (["--format", "canvas", "--db", "sqlite:////nonexistent/dir/gb.db"], "cannot open the gradebook"),
])
def test_export_errors_are_one_clear_line(tmp_path, args, message):
    proc = autograder("export", A, "--workspace", tmp_path / "ws", *args)
    _one_line(proc, message)


def test_export_of_an_assignment_never_graded_is_one_clear_line(tmp_path):
    with open_gradebook(f"sqlite:///{tmp_path / 'gb.db'}") as gb:
        gb.update_or_create_student("alice")
    proc = autograder("export", A, "--workspace", tmp_path, "--format", "moodle", "--db", f"sqlite:///{tmp_path / 'gb.db'}")
    _one_line(proc, f"the gradebook has no assignment '{A}': grade it first")


def _one_line(proc, message, allow_unsafe_warning=False):
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr[-2000:])
    lines = [ln for ln in proc.stderr.strip().splitlines()
             if not (allow_unsafe_warning and "WARNING: --unsafe-no-sandbox" in ln)]
    assert len(lines) == 1 and lines[0].startswith("autograder: error: ") and message in lines[0], lines
    assert "Traceback" not in proc.stderr


# --------------------------------------------------------------------------- the pieces
def test_a_new_gradebook_gets_the_schema_revision_alembic_reports():
    """startup.py reads the schema's head revision in-process; nbgrader runs `alembic heads`."""
    from autograder import startup

    api = startup.fast_nbgrader()
    assert startup.alembic_head() == startup.NBGRADERS_OWN["get_alembic_version"]()
    assert api.get_alembic_version is startup.alembic_head


def test_help_lists_the_term_options_and_export():
    main = ok(autograder("--help"))
    assert "export" in main.stdout
    grade = ok(autograder("grade", "--help"))
    for option in ("--due", "--late-policy", "--late-floor", "--roster", "--student", "--flagged"):
        assert option in grade.stdout, option
    export = ok(autograder("export", "--help"))
    for word in ("canvas", "moodle", "csv", "--column", "--to", "--db", "SIS User ID"):
        assert word in export.stdout, word
