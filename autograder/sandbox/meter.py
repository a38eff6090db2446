"""The zygote's meter: what a submission's process uses during one measured call, measured
from outside the process (`Meter`), and the loop that answers the grader's requests for it
while the zygote waits for the process to end (`wait_metering`)."""
from __future__ import annotations

import os
import socket
import time

from .confine import METER_FILES


class Meter:
    """What a submission's process uses during one measured call, read from outside it: by
    the zygote, its parent, which runs none of the student's code, through files the process
    opened for it before its first cell (confine.seal). Nothing the process does to itself (a
    replaced probe, patched modules, a forged reply, its own clear_refs) changes them.

    * `rise`: how far its peak resident memory rose (memory it newly touched, even if freed
      before the call returned); the grader takes the larger of it and the rise of the
      kernel's count of everything the sandbox holds (cgroups.MemoryCounter), where it has one;
    * `touched`: the most memory of its own it had touched at once since the call started
      (probes.own_touched_bytes: shared pages, code and the allocator's heap traffic left
      out), so a buffer made before the call and filled during it counts, and so does one
      freed before the call returns: every 10 ms a cheap total is sampled, and the full
      count taken when that total has grown by 8 MiB since the last full count (at most
      every 25 ms) and at the end; plus what the call added to its temporary file systems
      (/scratch, /dev/shm: memory too);
    * `started`: processes the submission started meanwhile (a measured call may start none),
      seen in /proc at every sample: new processes of the submission's uid as root (the
      sandbox's own processes are root's), any new process without root (such a sandbox
      holds one submission). Threads share the process's memory, so they are measured, and
      may start (OpenBLAS's do).
    Before measuring, every process the submission started earlier is ended
    (processes.end_descendants): none shares a page with it, none serves the call through a pipe."""

    INTERVAL = 0.01
    FULL_EVERY, FULL_GROWTH = 0.025, 8 << 20

    def __init__(self, pid: int, uid: int | None, files: dict[str, int] | None):
        self.pid, self.uid, self.files, self.ok = pid, uid, files or {}, files is not None
        self.touched = self.stored = 0
        self.total_at_full, self.full_at = 0, 0.0
        from autograder.sandbox.processes import end_descendants

        self.ok = self.ok and end_descendants(pid)
        for code in (b"1", b"5"):       # referenced bits, then the peak resident memory
            self._io(lambda: os.write(self.files["clear_refs"], code))
        self.hwm_start = self._hwm()
        self.known = self._processes()
        self.new: set[str] = set()
        self.stored_start = self._stored()

    def _io(self, fn):
        try:
            return fn()
        except (OSError, KeyError):
            self.ok = False
            return None

    def _text(self, name: str) -> bytes | None:
        def read():
            fd = self.files[name]
            os.lseek(fd, 0, os.SEEK_SET)
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
            return b"".join(chunks)
        return self._io(read)

    def _field(self, name: str, field: str) -> int | None:
        from autograder.probes import field_bytes

        text = self._text(name)
        value = None if text is None else field_bytes(text, field)
        if value is None:
            self.ok = False
        return value

    def _hwm(self) -> int | None:
        return self._field("status", "VmHWM")

    def _processes(self) -> set[str]:
        try:
            return {p for p in os.listdir("/proc") if p.isdigit()}
        except OSError:
            self.ok = False
            return set()

    def _theirs(self, pid: str) -> bool:
        if self.uid is None:
            return True
        try:
            with open(f"/proc/{pid}/status", "rb") as f:
                for line in f:
                    if line.startswith(b"Uid:"):
                        return int(line.split()[1]) == self.uid
        except (OSError, ValueError, IndexError):
            return True         # gone before it could be read: counted
        return True

    def _stored(self) -> int:
        """Bytes in the process's temporary file systems (its own mounts, opened by it)."""
        total = 0
        for name in ("scratch", "shm"):
            st = self._io(lambda: os.fstatvfs(self.files[name]))
            if st is not None:
                total += (st.f_blocks - st.f_bfree) * st.f_frsize
        return total

    def _own_touched(self) -> int | None:
        from autograder.probes import own_touched_bytes, system_files

        text = self._text("smaps")
        return None if text is None else own_touched_bytes(text, system_files())

    def _full_count(self) -> None:
        own = self._own_touched()
        if own is not None:
            self.touched = max(self.touched, own)

    def sample(self) -> None:
        total = self._field("smaps_rollup", "Referenced")
        now = time.monotonic()
        if total is not None and total - self.total_at_full > self.FULL_GROWTH and now - self.full_at > self.FULL_EVERY:
            self._full_count()
            self.total_at_full, self.full_at = total, now
        self.stored = max(self.stored, self._stored())
        fresh = self._processes() - self.known - self.new
        self.new |= {p for p in fresh if self._theirs(p)}
        self.known |= fresh

    def read(self) -> dict:
        self.sample()
        self._full_count()
        hwm = self._hwm()
        if not self.ok or hwm is None or self.hwm_start is None:
            return {"ok": False}
        return {"ok": True, "rise": max(0, hwm - self.hwm_start), "started": len(self.new),
                "touched": self.touched + max(0, self.stored - self.stored_start)}


def meter_files(hand_over: socket.socket | None, timeout: float = 60) -> dict[str, int] | None:
    """The files the submission's process handed over before its first cell (confine.seal), by name;
    None when it ended or sent something else."""
    if hand_over is None:
        return None
    names = (*METER_FILES, "scratch", "shm")
    try:
        hand_over.settimeout(timeout)
        msg, fds, _flags, _addr = socket.recv_fds(hand_over, 64, len(names) + 1)
    except OSError:
        return None
    finally:
        hand_over.close()
    if msg != b"meter" or len(fds) != len(names):
        for fd in fds:
            os.close(fd)
        return None
    return dict(zip(names, fds))


def wait_metering(pid: int, meter: socket.socket | None, uid: int | None,
                  files: dict[str, int] | None = None) -> int:
    """Wait for the submission's process to end (its wait status); meanwhile answer the
    grader's meter socket: {"op": "mark"} starts measuring the process, {"op": "read"} ends
    it and answers with the numbers (Meter)."""
    import json
    import select

    if meter is None:
        for fd in set((files or {}).values()):
            os.close(fd)
        return os.waitpid(pid, 0)[1]
    pidfd = os.pidfd_open(pid)
    poller = select.poll()
    poller.register(pidfd, select.POLLIN)
    poller.register(meter, select.POLLIN)
    measuring: Meter | None = None
    try:
        while True:
            events = poller.poll(int(Meter.INTERVAL * 1000) if measuring else None)
            for fd, _ in events:
                if fd == pidfd:
                    return os.waitpid(pid, 0)[1]
                try:
                    op = json.loads(meter.recv(4096) or b"null")
                except (OSError, ValueError):
                    op = None
                if not isinstance(op, dict):           # the grader closed it: no more measuring
                    poller.unregister(meter)
                    measuring = None
                    continue
                if op.get("op") == "mark":
                    measuring = Meter(pid, uid, files)
                    reply = {"ok": measuring.ok}
                else:
                    reply = measuring.read() if measuring else {"ok": False}
                    measuring = None
                try:
                    meter.sendall(json.dumps(reply).encode())
                except OSError:
                    pass
            if measuring is not None and not events:
                measuring.sample()
    finally:
        os.close(pidfd)
        meter.close()
        for fd in set((files or {}).values()):
            os.close(fd)

