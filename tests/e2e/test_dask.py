"""Grading on a Dask cluster (`--cluster`): a real `dask scheduler` and `dask worker` processes on
localhost. The adversarial class graded through the cluster gives the grades.csv of a local run;
a worker killed mid-run loses no student and records none twice; a worker that cannot sandbox
(no bubblewrap on its PATH) or whose course differs is refused in one line."""
from __future__ import annotations

import collections
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import BIN, ROOT, needs_sandbox, read_csv, read_results, run_grade
from tests.builders import MAX, WRONG, autograder, correct_code, with_answer, write
from tests.e2e.test_adversarial import CASES, _contents, _Listener

A = "02_similarity"
pytestmark = [needs_sandbox, pytest.mark.xdist_group("dask")]     # one pytest worker: each test runs a class


class Cluster:
    """A scheduler and its workers, each in a process group of its own, all killed by `stop`."""

    def __init__(self, folder: Path, env=None, tls: Path | None = None):
        """`tls`: a folder with the certificates machines.md makes (ca.pem, scheduler.pem/.key,
        worker.pem/.key): the scheduler and its workers then speak TLS only."""
        self.folder, self.tls = folder, tls
        folder.mkdir(parents=True, exist_ok=True)
        self.file = folder / "scheduler.json"
        self.procs: list[subprocess.Popen] = []
        self.scheduler = self._start([str(BIN / "dask"), "scheduler", "--no-dashboard", "--port", "0",
                                      "--host", "tls://127.0.0.1" if tls else "127.0.0.1",
                                      "--scheduler-file", str(self.file), *self._tls("scheduler")], "scheduler", env)
        deadline = time.time() + 60
        while not self.file.exists() and time.time() < deadline:
            time.sleep(0.1)
        assert self.file.exists(), (folder / "scheduler.log").read_text()[-2000:]

    def _tls(self, who: str) -> list[str]:
        if self.tls is None:
            return []
        return ["--tls-ca-file", str(self.tls / "ca.pem"), "--tls-cert", str(self.tls / f"{who}.pem"),
                "--tls-key", str(self.tls / f"{who}.key")]

    def _start(self, args, name, env=None, cwd=ROOT) -> subprocess.Popen:
        log = open(self.folder / f"{name}.log", "w")
        base = {**os.environ, "PYTHONPATH": str(cwd), "OMP_NUM_THREADS": "1"}
        proc = subprocess.Popen(args, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**base, **(env or {})})
        self.procs.append(proc)
        return proc

    def worker(self, name: str, env=None, cwd=ROOT, extra=()) -> subprocess.Popen:
        return self._start([str(BIN / "python"), str(BIN / "dask"), "worker", "--nthreads", "1", "--nworkers", "1",
                            "--no-dashboard", "--host", "127.0.0.1", "--scheduler-file", str(self.file),
                            *self._tls("worker"), *extra],
                           name, env, cwd)

    def wait_for(self, n: int) -> None:
        from distributed import Client

        security = None
        if self.tls is not None:
            from distributed.security import Security

            security = Security(tls_ca_file=str(self.tls / "ca.pem"), tls_client_cert=str(self.tls / "instructor.pem"),
                                tls_client_key=str(self.tls / "instructor.key"), require_encryption=True)
        with Client(scheduler_file=str(self.file), timeout="30s", set_as_default=False, security=security) as client:
            client.wait_for_workers(n, timeout=120)

    @staticmethod
    def kill(proc) -> None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()

    def stop(self) -> None:
        for proc in self.procs:
            self.kill(proc)


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path / "cluster")
    try:
        yield c
    finally:
        c.stop()


def _two_workers(cluster):
    cluster.worker("w1")
    cluster.worker("w2")
    cluster.wait_for(2)


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """The adversarial suite's class (honest, wrong, hostile: infinite loop, fork bomb, memory
    bomb, os._exit, network...), graded locally with 2 workers and through a 2-worker cluster."""
    root = tmp_path_factory.mktemp("dask")
    subs = root / "submissions"
    subs.mkdir()
    listener = _Listener()
    ctx = {"submissions": subs, "workspace": root / "local", "port": listener.port,
           "env_secret": "pg-password-" + os.urandom(8).hex()}
    for case in CASES:
        case.build(subs / case.name, ctx)
    before = _contents(subs)
    local = run_grade(A, subs, root / "local", "--workers", "2", "--timeout", "15", check=False, timeout=1500)
    c = Cluster(root / "cluster")
    try:
        _two_workers(c)
        remote = run_grade(A, subs, root / "remote", "--cluster", str(c.file), "--timeout", "15", check=False,
                           timeout=1500, env={"PGPASSWORD": ctx["env_secret"]})
    finally:
        c.stop()
        listener.stop = True
    return {"local": local, "remote": remote, "root": root, "subs": subs, "before": before,
            "connections": listener.connections}


