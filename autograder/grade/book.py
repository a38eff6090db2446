"""nbgrader's gradebook during a grading run, in a thread of its own, doing the gradebook's
work only: scores written in batches, and each batch's standing read back (submission times
and late penalties applied by nbgrader's rules, manual scores included). What becomes of a
standing (the term applied to a result, the result and its feedback written) is the run's
next step, on the run's own thread (`Gradebook.settled`).
"""
from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any


@dataclass
class Settled:
    """A batch the gradebook has written, with what it says of each student in it."""

    results: list[tuple[dict, bool]]      # (result, graded in this run)
    lateness: dict                        # student -> nbgrader's lateness and penalty
    standing: dict                        # student -> the gradebook's standing (manual scores included)


class Gradebook:
    """nbgrader's gradebook, in a thread of its own: importing nbgrader (about a second),
    creating or opening the database and every write happen while the workers grade. Jobs
    run in order on the thread's one connection: `later` queues one. A gradebook that cannot
    be opened stops the run at the next student, in one line."""

    def __init__(self, url: str, assignment: str, source, terms, standings):
        from concurrent.futures import ThreadPoolExecutor

        self._thread = ThreadPoolExecutor(1, thread_name_prefix="gradebook")
        self._jobs: list = []
        self._pending: list[tuple[dict, bool]] = []
        self._where = (assignment, source.path.stem)
        # a batch's second starts with its first student, not when the gradebook opened (then
        # the first result was written alone, while the workers grade: 25-45 ms of CPU they lack)
        self._queued = False
        self._last: float | None = None
        self._lock = threading.Lock()
        self._gb: Any = None                # nbgrader's Gradebook, once opened (in this thread)
        self._opened: Any = None            # the context it was opened in
        self._closed = False
        self._standings = standings         # standings(gb, students) -> (lateness, standing), in this thread
        self._settled: deque[Settled] = deque()
        self.opened = self._thread.submit(self._open, url, assignment, source, terms)

    def _open(self, url: str, assignment: str, source, terms) -> None:
        from ..store import gradebook

        self._opened = gradebook.open_gradebook(url)
        self._gb = self._opened.__enter__()
        gradebook.ensure_assignment(self._gb, assignment, source, terms.due)
        if terms.roster:
            gradebook.add_students(self._gb, terms.roster)
        gradebook.rehearse(self._gb, assignment, source.path.stem, terms.policy)

    def _job(self, fn, *args):
        self.opened.result()
        return fn(self._gb, *args)

    def check(self) -> None:
        """Raise now if opening failed (a bad --db URL, say)."""
        if self.opened.done():
            self.opened.result()

    def later(self, fn, *args) -> None:
        self._jobs.append(self._thread.submit(self._job, fn, *args))

    # Scores are written in batches: every `BATCH_SECONDS`, or `BATCH_SIZE` students,
    # whichever comes first, and before anything reads the gradebook back (`close`).
    # A batch costs a commit (a disk flush) and a few queries: one per student made the
    # gradebook thread the grading parent's largest user of CPU. (A result is saved in the
    # workspace, flushed, once its batch has been written and read back: a run stopped before
    # that grades those students again.)
    # (Writing each of a run's last 8 results as soon as the thread was free left 0.02 s less
    # to write after the last student, and made 10 students take 0.08 s longer in all: each
    # batch costs this thread 25-45 ms of CPU, which the workers then lack.)
    BATCH_SECONDS, BATCH_SIZE = 1.0, 50

    def record_later(self, result: dict, fresh: bool) -> None:
        """Queue a student's scores; the thread writes what has queued up in one transaction."""
        with self._lock:
            self._pending.append((result, fresh))
            first = self._last = time.monotonic() if self._last is None else self._last
            due = not self._queued and (len(self._pending) >= self.BATCH_SIZE
                                        or time.monotonic() - first >= self.BATCH_SECONDS)
            self._queued |= due
        if due:
            self.later(self._drain)

    def _write_pending(self) -> None:
        with self._lock:
            if self._pending and not self._queued:
                self._queued = True
                self.later(self._drain)

    def _drain(self, gb) -> None:
        from ..store.gradebook import record_many

        with self._lock:
            batch, self._pending = self._pending, []
            self._queued, self._last = False, None
        if batch:
            record_many(gb, *self._where, batch)
            lateness, standing = self._standings(gb, [result["student"] for result, _ in batch])
            self._settled.append(Settled(batch, lateness, standing))

    def settled(self) -> list[Settled]:
        """The batches written and read back since the last call, oldest first."""
        out = []
        while self._settled:
            out.append(self._settled.popleft())
        return out

    def close(self) -> None:
        """Write what is queued and wait for every write; raise the first that failed, then
        close the connection in its thread."""
        if self._closed:
            return
        self._closed = True
        try:
            self._write_pending()
            for job in self._jobs:
                job.result()
        finally:
            def shut():
                if self._opened is not None:
                    self._opened.__exit__(None, None, None)
                    self._opened = None

            self._thread.submit(shut).result()
            self._thread.shutdown()


def read_standings(gb, students, *, assignment: str, notebook_name: str, by_id: dict, terms) -> tuple[dict, dict]:
    """nbgrader's lateness and each student's standing, for `students` (graded, on the roster
    or not): submission times and extensions in, late penalties applied by the term's policy."""
    from ..store.gradebook import apply_late_policy, standings

    times = {student: (by_id[student].submitted_at, terms.extension(student)) for student in students}
    lateness = apply_late_policy(gb, assignment, notebook_name, times, terms.policy) if times else {}
    return lateness, standings(gb, assignment, students=times)
