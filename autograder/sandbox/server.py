"""The process inside the sandbox: a zygote that forks one child per submission.

Started by autograder.sandbox (inside bubblewrap), with a control socket whose fd it is given. The
zygote imports NumPy, PyTorch and IPython once (or is forked with them loaded, template.py),
then for every submission receives a fresh socket (SCM_RIGHTS) and forks the submission's
process, the first process of a new PID namespace, which:
  * drops to an unprivileged uid with no capabilities, in a new session;
  * sets limits: address space, CPU seconds, processes, file size, open files;
  * writes the student's notebook into an empty scratch directory and runs its code
    cells (IPython semantics), its stdout and stderr going to a capped log file;
  * answers the grader's requests: call a graded function on given inputs, run a probe,
    fetch a value. Results go back as plain data (autograder.sandbox.protocol).
Each submission lives in namespaces of its own (see `_isolate`): its processes form one
PID namespace that ends as a whole, its IPC objects one IPC namespace, and its scratch space
and /dev/shm are fresh tmpfs mounts that vanish with it; its uid's keyrings are emptied
before it starts (`_fresh_keyrings`). So the next submission starts clean whatever this one did.
Nothing here decides a grade: the grader compares the results in its own process.
"""
from __future__ import annotations

import os
import resource
import shutil
import signal
import socket
import sys
import time
from contextlib import contextmanager

# Where a submission may write: the sandbox's private tmpfs. Without the sandbox (unsafe
# mode) the grader passes a private temporary folder instead, never the host's /tmp.
SCRATCH = {"root": "/scratch", "sandboxed": True}


def _workdir() -> str:
    return os.path.join(SCRATCH["root"], "work")


@contextmanager
def collector_paused():
    """Imports that forked processes will share, with Python's cycle collector paused, then
    frozen. Importing torch, NumPy and IPython ran the collector about 420 times, three of
    them over every object: 0.3-0.5 s of a 2-2.5 s import on this machine. What is imported
    is not garbage; frozen, it is never examined again, in this process or in any process
    forked from it, so its pages stay shared (the collector writes to every object it
    examines)."""
    import gc

    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def import_modules(names) -> None:
    """Import each module; one that does not import is left to fail where it is used (the
    student's cell, the test cell), as it would in Jupyter. Then torch gets one thread."""
    import importlib

    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001
            continue
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(1)


def _warm_imports(warm: str = "") -> None:
    """Import, once and before any fork, what every submission's process needs (NumPy,
    IPython's shell) and what the assignment's notebook imports (`warm`, comma-separated
    module names, e.g. torch): each child starts with them loaded."""
    os.environ.setdefault("MPLBACKEND", "Agg")
    # What is loaded here is shared by every child until a child writes to its page. Python's
    # cyclic garbage collector writes to every object it examines: frozen, these are never
    # examined in a child, so their pages stay shared (grading 200 submissions: 15 s instead
    # of 17). Frozen without a collection first: that took 0.5 s of every start.
    with collector_paused():
        import numpy  # noqa: F401
        import numpy.random  # noqa: F401  (not imported by numpy or torch: 10-20 ms where first used)
        from IPython.core.interactiveshell import InteractiveShell  # noqa: F401

        import_modules(filter(None, warm.split(",")))
        # The IPython shell each submission's cells run in, built once (no thread, no history
        # file): every child gets its own copy when it is forked, with an empty namespace.
        from autograder.sandbox.child import _shell

        _shell().run_cell("pass", store_history=False, silent=True)


def check_call(result: int, what: str) -> None:
    """A libc call's result through ctypes: anything but 0 raises OSError with errno's text."""
    import ctypes

    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWIPC = 0x00020000, 0x20000000, 0x08000000


