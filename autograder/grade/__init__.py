"""`autograder grade`: the class's run (`run`: watched parallel workers, resume) and
the grading of one submission in a trusted worker (`submission`: proxies, tests)."""

import hashlib
from typing import NamedTuple

from ..versions import course_version, grader_version  # noqa: F401  (where callers find them)


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
