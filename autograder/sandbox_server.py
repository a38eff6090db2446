"""The process inside the sandbox: a zygote that forks one child per submission.

Started by autograder.sandbox (inside bubblewrap), with a control socket whose fd it is given. The
zygote imports NumPy, PyTorch and IPython once, then for every submission receives a
fresh socket (SCM_RIGHTS) and forks a child that:
  * drops to an unprivileged uid with no capabilities, in a new session;
  * sets limits: address space, CPU seconds, processes, file size, open files;
  * writes the student's notebook into an empty scratch directory and runs its code
    cells (IPython semantics), its stdout and stderr going to a capped log file;
  * answers the grader's requests: call a graded function on given inputs, run a probe,
    fetch a value. Results go back as plain data (autograder.protocol).
When the child is gone the zygote kills every process the submission left behind and
empties the scratch space, so the next submission starts clean.
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

# Where a submission may write: the sandbox's private tmpfs. Without the sandbox (unsafe
# mode) the grader passes a private temporary folder instead, never the host's /tmp.
SCRATCH = {"root": "/scratch", "sandboxed": True}


def _workdir() -> str:
    return os.path.join(SCRATCH["root"], "work")


def _warm_imports() -> None:
    os.environ.setdefault("MPLBACKEND", "Agg")
    import numpy  # noqa: F401
    import torch

    torch.set_num_threads(1)
    import matplotlib  # noqa: F401
    import matplotlib.pyplot  # noqa: F401
    from IPython.core.interactiveshell import InteractiveShell  # noqa: F401


def _kill_others(child_pid: int) -> None:
    """Kill what the submission left running.

    In the sandbox this is every process of its private PID namespace except the zygote
    and bwrap's init (pid 1). Without the sandbox (unsafe mode) there is no namespace to
    sweep, and sweeping /proc would hit the host: only the child's process group is killed.
    """
    if not SCRATCH["sandboxed"]:
        try:
            os.killpg(child_pid, signal.SIGKILL)   # the child called setsid(): its own group
        except (ProcessLookupError, PermissionError):
            pass
        return
    if os.getpid() == 1 or not os.path.exists("/proc/1/cmdline") or \
            b"bwrap" not in open("/proc/1/cmdline", "rb").read():
        return    # not inside bubblewrap's PID namespace after all: never sweep
    me = os.getpid()
    for _ in range(50):
        others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me)]
        if not others:
            return
        for pid in others:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    time.sleep(0.01)
            except ChildProcessError:
                break


def _wipe(uid: int | None) -> None:
    """Empty the writable places (as the child's uid, which owns what it wrote)."""
    pid = os.fork()
    if pid == 0:
        try:
            if uid is not None:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            for top in [SCRATCH["root"]] + (["/dev/shm"] if SCRATCH["sandboxed"] else []):
                if os.path.isdir(top):
                    for name in os.listdir(top):
                        path = os.path.join(top, name)
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


def _apply_limits(limits: dict, uid: int | None) -> None:
    os.setsid()
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)          # from root to uid: every capability is gone
    mem = int(limits["memory_bytes"])
    cpu = int(limits["cpu_seconds"])
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_NPROC, (int(limits["processes"]),) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(limits["output_bytes"]),) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # over the size limit, writes fail instead


def _child(sock: socket.socket, request: dict, uid: int | None) -> None:
    try:
        _prepare_child(request, uid)
    except BaseException:  # noqa: BLE001 (report set-up failures instead of dying silently)
        import traceback

        from autograder import protocol

        protocol.send(sock, {"ok": False, "fatal": traceback.format_exc()[-2000:]})
        return
    from autograder import sandbox_child

    sandbox_child.serve(sock, float(request["limits"]["step_seconds"]))


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


def zygote(control_fd: int, scratch: str | None = None) -> None:
    if scratch is not None:
        SCRATCH.update(root=scratch, sandboxed=False)
    control = socket.socket(fileno=control_fd)
    _warm_imports()
    # Inside bubblewrap as root: hand each submission its own unprivileged uid. In unsafe
    # mode there is no isolation to preserve, and the caller's uid is kept.
    privileged = os.geteuid() == 0 and SCRATCH["sandboxed"]
    from autograder import protocol

    protocol.send(control, {"op": "ready", "privileged": privileged})
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
        pid = os.fork()
        if pid == 0:
            control.close()
            try:
                _child(conn, request, uid)
            finally:
                os._exit(0)
        conn.close()
        _, status = os.waitpid(pid, 0)
        _kill_others(pid)
        _wipe(uid)
        if os.WIFSIGNALED(status):
            outcome = {"signal": signal.Signals(os.WTERMSIG(status)).name}
        else:
            outcome = {"exit": os.WEXITSTATUS(status)}
        protocol.send(control, {"op": "done", **outcome})


