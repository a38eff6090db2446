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
import os
import socket
import threading

from ..versions import course_version, grader_version
from . import abandoned


class Refused(Exception):
    """This worker must not grade (no sandbox, another course): one line naming the host, and
    the worker's address (the parent leaves it out, and sends the task on)."""

    def __init__(self, message: str, worker: str | None = None):
        super().__init__(message, worker)

    def __str__(self) -> str:
        return str(self.args[0])

    @property
    def worker(self) -> str | None:
        return self.args[1]


def _address() -> str | None:
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return None


_lock = threading.Lock()       # one grading at a time per worker process, whatever its threads
_state: dict = {}              # "key": (assignment, version, limits), "source", "box"


def host() -> str:
    return socket.gethostname()


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
        torch_version = str(torch.__version__)
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
        source, box = prepare(64, str(course.source_notebook(assignment)), limits, False, None)
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


OVERDUE_EXIT_SECONDS = 30.0


def _grace(limits) -> float:
    return limits.grace_seconds


def grade(assignment: str, version: str, limits, task) -> dict:
    """One submission (a pool's Task): its result, as a local worker returns it.

    As the local pool does, a grading that outlives `limits.grace_seconds` is abandoned: its
    sandbox is killed and the student gets the flagged 0 a local run gives ("unresponsive").
    Should the grading still not return `OVERDUE_EXIT_SECONDS` later (this process itself is
    stuck), the worker process ends: its nanny starts another, Dask grades the task elsewhere,
    and a task that does this every time ends in KilledWorker (pool_dask: a flagged 0)."""
    from ..flags import flag
    from ..sandbox.host import SandboxUnavailable
    from . import worker

    with _lock:
        try:
            source, box = _ready(assignment, version, limits)
            overdue, back = threading.Event(), threading.Event()

            def abandon() -> None:
                overdue.set()
                box.kill()
                if not back.wait(OVERDUE_EXIT_SECONDS):
                    os._exit(70)

            watch = threading.Timer(_grace(limits), abandon)
            watch.daemon = True
            watch.start()
            try:
                result = worker.grade_task(source, box, task)
            except SandboxUnavailable as exc:
                if overdue.is_set():
                    result = None
                else:
                    _drop()
                    raise Refused(f"{host()}: refused: the sandbox stopped working ({exc})") from None
            finally:
                back.set()
                watch.cancel()
        except Refused as exc:
            raise Refused(str(exc), _address()) from None
        if not overdue.is_set() and result is not None:     # None only when overdue
            return result
        _drop()                   # the next task starts a fresh sandbox
    return abandoned(task, flag("unresponsive", seconds=_grace(limits)))


__all__ = ["Refused", "grade", "report", "refusal"]
