"""The Dask pool: a class graded on the workers of a Dask cluster (`--cluster ADDRESS`), through
`distributed.Client`; no scheduler, RPC or queue of our own.

Each task carries one notebook's bytes and the parent's course version; each Dask worker
process grades it in a warm sandbox of its own (remote.py) and sends back the plain result
dict a local worker returns. The parent stays the only writer of the workspace, gradebook,
feedback and reports. Before the first task, every worker is asked whether it can grade
(`remote.report`): one that cannot sandbox, or whose course differs, is left out, and the run
says so in one line per worker (no worker left: the run stops, saying why).

Faults are Dask's to handle: a worker lost mid-task has its task run elsewhere; a task that
was on `distributed.scheduler.allowed-failures` + 1 workers as they died (3 by default, a
scheduler setting) ends in KilledWorker. Dask counts every task a dying worker held, the one it
was grading and those waiting behind it, so an innocent submission queued behind one that kills
its workers can end in KilledWorker too, or be left by Dask in "no-worker" for good (`_Run.unplaced`):
each such task is graded again after the rest, alone on the cluster, and only lost a second
time is it that student's flagged 0. A scheduler
lost for `LOST_SECONDS` stops the run in one line; every result written so far is kept, and
the same command resumes.

A Dask scheduler runs whatever its clients send it: reachable by instructors only (TLS:
`connect`'s `tls` files, or Dask's own configuration for a tls:// address).
"""
from __future__ import annotations

import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from .. import course
from ..flags import flag
from ..sandbox.host import Limits
from ..versions import course_version
from . import abandoned
from .phases import Phases

if TYPE_CHECKING:   # the class is made only where tasks are (task.py)
    from .task import Task


LOST_SECONDS = 20.0          # the scheduler unreachable this long: the run stops
SECURITY = None              # a distributed.security.Security a script built (docs/cluster/slurm.py:
                             # Security.temporary()): used for every connection instead of TLS files


def connect(settings: dict):
    """A `distributed.Client` for `settings` ({"address", "tls": {"ca", "cert", "key"}}): an
    address (tcp://, tls://, host:port) or a scheduler file (JSON). Raises CourseError."""
    from distributed import Client

    address, tls = settings["address"], settings.get("tls") or {}
    kwargs = {"timeout": "15s", "set_as_default": False}
    if SECURITY is not None:
        kwargs["security"] = SECURITY
    elif tls:
        from distributed.security import Security

        missing = [k for k in ("ca", "cert", "key") if not tls.get(k)]
        if missing:
            raise course.CourseError(f"--cluster with TLS needs a CA, a certificate and a key; "
                                     f"missing: {', '.join(missing)}")
        for k in ("ca", "cert", "key"):
            if not Path(tls[k]).is_file():
                raise course.CourseError(f"--tls-{k} {tls[k]}: no such file")
        kwargs["security"] = Security(tls_ca_file=tls["ca"], tls_client_cert=tls["cert"],
                                      tls_client_key=tls["key"], require_encryption=True)
    try:
        if "://" not in address and (address.endswith(".json") or Path(address).is_file()):
            if not Path(address).is_file():
                raise course.CourseError(f"--cluster {address}: no such scheduler file")
            return Client(scheduler_file=address, **kwargs)
        return Client(address, **kwargs)
    except course.CourseError:
        raise
    except Exception as exc:  # noqa: BLE001 (OSError, TimeoutError, ValueError from distributed)
        text = str(exc).splitlines()[0] if str(exc) else ""
        if "ssl_context" in text:
            why = "it speaks TLS: give --tls-ca, --tls-cert and --tls-key (or term.toml's cluster_tls_ca, ...)"
        elif "certificate" in text:
            why = f"its TLS refused this client's certificate or CA (not the cluster's?): {text}"
        else:
            why = f"{type(exc).__name__}: {text}"
        raise course.CourseError(f"cannot reach the Dask scheduler at {address}: {why}") from None


def survey(client, versions: dict[str, str]) -> dict[str, dict]:
    """Every worker's `remote.report`: worker address -> report."""
    from .remote import report

    return client.run(report, versions)


