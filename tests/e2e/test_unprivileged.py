"""Without root, as a student runs `autograder check` on their own machine: bubblewrap then
makes user namespaces, and a zygote forked from a template joins them (sandbox/template.py).
It must land in the same box as a zygote bubblewrap starts itself, with no capability
left, and the student's check must run there. Run as root (CI), these tests start their
subject as `nobody` (conftest.run_unprivileged)."""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from tests.conftest import ROOT, SANDBOX, release_path, run_unprivileged, student_folder
from tests.e2e.test_student_path import A, WRONG_SOFTMAX, _fill, _row, _solutions

pytestmark = pytest.mark.skipif(not SANDBOX, reason="bubblewrap cannot run here (make test installs it)")


@pytest.fixture
def student_home():
    home = student_folder(Path(tempfile.mkdtemp(prefix="autograder-student-")) / "home")
    yield home
    shutil.rmtree(home.parent, ignore_errors=True)


def test_a_forked_zygote_without_root_is_in_the_same_box_as_bubblewraps(student_home):
    probe = ROOT / "tests" / "unprivileged_sandbox_probe.py"
    proc = run_unprivileged([sys.executable, str(probe), str(ROOT)], home=student_home)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout)
    forked, started = found["template"], found["bwrap-zygote"]
    for seen in (forked, started):
        assert seen["euid"] != 0
        assert seen["inside"]["broken"] is None and seen["inside"]["cell_errors"] == [None], seen["inside"]
        # the zygote is in every namespace of the box, its user namespaces included
        assert all(seen["outside"]["same_namespaces"].values()), seen["outside"]["same_namespaces"]
        assert not seen["outside"]["zygote_environ_secret"]
        # a submission: no capability of any kind, no new privileges, its own uid, no network
        status = seen["inside"]["STATUS"]
        assert {k: int(v, 16) for k, v in status.items() if k.startswith("Cap")} == dict.fromkeys(
            ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"), 0), status
        assert status["NoNewPrivs"] == "1"
        assert seen["inside"]["IDS"] == [seen["euid"]] * 4
        assert seen["inside"]["MOUNT"][0] == -1 and seen["inside"]["SETUID0"] != "allowed"
        assert seen["inside"]["NETWORK"] != "allowed"
        assert seen["inside"]["WRITES"]["/usr"] != "allowed"
        # one submission per sandbox: without root, a zygote may not make namespaces
        assert seen["one_submission"] and seen["starts"] == 1
    for key in ("STATUS", "IDS", "MAPS", "DUMPABLE", "OWN_PROC_FILES", "ROOT", "WRITES", "MOUNT", "NETWORK",
                "SETUID0"):
        assert forked["inside"][key] == started["inside"][key], key
    assert forked["outside"]["zygote_root"] == started["outside"]["zygote_root"]
    assert set(forked["inside"]["ENV"]) <= set(started["inside"]["ENV"])
    assert forked["inside"]["ENVIRON"] == 0          # the environment it was started with: blank
    assert set(forked["outside"]["zygote_fds"]) == {"/dev/null", "socket"}, forked["outside"]


CHECK = """
import json, sys
from autograder import check
from autograder.sandbox import host
forked = []
real = host.Sandbox._launch_forked
def launch_forked(self, privileged):
    forked.append(privileged)
    return real(self, privileged)
host.Sandbox._launch_forked = launch_forked
result = check.check_student(sys.argv[1])
print(json.dumps({"where": result.where, "score": result.score, "max": result.max_score, "forked": forked,
                  "failed": [r.grade_id + ": " + r.message for r in result.results if not r.passed]}))
"""


def test_a_students_check_without_root_forks_its_sandbox(student_home):
    """The check imports torch once and forks the sandbox's zygote; its numbers are those of a
    check as root: a right notebook scores full marks, a wrong one fails where it is wrong."""
    for name, answers in (("right", _solutions()), ("wrong", {**_solutions(), "softmax": WRONG_SOFTMAX})):
        notebook = student_home / f"{name}.ipynb"
        shutil.copy(release_path(A), notebook)
        _fill(notebook, answers)
        notebook.chmod(0o644)
        proc = run_unprivileged([sys.executable, "-c", CHECK, str(notebook)], home=student_home)
        assert proc.returncode == 0, proc.stderr[-3000:]
        found = json.loads(proc.stdout.strip().splitlines()[-1])
        assert found["where"] == "your code ran in the sandbox (bubblewrap), as when it is graded", found
        assert found["forked"] == [False], found          # bubblewrap without root, a forked zygote
        if name == "right":
            assert found["score"] == found["max"] == 11, found
        else:
            assert found["score"] < found["max"], found
            assert any(f.startswith("test_softmax_torch: ") and "softmax over axis 0 instead of the last axis" in f
                       for f in found["failed"]), found


def test_the_command_without_root(student_home):
    """`autograder check` as the student types it: the table, from the sandbox."""
    notebook = student_home / "mine.ipynb"
    shutil.copy(release_path(A), notebook)
    _fill(notebook, _solutions())
    notebook.chmod(0o644)
    proc = run_unprivileged([sys.executable, "-m", "autograder", "check", str(notebook)], home=student_home)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0] == (f"{A}: visible tests, published inputs; your code ran in the sandbox "
                                           "(bubblewrap), as when it is graded")
    assert "total 11/11 visible points" in proc.stdout
    assert " pass" in _row(proc.stdout, "test_softmax_torch")