def test_a_class_through_the_cluster_gets_the_local_grades(both):
    for run in ("local", "remote"):
        assert both[run].returncode == 0, both[run].stdout[-2000:] + both[run].stderr[-3000:]
    assert len(CASES) >= 40
    assert "with 2 workers" in both["remote"].stdout
    local, remote = (read_csv(both["root"] / w, A) for w in ("local", "remote"))
    assert [r["student"] for r in remote] == [r["student"] for r in local]
    for mine, theirs in zip(remote, local):
        assert mine == theirs
    assert {r["student"] for r in read_csv(both["root"] / "remote", A)} == {c.name for c in CASES}


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_outcome_through_the_cluster(both, case):
    result = read_results(both["root"] / "remote", A)[case.name]
    assert case.min_score <= result["score"] <= case.max_score, (case.name, result["score"], result["flags"])
    if case.flag:
        assert any(case.flag in f["message"] for f in result["flags"]), result["flags"]
    else:
        assert result["flags"] == []


def test_nothing_escaped_the_sandbox_on_a_worker(both):
    assert both["connections"] == 0, "a submission reached a server on the host"
    assert _contents(both["subs"]) == both["before"], "a submission changed the submissions folder"
    assert both["root"].joinpath("remote", "gradebook.db").exists()
    secret = both["remote"].stdout + both["remote"].stderr
    assert "pg-password-" not in secret


def _class(folder: Path, n: int, slow: float = 0.0) -> None:
    half = correct_code() + "\n\ndef softmax(x, axis=-1):\n    return np.zeros(np.shape(x))\n"
    kinds = [correct_code(), WRONG, half]
    for i in range(n):
        code = kinds[i % 3]
        if slow:
            code = f"import time\ntime.sleep({slow})\n" + code
        write(folder / f"s{i:02d}", with_answer(code))


