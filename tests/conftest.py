"""Shared fixtures: the course's paths, and grading through the real command line."""
from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
# nbgrader shells out to alembic, and reads the course configuration from autograder/.
os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
os.environ["JUPYTER_CONFIG_PATH"] = str(ROOT / "autograder")
os.environ.pop("MPLBACKEND", None)

sys.path.insert(0, str(ROOT))
from autograder.course import assignments  # noqa: E402

ASSIGNMENTS = assignments(ROOT)


def sandbox_works() -> bool:
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return False
    probe = subprocess.run([bwrap, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "--dev", "/dev",
                            "--proc", "/proc", "true"], capture_output=True)
    return probe.returncode == 0


SANDBOX = sandbox_works()
needs_sandbox = pytest.mark.skipif(not SANDBOX, reason="bubblewrap cannot run here (make test installs it)")


def source_path(assignment: str) -> Path:
    return ROOT / "solutions" / assignment / f"{assignment}.ipynb"


def release_path(assignment: str) -> Path:
    return ROOT / "exercises" / assignment / f"{assignment}.ipynb"


def run_grade(assignment: str, submissions: Path, workspace: Path, *extra: str, check: bool = True,
              timeout: float = 900) -> subprocess.CompletedProcess:
    """`python -m autograder grade` exactly as an instructor runs it."""
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", assignment, str(submissions),
                           "--workspace", str(workspace), "--quiet", *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)
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
