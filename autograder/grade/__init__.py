"""`autograder grade`: the class's run (`run`: watched parallel workers, resume) and
the grading of one submission in a trusted worker (`submission`: proxies, tests)."""

import hashlib


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def abandoned(task, problem) -> dict:
    """A pool's result for a task (task.Task) whose grading was given up (grade/pool.py), with the
    `flags.Flag` that says why."""
    return {"student": task.student, "abandoned": problem.to_dict(), "notebook": task.notebook}


def student_salt(secret: str, assignment: str, student: str) -> str:
    """The inputs' seed for one student: a leaked input is worth nothing to a classmate, and
    grading the same student again draws the same inputs."""
    return hashlib.sha256(f"{secret}\x00{assignment}\x00{student}".encode()).hexdigest()
