"""What a Dask worker runs for `pool_dask`: one submission at a time, graded as a local worker
grades it (worker.py), in a warm sandbox this worker process keeps across tasks.

Each worker process checks, before its first submission, that it can sandbox (bubblewrap, user
namespaces) and that its course is the parent's (`course_version`: tests, solutions, grader);
else it refuses with `Refused`, one line naming its host, and grades nothing. Student code runs
only inside the sandbox; tests, hidden tests and solutions stay in this trusted process.
Notebooks arrive as bytes in the task and results leave as plain data: nothing is read from
or written to a shared file system.
"""
from __future__ import annotations

import atexit
import fcntl
import os
import socket
import tempfile
import threading
from pathlib import Path

from . import course_version, grader_version


class Refused(Exception):
    """This worker must not grade (no sandbox, another course): one line naming the host."""


_lock = threading.Lock()       # one grading at a time per worker process, whatever its threads
_state: dict = {}              # "key": (assignment, version, limits), "source", "box", "slot"


def host() -> str:
    return socket.gethostname()


def _slot() -> int:
    """A sandbox slot (it names the sandbox's uid) no other process on this host holds: slots
    64-127, claimed with a lock file for the life of this process (a local run uses 0-63)."""
    if "slot" in _state:
        return _state["slot"][0]
    for slot in range(64, 128):
        fd = os.open(Path(tempfile.gettempdir()) / f"autograder-dask-slot-{slot}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        _state["slot"] = (slot, fd)
        return slot
    raise Refused(f"{host()}: refused: more than 64 grading worker processes on this host")


def report(versions: dict[str, str]) -> dict:
    """This worker as `autograder cluster-check` shows it: host, can it sandbox, is its course
    the parent's (`versions`: assignment -> version), torch's and the grader's versions."""
    from .. import course
    from ..sandbox.host import sandbox_problem

    differs = []
    for assignment, version in sorted(versions.items()):
        try:
            mine = course_version(course.source_notebook(assignment))
        except course.CourseError:
            mine = None
        if mine != version:
            differs.append(assignment)
    try:
        import torch
        torch_version = torch.__version__
    except ImportError:
        torch_version = "none"
    return {"host": host(), "sandbox": sandbox_problem(), "differs": differs, "torch": torch_version,
            "grader": grader_version()[:12], "course_root": str(course.ROOT)}


def refusal(assignment: str, version: str) -> str | None:
    """Why this worker must not grade `assignment` at `version` (one line naming the host)."""
    from ..sandbox.host import sandbox_problem

    problem = sandbox_problem()
    if problem is not None:
        return f"{host()}: refused: cannot sandbox ({problem}); nothing is graded there"
    found = report({assignment: version})
    if found["differs"]:
        return (f"{host()}: refused: its course differs from the parent's for {assignment} "
                f"(tests, solutions or grader; its copy at {found['course_root']})")
    return None


def _ready(assignment: str, version: str, limits):
    """The assignment and a warm sandbox, made at this process's first task and kept."""
    key = (assignment, version, limits)
    if _state.get("key") == key:
        return _state["source"], _state["box"]
    _drop()
    why = refusal(assignment, version)
    if why is not None:
        raise Refused(why)
    from .. import course
    from ..sandbox.host import SandboxUnavailable
    from .worker import prepare

    try:
        source, box = prepare(_slot(), str(course.source_notebook(assignment)), limits, False, None)
    except SandboxUnavailable as exc:
        raise Refused(f"{host()}: refused: the sandbox could not start ({exc})") from None
    _state.update(key=key, source=source, box=box)
    return source, box


def _drop() -> None:
    box = _state.pop("box", None)
    _state.pop("key", None)
    _state.pop("source", None)
    if box is not None:
        box.close()


atexit.register(_drop)


def grade(assignment: str, version: str, limits, task: tuple) -> dict:
    """One submission (a pool's task tuple): its result, as a local worker returns it."""
    from ..sandbox.host import SandboxUnavailable
    from .worker import grade_task

    with _lock:
        source, box = _ready(assignment, version, limits)
        try:
            return grade_task(source, box, task)
        except SandboxUnavailable as exc:
            _drop()
            raise Refused(f"{host()}: refused: the sandbox stopped working ({exc})") from None


__all__ = ["Refused", "grade", "report", "refusal"]
