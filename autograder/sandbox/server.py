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
Each submission lives in namespaces of its own (see `confine.isolate`): its processes form one
PID namespace that ends as a whole, its IPC objects one IPC namespace, and its scratch space
and /dev/shm are fresh tmpfs mounts that vanish with it; its uid's keyrings are emptied
before it starts (confine.py). So the next submission starts clean whatever this one did.
Nothing here decides a grade: the grader compares the results in its own process.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import sys
from contextlib import contextmanager

from .confine import PR_SET_DUMPABLE, SCRATCH, PidNamespaces, check_call, isolate, prepare, seal
from .meter import meter_files, wait_metering


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
        isolate(int(request["limits"]["scratch_bytes"]))
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


def _child(sock: socket.socket, request: dict, uid: int | None, hand_over: socket.socket | None = None) -> None:
    try:
        prepare(request, uid)
        seal(hand_over)
    except BaseException:  # noqa: BLE001 (report set-up failures instead of dying silently)
        import traceback

        from autograder.sandbox import protocol

        protocol.send(sock, {"ok": False, "fatal": traceback.format_exc()[-2000:]})
        return
    from autograder.sandbox import child as sandbox_child

    sandbox_child.serve(sock, float(request["limits"]["step_seconds"]))


def zygote(control_fd: int, scratch: str | None = None, warm: str = "numpy,torch") -> None:
    if scratch is not None:
        SCRATCH.update({"root": scratch, "sandboxed": False})
    control = socket.socket(fileno=control_fd)
    _warm_imports(warm)
    # Inside bubblewrap as root: hand each submission its own unprivileged uid. In unsafe
    # mode there is no isolation to preserve, and the caller's uid is kept.
    privileged = os.geteuid() == 0 and SCRATCH["sandboxed"]
    from autograder.sandbox import protocol

    spaces = PidNamespaces.if_allowed() if SCRATCH["sandboxed"] else None
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
        # the submission's process hands the meter the files it reads through this pair (seal)
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
        status = wait_metering(pid, meter, uid, meter_files(ours_files))
        if not SCRATCH["sandboxed"]:
            _sweep_unsafe(pid, uid)
        code = _status_code(status)
        outcome: dict[str, str | int]
        if code > 128:
            try:
                outcome = {"signal": signal.Signals(code - 128).name}
            except ValueError:
                outcome = {"signal": f"signal {code - 128}"}
        else:
            outcome = {"exit": code}
        protocol.send(control, {"op": "done", **outcome})