class _PidNamespaces:
    """Each submission's process tree is a PID namespace of its own, made by the zygote's one
    fork per submission: `unshare(CLONE_NEWPID)` makes the zygote's next child the first
    process of a new namespace, and `setns` on the zygote's own namespace puts it back for
    the next submission (a second unshare is refused until then)."""

    def __init__(self):
        import ctypes

        self.libc = ctypes.CDLL(None, use_errno=True)
        self.own = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)

    @classmethod
    def if_allowed(cls) -> "_PidNamespaces | None":
        """None where this zygote may not make namespaces: in bubblewrap without root, its user
        namespace leaves it no capability (and none is given: a submission could then remount
        the read-only binds). Such a sandbox runs one submission only (host.Sandbox)."""
        spaces = cls()
        try:
            spaces.next_child_in_a_new_one()
            spaces.back()
        except OSError:
            os.close(spaces.own)
            return None
        return spaces

    def next_child_in_a_new_one(self) -> None:
        check_call(self.libc.unshare(CLONE_NEWPID), "unshare (a PID namespace)")

    def back(self) -> None:
        check_call(self.libc.setns(self.own, CLONE_NEWPID), "setns (the zygote's PID namespace)")


def _isolate(scratch_bytes: int) -> None:
    """Give this process (the first of a submission's PID namespace) and what it starts a mount
    namespace and an IPC namespace of their own (System V shared memory, message queues and
    semaphores, POSIX message queues: none a previous submission made), with a fresh, empty scratch
    space, /dev/shm and a /proc that shows only this namespace's processes. When this process ends,
    the kernel ends every process of the namespace, and the scratch space disappears with the last
    of them: nothing one submission leaves behind, files or processes, can reach the next."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    ms_nosuid, ms_nodev, ms_noexec, ms_rec, ms_private = 2, 4, 8, 16384, 1 << 18

    check_call(libc.unshare(CLONE_NEWNS | CLONE_NEWIPC), "unshare (mount and IPC namespaces)")
    check_call(libc.mount(b"none", b"/", None, ms_rec | ms_private, None), "making mounts private")
    options = f"size={int(scratch_bytes)},mode=1777".encode()
    check_call(libc.mount(b"tmpfs", SCRATCH["root"].encode(), b"tmpfs", ms_nosuid | ms_nodev, options),
          "mounting the scratch space")
    if os.path.isdir("/dev/shm"):
        check_call(libc.mount(b"tmpfs", b"/dev/shm", b"tmpfs", ms_nosuid | ms_nodev, b"size=64m,mode=1777"),
              "mounting /dev/shm")
    libc.mount(b"proc", b"/proc", b"proc", ms_nosuid | ms_nodev | ms_noexec, None)   # best effort


def _status_code(status: int) -> int:
    """A wait status as one number: the exit code, or 128 + the signal that ended the process."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status)


def _submission(conn: socket.socket, request: dict, uid: int | None, isolated: bool,
                hand_over: socket.socket | None = None) -> None:
    """Run one submission in this process. Where the zygote may make namespaces (`isolated`),
    this process is the first of the submission's PID namespace: whatever it starts ends with
    it, when the kernel ends the namespace. Being first, it is spared signals sent from inside the namespace that it has
    no handler for (its own `os.kill(os.getpid(), SIGTERM)` does nothing); the signals the
    kernel sends (faults, the memory and CPU limits) and the grader's, from outside, end it
    as they end any process."""
    if isolated:
        _isolate(int(request["limits"]["scratch_bytes"]))
    _child(conn, request, uid, hand_over)


def _sweep_unsafe(child_pid: int, uid: int | None) -> None:
    """Without the sandbox there are no namespaces: end the child's process group and
    empty its private scratch folder (never anything of the host's)."""
    try:
        os.killpg(child_pid, signal.SIGKILL)   # the child called setsid(): its own group
    except (ProcessLookupError, PermissionError):
        pass
    pid = os.fork()
    if pid == 0:
        try:
            if uid is not None:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            for name in os.listdir(SCRATCH["root"]):
                path = os.path.join(SCRATCH["root"], name)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    try:
                        os.unlink(path)
                    except OSError:
                        pass
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def _set_dumpable() -> None:
    """After setuid the kernel marks a process non-dumpable, and a fork of the zygote, which
    is non-dumpable, is one too: either makes its /proc/self files root's, and then it could
    not open the files the zygote's meter reads, which it hands over before its first cell
    and then becomes non-dumpable for good (_seal). None of its code has run yet, so nothing
    could use the flag meanwhile; core dumps stay off (RLIMIT_CORE 0)."""
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(4, 1, 0, 0, 0)     # PR_SET_DUMPABLE, 1
    except (OSError, AttributeError):
        pass


