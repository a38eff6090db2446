"""The Dask pool: a class graded on the workers of a Dask cluster (`--cluster ADDRESS`), through
`distributed.Client`; no scheduler, RPC or queue of our own.

Each task carries one notebook's bytes and the parent's course version; each Dask worker
process grades it in a warm sandbox of its own (remote.py) and sends back the plain result
dict a local worker returns. The parent stays the only writer of the workspace, gradebook,
feedback and reports. Before the first task, every worker is asked whether it can grade
(`remote.report`): one that cannot sandbox, or whose course differs, is left out, and the run
says so in one line per worker (no worker left: the run stops, saying why).

Faults are Dask's to handle: a worker lost mid-task has its task run elsewhere; a task that
was running on `distributed.scheduler.allowed-failures` + 1 workers as they died (3 by default,
a scheduler setting) ends in KilledWorker, and that student gets a flagged 0. A scheduler
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
        raise course.CourseError(f"cannot reach the Dask scheduler at {address}: "
                                 f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from None


def survey(client, versions: dict[str, str]) -> dict[str, dict]:
    """Every worker's `remote.report`: worker address -> report."""
    from .remote import report

    return client.run(report, versions)


class DaskPool:
    def __init__(self, settings: dict, source_path: Path, limits: Limits, phases: Phases | None = None):
        self.settings, self.limits = settings, limits
        self.phases = phases or Phases()
        self.assignment = Path(source_path).parent.name
        self.version = course_version(source_path)
        self.client = connect(settings)
        self.closed = False
        try:
            self.workers = self._able()
        except BaseException:
            self.close()
            raise
        self.size = len(self.workers)
        self.phases.mark("cluster surveyed")

    def _able(self) -> list[str]:
        reports = survey(self.client, {self.assignment: self.version})
        able = []
        for address, found in sorted(reports.items()):
            if found["sandbox"] is not None:
                print(f"autograder: Dask worker {address} on {found['host']} refused: cannot sandbox "
                      f"({found['sandbox']}); nothing is graded there", file=sys.stderr)
            elif found["differs"]:
                print(f"autograder: Dask worker {address} on {found['host']} refused: its course differs "
                      f"from this one for {self.assignment} (its copy at {found['course_root']})", file=sys.stderr)
            else:
                able.append(address)
        if not able:
            raise course.CourseError(f"no Dask worker at {self.settings['address']} can grade "
                                     f"({len(reports)} connected, all refused: see above)" if reports else
                                     f"the Dask cluster at {self.settings['address']} has no workers")
        return able

    def trim(self, needed: int) -> None:
        """Dask places the tasks; nothing to stop."""

    def run(self, tasks: list[tuple], on_result) -> None:
        from concurrent.futures import CancelledError

        from distributed import wait
        from distributed.scheduler import KilledWorker

        from .remote import Refused, grade

        futures = {}
        for task in tasks:
            future = self.client.submit(grade, self.assignment, self.version, self.limits, task,
                                        key=f"autograder-{task[0]}-{uuid.uuid4().hex[:12]}", pure=False,
                                        workers=self.workers, allow_other_workers=False)
            futures[future] = task
        lost_since = None
        try:
            while futures:
                try:
                    with self.client.as_current():
                        done, _ = wait(list(futures), timeout=1.0, return_when="FIRST_COMPLETED")
                except TimeoutError:
                    done = set()
                except (CancelledError, OSError) as exc:   # FuturesCancelledError: scheduler-connection-lost
                    raise course.CourseError(self._lost()) from exc
                if self.client.status != "running":
                    lost_since = lost_since or time.monotonic()
                    if time.monotonic() - lost_since > LOST_SECONDS:
                        raise course.CourseError(self._lost())
                    continue
                lost_since = None
                for future in done:
                    task = futures.pop(future)
                    if future.status == "finished":
                        self.phases.mark("first result", once=True)
                        on_result(future.result())
                        continue
                    if future.status == "cancelled":
                        raise course.CourseError(self._lost())
                    exc = future.exception()
                    if isinstance(exc, Refused):
                        raise course.CourseError(str(exc))
                    if isinstance(exc, KilledWorker):
                        problem = flag("internal", detail="its grading killed every Dask worker it ran on "
                                                          "(Dask's allowed-failures)")
                    else:
                        problem = flag("internal", detail=f"{type(exc).__name__} on the Dask worker")
                    on_result({"student": task[0], "abandoned": problem.to_dict(), "notebook": task[3]})
                    future.release()
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
