"""Running untrusted notebooks: a bubblewrap sandbox holding a warm zygote process.

    box = Sandbox(slot=0, limits=Limits())
    with box.session(notebook_bytes, "nb.ipynb", cells, names) as session:
        session.call("softmax", ([1.0, 2.0],), {})

The sandbox (bwrap) has no network, a private PID/IPC/UTS namespace, a read-only view of
the Python installation and of this package only (not solutions/, the workspace, other
submissions or hidden tests), and a small private /scratch to write in. Inside it, the zygote has already
imported NumPy and PyTorch; each submission gets a forked child, an unprivileged uid and
hard limits (see confine.py). Wall-clock limits are enforced here: a session that
runs out of time has its whole sandbox killed, and the next one starts a fresh sandbox.

Here: the limits (`Limits`, the only place they are set), slots, and a sandbox's lifecycle
(`Sandbox`). bubblewrap's command line is bwrap.py's; the sandbox's cgroups, cgroups.py's;
the grader's side of one submission, session.py's (`Session`).
"""
from __future__ import annotations

import fcntl
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .bwrap import PACKAGE_DIR, SANDBOX_SCRATCH, WARMABLE, bwrap_command, bwrap_path, sandbox_env, sandbox_problem
from .cgroups import Cgroup, remove_stale_cgroups
from .session import Session, protocol


class SandboxUnavailable(Exception):
    """No real sandbox can be started on this machine."""


SLOTS = 128     # sandboxes one host runs at once: a slot names a sandbox's uid (60000 + slot)