def _apply_limits(limits: dict, uid: int | None) -> None:
    os.setsid()
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)          # from root to uid: every capability is gone
    if uid is not None or SCRATCH["sandboxed"]:
        _set_dumpable()         # the zygote is not (zygote()): its fork inherits that
    if SCRATCH["sandboxed"]:        # never the keys of whoever runs an unsafe, unsandboxed grading
        _fresh_keyrings(clear=uid is not None)
    mem = int(limits["memory_bytes"])
    cpu = int(limits["cpu_seconds"])
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_NPROC, (int(limits["processes"]),) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(limits["output_bytes"]),) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # over the size limit, writes fail instead
    if os.getpid() == 1:
        # The first process of a PID namespace is spared the signals that would end it by
        # default (SIGKILL and the kernel's faults aside): at the CPU limit, end as SIGXCPU would.
        signal.signal(signal.SIGXCPU, _cpu_limit_reached)


# keyctl(2) and its operations: the kernel's keyrings are not in any namespace a fork can make
_KEYCTL = {"x86_64": 250, "aarch64": 219, "i686": 288, "armv7l": 311}
KEYCTL_JOIN_SESSION_KEYRING, KEYCTL_CLEAR = 1, 7
KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING = -4, -5


def _fresh_keyrings(clear: bool) -> None:
    """A new session keyring for this submission; and with `clear` (as root, where every
    submission of a worker runs as that worker's uid), the uid's user and user-session
    keyrings emptied: they belong to the uid, not to a process, and outlive the previous
    submission. Without root each submission has a user namespace of its own, whose user
    keyrings are its own (Linux 5.3 and later), and the uid is the instructor's: never emptied.
    Where keyctl is refused (a seccomp filter, no keyrings), no submission can use keyrings."""
    import ctypes
    import platform

    number = _KEYCTL.get(platform.machine())
    if number is None:
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall(number, KEYCTL_JOIN_SESSION_KEYRING, None)
    for ring in (KEY_SPEC_USER_KEYRING, KEY_SPEC_USER_SESSION_KEYRING) if clear else ():
        libc.syscall(number, KEYCTL_CLEAR, ring)


def _cpu_limit_reached(signum, frame):
    os._exit(128 + signal.SIGXCPU)


def _child(sock: socket.socket, request: dict, uid: int | None, hand_over: socket.socket | None = None) -> None:
    try:
        _prepare_child(request, uid)
        _seal(hand_over)
    except BaseException:  # noqa: BLE001 (report set-up failures instead of dying silently)
        import traceback

        from autograder.sandbox import protocol

        protocol.send(sock, {"ok": False, "fatal": traceback.format_exc()[-2000:]})
        return
    from autograder.sandbox import child as sandbox_child

    sandbox_child.serve(sock, float(request["limits"]["step_seconds"]))


# What the zygote's meter reads, opened by the submission's process itself (as their owner)
# before any of its code runs, and handed to the zygote (_seal)
METER_FILES = ("status", "smaps", "smaps_rollup", "clear_refs")
PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP = 4, 36, 38, 22
MADV_FREE, MADV_COLD, MADV_PAGEOUT = 8, 20, 21
# (audit arch, prctl, madvise, process_madvise) by machine: the syscalls the filter looks at
_SECCOMP_ARCH = {"x86_64": (0xC000003E, 157, 28, 440), "aarch64": (0xC00000B7, 167, 233, 440)}


