"""The local pool: grading workers forked from a fork server on this machine (forkserver.py),
each with one warm sandbox (worker.py), watched by the parent. One of the two implementations
of `pool.Pool` (the other is pool_dask.py)."""
from __future__ import annotations

import multiprocessing as mp
import os
import sys
import threading
import time
from multiprocessing.connection import wait
from pathlib import Path
from typing import TYPE_CHECKING

from .. import course
from ..flags import flag
from ..sandbox.host import Limits, remove_stale_cgroups
from . import abandoned, forkserver
from .phases import Phases

if TYPE_CHECKING:   # the class is made only where tasks are (task.py)
    from .task import Task


def _worker_entry(*args) -> None:
    """A grading worker's first call (worker.py has the rest). Workers are forked from a
    server that has imported worker.py and the assignment's modules (torch...) once; this
    process, which only reads, writes and waits, imports none of them."""
    from .worker import main

    main(*args)


class _Worker:
    """A worker as the parent sees it: the submission it grades (`task`, since `started`),
    and the next one, sent ahead (`queued`): the worker reads it the moment it has sent its
    result, without waiting for this process to write that result and send it more work."""

    def __init__(self, ctx, slot: int, source_path: Path, limits: Limits, unsafe: bool):
        self.slot = slot
        self.conn, theirs = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_entry, args=(theirs, slot, str(source_path), limits, unsafe),
                                daemon=True, name=f"grading-worker-{slot}")
        self.proc.start()
        theirs.close()
        self.ready = self.released = False
        self.task: Task | None = None
        self.queued: Task | None = None
        self.started = 0.0
        self.room = _send_room(self.conn)

    def give(self, task: Task) -> None:
        self.task, self.started = task, time.monotonic()
        self.conn.send(task)

    def give_ahead(self, task: Task) -> bool:
        """Send the next submission while this one is graded, if it fits in the connection's
        buffer (a send that had to wait for the worker would hold up every other worker)."""
        if self.task is None or self.queued is not None or len(task.data or b"") > self.room:
            return False
        self.queued = task
        self.conn.send(task)
        return True

    def done(self) -> None:
        """Its result arrived: the task sent ahead, if any, is being graded from now."""
        self.task, self.queued = self.queued, None
        if self.task is not None:
            self.started = time.monotonic()

    def release(self, kill: bool = False) -> None:
        """Tell the worker to end, without waiting for it: it takes its sandbox down while
        this process writes the last results. Killed if asked, or if still warming up."""
        kill = kill or not self.ready         # still warming up: nothing to finish
        if not kill and not self.released:
            try:
                self.conn.send(None)
            except OSError:
                kill = True
        self.released = True
        if kill:
            self.proc.kill()

    def stop(self, kill: bool = False) -> None:
        self.release(kill)
        self.proc.join(timeout=10)
        self.conn.close()


def _send_room(conn) -> int:
    """How many bytes of a submission may be sent ahead on `conn` without blocking: a quarter
    of its send buffer, raised to 4 MiB where the system allows (what Linux reports is twice
    what it reserves for data, so this leaves a wide margin)."""
    import socket

    sock = socket.socket(fileno=os.dup(conn.fileno()))
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    except OSError:
        pass
    try:
        return sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) // 4
    except OSError:
        return 0
    finally:
        sock.close()


