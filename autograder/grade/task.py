"""A pool's task: one submission to grade. Its own module, imported where tasks are made
(run.py), not by the package: the fork server imports the package before it pauses Python's
cycle collector (preload.py), and a class made there would cost collections outside the pause."""
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
