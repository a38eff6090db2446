"""bubblewrap's command line: what a sandbox's processes see (the Python installation and
this package, read-only; a private /tmp and /scratch), the namespaces it makes, the
capabilities its zygote keeps, and the whole environment its processes get."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path


PACKAGE_DIR = Path(__file__).resolve().parent.parent     # the autograder package, bound read-only
SANDBOX_SCRATCH = "/scratch"      # the only writable place inside the sandbox (besides /dev/shm)


# What a zygote may import before it forks: module names only (they come from the
# instructor's notebook, and end up in a command line).
WARMABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


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


def bwrap_command(python: str, privileged: bool, control_fd: int | None, warm: str) -> list[str]:
    """bubblewrap's command line: with a control fd, it runs a Python zygote; without one, a
    holder (`cat`, waiting on its stdin) whose namespaces a forked zygote joins (template.py).
    The package is then also where the worker has it, so the zygote's imports find it."""
    prefix, base = Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()
    # The interpreter by a path inside the binds: a venv reached through a symlink (a git
    # worktree sharing one) would otherwise name a path the sandbox does not have.
    if Path(python).parent.resolve() == prefix / "bin":
        python = str(prefix / "bin" / Path(python).name)
    bwrap = bwrap_path()
    if bwrap is None:      # the callers ask first (sandbox_problem, Sandbox.launch)
        raise FileNotFoundError("bubblewrap (bwrap) is not installed")
    cmd = [bwrap, "--die-with-parent", "--new-session",
           "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
           "--hostname", "sandbox", "--clearenv"]
    if privileged:
        # root outside, no user namespace: the zygote keeps just what it needs to hand each
        # submission its own unprivileged uid, and to clean up after it.
        # CAP_SYS_ADMIN: each submission gets fresh mount and PID namespaces (confine.py).
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

