"""Where things are: the course root, its assignments, the grading workspace."""
from __future__ import annotations

import os
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


def release(assignments: list[str], release_dir: Path | None = None):
    """Generate the student notebooks of each assignment (nbgrader's generate_assignment, with
    the course's configuration), all in this process: nbgrader is imported once, not once per
    assignment. Yields (assignment, folder written) as each is done."""
    for name in assignments:
        source_notebook(name)
    from traitlets.config.loader import PyFileConfigLoader

    from . import gradebook  # noqa: F401  (alembic on PATH, nbgrader's API without the URI grammars)
    from nbgrader.apps import NbGraderAPI

    os.environ.update(nbgrader_env())
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT / "autograder")).load_config()
    if release_dir is not None:
        config.CourseDirectory.release_directory = str(release_dir)
    api = NbGraderAPI(config=config)
    for name in assignments:
        outcome = api.generate_assignment(name, force=True)
        if not outcome["success"]:
            tail = (outcome.get("error") or outcome.get("log") or "").strip().splitlines()[-5:]
            raise CourseError(f"nbgrader generate_assignment {name} failed:\n  " + "\n  ".join(tail))
        yield name, (Path(release_dir) if release_dir is not None else ROOT / "exercises") / name
