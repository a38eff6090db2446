"""Shared fixtures: the course's paths, and grading through the real command line."""
from __future__ import annotations

import contextlib
import csv
import fcntl
import functools
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
# nbgrader shells out to alembic, and reads the course configuration from autograder/.
os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
os.environ["JUPYTER_CONFIG_PATH"] = str(ROOT / "autograder")
os.environ.pop("MPLBACKEND", None)
# `make test` runs two pytest workers on two cores. A torch or BLAS pool of two threads in
# each (and in every kernel and grader they start) makes four busy threads fight for two
# cores: the in-process mutant checks took 3 to 4 times their single-thread time. One
# thread each, as the sandbox already uses; the book is built as `make book` builds it
# (each chapter chooses its own threads).
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
INHERITED_THREADS = {var: os.environ.get(var) for var in THREAD_VARS}
os.environ.update(dict.fromkeys(THREAD_VARS, "1"))

sys.path.insert(0, str(ROOT))
from autograder.course import assignments  # noqa: E402

ASSIGNMENTS = assignments(ROOT)


@functools.cache
def sandbox_works() -> bool:
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return False
    probe = subprocess.run([bwrap, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "--dev", "/dev",
                            "--proc", "/proc", "true"], capture_output=True)
    return probe.returncode == 0


def __getattr__(name: str):
    """`SANDBOX` and `needs_sandbox`, worked out when a test module first imports them: the
    probe starts bubblewrap, and the unit layer starts no process, not even while collecting."""
    if name == "SANDBOX":
        return sandbox_works()
    if name == "needs_sandbox":
        return pytest.mark.skipif(not sandbox_works(), reason="bubblewrap cannot run here (make test installs it)")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def pytest_configure(config):
    """`make test` runs `pytest -n 2 --dist loadgroup`, and files marked with one xdist_group
    share an expensive fixture on one worker (the book build, a graded class). pytest-xdist
    groups a test by renaming its id (`item._nodeid`); pytest 9.2 reads ids from elsewhere,
    so nothing is grouped and those fixtures run on both workers at once. Refuse that."""
    if config.getoption("dist", "no") == "loadgroup" and not hasattr(config, "workerinput"):
        import inspect

        from _pytest.nodes import Node

        if "_nodeid" not in inspect.getsource(Node.nodeid.fget):
            raise pytest.UsageError(f"pytest {pytest.__version__} ignores pytest-xdist's --dist loadgroup "
                                    "(tests would not be grouped): install the versions in requirements.txt")
    if not hasattr(config, "workerinput"):
        _enough_disk(config)


# What the book build, the graded classes and the browser tests write while the whole suite
# runs: about 0.5 GiB at its peak (free space sampled every 20 s through a clean clone's
# `make test`, 2026-11-28). A full disk fails a thousand tests with errors that do not say
# why (a CI run did, with 161 MiB free); below four times that, one line says so instead.
DISK_NEEDED = 2 << 30


def _free_space(config) -> list[tuple[str, int]]:
    """Free bytes where the run writes: its temporary files and the checkout (_build/)."""
    base = Path(config.option.basetemp).parent if config.option.basetemp else Path(tempfile.gettempdir())
    while not base.exists():
        base = base.parent
    return [(str(where), shutil.disk_usage(where).free) for where in (base, ROOT)]


def _enough_disk(config) -> None:
    only_units = all(Path(arg.split("::")[0]).resolve().is_relative_to(ROOT / "tests" / "unit") for arg in config.args)
    short = [(where, free) for where, free in _free_space(config) if free < DISK_NEEDED]
    if short and not only_units:
        where, free = short[0]
        raise pytest.UsageError(f"only {free / 2**20:.0f} MiB free on the disk of {where}: the whole suite needs "
                                f"about {DISK_NEEDED >> 30} GiB (the book build, graded classes); free some and run again")


def pytest_report_header(config):
    return "free disk space: " + ", ".join(f"{free / 2**30:.1f} GiB in {where}" for where, free in _free_space(config))