def _kill_mid_run(subs: Path, ws: Path, cluster, victim):
    """`autograder grade --cluster` on `subs`; once two students are graded, `victim` (a worker's
    or the scheduler's process) is killed. The grade process, its output and its graded.log."""
    cmd = [sys.executable, "-m", "autograder", "grade", A, str(subs), "--workspace", str(ws), "--quiet",
           "--cluster", str(cluster.file)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    log = ws / "results" / A / "graded.log"
    try:
        deadline = time.time() + 300
        while time.time() < deadline and not (log.exists() and len(log.read_text().splitlines()) >= 2):
            time.sleep(0.1)
        Cluster.kill(victim)
        out, err = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc, out, err, log


def test_a_worker_killed_mid_run_loses_nothing(cluster, tmp_path):
    subs, ws = tmp_path / "subs", tmp_path / "ws"
    _class(subs, 12, slow=1.5)
    _two_workers(cluster)
    proc, out, err, log = _kill_mid_run(subs, ws, cluster, cluster.procs[1])   # worker w1 and its sandboxes
    assert proc.returncode == 0, out + err
    counts = collections.Counter(line.split()[0] for line in log.read_text().splitlines())
    assert counts == {f"s{i:02d}": 1 for i in range(12)}, counts
    rows = read_csv(ws, A)
    assert [r["student"] for r in rows] == [f"s{i:02d}" for i in range(12)]
    assert [float(r["score"]) for r in rows] == [{0: MAX, 1: 0.0, 2: 6.0}[i % 3] for i in range(12)]
    db = sqlite3.connect(ws / "gradebook.db")
    assert db.execute("select count(*) from submitted_assignment").fetchone()[0] == 12


def test_a_submission_that_kills_its_workers_is_its_students_flagged_0(tmp_path):
    """Grading `killer` kills the worker's process every time (tests/dask_faults.py). With
    allowed-failures 1, Dask gives up on it after two dead workers, and on every student waiting
    behind it on those workers; those are graded again alone, and only the killer ends flagged."""
    subs, ws = tmp_path / "subs", tmp_path / "ws"
    _class(subs, 8)
    write(subs / "killer", with_answer(correct_code()))
    c = Cluster(tmp_path / "cluster", env={"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1"})
    try:
        for name in ("w1", "w2"):
            c.worker(name, env={"AUTOGRADER_TEST_KILLS_WORKER": "killer"}, extra=("--preload", "tests.dask_faults"))
        c.wait_for(2)
        proc = run_grade(A, subs, ws, "--cluster", str(c.file), check=False, timeout=900)
    finally:
        c.stop()
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "killer: Dask workers died while it was being graded; grading it again, alone" in proc.stderr
    counts = collections.Counter(line.split()[0] for line in (ws / "results" / A / "graded.log").read_text().splitlines())
    assert counts == {**{f"s{i:02d}": 1 for i in range(8)}, "killer": 1}, counts
    rows = {r["student"]: r for r in read_csv(ws, A)}
    assert {s: float(r["score"]) for s, r in rows.items()} == {
        **{f"s{i:02d}": {0: MAX, 1: 0.0, 2: 6.0}[i % 3] for i in range(8)}, "killer": 0.0}
    assert "took down every Dask worker it ran on" in rows["killer"]["flags"]
    assert not any(rows[f"s{i:02d}"]["flags"] for i in range(8)), {s: r["flags"] for s, r in rows.items()}
    kills = sum(open(c.folder / f"{w}.log").read().count("Restarting worker") for w in ("w1", "w2"))
    assert kills >= 4, "two rounds of allowed-failures + 1 dead workers"


_OVERDUE = """
import sys, time
from autograder import course
from autograder.grade import remote, worker
from autograder.versions import course_version
from autograder.sandbox.host import Limits
from tests.e2e.test_dask import _task

real = worker.grade_task


def stuck(source, box, task):      # stands for the trusted grader stuck on this submission
    if task[0] == "stuck":
        time.sleep(float(sys.argv[1]))
    return real(source, box, task)


worker.grade_task = stuck
remote._grace = lambda limits: 1.0
remote.OVERDUE_EXIT_SECONDS = float(sys.argv[2])
version = course_version(course.source_notebook("02_similarity"))
for name in sys.argv[3:]:
    result = remote.grade("02_similarity", version, Limits(), _task(name))
    print(name, result.get("abandoned", {}).get("code"), result.get("score"), flush=True)
"""


def _task(student: str):
    """A pool's task for a correct notebook (as run.py makes them)."""
    import nbformat

    from autograder.grade.task import Task

    return Task(student, A, nbformat.writes(with_answer(correct_code())).encode(), f"{A}.ipynb", None,
                "salt-" + student)


def test_a_grading_that_outlives_its_grace_is_abandoned_as_a_local_run_abandons_it(tmp_path):
    """remote.grade's watch (grace 1 s here): a grading back only after 3 s is the flagged 0 of a
    local run ("unresponsive"), and the next student is graded in a fresh sandbox; a grading
    that never comes back ends the worker process (exit 70: Dask then grades the task elsewhere,
    and KilledWorker ends one that does it every time)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    late = subprocess.run([sys.executable, "-c", _OVERDUE, "3", "60", "stuck", "honest"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert late.returncode == 0, late.stderr[-3000:]
    assert late.stdout.split("\n")[:2] == ["stuck unresponsive None", f"honest None {MAX}"], late.stdout
    start = time.monotonic()
    never = subprocess.run([sys.executable, "-c", _OVERDUE, "600", "2", "stuck", "honest"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
    assert never.returncode == 70 and never.stdout == "", (never.returncode, never.stdout, never.stderr[-2000:])
    assert time.monotonic() - start < 120


def test_workers_that_join_or_refuse_during_the_run(cluster, tmp_path):
    """w1 grades; w2 passes the survey but refuses its tasks (tests/dask_faults.py); a worker
    without bubblewrap joins mid-run. Each refusal is one line, w2's tasks go to w1, and every
    student is graded once, with the right score."""
    subs, ws = tmp_path / "subs", tmp_path / "ws"
    _class(subs, 8, slow=1.5)
    cluster.worker("w1")
    cluster.worker("w2", env={"AUTOGRADER_TEST_REFUSES": "1"}, extra=("--preload", "tests.dask_faults"))
    cluster.wait_for(2)
    cmd = [sys.executable, "-m", "autograder", "grade", A, str(subs), "--workspace", str(ws), "--quiet",
           "--cluster", str(cluster.file)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    log = ws / "results" / A / "graded.log"
    deadline = time.time() + 300
    while time.time() < deadline and not (log.exists() and log.read_text().strip()):
        time.sleep(0.1)
    no_bwrap = tmp_path / "bin"
    no_bwrap.mkdir()
    cluster.worker("nobwrap", env={"PATH": str(no_bwrap)})
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, out + err
    refused = [ln for ln in err.splitlines() if "refused" in ln]
    assert len(refused) == 2, err
    assert any("its sandbox stopped working (a test's stand-in)" in ln for ln in refused), refused
    assert any("cannot sandbox (bubblewrap (bwrap) is not installed)" in ln for ln in refused), refused
    counts = collections.Counter(line.split()[0] for line in log.read_text().splitlines())
    assert counts == {f"s{i:02d}": 1 for i in range(8)}, counts
    assert [float(r["score"]) for r in read_csv(ws, A)] == [{0: MAX, 1: 0.0, 2: 6.0}[i % 3] for i in range(8)]


def test_late_policy_student_and_flagged_work_through_the_cluster_as_locally(cluster, tmp_path):
    """The same term through both pools: a deadline with a per-day deduction (three students a
    day late), then one student's resubmission graded with --student, then a looping notebook,
    fixed, regraded with --flagged. grades.csv is the same, byte for byte."""
    _two_workers(cluster)
    due = "2026-01-10T00:00:00+00:00"
    csvs = {}
    for where, extra in (("local", ["--workers", "2"]), ("remote", ["--cluster", str(cluster.file)])):
        subs, ws = tmp_path / where / "subs", tmp_path / where / "ws"
        _class(subs, 6)
        write(subs / "looper", with_answer("while True:\n    pass\n" + correct_code()))
        for folder in subs.iterdir():
            late = 86400 * 1.5 if folder.name in ("s03", "s04", "s05") else -3600
            stamp = 1768003200 + late                  # due + 1.5 days, or due - 1 hour
            for f in folder.iterdir():
                os.utime(f, (stamp, stamp))
        common = ("--due", due, "--late-policy", "per-day:10", "--timeout", "4", *extra)
        first = run_grade(A, subs, ws, *common)
        write(subs / "s01", with_answer(correct_code()))        # resubmitted, now right, still on time
        os.utime(subs / "s01" / f"{A}.ipynb", (1768003200 - 60, 1768003200 - 60))
        one = run_grade(A, subs, ws, *common, "--student", "s01")
        write(subs / "looper", with_answer(correct_code()))
        os.utime(subs / "looper" / f"{A}.ipynb", (1768003200 - 60, 1768003200 - 60))
        flagged = run_grade(A, subs, ws, *common, "--flagged")
        assert "regraded 1 of 7 submissions" in one.stdout and "(s01)" in one.stdout, one.stdout
        assert "regraded 1 of 7 submissions" in flagged.stdout and "(looper)" in flagged.stdout, flagged.stdout
        csvs[where] = (ws / "reports" / A / "grades.csv").read_text()
        rows = {r["student"]: r for r in read_csv(ws, A)}
        assert float(rows["s01"]["score"]) == MAX and float(rows["looper"]["score"]) == MAX, rows
        assert float(rows["s03"]["score"]) < MAX, "a day and a half late: 20 % off"
        assert first.returncode == 0
    assert csvs["local"] == csvs["remote"]


def _other_course(folder: Path) -> Path:
    """A copy of the course whose 02_similarity differs by one byte (a changed test, say)."""
    shutil.copytree(ROOT / "autograder", folder / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "solutions", folder / "solutions")
    path = folder / "solutions" / A / f"{A}.ipynb"
    path.write_bytes(path.read_bytes() + b"\n")
    return folder


def test_a_worker_that_cannot_sandbox_or_has_another_course_is_refused(cluster, tmp_path):
    subs, ws = tmp_path / "subs", tmp_path / "ws"
    _class(subs, 3)
    cluster.worker("good")
    no_bwrap = tmp_path / "bin"
    no_bwrap.mkdir()
    assert not shutil.which("bwrap", path=str(no_bwrap))
    cluster.worker("nobwrap", env={"PATH": str(no_bwrap)})
    cluster.worker("other", cwd=_other_course(tmp_path / "other"))
    cluster.wait_for(3)
    check = autograder("cluster-check", "--cluster", cluster.file, "--assignment", A, timeout=300)
    assert check.returncode == 1, check.stdout + check.stderr
    assert "1 of 3 workers can grade" in check.stdout
    assert check.stdout.count("REFUSES") == 2 and "sandbox NO: bubblewrap (bwrap) is not installed" in check.stdout
    assert "course DIFFERS (02_similarity)" in check.stdout
    proc = run_grade(A, subs, ws, "--cluster", str(cluster.file))
    refused = [ln for ln in proc.stderr.splitlines() if "refused" in ln]
    assert len(refused) == 2, proc.stderr
    host = os.uname().nodename
    assert all(host in ln for ln in refused)
    assert any("cannot sandbox (bubblewrap (bwrap) is not installed)" in ln for ln in refused)
    assert any("its course differs" in ln for ln in refused)
    assert "graded now with 1 workers" in proc.stdout
    assert [float(r["score"]) for r in read_csv(ws, A)] == [MAX, 0.0, 6.0]


def test_no_worker_able_stops_the_run_in_one_line(cluster, tmp_path):
    subs = tmp_path / "subs"
    _class(subs, 2)
    no_bwrap = tmp_path / "bin"
    no_bwrap.mkdir()
    cluster.worker("nobwrap", env={"PATH": str(no_bwrap)})
    cluster.wait_for(1)
    proc = run_grade(A, subs, tmp_path / "ws", "--cluster", str(cluster.file), check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("autograder: error: no Dask worker at "), proc.stderr
    assert not (tmp_path / "ws" / "results" / A).exists() or not list((tmp_path / "ws" / "results" / A).glob("*.json"))


def test_a_lost_scheduler_stops_the_run_and_the_same_command_resumes(cluster, tmp_path):
    subs, ws = tmp_path / "subs", tmp_path / "ws"
    _class(subs, 8, slow=1.5)
    _two_workers(cluster)
    proc, out, err, log = _kill_mid_run(subs, ws, cluster, cluster.scheduler)
    assert proc.returncode == 2, out + err
    assert "lost the Dask scheduler" in err.strip().splitlines()[-1], err
    graded = len(log.read_text().splitlines())
    assert 2 <= graded < 8
    # a new scheduler (same file), new workers: the same command grades only the rest
    cluster.stop()
    cluster.file.unlink()
    again = Cluster(cluster.folder)
    try:
        _two_workers(again)
        proc = run_grade(A, subs, ws, "--cluster", str(again.file))
    finally:
        again.stop()
    counts = collections.Counter(line.split()[0] for line in log.read_text().splitlines())
    assert counts == {f"s{i:02d}": 1 for i in range(8)}, counts
    assert f"{8 - graded} graded now" in proc.stdout


def _doc_block(doc: Path, heading: str) -> str:
    """The first bash block after `heading` in a Markdown file."""
    text = doc.read_text()
    after = text[text.index(heading):]
    return after.split("```bash\n", 1)[1].split("```", 1)[0]


def test_tls_end_to_end_with_the_certificates_machines_md_makes(tmp_path):
    """machines.md's openssl commands, run as written, make a CA and certificates; a scheduler
    and two workers speak TLS only; cluster-check and grade with --tls-ca/--tls-cert/--tls-key
    work; without the files, or with a certificate of another CA, the client is refused in one
    line and nothing is graded."""
    doc = ROOT / "docs" / "cluster" / "machines.md"
    certs = tmp_path / "certs"
    certs.mkdir()
    make = _doc_block(doc, "## 2. TLS certificates")
    subprocess.run(["bash", "-euc", make], cwd=certs, check=True, capture_output=True, timeout=300)
    rogue = tmp_path / "rogue"
    rogue.mkdir()
    subprocess.run(["bash", "-euc", make], cwd=rogue, check=True, capture_output=True, timeout=300)
    text = doc.read_text()
    for words in ("--tls-ca-file ca.pem --tls-cert scheduler.pem --tls-key scheduler.key",
                  "--tls-ca-file ca.pem --tls-cert worker.pem --tls-key worker.key",
                  "--tls-ca ca.pem --tls-cert instructor.pem --tls-key instructor.key"):
        assert words in text                      # what the cluster below is started with
    subs = tmp_path / "subs"
    _class(subs, 6)
    c = Cluster(tmp_path / "cluster", tls=certs)
    try:
        c.worker("w1")
        c.worker("w2")
        c.wait_for(2)
        address = json.loads(c.file.read_text())["address"]
        assert address.startswith("tls://")

        def autograder(*args, files=certs, ws="ws"):
            tls = ["--tls-ca", str(files / "ca.pem"), "--tls-cert", str(files / "instructor.pem"),
                   "--tls-key", str(files / "instructor.key")] if files else []
            command = [sys.executable, "-m", "autograder", *args, "--cluster", address, *tls]
            if args[0] == "grade":
                command += ["--workspace", str(tmp_path / ws)]
            return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)

        check = autograder("cluster-check", "--assignment", A)
        assert check.returncode == 0, check.stdout + check.stderr
        assert "2 of 2 workers can grade" in check.stdout
        graded = autograder("grade", A, str(subs))
        assert graded.returncode == 0, graded.stdout + graded.stderr
        assert [float(r["score"]) for r in read_csv(tmp_path / "ws", A)] == [{0: MAX, 1: 0.0, 2: 6.0}[i % 3] for i in range(6)]
        for files, ws in ((None, "plain"), (rogue, "rogue")):
            refused = autograder("grade", A, str(subs), files=files, ws=ws)
            assert refused.returncode == 2, refused.stdout + refused.stderr
            lines = refused.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("autograder: error: cannot reach the Dask scheduler at tls://"), lines
            assert ("it speaks TLS: give --tls-ca, --tls-cert and --tls-key" if files is None else
                    "its TLS refused this client's certificate or CA") in lines[0], lines
            assert not list((tmp_path / ws).glob("results/*/*.json"))
    finally:
        c.stop()


_SBATCH = """#!/bin/bash
# Slurm's sbatch, standing in: the job script runs on this machine, in a session of its own
# (the job id is its process group), as Slurm would run it on a node
script="${@: -1}"
cp "$script" "$FAKE_SLURM/job-$$.sh"
setsid bash "$FAKE_SLURM/job-$$.sh" > "$FAKE_SLURM/job-$$.log" 2>&1 < /dev/null &
echo $! > "$FAKE_SLURM/job-$$.id"
echo "Submitted batch job $!"
"""
_SCANCEL = """#!/bin/bash
for id in "$@"; do kill -TERM -- "-$id" 2>/dev/null; done
exit 0
"""


def test_the_slurm_recipe_grades_through_dask_jobqueue(tmp_path):
    """docs/cluster/slurm.py as written, with dask-jobqueue's own SLURMCluster and TLS from
    Security.temporary(); only `sbatch` and `scancel` are stand-ins, which run each job script
    dask-jobqueue writes on this machine and end it."""
    fake, jobs = tmp_path / "slurm-bin", tmp_path / "jobs"
    fake.mkdir()
    jobs.mkdir()
    for name, text in (("sbatch", _SBATCH), ("scancel", _SCANCEL)):
        (fake / name).write_text(text)
        (fake / name).chmod(0o755)
    subs = tmp_path / "subs"
    _class(subs, 6)
    env = {**os.environ, "PATH": f"{fake}:{BIN}:{os.environ['PATH']}", "FAKE_SLURM": str(jobs),
           "AUTOGRADER_WORKSPACE": str(tmp_path / "ws"), "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([str(BIN / "python"), str(ROOT / "docs" / "cluster" / "slurm.py"), A, str(subs), "2"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    ids = [int(f.read_text()) for f in jobs.glob("job-*.id")]
    try:
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
        assert "graded 6 of 6 with" in proc.stdout, proc.stdout
        assert [float(r["score"]) for r in read_csv(tmp_path / "ws", A)] == [{0: MAX, 1: 0.0, 2: 6.0}[i % 3] for i in range(6)]
        assert len(ids) == 2
        for script in jobs.glob("job-*.sh"):
            text = script.read_text()
            assert "#SBATCH" in text and f"cd {ROOT}" in text and text.count("--nthreads 1") == 1, text
            assert "--protocol tls://" in text and "--tls-key" in text, text
        deadline = time.time() + 60                 # scancel ended every job
        while time.time() < deadline and any(_alive(i) for i in ids):
            time.sleep(0.5)
        assert not any(_alive(i) for i in ids)
    finally:
        for i in ids:
            try:
                os.killpg(i, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def test_unsafe_and_cluster_are_refused_together(tmp_path):
    (tmp_path / "subs" / "s00").mkdir(parents=True)
    proc = run_grade(A, tmp_path / "subs", tmp_path / "ws", "--cluster", "tcp://127.0.0.1:9", "--unsafe-no-sandbox",
                     check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("autograder: error: --unsafe-no-sandbox and --cluster: nothing is graded "
                                   "unsandboxed on a cluster")