class DaskPool:
    """Tasks go to the workers found able, at most `PER_WORKER` per worker at a time, sent in
    batches of at least `BATCH` per worker (one message to the scheduler each). Few tasks wait
    on a worker, so that a worker lost takes few others' tasks down with it, and a worker that
    joins gets work soon. Dask restricts a task to the workers named. The restriction is loose:
    a task whose named workers are all gone (a worker its nanny restarted has a new address)
    goes to another, and one that lands on a worker not yet surveyed is refused there
    (`remote.Refused`) and sent on. New workers are surveyed every `SURVEY_SECONDS`."""

    PER_WORKER = 4
    BATCH = 2
    SURVEY_SECONDS = 2.0
    NO_WORKER_SECONDS = 120.0     # no worker able to grade this long: the run stops (and resumes)

    def __init__(self, settings: dict, source_path: Path, limits: Limits, phases: Phases | None = None):
        self.settings, self.limits = settings, limits
        self.phases = phases or Phases()
        self.assignment = Path(source_path).parent.name
        self.version = course_version(source_path)
        self.client = connect(settings)
        self.closed = False
        self.able: set[str] = set()
        self.seen: set[str] = set()      # surveyed, able or not
        self.refused: set[str] = set()
        try:
            self._survey(initial=True)
        except BaseException:
            self.close()
            raise
        self.size = len(self.able)
        self.phases.mark("cluster surveyed")

    def _survey(self, initial: bool = False) -> None:
        """Ask the workers not surveyed yet whether they can grade (one line per refusal);
        forget those that left."""
        from .remote import report

        current = set(self.client.scheduler_info()["workers"])
        self.able &= current
        self.seen &= current
        self.refused &= current
        new = sorted(current - self.seen)
        reports = self.client.run(report, {self.assignment: self.version}, workers=new, on_error="return") \
            if new else {}
        reports = {a: r for a, r in reports.items() if isinstance(r, dict)}   # not one that left meanwhile
        for address, found in sorted(reports.items()):
            self.seen.add(address)
            if found["sandbox"] is not None or found["differs"]:
                self.refused.add(address)
            if found["sandbox"] is not None:
                print(f"autograder: Dask worker {address} on {found['host']} refused: cannot sandbox "
                      f"({found['sandbox']}); nothing is graded there", file=sys.stderr)
            elif found["differs"]:
                print(f"autograder: Dask worker {address} on {found['host']} refused: its course differs "
                      f"from this one for {self.assignment} (its copy at {found['course_root']})", file=sys.stderr)
            else:
                self.able.add(address)
        if initial and not self.able:
            raise course.CourseError(f"no Dask worker at {self.settings['address']} can grade "
                                     f"({len(reports)} connected, all refused: see above)" if reports else
                                     f"the Dask cluster at {self.settings['address']} has no workers")

    def refuse(self, exc) -> None:
        """A worker refused a task (not surveyed yet, or its sandbox stopped working): said once,
        left out; the task goes to another."""
        if exc.worker not in self.refused:
            print(f"autograder: Dask worker {exc.worker} on {exc}", file=sys.stderr)
        self.seen.add(exc.worker)
        self.refused.add(exc.worker)
        self.able.discard(exc.worker)

    def trim(self, needed: int) -> None:
        """Dask places the tasks; nothing to stop."""

    def _submit(self, tasks: list[Task]) -> dict:
        """{future: task}, the tasks sent to the scheduler in one message."""
        from .remote import grade

        n = len(tasks)
        futures = self.client.map(grade, [self.assignment] * n, [self.version] * n, [self.limits] * n, tasks,
                                  key=[f"autograder-{t.student}-{uuid.uuid4().hex[:12]}" for t in tasks], pure=False,
                                  workers=sorted(self.able), allow_other_workers=True)
        return dict(zip(futures, tasks))

    def run(self, tasks: list[Task], on_result) -> None:
        from concurrent.futures import CancelledError

        from distributed import wait

        state = _Run(self, tasks, on_result)
        surveyed = lost_since = no_worker_since = None
        try:
            while state.unfinished():
                now = time.monotonic()
                if self.client.status != "running":
                    lost_since = lost_since or now
                    if now - lost_since > LOST_SECONDS:
                        raise course.CourseError(self._lost())
                    time.sleep(0.2)
                    continue
                lost_since = None
                if surveyed is None or now - surveyed > self.SURVEY_SECONDS:
                    try:
                        self._survey()
                        state.unplaced(self.client.processing())
                    except (CancelledError, OSError, TimeoutError):
                        time.sleep(0.2)
                        continue             # the scheduler's status says what happened
                    surveyed = now
                if not self.able:
                    no_worker_since = no_worker_since or now
                    if now - no_worker_since > self.NO_WORKER_SECONDS:
                        raise course.CourseError(
                            f"no Dask worker able to grade has been connected to {self.settings['address']} "
                            f"for {self.NO_WORKER_SECONDS:g} s; the results written so far are kept: run the "
                            f"same command again when workers are back")
                else:
                    no_worker_since = None
                    state.place()
                if not state.futures:
                    time.sleep(0.2)
                    continue
                try:
                    with self.client.as_current():
                        done, _ = wait(list(state.futures), timeout=1.0, return_when="FIRST_COMPLETED")
                except TimeoutError:
                    done = set()
                except (CancelledError, OSError) as exc:   # FuturesCancelledError: scheduler-connection-lost
                    raise course.CourseError(self._lost()) from exc
                for future in done:
                    state.collect(future)
        finally:
            if self.client.status == "running":     # a client closed after the scheduler was lost has none
                for future in state.futures:
                    future.cancel()

    def _lost(self) -> str:
        return (f"lost the Dask scheduler at {self.settings['address']}; the results written so far are "
                f"kept: run the same command again to grade the rest")

    def release(self) -> None:
        """The workers keep their warm sandboxes for the next run; nothing to tell them."""

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.client.close(timeout=5)
        except Exception:  # noqa: BLE001 (a lost scheduler: nothing left to close)
            pass


