"""Warm zygotes without importing torch again: a sandbox's zygote forked from a pristine copy
of its grading worker (or of a student's check), then moved into the namespaces bubblewrap made.

A zygote started inside bubblewrap is a new interpreter: it imports NumPy, torch and IPython
again (2-3 s of CPU each time). A grading worker already has them, because the fork server
it came from imported them once. So a worker forks a *template* first, before it reads the
solution, a student's notebook or a salt: a copy of the fork server's state and nothing else
(the fork server starts with a cleaned environment and command line, see
`grade.forkserver.start`). For each sandbox the worker then starts bubblewrap with a holder
command (`cat`, which waits on a pipe from the worker) instead of Python: bubblewrap builds
the same filesystem view and namespaces as for a Python zygote. The template forks a zygote,
which:

  * starts a session of its own, dies with the template (which dies with the worker);
  * joins the sandbox's cgroups, then its IPC, UTS, network, cgroup, PID and mount
    namespaces (`setns`), and takes the sandbox's root as its own (`chroot`);
  * without root, bubblewrap made user namespaces too (two: the outer one, where it is root
    to build the sandbox, owns the other namespaces; the inner one maps the student's own
    uid). The zygote joins the outer one first, which gives it the capabilities the other
    `setns` calls need, and the inner one last, then gives up every capability (effective,
    permitted, inheritable, ambient and the bounding set): as bubblewrap leaves its own
    zygote;
  * keeps only its control socket (0, 1 and 2 become the sandbox's /dev/null), gets exactly
    the environment bubblewrap gives, and sets no-new-privileges, as bubblewrap does;
  * forks the zygote proper, a process of the sandbox's PID namespace (`setns` moves only
    a process's children), which runs the same loop as a zygote started by bubblewrap
    (`server.zygote`); the process that joined waits for it, holding nothing.

Each submission is forked from it as before: as root, a fresh mount and PID namespace nested
in the sandbox's, its own uid, its limits (confine.py); no submission sees the zygote, each
one's /proc shows its own PID namespace only. Without root a zygote cannot make namespaces,
and a sandbox runs one submission (host.Sandbox).
"""
from __future__ import annotations

import ctypes
import fcntl
import json
import os
import signal
import socket
import struct
import sys
from collections.abc import Sequence

from . import confine, server

NAMESPACES = ("ipc", "uts", "net", "cgroup", "pid", "mnt")      # mnt last: it changes /proc
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 1, 24, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
NS_GET_PARENT = 0xB702                   # ioctl on a namespace's file: its parent's (ioctl_ns(2))
CAPABILITY_VERSION_3 = 0x20080522


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _close_fds_except(keep: set[int]) -> None:
    low = 0
    for high in [*sorted(keep), os.sysconf("SC_OPEN_MAX")]:
        if low < high:                  # os.closerange(0, 0) would close every descriptor
            os.closerange(low, high)
        low = high + 1


class Template:
    """The worker's side: `fork()` before anything secret is read, `zygote()` per sandbox."""

    def __init__(self, sock: socket.socket, pid: int):
        self.sock, self.pid = sock, pid

    @classmethod
    def fork(cls) -> "Template | None":
        """None where zygotes cannot be made this way (no bubblewrap): then each sandbox starts
        its own interpreter."""
        from .bwrap import bwrap_path

        if not bwrap_path():
            return None
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:
            try:
                ours.close()
                _serve(theirs, parent)
            finally:
                os._exit(0)
        theirs.close()
        return cls(ours, pid)

    def _ask(self, request: dict, fds: Sequence[int] = ()) -> int:
        socket.send_fds(self.sock, [json.dumps(request).encode()], list(fds))
        reply = self.sock.recv(8)
        if len(reply) != 8:
            raise OSError("the sandbox template ended")
        return struct.unpack("!q", reply)[0]

    def zygote(self, control: socket.socket, holder: int, cgroups: list[str]) -> int:
        """Fork a zygote into the namespaces of process `holder` (bubblewrap's); returns its pid."""
        return self._ask({"op": "zygote", "holder": holder, "cgroups": cgroups}, [control.fileno()])

    def kill(self, pid: int) -> None:
        try:
            self._ask({"op": "kill", "pid": pid})
        except OSError:
            pass

    def close(self) -> None:
        self.sock.close()
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass


