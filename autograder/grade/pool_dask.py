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
its workers can end in KilledWorker too: each such task is graded again after the rest, alone
on the cluster, and only a second KilledWorker makes it that student's flagged 0. A scheduler
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

from .. import course
from ..flags import flag
from ..sandbox.host import Limits
from . import course_version
from .phases import Phases


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
    """Tasks go to the workers found able, at most `AHEAD` + 1 per worker at a time (one graded,
    the next waiting): Dask restricts a task to the workers named, so that a worker lost takes
    few others' tasks down with it. The restriction is loose: a task whose named workers are all
    gone (a worker its nanny restarted has a new address) goes to another, and one that lands
    on a worker not yet surveyed is refused there (`remote.Refused`) and sent on. New workers
    are surveyed every `SURVEY_SECONDS`."""

    AHEAD = 1
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

        if initial:
            reports = survey(self.client, {self.assignment: self.version})
        else:
            current = set(self.client.scheduler_info()["workers"])
            self.able &= current
            self.seen &= current
            self.refused &= current
            new = sorted(current - self.seen)
            if not new:
                return
            reports = self.client.run(report, {self.assignment: self.version}, workers=new, on_error="return")
            reports = {a: r for a, r in reports.items() if isinstance(r, dict)}   # one that left meanwhile
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

    def trim(self, needed: int) -> None:
        """Dask places the tasks; nothing to stop."""

    def _submit(self, task: tuple):
        from .remote import grade

        return self.client.submit(grade, self.assignment, self.version, self.limits, task,
                                  key=f"autograder-{task[0]}-{uuid.uuid4().hex[:12]}", pure=False,
                                  workers=sorted(self.able), allow_other_workers=True)

    def run(self, tasks: list[tuple], on_result) -> None:
        from concurrent.futures import CancelledError

        from distributed import wait
        from distributed.scheduler import KilledWorker

        from .remote import Refused

        waiting = list(tasks)        # not submitted yet
        futures: dict = {}           # submitted: future -> task
        suspects: list[tuple] = []   # ended in KilledWorker once: graded again, alone, after the rest
        alone: set[str] = set()
        surveyed = lost_since = no_worker_since = None
        try:
            while waiting or futures or suspects:
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
                    except (CancelledError, OSError, TimeoutError):
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
                    while waiting and len(futures) < (self.AHEAD + 1) * len(self.able):
                        task = waiting.pop(0)
                        futures[self._submit(task)] = task
                    if not waiting and not futures and suspects:
                        task = suspects.pop(0)
                        print(f"autograder: {task[0]}: Dask workers died while it was being graded; "
                              f"grading it again, alone on the cluster", file=sys.stderr)
                        alone.add(task[0])
                        futures[self._submit(task)] = task
                if not futures:
                    time.sleep(0.2)
                    continue
                try:
                    with self.client.as_current():
                        done, _ = wait(list(futures), timeout=1.0, return_when="FIRST_COMPLETED")
                except TimeoutError:
                    done = set()
                except (CancelledError, OSError) as exc:   # FuturesCancelledError: scheduler-connection-lost
                    raise course.CourseError(self._lost()) from exc
                for future in done:
                    task = futures.pop(future)
                    if future.status == "cancelled":
                        raise course.CourseError(self._lost())
                    exc = None if future.status == "finished" else future.exception()
                    result = future.result() if exc is None else None
                    future.release()         # else Dask keeps it, and grades it again if its worker dies
                    if exc is None:
                        self.phases.mark("first result", once=True)
                        on_result(result)
                        continue
                    if isinstance(exc, Refused):
                        # a worker that cannot grade (not surveyed yet, or its sandbox stopped
                        # working): said once, left out; the task goes to another
                        if exc.worker not in self.refused:
                            print(f"autograder: Dask worker {exc.worker} on {exc}", file=sys.stderr)
                        self.seen.add(exc.worker)
                        self.refused.add(exc.worker)
                        self.able.discard(exc.worker)
                        waiting.insert(0, task)
                        continue
                    if isinstance(exc, KilledWorker) and task[0] not in alone:
                        suspects.append(task)
                        continue
                    if isinstance(exc, KilledWorker):
                        problem = flag("internal", detail="grading it killed every Dask worker it ran on, "
                                                          "twice as often as the cluster allows (its "
                                                          "allowed-failures), the second time alone")
                    else:
                        problem = flag("internal", detail=f"{type(exc).__name__} on the Dask worker")
                    on_result({"student": task[0], "abandoned": problem.to_dict(), "notebook": task[3]})
        finally:
            for future in futures:
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


__all__ = ["DaskPool", "connect", "survey"]