class LocalPool:
    """Workers the parent watches: a task that outlives `limits.grace_seconds`, or a worker
    that dies, costs that student a flagged 0 and the worker is replaced."""

    def __init__(self, n: int, source_path: Path, limits: Limits, unsafe: bool, warm: tuple[str, ...] = (),
                 phases: Phases | None = None):
        # Workers fork from a server process that imports, once, what every worker needs:
        # the grading code and the modules the assignment's cells import. A fresh
        # interpreter per worker (spawn) would import torch once per worker.
        self.ctx = mp.get_context("forkserver")
        # Each worker's sandboxes are forked from its state before it reads anything secret
        # (template.py): what the fork server and the workers get of this process must hold
        # no secret either. The command line (a --db URL may carry a password) is left out
        # of what each worker is sent; the fork server starts with a reduced environment.
        self.argv, sys.argv = sys.argv, sys.argv[:1]
        forkserver.start(warm)          # unless `autograder grade` started it already
        self.source_path, self.limits, self.unsafe = source_path, limits, unsafe
        self.phases = phases or Phases()
        self.next_slot, self.size, self.closed = 0, n, False
        self.workers: list[_Worker] = []
        self.failed_starts = 0
        self.start_error: Exception | None = None
        # The first worker's start waits for the fork server's imports: let this process
        # go on with its own work (the gradebook, reading the submissions) meanwhile.
        self._starting = threading.Thread(target=self._start, args=(n,), name="start-workers", daemon=True)
        self._starting.start()

    def _start(self, n: int) -> None:
        try:
            for _ in range(n):
                self.workers.append(self._spawn())
            self.phases.mark("workers forked")
        except Exception as exc:  # noqa: BLE001 (reported where the pool is next used)
            self.start_error = exc

    def started(self) -> None:
        self._starting.join()
        if self.start_error is not None or not self.workers:
            raise course.CourseError(f"the grading workers could not be started: {self.start_error}")

    def trim(self, needed: int) -> None:
        """No more workers than submissions to grade."""
        self._starting.join()
        for w in self.workers[needed:]:
            self.workers.remove(w)
            w.stop(kill=True)

    def _spawn(self) -> _Worker:
        slot = self.next_slot % 64          # the slot preferred: Sandbox claims one no other holds
        self.next_slot += 1
        return _Worker(self.ctx, slot, self.source_path, self.limits, self.unsafe)

    def _replace(self, worker: _Worker) -> None:
        worker.stop(kill=True)
        self.workers[self.workers.index(worker)] = self._spawn()

    def run(self, tasks: list[Task], on_result) -> None:
        self.started()
        queue = list(tasks)

        def feed(w: _Worker) -> None:
            if w.ready and w.task is None and queue:
                w.give(queue.pop(0))
            # one more ahead, while there is more work than workers (at the end, a task sent
            # ahead to one worker could wait while another is idle)
            if w.ready and len(queue) > len(self.workers) and w.give_ahead(queue[0]):
                queue.pop(0)

        while queue or any(w.task for w in self.workers):
            for w in self.workers:
                feed(w)
            ready = wait([w.conn for w in self.workers] + [w.proc.sentinel for w in self.workers], timeout=1.0)
            for w in list(self.workers):
                if w.conn in ready:
                    try:
                        kind, payload = w.conn.recv()
                    except (EOFError, OSError):
                        self._lost(w, on_result, "the grading worker ended unexpectedly", queue)
                        continue
                    if kind == "ready":
                        w.ready, self.failed_starts = True, 0
                        self.phases.mark("a worker ready", once=True)
                        feed(w)
                    elif kind == "result":
                        w.done()
                        self.phases.mark("first result", once=True)
                        feed(w)          # the worker goes on while this process writes the result
                        on_result(payload)
                    elif kind == "unavailable":
                        raise course.CourseError(f"the sandbox could not start: {payload}")
                elif w.proc.sentinel in ready or not w.proc.is_alive():
                    self._lost(w, on_result, "the grading worker ended unexpectedly", queue)
                elif w.task and time.monotonic() - w.started > self.limits.grace_seconds:
                    self._lost(w, on_result, None, queue)

    def _lost(self, w: _Worker, on_result, why: str | None, queue: list) -> None:
        """The submission being graded is flagged; the one sent ahead was not started, and is
        graded by another worker."""
        task = w.task
        if w.queued is not None:
            queue.insert(0, w.queued)
        if not w.ready:
            self.failed_starts += 1
            if self.failed_starts >= 3:
                raise course.CourseError("grading workers keep failing to start; run with a single "
                                         "submission to see why")
        self._replace(w)
        if task is not None:
            problem = flag("unresponsive", seconds=self.limits.grace_seconds) if why is None else \
                flag("internal", detail=why)
            on_result(abandoned(task, problem))

    def release(self) -> None:
        """Tell every worker to end; `close` waits for them."""
        self._starting.join()
        for w in self.workers:
            w.release(kill=w.task is not None)

    def close(self) -> None:
        self._starting.join()
        if self.closed:
            return
        self.closed = True
        self.release()                       # all of them at once, then wait for each
        for w in self.workers:
            w.stop()
        forkserver.stop()
        remove_stale_cgroups()
        sys.argv = self.argv


__all__ = ["LocalPool"]
