"""The submission's process, confined before its first cell: the sandbox's side of its
isolation and limits, run by the process the zygote forks for it (server.py).

Where the zygote may make namespaces, that process is the first of a PID namespace of its
own (`PidNamespaces`), and it gives itself and what it starts a mount and an IPC namespace
(`isolate`): fresh tmpfs mounts for its scratch space and /dev/shm, a /proc of its own. Then
(`prepare`) it drops to an unprivileged uid with no capabilities, in a new session, with a
fresh session keyring (`_fresh_keyrings`); sets its limits (address space, CPU seconds,
processes, file size, open files); sends its stdout and stderr to a log file in its scratch
space; and (`seal`) hands the zygote's meter the files it reads its memory from, becomes
non-dumpable and a subreaper, and installs a seccomp filter that refuses to undo either.
None of the student's code has run before all of that is done.
"""
from __future__ import annotations

import os
import resource
import signal
import socket
import sys
from typing import TypedDict


class Scratch(TypedDict):
    root: str           # the folder a submission may write in
    sandboxed: bool     # False in unsafe mode (no sandbox around the zygote)


# Where a submission may write: the sandbox's private tmpfs. Without the sandbox (unsafe
# mode) the grader passes a private temporary folder instead, never the host's /tmp.
SCRATCH: Scratch = {"root": "/scratch", "sandboxed": True}


def _workdir() -> str:
    return os.path.join(SCRATCH["root"], "work")


def check_call(result: int, what: str) -> None:
    """A libc call's result through ctypes: anything but 0 raises OSError with errno's text."""
    import ctypes

    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWIPC = 0x00020000, 0x20000000, 0x08000000


class PidNamespaces:
    """Each submission's process tree is a PID namespace of its own, made by the zygote's one
    fork per submission: `unshare(CLONE_NEWPID)` makes the zygote's next child the first
    process of a new namespace, and `setns` on the zygote's own namespace puts it back for
    the next submission (a second unshare is refused until then)."""

    def __init__(self):
        import ctypes

        self.libc = ctypes.CDLL(None, use_errno=True)
        self.own = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)

    @classmethod
    def if_allowed(cls) -> "PidNamespaces | None":
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


def isolate(scratch_bytes: int) -> None:
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


def _set_dumpable() -> None:
    """After setuid the kernel marks a process non-dumpable, and a fork of the zygote, which
    is non-dumpable, is one too: either makes its /proc/self files root's, and then it could
    not open the files the zygote's meter reads, which it hands over before its first cell
    and then becomes non-dumpable for good (seal). None of its code has run yet, so nothing
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


# What the zygote's meter reads, opened by the submission's process itself (as their owner)
# before any of its code runs, and handed to the zygote (seal)
METER_FILES = ("status", "smaps", "smaps_rollup", "clear_refs")
PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP = 4, 36, 38, 22
MADV_FREE, MADV_COLD, MADV_PAGEOUT = 8, 20, 21
# (audit arch, prctl, madvise, process_madvise) by machine: the syscalls the filter looks at
_SECCOMP_ARCH = {"x86_64": (0xC000003E, 157, 28, 440), "aarch64": (0xC00000B7, 167, 233, 440)}


def seal(hand_over: socket.socket | None) -> None:
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


def prepare(request: dict, uid: int | None) -> None:
    """The submission's own work folder, its uid and limits (`_apply_limits`), and its output
    going to a log file in its scratch space."""
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