def build_book() -> subprocess.CompletedProcess:
    """`jupyter-book build`, as `make book` runs it (reusing the execution cache), one build
    at a time on this machine: a second caller waits for the first, then builds again on its
    cache (quick). Two builds into one _build/ at once would break each other."""
    lock_path = ROOT / "_build" / ".build.lock"
    lock_path.parent.mkdir(exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
        env.update({k: v for k, v in INHERITED_THREADS.items() if v is not None})
        return subprocess.run([str(BIN / "jupyter-book"), "build", ".", "--warningiserror", "--nitpick",
                               "--keep-going"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)


def source_path(assignment: str) -> Path:
    return ROOT / "solutions" / assignment / f"{assignment}.ipynb"


def release_path(assignment: str) -> Path:
    return ROOT / "exercises" / assignment / f"{assignment}.ipynb"


STUDENT_UID = 65534          # nobody: who runs what these tests run "without root", as root


@contextlib.contextmanager
def reachable(paths):
    """As root: every folder on the way to `paths` enterable by others (the execute bit: enter,
    not list), for the block's length, then its mode back. The interpreter, the virtual
    environment and this checkout may sit where only root may enter (pyenv under /root, a
    clone under `mktemp -d`), and a user without root must reach them. One block at a time
    on this machine (a lock): the folders' modes are shared by the tests' workers."""
    changed: dict[Path, int] = {}
    lock = os.open(Path(tempfile.gettempdir()) / "autograder-tests-reachable.lock", os.O_RDONLY | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.geteuid() == 0:
            for path in paths:
                for folder in [Path(path), *Path(path).parents]:
                    mode = folder.stat().st_mode
                    if folder.is_dir() and not mode & stat.S_IXOTH and folder not in changed:
                        changed[folder] = stat.S_IMODE(mode)
                        folder.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)
        yield
    finally:
        for folder, mode in changed.items():
            folder.chmod(mode)
        os.close(lock)


def student_folder(path: Path) -> Path:
    """A new folder the user of `run_unprivileged` owns (a home, a workspace)."""
    path.mkdir(mode=0o755)
    if os.geteuid() == 0:
        os.chown(path, STUDENT_UID, STUDENT_UID)
    return path


def run_unprivileged(args: list[str], *, home: Path, cwd: Path | None = None, env: dict[str, str] | None = None,
                     reach=(), timeout: float = 300) -> subprocess.CompletedProcess:
    """`args` run by a user without root, with `home` (a `student_folder`) as their home and
    only the course's environment (`env`: more variables): `nobody` when the tests run as
    root, else the user running them. `reach`: more paths that user must reach (`reachable`)."""
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(home), "JUPYTER_CONFIG_PATH": str(ROOT / "autograder"),
           **dict.fromkeys(THREAD_VARS, "1"), **(env or {})}
    user = {"user": STUDENT_UID, "group": STUDENT_UID, "extra_groups": []} if os.geteuid() == 0 else {}
    cwd = cwd or home
    with reachable([Path(os.path.realpath(sys.executable)).parent, Path(sys.prefix), ROOT, cwd, home, *reach]):
        return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, **user)


def run_grade(assignment: str, submissions: Path, workspace: Path, *extra: str, check: bool = True,
              timeout: float = 900, env: dict[str, str] | None = None,
              unprivileged_home: Path | None = None) -> subprocess.CompletedProcess:
    """`python -m autograder grade` exactly as an instructor runs it (`env`: more variables
    in its environment). With `unprivileged_home`, as an instructor without root runs it
    (`run_unprivileged`), with that folder as their home."""
    args = [sys.executable, "-m", "autograder", "grade", assignment, str(submissions), "--workspace", str(workspace),
            "--quiet", *extra]
    if unprivileged_home is not None:
        proc = run_unprivileged(args, home=unprivileged_home, cwd=ROOT, env=env, reach=[submissions, workspace],
                                timeout=timeout)
    else:
        proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, **env} if env else None)
    if check and proc.returncode != 0:
        raise AssertionError(f"autograder grade failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def read_results(workspace: Path, assignment: str) -> dict[str, dict]:
    """{student id: result}; files are named by the student's workspace name."""
    folder = workspace / "results" / assignment
    results = [json.loads(p.read_text()) for p in folder.glob("*.json")]
    return {r["student"]: r for r in results}


def read_csv(workspace: Path, assignment: str) -> list[dict]:
    with open(workspace / "reports" / assignment / "grades.csv", newline="") as f:
        return list(csv.DictReader(f))


_STARTED = time.time()


def pytest_terminal_summary(terminalreporter):
    """The book's execution times, measured by the build, printed where CI's log shows them."""
    times = ROOT / "_build" / "execution_times.txt"
    if times.is_file() and times.stat().st_mtime >= _STARTED:
        terminalreporter.write_sep("-", "book execution")
        terminalreporter.write(times.read_text())