def _seal(hand_over: socket.socket | None) -> None:
    """Before the submission's first cell: hand the zygote's meter the files it reads this
    process's memory from (`METER_FILES`, and its temporary file systems), opened here as
    their owner; then make this process non-dumpable, which makes its /proc files root's (it
    can no longer write its own clear_refs, which resets the referenced bits and the peak
    resident memory the meter reads), a subreaper (every process it starts stays its
    descendant, however orphaned: processes.end_descendants), and install a seccomp filter that
    refuses to undo either (prctl PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER) and the madvise
    advice that would clear referenced bits (MADV_COLD, MADV_PAGEOUT, MADV_FREE,
    process_madvise). An honest notebook calls none of them."""
    import ctypes
    import platform

    libc = ctypes.CDLL(None, use_errno=True)
    if hand_over is not None and platform.machine() not in _SECCOMP_ARCH:
        hand_over.close()       # no filter for this machine: no files, and no memory test passes
        hand_over = None
    if hand_over is not None:
        fds = []
        try:
            for name in METER_FILES:
                fds.append(os.open(f"/proc/self/{name}", os.O_WRONLY if name == "clear_refs" else os.O_RDONLY))
            for folder in (SCRATCH["root"], "/dev/shm"):
                fds.append(os.open(folder, os.O_PATH | os.O_DIRECTORY) if os.path.isdir(folder) else fds[0])
            socket.send_fds(hand_over, [b"meter"], fds)
        except OSError:
            pass                # the meter says it could not measure: no memory test passes
        finally:
            for fd in set(fds):
                os.close(fd)
            hand_over.close()
    check_call(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "becoming a subreaper")
    check_call(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "becoming non-dumpable")
    if platform.machine() in _SECCOMP_ARCH:
        _filter_syscalls(libc, *_SECCOMP_ARCH[platform.machine()])


def _filter_syscalls(libc, audit: int, prctl: int, madvise: int, process_madvise: int) -> None:
    import ctypes

    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06          # BPF_LD|W|ABS, BPF_JMP|JEQ|K, JGE|K, BPF_RET|K
    allow, deny = 0x7FFF0000, 0x00050000 | 1            # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
    program = [
        (ld, 0, 0, 4), (jeq, 1, 0, audit), (ret, 0, 0, deny),          # another ABI (int 0x80): refused
        (ld, 0, 0, 0), (jge, 0, 1, 0x40000000), (ret, 0, 0, deny),     # x32 numbers: refused
        (jeq, 3, 0, prctl), (jeq, 6, 0, madvise), (jeq, 10, 0, process_madvise), (ret, 0, 0, allow),
        (ld, 0, 0, 16), (jeq, 7, 0, PR_SET_DUMPABLE), (jeq, 6, 0, PR_SET_CHILD_SUBREAPER), (ret, 0, 0, allow),
        (ld, 0, 0, 32), (jeq, 3, 0, MADV_FREE), (jeq, 2, 0, MADV_COLD), (jeq, 1, 0, MADV_PAGEOUT),
        (ret, 0, 0, allow), (ret, 0, 0, deny)]

    class Instruction(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(Instruction))]

    code = (Instruction * len(program))(*[Instruction(*i) for i in program])
    check_call(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "setting no-new-privileges")
    check_call(libc.prctl(PR_SET_SECCOMP, 2, ctypes.byref(Program(len(program), code)), 0, 0),
               "installing the seccomp filter")