def claim_slot(prefer: int = 0) -> tuple[int, int]:
    """A slot no other sandbox on this host holds, `prefer` if it is free, and the fd of the
    lock file that holds it until closed (or this process ends). Two grading runs on one
    machine, a Dask worker beside them, or a check run as root, so never share a uid: a
    submission's processes never count against another's process limit (a fork bomb in one
    run once cost a student of another run the 5 points of softmax)."""
    first = prefer % SLOTS
    for slot in [first, *(s for s in range(SLOTS) if s != first)]:
        try:
            fd = os.open(Path(tempfile.gettempdir()) / f"autograder-slot-{os.getuid()}-{slot}.lock",
                         os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        return slot, fd
    raise SandboxUnavailable(f"all {SLOTS} sandbox slots of this machine are in use")


@dataclass
class Limits:
    """Every limit a submission runs under, in one place (the sandbox applies them all)."""

    wall_seconds: float = 60.0        # the whole submission: running its cells and every test call
    step_seconds: float = 0.0         # one cell or one call (0: a quarter of wall_seconds)
    cpu_seconds: int = 60             # per process (RLIMIT_CPU)
    memory_bytes: int = 3 << 30       # address space per process, and the sandbox's total (cgroup)
    processes: int = 64               # per submission: each sandbox slot has its own uid
    output_bytes: int = 1 << 20       # the submission's own stdout/stderr, and any one file it writes
    reply_bytes: int = 64 << 20       # one result sent back
    scratch_bytes: int = 256 << 20    # the submission's private, fresh tmpfs

    @property
    def step(self) -> float:
        return self.step_seconds or max(1.0, self.wall_seconds / 4)

    @property
    def grace_seconds(self) -> float:
        """How long the grading parent waits for one submission before it replaces the worker:
        the notebook's own limit, plus starting a fresh sandbox and the tests' own work."""
        return self.wall_seconds * 1.5 + 60.0


class Sandbox:
    """One warm sandbox, used by one grading worker for one submission at a time."""

    def __init__(self, slot: int = 0, limits: Limits | None = None, unsafe: bool = False,
                 warm: tuple[str, ...] = ("numpy", "torch"), template=None):
        self.limits, self.unsafe = limits or Limits(), unsafe
        self.slot, lock = claim_slot(slot)     # `slot`: the one preferred
        self._slot_lock: int | None = lock
        self.template = template          # a template.Template: zygotes are forked, not started
        self.zygote_pid: int | None = None
        self._holder_info: int | None = None    # bubblewrap's --info-fd, until its holder is joined
        self.warm = warm
        self._join_failed: SandboxUnavailable | None = None
        self.proc: subprocess.Popen | None = None
        self.control: socket.socket | None = None
        self.starts = 0
        self.scratch: str | None = None
        self.cgroup: Cgroup | None = None
        # A zygote that may not give each submission namespaces of its own (bubblewrap
        # without root) runs one submission; the next gets a fresh sandbox.
        self.one_submission = False
        self.spent = False

    @property
    def warm(self) -> tuple[str, ...]:
        """What a zygote bubblewrap starts imports before it forks (module names only: they
        end up in its command line)."""
        return self._warm

    @warm.setter
    def warm(self, modules) -> None:
        self._warm = tuple(m for m in modules if WARMABLE.fullmatch(m))

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self.launch()
        self.wait_ready()

    def launch(self) -> None:
        """Start the sandbox's zygote without waiting for it to warm up (`wait_ready`): the
        caller does its own imports meanwhile, on the other core."""
        privileged = os.geteuid() == 0
        if self.template is not None and not self.unsafe and bwrap_path():
            self._launch_forked(privileged)
            return
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        python = str(Path(sys.executable))
        warm = ",".join(self.warm)
        if self.unsafe:
            env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(PACKAGE_DIR.parent), "AUTOGRADER_SANDBOX": "1",
                   "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg", "HOME": os.environ.get("HOME", "/tmp")}
            import tempfile

            self.scratch = tempfile.mkdtemp(prefix="autograder-unsafe-")
            os.chmod(self.scratch, 0o711)   # the child runs as another uid when we are root
            cmd = [python, "-c", "from autograder.sandbox.server import zygote; "
                                 f"zygote({theirs.fileno()}, {self.scratch!r}, {warm!r})"]
        else:
            if not bwrap_path():
                raise SandboxUnavailable("bubblewrap (bwrap) is not installed")
            env, cmd = None, bwrap_command(python, privileged, theirs.fileno(), warm)
        self.proc = subprocess.Popen(self._in_cgroup(cmd), env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                     pass_fds=(theirs.fileno(),), start_new_session=True)
        theirs.close()
        self.control = ours
        self.starts += 1

    def _in_cgroup(self, cmd: list[str]) -> list[str]:
        """`cmd`, started in this sandbox's cgroups (made the first time; none when unsafe)."""
        if self.unsafe:
            return cmd
        if self.cgroup is None:
            self.cgroup = Cgroup(f"autograder-{os.getpid()}-{self.slot}",
                                  self.limits.memory_bytes + (1 << 30), self.limits.processes + 32)
        return self.cgroup.command(cmd)

    def _launch_forked(self, privileged: bool) -> None:
        """bubblewrap builds the sandbox around a holder process; the template forks a zygote
        that joins it (template.py). The holder ends when its stdin closes (this process
        ended) or when it is killed; the sandbox's namespaces go with it. Only bubblewrap is
        started here: the zygote is asked for in `wait_ready`, when bubblewrap has built the
        sandbox (0.03-0.05 s, which the caller spends reading the assignment)."""
        info_r, info_w = os.pipe()
        cmd = bwrap_command(str(Path(sys.executable)), privileged, None, "")
        cmd[1:1] = ["--info-fd", str(info_w)]
        try:
            self.proc = subprocess.Popen(self._in_cgroup(cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, pass_fds=(info_w,), start_new_session=True)
        except BaseException:
            os.close(info_r)
            raise
        finally:
            os.close(info_w)
        self.starts += 1
        self._holder_info = info_r

    def request_zygote(self) -> None:
        """Ask now for the zygote of a sandbox `launch` started (`wait_ready` asks if this
        was not called): the caller has more to do while the zygote joins the sandbox."""
        if self._holder_info is not None:
            info_r, self._holder_info = self._holder_info, None
            try:
                self._join_holder(info_r)
            except SandboxUnavailable as exc:
                self._join_failed = exc        # wait_ready decides what to do

    def _join_holder(self, info_r: int) -> None:
        """The launched bubblewrap's holder (`info_r`: its --info-fd), once the sandbox is
        built, and the zygote the template forks into it."""
        with os.fdopen(info_r, "rb") as info:
            holder = json.loads(info.read(4096) or b"{}").get("child-pid")
        proc = self.proc
        assert proc is not None and proc.stdout is not None      # _launch_forked's, with its pipes
        if proc.stdout.readline() != b"ready\n" or not isinstance(holder, int):
            try:
                proc.wait(timeout=5)       # bubblewrap said why on stderr, and ended
            except subprocess.TimeoutExpired:
                pass
            err = self._stderr_tail()
            self.kill()
            raise SandboxUnavailable(f"the sandbox did not start: {err.strip()}")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self.zygote_pid = self.template.zygote(theirs, holder, self.cgroup.dirs if self.cgroup else [])
        except OSError as exc:
            self.kill()
            raise SandboxUnavailable(f"the sandbox's zygote could not be forked ({exc})") from None
        finally:
            theirs.close()
        self.control = ours

    def wait_ready(self) -> None:
        try:
            self._wait_ready()
        except SandboxUnavailable:
            if self.template is None:
                raise
            # A zygote forked from the template could not join the sandbox (a kernel that
            # refuses the `setns`, say): this sandbox's zygotes are started by bubblewrap,
            # now and from now on, as where there is no template.
            self.kill()
            self.template = None
            self.launch()
            self._wait_ready()

    def _wait_ready(self) -> None:
        self.request_zygote()
        if self._join_failed is not None:
            failed, self._join_failed = self._join_failed, None
            raise failed
        try:
            header, _ = self._recv_control(timeout=120)
        except Exception as exc:
            err = self._stderr_tail()
            self.kill()
            raise SandboxUnavailable(f"the sandbox did not start ({exc}) {err.strip()}") from None
        if header.get("op") != "ready":
            self.kill()
            why = protocol.clean_text(str(header.get("error", "")), 500)
            raise SandboxUnavailable("the sandbox did not start" + (f": {why}" if why else ""))
        self.one_submission, self.spent = not self.unsafe and header.get("isolated") is not True, False

    def _stderr_tail(self) -> str:
        """The end of what bubblewrap (or the unsafe zygote) wrote to stderr, once it has
        ended; "" while it runs (a read would wait for its end)."""
        proc = self.proc
        if proc is None or proc.stderr is None or proc.poll() is None:
            return ""
        return proc.stderr.read().decode(errors="replace")[-500:]

    def kill(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                if pipe:
                    pipe.close()
        if self._holder_info is not None:
            os.close(self._holder_info)
            self._holder_info = None
        if self.zygote_pid is not None:
            self.template.kill(self.zygote_pid)
            self.zygote_pid = None
        if self.control is not None:
            self.control.close()
        if self.scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)
        self.proc, self.control, self.scratch = None, None, None

    def close(self) -> None:
        """Stop the sandbox and give back what it held (its cgroup, its slot)."""
        self.kill()
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None
        if self._slot_lock is not None:
            os.close(self._slot_lock)
            self._slot_lock = None

    def _control(self) -> socket.socket:
        """The socket to the zygote, which `launch` made and `kill` closes."""
        if self.control is None:
            raise SandboxUnavailable("the sandbox is not running")
        return self.control

    def _recv_control(self, timeout: float):
        control = self._control()
        control.settimeout(timeout)
        return protocol.recv(control, deadline=time.monotonic() + timeout)

    # ------------------------------------------------------------------ sessions
    def session(self, notebook: bytes, notebook_name: str, cells: list[str], names: list[str]) -> "Session":
        if self.proc is None or self.proc.poll() is not None or self.spent:
            self.kill()
            self.start()
        self.spent = self.one_submission
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        meter, meter_theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        limits = asdict(self.limits)
        limits["step_seconds"] = self.limits.step
        request = {"op": "session", "uid": 60000 + self.slot, "limits": limits}
        socket.send_fds(self._control(), [json.dumps(request).encode()], [theirs.fileno(), meter_theirs.fileno()])
        theirs.close()
        meter_theirs.close()
        return Session(self, ours, notebook, notebook_name, cells, names, meter)


# What callers import from here: this module's, and some of bwrap.py's and cgroups.py's
__all__ = ["Sandbox", "Session", "Limits", "SandboxUnavailable", "claim_slot",
           "bwrap_path", "sandbox_problem", "sandbox_env", "SANDBOX_SCRATCH", "remove_stale_cgroups"]
