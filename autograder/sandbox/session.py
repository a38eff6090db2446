"""The grader's side of one submission's process in a sandbox (`Session`): its cells run,
then calls, probes (measured from outside when asked) and values, each under the
submission's deadline; nothing the process says is trusted."""
from __future__ import annotations

import json
import socket
import time
from collections.abc import Sequence

from .cgroups import MemoryCounter
from .errors import StudentError, SubmissionBroken


class _Protocol:
    """autograder.sandbox.protocol, imported when first used: it needs NumPy, which the
    grading parent (it imports host.py, and so this module, for `Limits`) never does.
    Importing NumPy there delayed the start of the fork server by 0.1 s. host.py uses it too."""

    def __getattr__(self, name: str):
        from . import protocol as module

        value = getattr(module, name)
        setattr(self, name, value)           # the next lookup finds it without this call
        return value


protocol = _Protocol()


class Session:
    """The grader's side of one submission's process, in `box` (a host.Sandbox)."""

    def __init__(self, box, sock: socket.socket, notebook: bytes, notebook_name: str,
                 cells: list[str], names: list[str], meter: socket.socket | None = None):
        self.box, self.sock, self.meter = box, sock, meter
        self.deadline = time.monotonic() + box.limits.wall_seconds
        self.broken: str | None = None
        self.flags: list[str] = []
        self.cell_errors: list[str | None] = []
        self.names: dict[str, str] = {}
        self.crash: dict | None = None
        try:
            reply, _ = self._request({"op": "run", "cells": cells, "names": names,
                                      "notebook_name": notebook_name}, [notebook])
        except SubmissionBroken:
            return          # self.broken says why; every test will fail with it
        if reply.get("fatal") or not reply.get("ok"):
            # Whatever the reply says, it came from the submission's process, which runs the
            # student's code: it is never taken as news about the grader's infrastructure.
            self.box.kill()
            self._fail("the notebook's process did not run its cells (it sent an invalid reply)")
            return
        ran, found = reply.get("cells"), reply.get("names")
        ran = ran if isinstance(ran, list) else []
        found = found if isinstance(found, dict) else {}
        self.cell_errors = [None if e is None else protocol.clean_text(str(e), 300) for e in ran]
        self.names = {protocol.clean_text(str(k), 200): str(v) for k, v in found.items()
                      if v in ("callable", "value", "missing")}

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ requests
    def _fail(self, reason: str) -> SubmissionBroken:
        if self.broken is None:
            self.broken = reason
        return SubmissionBroken(self.broken)

    def _request(self, header: dict, blobs: Sequence[bytes] = ()) -> tuple[dict, list[bytes]]:
        if self.broken:
            raise SubmissionBroken(self.broken)
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise self._fail(f"time limit reached ({self.box.limits.wall_seconds:g} s for the whole notebook)")
        try:
            self.sock.settimeout(remaining)
            protocol.send(self.sock, header, blobs)
            reply = protocol.recv(self.sock, limit=self.box.limits.reply_bytes, deadline=self.deadline)
            if not isinstance(reply[0], dict):
                raise protocol.ProtocolError("reply is not a message")
            return reply
        except socket.timeout:
            self.box.kill()   # the child may be stuck anywhere: start afresh next time
            raise self._fail(f"time limit reached ({self.box.limits.wall_seconds:g} s for the whole notebook): "
                             "an infinite loop, or very slow code?") from None
        except (EOFError, ConnectionError, BrokenPipeError, OSError):
            raise self._fail(self._why_ended()) from None
        except protocol.ProtocolError as exc:
            self.box.kill()
            raise self._fail(f"the notebook's process sent invalid data ({exc})") from None

    def _why_ended(self) -> str:
        outcome = self._collect_outcome(timeout=5)
        if outcome.get("signal") == "SIGXCPU":
            return "CPU time limit reached: an infinite loop, or very slow code?"
        if outcome.get("signal") == "SIGKILL":
            return "the notebook's process was killed (out of memory, or it killed itself)"
        if outcome.get("signal"):
            return f"the notebook's process crashed ({outcome['signal']})"
        return f"the notebook's process exited early (exit code {outcome.get('exit', '?')}): " \
               "exit(), os._exit() or a crash?"

    def _collect_outcome(self, timeout: float) -> dict:
        if self.crash is not None:
            return self.crash
        try:
            header, _ = self.box._recv_control(timeout=timeout)
            self.crash = header if isinstance(header, dict) else {"signal": "unknown"}
        except Exception:  # noqa: BLE001 (a sandbox that does not answer is killed)
            self.box.kill()
            self.crash = {"signal": "unknown"}
        return self.crash

    def _result(self, reply: dict, blobs: list[bytes]):
        if not reply.get("ok"):
            error = reply.get("error")
            error = error if isinstance(error, dict) else {}
            raised = error.get("types")
            raised = raised if isinstance(raised, list) else []
            types = [protocol.clean_text(str(t), 100) for t in raised][:10] or ["Exception"]
            raise StudentError(types, protocol.clean_text(str(error.get("message", "")), 2000))
        try:
            return protocol.decode(reply.get("value"), blobs)
        except protocol.ProtocolError as exc:
            raise self._fail(f"the notebook's process sent invalid data ({exc})") from None

    def _invoke(self, header: dict, args: tuple, kwargs: dict):
        value, blobs = protocol.encode([list(args), kwargs])
        header = dict(header, args={"$list": value["$list"][0]["$list"]}, kwargs=value["$list"][1])
        started = time.monotonic()
        reply, rblobs = self._request(header, blobs)
        try:
            return self._result(reply, rblobs)
        except StudentError as exc:
            # The call's time limit is the child's alarm, and the name it reports could be any
            # class's: the call ran out of time only if it really ran that long, by this clock.
            exc.timed_out = (exc.remote_type_names[0] == "TimeLimitExceeded"
                             and time.monotonic() - started >= self.box.limits.step)
            raise

    def call(self, name: str, args: tuple, kwargs: dict):
        return self._invoke({"op": "call", "name": name}, args, kwargs)

    def probe(self, probe: str, target: str, args: tuple, kwargs: dict, measured: bool = False):
        """The probe's reply; with `measured`, and "meter" in it: what the submission used
        during the call, measured from outside it: by the zygote (meter.Meter), which first
        ends every other process of the submission, and, where the sandbox has a memory
        cgroup, by the kernel's count of all it holds (MemoryCounter: "rise" is the larger of
        the two, "kernel" says whether the kernel's count was read); {"ok": False} where that
        could not be done."""
        if not measured:
            return self._invoke({"op": "probe", "probe": probe, "target": target}, args, kwargs)
        marked = self._meter({"op": "mark"})       # the zygote ends the submission's other processes
        cgroup = self.box.cgroup.memory if self.box.cgroup is not None else None
        counter = MemoryCounter(cgroup) if cgroup else None
        counting = counter if counter is not None and counter.start() else None
        try:
            reply = self._invoke({"op": "probe", "probe": probe, "target": target}, args, kwargs)
        finally:
            kernel = counting.rise() if counting is not None else None
        numbers = self._meter({"op": "read"}) if marked.get("ok") else {"ok": False}
        if numbers.get("ok") and kernel is not None:
            # the kernel's count of the whole sandbox: memory in any process, file or buffer
            numbers["rise"] = max(numbers["rise"], kernel)
        numbers["kernel"] = kernel is not None
        if isinstance(reply, dict):
            reply["meter"] = numbers
        return reply

    def _meter(self, request: dict) -> dict:
        if self.meter is None:
            return {"ok": False}
        try:
            self.meter.settimeout(10)
            self.meter.sendall(json.dumps(request).encode())
            reply = json.loads(self.meter.recv(4096))
        except (OSError, ValueError):
            return {"ok": False}
        if not (isinstance(reply, dict) and reply.get("ok") is True):
            return {"ok": False}
        if request["op"] == "mark":
            return {"ok": True}
        numbers = {k: reply.get(k) for k in ("touched", "rise", "started")}
        if not all(isinstance(v, int) and v >= 0 for v in numbers.values()):
            return {"ok": False}
        return {"ok": True, **numbers}

    def get(self, name: str):
        reply, blobs = self._request({"op": "get", "name": name})
        if not reply.get("ok"):
            return self._result(reply, blobs)
        return protocol.decode(reply.get("result"), blobs)

    def close(self) -> None:
        if self.meter is not None:
            self.meter.close()
        if self.box.proc is None:
            self.sock.close()
            return
        if not self.broken:
            try:
                self.sock.settimeout(5)
                protocol.send(self.sock, {"op": "bye"})
            except OSError:
                pass
        self.sock.close()
        outcome = self._collect_outcome(timeout=10)
        if outcome.get("op") != "done":
            self.box.kill()


