"""Running untrusted notebooks: a bubblewrap sandbox holding a warm zygote process.

    box = Sandbox(slot=0, limits=Limits())
    with box.session(notebook_bytes, "nb.ipynb", cells, names) as session:
        session.call("softmax", ([1.0, 2.0],), {})

The sandbox (bwrap) has no network, a private PID/IPC/UTS namespace, a read-only view of
the Python installation and of this package only (not solutions/, the workspace, other
submissions or hidden tests), and a small private /scratch to write in. Inside it, the zygote has already
imported NumPy and PyTorch; each submission gets a forked child, an unprivileged uid and
hard limits (see server.py). Wall-clock limits are enforced here: a session that
runs out of time has its whole sandbox killed, and the next one starts a fresh sandbox.
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .errors import StudentError, SubmissionBroken


class _Protocol:
    """autograder.sandbox.protocol, imported when first used: it needs NumPy, which the
    grading parent (it imports this module for `Limits`) never does. Importing NumPy there
    delayed the start of the fork server by 0.1 s."""

    def __getattr__(self, name: str):
        from . import protocol as module

        value = getattr(module, name)
        setattr(self, name, value)           # the next lookup finds it without this call
        return value


protocol = _Protocol()

PACKAGE_DIR = Path(__file__).resolve().parent.parent     # the autograder package, bound read-only
SANDBOX_SCRATCH = "/scratch"      # the only writable place inside the sandbox (besides /dev/shm)


# What a zygote may import before it forks: module names only (they come from the
# instructor's notebook, and end up in a command line).
WARMABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


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


class _Cgroup:
    """A memory and process cap on one whole sandbox (zygote and the submission it runs),
    where the machine lets us make cgroups (root, cgroup v1 or v2). Best effort: without
    it, the per-process limits (address space, CPU, processes per uid) still hold."""

    def __init__(self, name: str, memory_bytes: int, processes: int):
        self.dirs: list[str] = []
        self.memory: str | None = None        # the directory whose memory counter MemoryCounter reads
        for controller, settings in (("memory", {"memory.limit_in_bytes": memory_bytes,
                                                 "memory.max": memory_bytes}),
                                     ("pids", {"pids.max": processes})):
            base = self._base(controller)
            if base is None:
                continue
            path = os.path.join(base, name)
            try:
                os.makedirs(path, exist_ok=True)
                wrote = False
                for key, value in settings.items():
                    if os.path.exists(os.path.join(path, key)):
                        with open(os.path.join(path, key), "w") as f:
                            f.write(str(value))
                        wrote = True
                if wrote:
                    self.dirs.append(path)
                    if controller == "memory":
                        self.memory = path
            except OSError:
                continue

    @staticmethod
    def _base(controller: str) -> str | None:
        try:
            lines = open("/proc/self/cgroup").read().splitlines()
        except OSError:
            return None
        for line in lines:
            _, controllers, path = line.split(":", 2)
            if controller in controllers.split(","):
                base = f"/sys/fs/cgroup/{controller}{path}"
                return base if os.access(base, os.W_OK) else None
        for line in lines:     # cgroup v2: one hierarchy
            if line.startswith("0::") and os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
                base = "/sys/fs/cgroup" + line[3:]
                return base if os.access(base, os.W_OK) else None
        return None

    # Joins the cgroups named before "--", then becomes the command after it. A `preexec_fn`
    # doing the same makes subprocess fork this process (torch loaded) and run Python in the
    # copy, many times the cost of this shell and its exec (docs/measurements.md).
    _JOIN = 'while [ "$1" != -- ]; do { echo $$ >"$1/cgroup.procs"; } 2>/dev/null; shift; done; shift; exec "$@"'

    def command(self, cmd: list[str]) -> list[str]:
        """`cmd`, run in these cgroups from its first instruction: it, and all it starts, count."""
        return ["/bin/sh", "-c", self._JOIN, "sh", *self.dirs, "--", *cmd] if self.dirs else cmd

    def remove(self) -> None:
        for path in self.dirs:
            try:
                os.rmdir(path)
            except OSError:
                pass


class MemoryCounter:
    """The kernel's count of the memory a sandbox's cgroup holds (every process in it, its
    files in memory, its pipes' and sockets' buffers), from the cgroup's peak, reset before a
    measured call (`start`) and read after it (`rise`): nothing inside the sandbox can reset
    or dodge it. cgroup v1: memory.max_usage_in_bytes, reset by writing 0 to it. cgroup v2:
    memory.peak, reset by writing to it, for reads through the same open file (Linux 6.12 and
    later; earlier kernels refuse the write: `start` returns False). Where the sandbox has no
    memory cgroup (no root) there is no counter: the zygote's meter alone measures
    (server._Meter)."""

    def __init__(self, directory: str):
        self.directory = directory
        self.v1 = os.path.exists(os.path.join(directory, "memory.max_usage_in_bytes"))
        self.fd: int | None = None
        self.base: int | None = None

    def _read(self, fd: int) -> int:
        return int(os.pread(fd, 64, 0).split()[0])

    def start(self) -> bool:
        self.close()
        try:
            if self.v1:
                self.fd = os.open(os.path.join(self.directory, "memory.max_usage_in_bytes"), os.O_RDWR | os.O_CLOEXEC)
                os.write(self.fd, b"0")
            else:
                self.fd = os.open(os.path.join(self.directory, "memory.peak"), os.O_RDWR | os.O_CLOEXEC)
                os.write(self.fd, b"reset\n")
            self.base = self._read(self.fd)
            return True
        except (OSError, ValueError, IndexError):
            self.close()
            return False

    def rise(self) -> int | None:
        """How far the peak rose above what the cgroup held at `start`; None if not started."""
        if self.fd is None or self.base is None:
            return None
        try:
            return max(0, self._read(self.fd) - self.base)
        except (OSError, ValueError, IndexError):
            return None
        finally:
            self.close()

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
        self.fd = None


def remove_stale_cgroups() -> None:
    """Remove the empty cgroups of sandboxes whose worker is gone (killed while grading)."""
    for controller in ("memory", "pids"):
        base = _Cgroup._base(controller)
        if base is None:
            continue
        for entry in Path(base).glob("autograder-*-*"):
            pid = entry.name.split("-")[1]
            if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                try:
                    os.rmdir(entry)
                except OSError:
                    pass


def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def sandbox_problem() -> str | None:
    """Why no sandbox can start on this machine (no bubblewrap, or it cannot create
    namespaces), in a few words; None when it can."""
    bwrap = bwrap_path()
    if not bwrap:
        return "bubblewrap (bwrap) is not installed"
    probe = subprocess.run([bwrap, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid",
                            "--dev", "/dev", "--proc", "/proc", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"bubblewrap cannot create namespaces here ({probe.stderr.strip()[:200]})"
    return None


def sandbox_env() -> dict[str, str]:
    """The whole environment of a sandbox's processes (nothing of the caller's)."""
    prefix = Path(sys.prefix).resolve()
    return {"TMPDIR": SANDBOX_SCRATCH, "PYTHONPATH": "/opt/autograder", "AUTOGRADER_SANDBOX": "1",
            "PYTHONDONTWRITEBYTECODE": "1", "PYTHONNOUSERSITE": "1", "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg", "HOME": SANDBOX_SCRATCH,
            "PATH": f"{prefix}/bin:/usr/bin:/bin"}


def _bwrap_command(python: str, privileged: bool, control_fd: int | None, warm: str) -> list[str]:
    """bubblewrap's command line: with a control fd, it runs a Python zygote; without one, a
    holder (`cat`, waiting on its stdin) whose namespaces a forked zygote joins (template.py).
    The package is then also where the worker has it, so the zygote's imports find it."""
    prefix, base = Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()
    # The interpreter by a path inside the binds: a venv reached through a symlink (a git
    # worktree sharing one) would otherwise name a path the sandbox does not have.
    if Path(python).parent.resolve() == prefix / "bin":
        python = str(prefix / "bin" / Path(python).name)
    cmd = [bwrap_path(), "--die-with-parent", "--new-session",
           "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
           "--hostname", "sandbox", "--clearenv"]
    if privileged:
        # root outside, no user namespace: the zygote keeps just what it needs to hand each
        # submission its own unprivileged uid, and to clean up after it.
        # CAP_SYS_ADMIN: each submission gets fresh mount and PID namespaces (server.py).
        cmd += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_KILL",
                "--cap-add", "CAP_CHOWN", "--cap-add", "CAP_SYS_ADMIN"]
    else:
        cmd += ["--unshare-user"]
    binds = [p for p in ("/usr", "/lib", "/lib64", "/bin", "/etc/alternatives", "/etc/ld.so.cache",
                         "/etc/fonts", "/etc/ssl/certs") if os.path.exists(p)]
    binds += sorted({str(base), str(prefix)})
    package_binds = ["/opt/autograder/autograder"] + ([] if control_fd is not None else [str(PACKAGE_DIR)])
    targets = binds + package_binds
    # /tmp first (the course may live under it), then the read-only binds, then /tmp itself
    # read-only. What a submission may write goes to /scratch, a tmpfs of its own, which the
    # zygote empties after every submission.
    cmd += ["--perms", "0755", "--tmpfs", "/tmp"]
    # Folders bwrap would create on the way to a mount point are root-only (0700), which an
    # unprivileged child cannot traverse: create every ancestor world-readable first.
    ancestors = sorted({str(a) for t in targets for a in Path(t).parents if str(a) not in ("/", "/tmp")},
                       key=lambda a: a.count("/"))
    for folder in ancestors:
        cmd += ["--perms", "0755", "--dir", folder]
    for path in binds:
        cmd += ["--ro-bind", path, path]
    for target in package_binds:
        cmd += ["--ro-bind", str(PACKAGE_DIR), target]
    cmd += ["--remount-ro", "/tmp",
            "--proc", "/proc", "--dev", "/dev",
            "--size", str(256 << 20), "--perms", "1777", "--tmpfs", SANDBOX_SCRATCH,
            "--chdir", SANDBOX_SCRATCH]
    for key, value in sandbox_env().items():
        cmd += ["--setenv", key, value]
    if control_fd is None:
        return cmd + ["/bin/sh", "-c", "echo ready; exec cat"]
    cmd += [python, "-I", "-c",
            "import sys; sys.path.insert(0, '/opt/autograder'); "
            f"from autograder.sandbox.server import zygote; zygote({control_fd}, warm={warm!r})"]
    return cmd