# ---------------------------------------------------------------------- the template process
def _serve(sock: socket.socket, parent: int) -> None:
    _libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        return
    _close_fds_except({0, 1, 2, sock.fileno()})
    server._warm_imports("")             # the IPython shell built, threads set, objects frozen
    children: set[int] = set()
    while True:
        try:
            msg, fds, _flags, _addr = socket.recv_fds(sock, 1 << 16, 1)
        except OSError:
            return
        if not msg:
            return
        _reap(children)
        request = json.loads(msg.decode())
        if request.get("op") == "kill":
            pid = int(request["pid"])
            if pid in children:          # not reaped yet: the pid cannot belong to another process
                os.kill(pid, signal.SIGKILL)
            sock.send(struct.pack("!q", 0))
            continue
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                sock.close()
                _zygote(fds[0], request)
                code = 0
            except BaseException as exc:  # noqa: BLE001 (the worker sees the zygote fail to start)
                try:
                    from . import protocol

                    protocol.send(socket.socket(fileno=fds[0]), {"op": "failed", "error": str(exc)[:500]})
                except Exception:  # noqa: BLE001
                    pass
            finally:
                os._exit(code)
        for fd in fds:
            os.close(fd)
        children.add(pid)
        sock.send(struct.pack("!q", pid))


def _reap(children: set[int]) -> None:
    for pid in list(children):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            children.discard(pid)


def _initial_environment() -> tuple[int, int]:
    """Where the environment this interpreter was started with lies in memory (env_start
    and env_end, fields 50 and 51 of /proc/self/stat); (0, 0) if unknown."""
    try:
        fields = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
        start, end = int(fields[47]), int(fields[48])
    except (OSError, ValueError, IndexError):
        return 0, 0
    return (start, end) if 0 < start < end and end - start < (1 << 20) else (0, 0)


def _user_namespaces(holder: int) -> list[int]:
    """The user namespaces bubblewrap made, outermost first: the holder's and its ancestors
    up to this process's own (none as root: bubblewrap then makes none)."""
    own = os.stat("/proc/self/ns/user")
    fd = os.open(f"/proc/{holder}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    chain: list[int] = []
    try:
        while True:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino):
                os.close(fd)
                return chain[::-1]
            chain.append(fd)
            if len(chain) > 4:
                raise OSError("bubblewrap's user namespaces are nested deeper than expected")
            fd = fcntl.ioctl(fd, NS_GET_PARENT)
    except BaseException:
        for fd in chain:
            os.close(fd)
        raise


def _drop_capabilities(libc, last_cap: int) -> None:
    """Give up every capability this process has in its (bubblewrap's) user namespace."""
    for cap in range(last_cap + 1):
        confine.check_call(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "dropping the bounding set")
    confine.check_call(libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "clearing ambient capabilities")
    header = ctypes.create_string_buffer(struct.pack("=Ii", CAPABILITY_VERSION_3, 0), 8)
    data = ctypes.create_string_buffer(24)          # effective, permitted, inheritable (x2): all 0
    confine.check_call(libc.capset(header, data), "dropping capabilities")
    libc.capget(header, data)
    if any(data.raw):
        raise OSError("capabilities remain after dropping them")


def _zygote(control_fd: int, request: dict) -> None:
    from .bwrap import SANDBOX_SCRATCH, sandbox_env

    libc = _libc()
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    os.setsid()
    for folder in request["cgroups"]:
        if not folder.startswith("/sys/fs/cgroup/"):
            continue
        with open(os.path.join(folder, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))
    env_start, env_end = _initial_environment()      # read while /proc is still this process's
    holder = int(request["holder"])
    users = _user_namespaces(holder)
    last_cap = int(open("/proc/sys/kernel/cap_last_cap").read()) if users else 0
    spaces = [os.open(f"/proc/{holder}/ns/{name}", os.O_RDONLY | os.O_CLOEXEC) for name in NAMESPACES]
    root = os.open(f"/proc/{holder}/root", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    _close_fds_except({control_fd, root, *spaces, *users})
    # Without root: the outer user namespace owns the others, the inner one is the student's.
    for name, fd in [*[("user", u) for u in users[:1]], *zip(NAMESPACES, spaces), *[("user", u) for u in users[1:]]]:
        confine.check_call(libc.setns(fd, 0), f"joining the sandbox's {name} namespace")
        os.close(fd)
    os.fchdir(root)
    os.chroot(".")
    os.close(root)
    os.chdir(SANDBOX_SCRATCH)
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        if fd != null:
            os.dup2(null, fd)
    if null > 2:
        os.close(null)
    os.environ.clear()
    os.environ.update(sandbox_env())
    if env_end:
        # /proc/self/environ shows that first environment (the fork server's, reduced to a few
        # harmless names): blank it, so a submission sees only the sandbox's.
        ctypes.memset(env_start, 0, env_end - env_start)
    sys.dont_write_bytecode = True
    if users:
        _drop_capabilities(libc, last_cap)
    confine.check_call(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "setting no-new-privileges")
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    # `setns` moved this process's children into the sandbox's PID namespace, not this
    # process: the zygote proper is its child, a process of the sandbox, which can then give
    # each submission a namespace of its own with a single fork (server.zygote). This one
    # waits for it, holding nothing, and ends with it; the zygote dies with this one.
    zygote = os.fork()
    if zygote == 0:
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != 0:             # its parent (outside the namespace: 0 here) is gone
            return
        server.zygote(control_fd, warm="")
        return
    os.close(control_fd)
    os.waitpid(zygote, 0)
