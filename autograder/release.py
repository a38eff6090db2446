"""`autograder release`: the student notebooks, generated from the instructor's with nbgrader.

nbgrader is imported as the gradebook imports it (`startup.fast_nbgrader`: the schema head
read in this process, no URI grammars), and generate_assignment writes the gradebook: this
is why release is not in `course`, which everything imports.
"""
from __future__ import annotations

import os
from pathlib import Path

from .course import ROOT, nbgrader_env, source_notebook
from .errors import CourseError


def release(assignments: list[str], release_dir: Path | None = None):
    """Generate the student notebooks of each assignment (nbgrader's generate_assignment, with
    the course's configuration), all in this process: nbgrader is imported once, not once per
    assignment. Yields (assignment, folder written) as each is done."""
    for name in assignments:
        source_notebook(name)
    from traitlets.config.loader import PyFileConfigLoader

    from . import startup

    startup.fast_nbgrader()
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