class Sandbox:
    """One warm sandbox, used by one grading worker for one submission at a time."""

    def __init__(self, slot: int = 0, limits: Limits | None = None, unsafe: bool = False,
                 warm: tuple[str, ...] = ("numpy", "torch"), template=None):
        self.limits, self.unsafe = limits or Limits(), unsafe
        self.slot, self._slot_lock = claim_slot(slot)     # `slot`: the one preferred
        self.template = template          # a template.Template: zygotes are forked, not started
        self.zygote_pid: int | None = None
        self._holder_info: int | None = None    # bubblewrap's --info-fd, until its holder is joined
        self.warm = warm
        self._join_failed: SandboxUnavailable | None = None
        self.proc: subprocess.Popen | None = None
        self.control: socket.socket | None = None
        self.starts = 0
        self.scratch: str | None = None
        self.cgroup: _Cgroup | None = None
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
            env, cmd = None, _bwrap_command(python, privileged, theirs.fileno(), warm)
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
            self.cgroup = _Cgroup(f"autograder-{os.getpid()}-{self.slot}",
                                  self.limits.memory_bytes + (1 << 30), self.limits.processes + 32)
        return self.cgroup.command(cmd)

    def _launch_forked(self, privileged: bool) -> None:
        """bubblewrap builds the sandbox around a holder process; the template forks a zygote
        that joins it (template.py). The holder ends when its stdin closes (this process
        ended) or when it is killed; the sandbox's namespaces go with it. Only bubblewrap is
        started here: the zygote is asked for in `wait_ready`, when bubblewrap has built the
        sandbox (0.03-0.05 s, which the caller spends reading the assignment)."""
        info_r, info_w = os.pipe()
        cmd = _bwrap_command(str(Path(sys.executable)), privileged, None, "")
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
            try:
                self._join_holder()
            except SandboxUnavailable as exc:
                self._join_failed = exc        # wait_ready decides what to do

    def _join_holder(self) -> None:
        """The launched bubblewrap's holder, once the sandbox is built, and the zygote the
        template forks into it."""
        info_r, self._holder_info = self._holder_info, None
        with os.fdopen(info_r, "rb") as info:
            holder = json.loads(info.read(4096) or b"{}").get("child-pid")
        if self.proc.stdout.readline() != b"ready\n" or not isinstance(holder, int):
            try:
                self.proc.wait(timeout=5)       # bubblewrap said why on stderr, and ended
                err = self.proc.stderr.read().decode(errors="replace")[-500:]
            except subprocess.TimeoutExpired:
                err = ""
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
            err = self.proc.stderr.read().decode(errors="replace")[-500:] if self.proc.poll() is not None else ""
            self.kill()
            raise SandboxUnavailable(f"the sandbox did not start ({exc}) {err.strip()}") from None
        if header.get("op") != "ready":
            self.kill()
            why = protocol.clean_text(str(header.get("error", "")), 500)
            raise SandboxUnavailable("the sandbox did not start" + (f": {why}" if why else ""))
        self.one_submission, self.spent = not self.unsafe and header.get("isolated") is not True, False

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

    def _recv_control(self, timeout: float):
        self.control.settimeout(timeout)
        return protocol.recv(self.control, deadline=time.monotonic() + timeout)

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
        socket.send_fds(self.control, [json.dumps(request).encode()], [theirs.fileno(), meter_theirs.fileno()])
        theirs.close()
        meter_theirs.close()
        return Session(self, ours, notebook, notebook_name, cells, names, meter)


