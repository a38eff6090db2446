"""Faults: re-grading is identical, a run killed with SIGKILL can be resumed with every
student graded exactly once, parallel workers never corrupt the gradebook, two runs on
one workspace are refused, and user errors end in one clear line."""
from __future__ import annotations

import collections
import os
import signal
import sqlite3
import subprocess
import sys
import time
import zipfile

import nbformat
import pytest

from autograder.store.gradebook import open_gradebook, scores
from tests.conftest import ROOT, needs_sandbox, read_csv, read_results, run_grade, source_path
from tests.builders import WRONG, autograder, base_notebook, correct_code, nbgrader_export, with_answer, write

A = "02_similarity"
pytestmark = [needs_sandbox, pytest.mark.xdist_group("faults")]   # one worker: each test runs a class


def _class(folder, n, slow=False):
    """n students: correct, wrong and half-right in turn; `slow` ones take ~1.5 s each."""
    half = correct_code() + "\n\ndef softmax(x, axis=-1):\n    return np.zeros(np.shape(x))\n"
    kinds = [correct_code(), WRONG, half]
    for i in range(n):
        code = kinds[i % 3]
        if slow:
            code = "import time\ntime.sleep(1.5)\n" + code
        write(folder / f"s{i:02d}", with_answer(code))


def _summary(results):
    return {s: (r["score"], [(t["grade_id"], t["points"], t["message"]) for t in r["tests"]], r["flags"])
            for s, r in results.items()}


def test_regrading_gives_identical_results(tmp_path):
    _class(tmp_path / "subs", 6)
    run_grade(A, tmp_path / "subs", tmp_path / "ws", "--workers", "2")
    first = _summary(read_results(tmp_path / "ws", A))
    csv1 = (tmp_path / "ws" / "reports" / A / "grades.csv").read_text()
    run_grade(A, tmp_path / "subs", tmp_path / "ws", "--workers", "2", "--regrade")
    assert _summary(read_results(tmp_path / "ws", A)) == first
    assert (tmp_path / "ws" / "reports" / A / "grades.csv").read_text() == csv1
    log = (tmp_path / "ws" / "results" / A / "graded.log").read_text().split("\n")
    assert len([ln for ln in log if ln]) == 12, "both runs graded every student"
    # a third run without --regrade grades nobody again, and changes nothing
    proc = run_grade(A, tmp_path / "subs", tmp_path / "ws")
    assert "0 graded now" in proc.stdout and "6 unchanged" in proc.stdout
    assert _summary(read_results(tmp_path / "ws", A)) == first


def test_sigkill_half_way_then_resume_grades_everyone_exactly_once(tmp_path):
    subs, ws = tmp_path / "subs", tmp_path / "ws"
    _class(subs, 10, slow=True)
    cmd = [sys.executable, "-m", "autograder", "grade", A, str(subs), "--workspace", str(ws), "--quiet",
           "--workers", "2"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    log = ws / "results" / A / "graded.log"
    deadline = time.time() + 300
    while time.time() < deadline:
        if log.exists() and len(log.read_text().splitlines()) >= 3:
            break
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)          # the grader, its workers and their sandboxes
    proc.wait()
    graded_before = len(log.read_text().splitlines())
    assert 3 <= graded_before < 10, "the kill must land half-way"
    run_grade(A, subs, ws, "--workers", "2")
    counts = collections.Counter(line.split()[0] for line in log.read_text().splitlines())
    assert counts == {f"s{i:02d}": 1 for i in range(10)}, counts
    rows = read_csv(ws, A)
    assert [r["student"] for r in rows] == [f"s{i:02d}" for i in range(10)]
    expected = {0: 11.0, 1: 0.0, 2: 6.0}
    assert {r["student"]: float(r["score"]) for r in rows} == {f"s{i:02d}": expected[i % 3] for i in range(10)}
    with open_gradebook(f"sqlite:///{ws / 'gradebook.db'}") as gb:
        assert scores(gb, A) == {f"s{i:02d}": expected[i % 3] for i in range(10)}


def test_parallel_workers_keep_the_gradebook_consistent(tmp_path):
    subs, ws = tmp_path / "subs", tmp_path / "ws"
    _class(subs, 12)
    run_grade(A, subs, ws, "--workers", "2")
    db = sqlite3.connect(ws / "gradebook.db")
    assert db.execute("pragma integrity_check").fetchone()[0] == "ok"
    assert db.execute("select count(*) from submitted_assignment").fetchone()[0] == 12
    assert db.execute("select count(*) from grade").fetchone()[0] == 12 * 10
    results = read_results(ws, A)
    with open_gradebook(f"sqlite:///{ws / 'gradebook.db'}") as gb:
        assert scores(gb, A) == {s: r["score"] for s, r in results.items()}
    # nbgrader itself reads the same numbers
    exported = {s: float(r["score"]) for s, r in nbgrader_export(ws, tmp_path / "export.csv").items()}
    assert exported == {s: r["score"] for s, r in results.items()}


