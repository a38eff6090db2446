"""Where things are: the course root, its assignments, the grading workspace."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class CourseError(Exception):
    """A problem the user can fix (wrong name, missing folder); one line, no traceback."""


def workspace() -> Path:
    return Path(os.environ.get("AUTOGRADER_WORKSPACE", ROOT / "grading")).resolve()


def assignments(root: Path = ROOT) -> list[str]:
    return sorted(p.name for p in (root / "solutions").iterdir()
                  if p.is_dir() and (p / f"{p.name}.ipynb").exists())


def source_notebook(assignment: str, root: Path = ROOT) -> Path:
    path = root / "solutions" / assignment / f"{assignment}.ipynb"
    if not path.exists():
        known = ", ".join(assignments(root)) or "none"
        raise CourseError(f"no assignment named '{assignment}' (known: {known})")
    return path


def nbgrader_env(extra: dict | None = None) -> dict:
    """Environment for running nbgrader on this course: our config, and the venv's bin/
    (nbgrader shells out to alembic) on PATH."""
    env = dict(os.environ)
    env["JUPYTER_CONFIG_PATH"] = str(ROOT / "autograder")
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(extra or {})
    return env


def nbgrader(*args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=ROOT,
                          env=nbgrader_env(env), capture_output=True, text=True)
    if check and proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        raise CourseError(f"nbgrader {args[0]} failed:\n  " + "\n  ".join(tail))
    return proc


def release(assignment: str, release_dir: Path | None = None) -> Path:
    """Generate the student notebook(s) of `assignment` (nbgrader generate_assignment)."""
    source_notebook(assignment)
    args = ["generate_assignment", assignment, "--force"]
    if release_dir is not None:
        args.append(f"--CourseDirectory.release_directory={release_dir}")
    nbgrader(*args)
    return (release_dir or ROOT / "exercises") / assignment
