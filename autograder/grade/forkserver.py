"""The fork server every grading worker is forked from (multiprocessing's "forkserver").

Kept apart from the rest of `grade`, and light to import: `autograder grade` starts it
before it imports the grading machinery itself, so that the server's imports (torch above
all, the longest part of a run's fixed cost) begin as early as they can.
"""
from __future__ import annotations

import os
import signal


# What the fork server, so every worker and every sandbox's zygote, keeps of this process's
# environment: where things are and how to format them, nothing that may hold a password
# or a token (PGPASSWORD, cloud keys...).
_KEEP_ENV = {"PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "VIRTUAL_ENV", "PYTHONPATH",
             "JUPYTER_CONFIG_DIR", "JUPYTER_CONFIG_PATH", "JUPYTER_DATA_DIR", "JUPYTER_PATH"}   # not JUPYTER_TOKEN
_KEEP_ENV_PREFIXES = ("LC_", "AUTOGRADER_", "OMP_", "MKL_", "OPENBLAS_")


def fork_server_env(environ) -> dict[str, str]:
    env = {k: v for k, v in environ.items() if k in _KEEP_ENV or k.startswith(_KEEP_ENV_PREFIXES)}
    # Every submission costs a fork of a process that has torch loaded, which copies its
    # page tables, and an exit: both are cheaper with Python's objects in malloc's heap, and
    # that heap in transparent huge pages (docs/measurements.md).
    env.update(PYTHONMALLOC="malloc", GLIBC_TUNABLES="glibc.malloc.hugetlb=1")
    return env


def start(warm=()) -> None:
    """Start the fork server now, from this (main) thread, with `fork_server_env`: it
    inherits the environment of the moment it starts. A server already running is kept
    (it was started for the same assignment)."""
    import multiprocessing
    from multiprocessing import forkserver

    # grade/preload.py: the grading code, then the assignment's modules (named in its environment)
    multiprocessing.get_context("forkserver").set_forkserver_preload(["autograder.grade.preload"])
    saved = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(fork_server_env(saved), AUTOGRADER_PRELOAD=",".join(warm))
        forkserver.ensure_running()
    finally:
        os.environ.clear()
        os.environ.update(saved)


def stop() -> None:
    """Left alone, the fork server notices that this process has ended and then tears down
    its interpreter (torch loaded): 0.8 s more, holding this process's stdout and stderr, so
    whoever reads them (a pipe, CI, a test) waits. Its workers are stopped: end it now."""
    from multiprocessing import forkserver

    server = getattr(forkserver, "_forkserver", None)
    pid = getattr(server, "_forkserver_pid", None)
    if server is None or pid is None or not hasattr(server, "_stop"):
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        server._stop()                       # reaps it, forgets it (a later run starts a new one)
    except OSError:
        pass