class Session:
    """The grader's side of one submission's process."""

    def __init__(self, box: Sandbox, sock: socket.socket, notebook: bytes, notebook_name: str,
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
        cells = reply.get("cells") if isinstance(reply.get("cells"), list) else []
        names = reply.get("names") if isinstance(reply.get("names"), dict) else {}
        self.cell_errors = [None if e is None else protocol.clean_text(str(e), 300) for e in cells]
        self.names = {protocol.clean_text(str(k), 200): str(v) for k, v in names.items()
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

    def _request(self, header: dict, blobs: list[bytes] = ()) -> tuple[dict, list[bytes]]:
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
            error = reply.get("error") if isinstance(reply.get("error"), dict) else {}
            types = error.get("types") if isinstance(error.get("types"), list) else []
            types = [protocol.clean_text(str(t), 100) for t in types][:10] or ["Exception"]
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
        during the call, measured from outside it: by the zygote (server._Meter), which first
        ends every other process of the submission, and, where the sandbox has a memory
        cgroup, by the kernel's count of all it holds (MemoryCounter: "rise" is the larger of
        the two, "kernel" says whether the kernel's count was read); {"ok": False} where that
        could not be done."""
        if not measured:
            return self._invoke({"op": "probe", "probe": probe, "target": target}, args, kwargs)
        marked = self._meter({"op": "mark"})       # the zygote ends the submission's other processes
        cgroup = self.box.cgroup.memory if self.box.cgroup is not None else None
        counter = MemoryCounter(cgroup) if cgroup else None
        counted = counter is not None and counter.start()
        try:
            reply = self._invoke({"op": "probe", "probe": probe, "target": target}, args, kwargs)
        finally:
            kernel = counter.rise() if counted else None
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


__all__ = ["Sandbox", "Session", "Limits", "SandboxUnavailable", "StudentError", "SubmissionBroken"]