def _prepare_child(request: dict, uid: int | None) -> None:
    workdir = _workdir()
    os.makedirs(workdir, exist_ok=True)
    if uid is not None:
        os.chown(workdir, uid, uid)
    _apply_limits(request["limits"], uid)
    os.chdir(workdir)            # holds the student's notebook and nothing else
    private = SCRATCH["root"]
    os.environ.update(HOME=workdir, IPYTHONDIR=os.path.join(private, ".ipython"),
                      MPLCONFIGDIR=os.path.join(private, ".mpl"))
    log = os.open(os.path.join(private, ".output.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    sys.stdout = open(1, "w", buffering=1, closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)


class _Meter:
    """What a submission's process uses during one measured call, read from outside it: by
    the zygote, its parent, which runs none of the student's code, through files the process
    opened for it before its first cell (_seal). Nothing the process does to itself (a
    replaced probe, patched modules, a forged reply, its own clear_refs) changes them.

    * `rise`: how far its peak resident memory rose (memory it newly touched, even if freed
      before the call returned); the grader takes the larger of it and the rise of the
      kernel's count of everything the sandbox holds (host.MemoryCounter), where it has one;
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
        if not self.ok or None in (hwm, self.hwm_start):
            return {"ok": False}
        return {"ok": True, "rise": max(0, hwm - self.hwm_start), "started": len(self.new),
                "touched": self.touched + max(0, self.stored - self.stored_start)}


def _meter_files(hand_over: socket.socket | None, timeout: float = 60) -> dict[str, int] | None:
    """The files the submission's process handed over before its first cell (_seal), by name;
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


def _wait_metering(pid: int, meter: socket.socket | None, uid: int | None,
                   files: dict[str, int] | None = None) -> int:
    """Wait for the submission's process to end (its wait status); meanwhile answer the
    grader's meter socket: {"op": "mark"} starts measuring the process, {"op": "read"} ends
    it and answers with the numbers (_Meter)."""
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
    measuring: _Meter | None = None
    try:
        while True:
            events = poller.poll(int(_Meter.INTERVAL * 1000) if measuring else None)
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
                    measuring = _Meter(pid, uid, files)
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


def zygote(control_fd: int, scratch: str | None = None, warm: str = "numpy,torch") -> None:
    if scratch is not None:
        SCRATCH.update(root=scratch, sandboxed=False)
    control = socket.socket(fileno=control_fd)
    _warm_imports(warm)
    # Inside bubblewrap as root: hand each submission its own unprivileged uid. In unsafe
    # mode there is no isolation to preserve, and the caller's uid is kept.
    privileged = os.geteuid() == 0 and SCRATCH["sandboxed"]
    from autograder.sandbox import protocol

    spaces = _PidNamespaces.if_allowed() if SCRATCH["sandboxed"] else None
    protocol.send(control, {"op": "ready", "privileged": privileged, "isolated": spaces is not None})
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(control, 1 << 16, 4)
        except OSError:
            return
        if not msg:
            return
        request = __import__("json").loads(msg.decode())
        uid = int(request["uid"]) if privileged else None
        conn = socket.socket(fileno=fds[0])
        meter = socket.socket(fileno=fds[1]) if len(fds) > 1 else None
        # the submission's process hands the meter the files it reads through this pair (_seal)
        ours_files, hand_over = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        if SCRATCH["sandboxed"]:
            # Without root, each submission runs under the zygote's own uid (in the sandbox's
            # user namespace): non-dumpable from before the first submission exists, the zygote
            # cannot be traced, nor its memory opened, by one.
            check_call(__import__("ctypes").CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0),
                       "making the zygote non-dumpable")
        if spaces is not None:
            spaces.next_child_in_a_new_one()
        pid = -1
        try:
            pid = os.fork()
        finally:
            if spaces is not None and pid != 0:
                spaces.back()
        if pid == 0:
            control.close()
            ours_files.close()
            if meter is not None:
                meter.close()
            if spaces is not None:
                os.close(spaces.own)
            code = 1
            try:
                _submission(conn, request, uid, spaces is not None, hand_over)
                code = 0
            finally:
                os._exit(code)
        conn.close()
        hand_over.close()
        status = _wait_metering(pid, meter, uid, _meter_files(ours_files))
        if not SCRATCH["sandboxed"]:
            _sweep_unsafe(pid, uid)
        code = _status_code(status)
        if code > 128:
            try:
                outcome = {"signal": signal.Signals(code - 128).name}
            except ValueError:
                outcome = {"signal": f"signal {code - 128}"}
        else:
            outcome = {"exit": code}
        protocol.send(control, {"op": "done", **outcome})


