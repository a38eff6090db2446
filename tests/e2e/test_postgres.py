"""A shared gradebook for real: Debian's PostgreSQL, started for the test on localhost.

One section is graded into it; then, at the same time, that section is graded again (two
students resubmitted), a second section is graded from another workspace, and a
co-instructor enters manual scores and comments through nbgrader's Gradebook API, as
formgrader does. Afterwards nothing is lost (every manual edit, every automatic score,
both sections), and `nbgrader export`, `autograder export` and grades.csv agree.

Skips with one line when PostgreSQL cannot run here; under CI (CI=true) that is a failure.
"""
from __future__ import annotations

import csv
import json
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from autograder.store.gradebook import open_gradebook
from tests.conftest import ROOT, needs_sandbox, read_csv, read_results
from tests.postgres import postgres_server
from tests.builders import autograder, clean_terminal, correct_code, nbgrader_export, ok, submit, with_answer, WRONG

A = "02_similarity"
DUE = datetime(2025, 3, 14, 23, 0, tzinfo=timezone.utc)
SLOW = "import time\ntime.sleep(2)\n"
LATE = ["--due", "2025-03-14T23:00:00Z", "--late-policy", "per-day:10"]

EDITOR = textwrap.dedent('''
    """A co-instructor in formgrader: manual scores and comments, one commit each, until told to stop."""
    import json, os, sys, time
    from nbgrader.api import Gradebook

    url, students, stop, out = sys.argv[1], sys.argv[2].split(","), sys.argv[3], sys.argv[4]
    gb = Gradebook(url)
    final, rounds, edits = {}, 0, []
    while rounds < 3 or not os.path.exists(stop):
        for i, student in enumerate(students):
            value = round(0.1 * ((rounds + i) % 10), 1)
            for attempt in range(20):
                try:
                    grade = gb.find_grade("test_softmax_axis", "02_similarity", "02_similarity", student)
                    grade.manual_score = value
                    comment = gb.find_comment("softmax", "02_similarity", "02_similarity", student)
                    comment.manual_comment = f"round {rounds}"
                    gb.db.commit()
                    break
                except Exception:
                    gb.db.rollback()
                    time.sleep(0.05)
            else:
                raise SystemExit(f"could not edit {student}")
            final[student] = {"manual_score": value, "comment": f"round {rounds}"}
            edits.append(time.time())
            time.sleep(0.02)
        rounds += 1
    gb.close()
    json.dump({"final": final, "rounds": rounds, "edits": edits}, open(out, "w"))
''')


@pytest.fixture(scope="module")
def pg():
    with postgres_server() as url:
        yield url


def _section(folder: Path, kinds: dict[str, str], late: set[str] = frozenset()) -> None:
    """Students whose notebooks take ~2 s each to run; `late` ones submitted 2 h after the deadline."""
    half = correct_code() + "\n\ndef softmax(x, axis=-1):\n    return np.zeros(np.shape(x))\n"
    code = {"correct": correct_code(), "wrong": WRONG, "half": half}
    for student, kind in kinds.items():
        when = DUE + timedelta(hours=2) if student in late else DUE - timedelta(hours=1)
        submit(folder / student, with_answer(SLOW + code[kind]), when)


