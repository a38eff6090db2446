"""`autograder grade`: the class's run (`run`: watched parallel workers, resume) and
the grading of one submission in a trusted worker (`submission`: proxies, tests)."""

import hashlib
from pathlib import Path
from typing import NamedTuple


class Task(NamedTuple):
    """One submission to grade, as a pool sends it to a worker (pickled: by pipe to a local
    worker, by Dask to a remote one)."""

    student: str
    assignment: str
    data: bytes | None          # the notebook's bytes (None: no readable notebook)
    notebook: str | None        # its file name
    problem: object             # the flags.Flag that says why it could not be read, or None
    salt: str                   # the seed of the student's inputs (student_salt)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def abandoned(task: Task, problem) -> dict:
    """A pool's result for a task whose grading was given up (grade/pool.py), with the
    `flags.Flag` that says why."""
    return {"student": task.student, "abandoned": problem.to_dict(), "notebook": task.notebook}


def student_salt(secret: str, assignment: str, student: str) -> str:
    """The inputs' seed for one student: a leaked input is worth nothing to a classmate, and
    grading the same student again draws the same inputs."""
    return hashlib.sha256(f"{secret}\x00{assignment}\x00{student}".encode()).hexdigest()


def grader_version() -> str:
    """A digest of the grader's code (every module of the autograder package)."""
    package = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for module in sorted(package.rglob("*.py")):
        h.update(module.relative_to(package).as_posix().encode())
        h.update(module.read_bytes())
    return h.hexdigest()


def course_version(source_path) -> str:
    """The version of what decides a grade besides the limits and the secret: the instructor's
    notebook (visible and hidden tests, points, solution) and the grader's code. A Dask worker
    whose course gives another version refuses the work (pool_dask.py); resume keys build on it."""
    h = hashlib.sha256()
    h.update(Path(source_path).read_bytes())
    h.update(grader_version().encode())
    return h.hexdigest()