class _Run:
    """One `DaskPool.run`: the tasks not sent yet, those in flight, and those a dying worker took
    down (`lost`): each of those is graded again after the rest, alone on the cluster, and
    lost a second time, it is that student's flagged 0."""

    def __init__(self, pool: DaskPool, tasks: list[Task], on_result):
        self.pool, self.on_result = pool, on_result
        self.waiting = list(tasks)      # not sent yet
        self.futures: dict = {}         # sent: future -> task
        self.suspects: list[Task] = []
        self.alone: set[str] = set()
        self.unseen: set = set()        # keys no worker held at the last survey
        self.stuck: dict[str, int] = {}

    def unfinished(self) -> bool:
        return bool(self.waiting or self.futures or self.suspects)

    def place(self) -> None:
        """Send what the workers have room for, in one message; when all else is done, the next
        suspect, alone."""
        pool = self.pool
        room = pool.PER_WORKER * len(pool.able) - len(self.futures)
        if self.waiting and (room >= pool.BATCH * len(pool.able) or (room > 0 and not self.futures)):
            batch, self.waiting = self.waiting[:room], self.waiting[room:]
            self.futures.update(pool._submit(batch))
        if not self.waiting and not self.futures and self.suspects:
            task = self.suspects.pop(0)
            if task.student not in self.alone:
                print(f"autograder: {task.student}: Dask workers died while it was being graded; "
                      f"grading it again, alone on the cluster", file=sys.stderr)
                self.alone.add(task.student)
            self.futures.update(pool._submit([task]))

    STUCK_LIMIT = 3

    def unplaced(self, processing: dict) -> None:
        """A task held by no worker at two surveys in a row is stuck: Dask leaves a task whose
        named workers all died, when no worker was left at that moment, in "no-worker" for
        good, even after new workers join. It is sent again, to the workers there are now; stuck
        `STUCK_LIMIT` times (it takes every worker down with it), it is lost."""
        held = {key for keys in processing.values() for key in keys}
        now = {f.key for f in self.futures if f.key not in held and not f.done()}
        for future in [f for f in self.futures if f.key in now & self.unseen]:
            task = self.futures.pop(future)
            future.cancel()
            self.stuck[task.student] = self.stuck.get(task.student, 0) + 1
            if self.stuck[task.student] >= self.STUCK_LIMIT:
                self.stuck[task.student] = 0
                self.lost(task)
            elif task.student in self.alone:
                self.suspects.insert(0, task)
            else:
                self.waiting.insert(0, task)
        self.unseen = now

    def collect(self, future) -> None:
        from distributed.scheduler import KilledWorker

        from .remote import Refused

        task = self.futures.pop(future)
        if future.status == "cancelled":
            raise course.CourseError(self.pool._lost())
        exc = None if future.status == "finished" else future.exception()
        result = future.result() if exc is None else None
        future.release()         # else Dask keeps it, and grades it again if its worker dies
        if exc is None:
            self.pool.phases.mark("first result", once=True)
            self.on_result(result)
        elif isinstance(exc, Refused):
            self.pool.refuse(exc)
            self.waiting.insert(0, task)
        elif isinstance(exc, KilledWorker):
            self.lost(task)
        else:
            self.abandon(task, f"{type(exc).__name__} on the Dask worker")

    def lost(self, task: Task) -> None:
        if task.student not in self.alone:
            self.suspects.append(task)
        else:
            self.abandon(task, "grading it took down every Dask worker it ran on (Dask's allowed-failures), "
                               "twice, the second time alone on the cluster")

    def abandon(self, task: Task, detail: str) -> None:
        problem = flag("internal", detail=detail)
        self.on_result(abandoned(task, problem))


__all__ = ["DaskPool", "connect", "survey"]
