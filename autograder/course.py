"""Where things are: the course root, its assignments, the grading workspace."""
from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


from .errors import CourseError  # noqa: F401  (where callers have always found it)


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