@needs_sandbox
def test_a_shared_postgresql_gradebook_loses_nothing_under_concurrent_graders_and_editors(pg, tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text("id,name,email,extension\n" + "".join(
        f"a{i},Student A{i},a{i}@example.org,\n" for i in range(5)))
    first = {"a0": "correct", "a1": "wrong", "a2": "half", "a3": "correct"}
    _section(tmp_path / "A1", first, late={"a3"})
    ws1, ws2 = tmp_path / "ws1", tmp_path / "ws2"

    proc = ok(autograder("grade", A, tmp_path / "A1", "--workspace", ws1, "--db", pg, "--roster", roster,
                         *LATE, "--workers", "2"))
    clean_terminal(proc)
    assert "postgresql://postgres@127.0.0.1" in proc.stdout and not (ws1 / "gradebook.db").exists()
    rows = {r["student"]: r for r in read_csv(ws1, A)}
    assert {s: float(r["score"]) for s, r in rows.items()} == \
        {"a0": 11.0, "a1": 0.0, "a2": 6.0, "a3": 9.9, "a4": 0.0}        # a3: 1 started day x 10%
    assert rows["a4"]["status"] == "missing"

    # at the same time: section A again (a1 and a2 resubmitted, right now), section B from
    # another workspace, and manual scores and comments on section A
    second = {"a0": "correct", "a1": "correct", "a2": "correct", "a3": "correct"}
    _section(tmp_path / "A2", second, late={"a3"})
    _section(tmp_path / "B", {"b0": "correct", "b1": "half", "b2": "wrong"})
    (tmp_path / "editor.py").write_text(EDITOR)
    stop, edits = tmp_path / "stop", tmp_path / "edits.json"
    # (the editor scores the students whose notebooks stay the same: a score set by hand for a1's
    # or a2's old notebook is not carried onto their new one, tests/e2e/test_instructor_side.py)
    editor = subprocess.Popen([sys.executable, str(tmp_path / "editor.py"), pg, "a0,a3", str(stop),
                               str(edits)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    command = [sys.executable, "-m", "autograder", "grade", A]
    started = time.time()
    again = subprocess.Popen(command + [str(tmp_path / "A2"), "--workspace", str(ws1), "--db", pg, "--roster",
                                        str(roster), *LATE, "--regrade", "--workers", "1"],
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    other = subprocess.Popen(command + [str(tmp_path / "B"), "--workspace", str(ws2), "--db", pg, *LATE,
                                        "--workers", "1"],
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for proc in (again, other):
        out, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, f"{out}\n{err[-3000:]}"
        assert "warning" not in (out + err).lower(), err[-3000:]
    ended = time.time()
    stop.touch()
    out, err = editor.communicate(timeout=300)
    assert editor.returncode == 0, err[-3000:]
    log = json.loads(edits.read_text())
    during = [t for t in log["edits"] if started <= t <= ended]
    assert len(during) >= 8, f"the edits must overlap the gradings ({len(during)} did)"

    # nothing lost: every manual edit, every automatic score, both sections
    results = {**read_results(ws1, A), **read_results(ws2, A)}
    with open_gradebook(pg) as gb:
        for student, edit in log["final"].items():
            grade = gb.find_grade("test_softmax_axis", A, A, student)
            assert grade.manual_score == edit["manual_score"], student
            assert gb.find_comment("softmax", A, A, student).manual_comment == edit["comment"]
        for student, result in results.items():
            for test in result["tests"]:
                assert gb.find_grade(test["grade_id"], A, A, student).auto_score == test["points"], \
                    (student, test["grade_id"])
        assert {s.id for s in gb.students} == {"a0", "a1", "a2", "a3", "a4", "b0", "b1", "b2"}
    assert {s: r["score"] for s, r in results.items()} == \
        {"a0": 11.0, "a1": 11.0, "a2": 11.0, "a3": 11.0, "b0": 11.0, "b1": 6.0, "b2": 0.0}

    # a3 is late and is changed by hand after grading (once more here: whether the editor's
    # last edit came after the grading's penalty depends on timing): the export wants its
    # penalty brought up to date first
    with open_gradebook(pg) as gb:
        gb.find_grade("test_softmax_axis", A, A, "a3").manual_score = 0.55
        gb.db.commit()
    log["final"]["a3"]["manual_score"] = 0.55
    refused = autograder("export", A, "--format", "csv", "--workspace", ws1, "--db", pg)
    assert refused.returncode == 2 and "a3 changed by hand" in refused.stderr
    ok(autograder("grade", A, tmp_path / "A2", "--workspace", ws1, "--db", pg, "--roster", roster, *LATE,
                  "--quiet"))
    ok(autograder("export", A, "--format", "csv", "--workspace", ws1, "--db", pg, "--to", tmp_path / "ours.csv"))
    ours = {r["student_id"]: r for r in csv.DictReader(open(tmp_path / "ours.csv"))}
    theirs = nbgrader_export(ws1, tmp_path / "theirs.csv", "--db", pg)
    assert set(ours) == set(theirs) == {"a0", "a1", "a2", "a3", "a4", "b0", "b1", "b2"}
    for student in theirs:
        assert float(ours[student]["score"]) == pytest.approx(float(theirs[student]["score"])), student
        assert float(ours[student]["late_penalty"] or 0) == pytest.approx(
            float(theirs[student]["late_submission_penalty"] or 0)), student
    manual = {s: e["manual_score"] for s, e in log["final"].items()}
    assert float(theirs["a0"]["score"]) == pytest.approx(10 + manual["a0"])   # 10 automatic + the manual one
    for student in ("a1", "a2"):                          # resubmitted, right, nothing set by hand since
        assert float(theirs[student]["score"]) == pytest.approx(11.0)
    raw = 10 + manual["a3"]                                # late: 1 started day x 10% of 11
    assert float(theirs["a3"]["score"]) == pytest.approx(raw - 1.1)
    csv_rows = {r["student"]: float(r["score"]) for r in read_csv(ws1, A)}
    assert csv_rows == pytest.approx({s: float(theirs[s]["score"]) for s in csv_rows})
