"""Grading on a Dask cluster (`--cluster`): a real `dask scheduler` and `dask worker` processes on
localhost. The adversarial class graded through the cluster gives the grades.csv of a local run;
a worker killed mid-run loses no student and records none twice; a worker that cannot sandbox
(no bubblewrap on its PATH) or whose course differs is refused in one line."""
from __future__ import annotations

import collections
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
from tests.test_adversarial import CASES, MAX, WRONG, _contents, _Listener, correct_code, with_answer, write

A = "02_similarity"
pytestmark = [needs_sandbox, pytest.mark.xdist_group("dask")]     # one pytest worker: each test runs a class


class Cluster:
    """A scheduler and its workers, each in a process group of its own, all killed by `stop`."""

    def __init__(self, folder: Path):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.file = folder / "scheduler.json"
        self.procs: list[subprocess.Popen] = []
        self.scheduler = self._start([str(BIN / "dask"), "scheduler", "--no-dashboard", "--port", "0",
                                      "--host", "127.0.0.1", "--scheduler-file", str(self.file)], "scheduler")
        deadline = time.time() + 60
        while not self.file.exists() and time.time() < deadline:
            time.sleep(0.1)
        assert self.file.exists(), (folder / "scheduler.log").read_text()[-2000:]

    def _start(self, args, name, env=None, cwd=ROOT) -> subprocess.Popen:
        log = open(self.folder / f"{name}.log", "w")
        base = {**os.environ, "PYTHONPATH": str(cwd), "OMP_NUM_THREADS": "1"}
        proc = subprocess.Popen(args, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**base, **(env or {})})
        self.procs.append(proc)
        return proc

    def worker(self, name: str, env=None, cwd=ROOT) -> subprocess.Popen:
        return self._start([str(BIN / "python"), str(BIN / "dask"), "worker", "--nthreads", "1", "--nworkers", "1",
                            "--no-dashboard", "--host", "127.0.0.1", "--scheduler-file", str(self.file)],
                           name, env, cwd)

    def wait_for(self, n: int) -> None:
        from distributed import Client

        with Client(scheduler_file=str(self.file), timeout="30s", set_as_default=False) as client:
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
    check = subprocess.run([sys.executable, "-m", "autograder", "cluster-check", "--cluster", str(cluster.file),
                            "--assignment", A], cwd=ROOT, capture_output=True, text=True, timeout=300)
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


def test_term_toml_names_the_cluster_and_its_tls_files(tmp_path):
    from autograder.term import resolve

    (tmp_path / "term.toml").write_text('cluster = "scheduler.json"\ncluster_tls_ca = "ca.pem"\n'
                                        'cluster_tls_cert = "/etc/grading/me.pem"\n')
    terms = resolve(tmp_path, A)
    assert terms.cluster == str(tmp_path / "scheduler.json")
    assert terms.cluster_tls == {"ca": str(tmp_path / "ca.pem"), "cert": "/etc/grading/me.pem", "key": None}
    (tmp_path / "term.toml").write_text('cluster = "tls://grading.example.org:8786"\n')
    assert resolve(tmp_path, A).cluster == "tls://grading.example.org:8786"


def test_unsafe_and_cluster_are_refused_together(tmp_path):
    (tmp_path / "subs" / "s00").mkdir(parents=True)
    proc = run_grade(A, tmp_path / "subs", tmp_path / "ws", "--cluster", "tcp://127.0.0.1:9", "--unsafe-no-sandbox",
                     check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip() == ("autograder: error: --unsafe-no-sandbox and --cluster: nothing is graded "
                                   "unsandboxed on a cluster")