def test_a_second_run_on_the_same_workspace_is_refused(tmp_path):
    subs, ws = tmp_path / "subs", tmp_path / "ws"
    _class(subs, 4, slow=True)
    first = subprocess.Popen([sys.executable, "-m", "autograder", "grade", A, str(subs), "--workspace", str(ws),
                              "--quiet"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while not (ws / ".grading.lock").exists() and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)
    second = run_grade(A, subs, ws, check=False)
    assert second.returncode == 2
    assert second.stderr.strip().splitlines() == [
        f"autograder: error: another grading run is using {ws}; wait for it to finish"]
    assert first.wait(timeout=300) == 0


def test_lms_zip_is_graded_like_a_folder(tmp_path):
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("course-export/alice/02_similarity.ipynb", nbformat.writes(base_notebook()))
        z.writestr("course-export/bob/whatever name.ipynb", nbformat.writes(with_answer(WRONG)))
        z.writestr("course-export/bob/.ipynb_checkpoints/whatever name-checkpoint.ipynb", "{}")
    run_grade(A, archive, tmp_path / "ws")
    rows = {r["student"]: float(r["score"]) for r in read_csv(tmp_path / "ws", A)}
    assert rows == {"alice": 11.0, "bob": 0.0}


@pytest.mark.parametrize("args,message", [
    (["99_nothing", "{subs}"], "no assignment named '99_nothing'"),
    ([A, "{missing}"], "does not exist"),
    ([A, "{file}"], "is a file but not a .zip"),
    ([A, "{empty}"], "holds no student folders and no notebooks"),
])
def test_user_errors_are_one_clear_line(tmp_path, args, message):
    (tmp_path / "subs" / "x").mkdir(parents=True)
    (tmp_path / "file.txt").write_text("hello")
    (tmp_path / "empty").mkdir()
    paths = {"subs": tmp_path / "subs", "missing": tmp_path / "nope", "file": tmp_path / "file.txt",
             "empty": tmp_path / "empty"}
    argv = [a.format(**paths) for a in args]
    proc = autograder("grade", *argv, "--workspace", tmp_path / "ws")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("autograder: error: ") and message in lines[0], lines


def test_help_is_complete():
    main = autograder("--help")
    assert main.returncode == 0
    for command in ("grade", "release", "check"):
        assert command in main.stdout
    grade = autograder("grade", "--help")
    for option in ("--workers", "--db", "--workspace", "--timeout", "--memory-mb", "--regrade",
                   "--unsafe-no-sandbox", "SUBMISSIONS", "zip"):
        assert option in grade.stdout, option


def test_without_a_sandbox_grading_refuses_unless_told_it_is_unsafe(tmp_path):
    write(tmp_path / "subs" / "alice", base_notebook())
    env = {"PATH": str(sys.executable).rsplit("/", 1)[0]}   # no bwrap on PATH
    refused = run_grade(A, tmp_path / "subs", tmp_path / "ws1", check=False, env=env)
    assert refused.returncode == 2
    assert "no sandbox: bubblewrap (bwrap) is not installed" in refused.stderr
    assert "--unsafe-no-sandbox" in refused.stderr
    unsafe = run_grade(A, tmp_path / "subs", tmp_path / "ws2", "--unsafe-no-sandbox", check=False, env=env,
                       timeout=300)
    assert unsafe.returncode == 0, unsafe.stderr[-2000:]
    assert "WARNING: --unsafe-no-sandbox" in unsafe.stderr
    assert float(read_csv(tmp_path / "ws2", A)[0]["score"]) == 11.0


def test_manual_scores_survive_regrading(tmp_path):
    """A score an instructor enters by hand (formgrader writes grade.manual_score) outlives
    `grade --regrade`, as it does under nbgrader's own autograde; nbgrader export shows it."""
    subs, ws = tmp_path / "subs", tmp_path / "ws"
    _class(subs, 2)                          # s00 correct (11), s01 wrong (0)
    run_grade(A, subs, ws)
    url = f"sqlite:///{ws / 'gradebook.db'}"
    with open_gradebook(url) as gb:
        grade = gb.find_grade("test_softmax_axis", "02_similarity", A, "s01")
        grade.manual_score = 0.5
        gb.db.commit()
        assert scores(gb, A)["s01"] == 0.5
    run_grade(A, subs, ws, "--regrade")
    with open_gradebook(url) as gb:
        grade = gb.find_grade("test_softmax_axis", "02_similarity", A, "s01")
        assert grade.manual_score == 0.5 and grade.auto_score == 0.0
        assert scores(gb, A) == {"s00": 11.0, "s01": 0.5}


def test_results_are_reused_only_while_what_decides_a_grade_is_unchanged(tmp_path):
    """The resume key covers the limits (and the source notebook, the package, the secret):
    a run with another time limit grades everyone again instead of reusing old results."""
    from autograder.sandbox.host import Limits
    from autograder.store.workspace import Workspace

    subs, ws = tmp_path / "subs", tmp_path / "ws"
    _class(subs, 2)
    run_grade(A, subs, ws, "--timeout", "60")
    again = run_grade(A, subs, ws, "--timeout", "60")
    assert "0 graded now" in again.stdout and "2 unchanged" in again.stdout
    changed = run_grade(A, subs, ws, "--timeout", "50")
    assert "2 graded now" in changed.stdout, changed.stdout
    # the instructor's notebook and the secret are part of the key too
    nb = tmp_path / "source.ipynb"
    nb.write_bytes(source_path(A).read_bytes())
    key = Workspace.resume_key(nb, Limits(), "secret")
    assert Workspace.resume_key(nb, Limits(), "other secret") != key
    nb.write_bytes(source_path(A).read_bytes().replace(b'"points": 2', b'"points": 3', 1))
    assert Workspace.resume_key(nb, Limits(), "secret") != key


@needs_sandbox
def test_a_flood_of_output_is_named_as_the_cause_not_the_oserror_it_raises(tmp_path):
    """200,000 printed lines pass the 1 MiB output cap: the write fails with OSError (EFBIG).
    The student reads that the cell printed too much; another student is not touched."""
    flood = "for i in range(200_000):\n    print('step', i, 'loss', 0.5)\n\n" + correct_code()
    write(tmp_path / "subs" / "flooder", with_answer(flood))
    write(tmp_path / "subs" / "honest", with_answer(correct_code()))
    run_grade(A, tmp_path / "subs", tmp_path / "ws")
    results = read_results(tmp_path / "ws", A)
    codes = [f["code"] for f in results["flooder"]["flags"]]
    # the cell stopped at the cap, before its functions were defined: those follow, the OSError not
    assert codes[0] == "cell-output-limit" and "cell-error" not in codes, results["flooder"]["flags"]
    page = (tmp_path / "ws" / "feedback" / "flooder" / A / "feedback.html").read_text()
    assert "printed more than a notebook may print" in page and "OSError" not in page
    assert results["honest"]["flags"] == [] and results["honest"]["score"] > 0


# Holds its processes until its run is killed: the test ends it, not a sleep's length.
_HOG = ("import os, signal\nfor _ in range(200):\n    try:\n        if os.fork() == 0:\n            signal.pause()\n"
        "            os._exit(0)\n    except OSError:\n        break\nwhile True:\n    signal.pause()\n")
_FORKS = ("\n\nimport os\n_right = softmax\n\n\ndef softmax(x, axis=-1):\n    if os.fork() == 0:\n"
          "        os._exit(0)\n    return _right(x, axis)\n")


def _sandbox_processes() -> int:
    """Processes on this machine whose uid is a sandbox slot's (60000 + slot)."""
    count = 0
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and 60000 <= os.stat(f"/proc/{entry}").st_uid < 60128:
                count += 1
        except FileNotFoundError:
            pass
    return count


@pytest.mark.skipif(os.geteuid() != 0, reason="sandbox uids are the caller's own without root")
def test_a_fork_bomb_in_one_run_costs_a_concurrent_run_nothing(tmp_path):
    """Run A grades a submission that holds its process limit's worth of processes; run B,
    on the same machine meanwhile, grades correct notebooks whose softmax forks once per call.
    Both ran sandboxes in slot 0, one uid: B's forks failed against A's processes, 6 of 11 points
    each. Each sandbox now claims a slot no other holds (host.claim_slot)."""
    write(tmp_path / "A" / "hog", with_answer(_HOG + correct_code()))
    for i in range(3):
        write(tmp_path / "B" / f"forks{i}", with_answer(correct_code() + _FORKS))
    # run A's limits (a quarter of --timeout per cell) far beyond run B's time on a loaded machine
    cmd = [sys.executable, "-m", "autograder", "grade", A, str(tmp_path / "A"), "--workspace", str(tmp_path / "wsA"),
           "--quiet", "--workers", "1", "--timeout", "3600"]
    hog = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 600          # a guard against a hang, not a measure
        while time.time() < deadline and _sandbox_processes() < 50:
            time.sleep(0.2)
        assert _sandbox_processes() >= 50, "run A's submission holds its processes"
        run_grade(A, tmp_path / "B", tmp_path / "wsB", "--workers", "1")
        assert hog.poll() is None and _sandbox_processes() >= 50, "run A was still holding them"
    finally:
        os.killpg(hog.pid, signal.SIGKILL)
        hog.wait()
    rows = read_csv(tmp_path / "wsB", A)
    assert [(r["student"], float(r["score"])) for r in rows] == [(f"forks{i}", 11.0) for i in range(3)], rows
