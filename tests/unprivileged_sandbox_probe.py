"""Run as a user without root (tests/test_unprivileged.py starts it): a sandbox whose zygote a
template forked, and one whose zygote bubblewrap started, each probed from inside (a
submission's cells) and from outside (its processes' /proc). Prints one JSON object."""
from __future__ import annotations

import json
import os
import sys

sys.path.insert(0, sys.argv[1])

from autograder.sandbox.host import Limits, Sandbox  # noqa: E402
from autograder.sandbox.template import Template  # noqa: E402

CELL = r'''
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
fields = dict(l.split(":\t", 1) for l in open("/proc/self/status").read().splitlines() if ":\t" in l)
STATUS = {k: fields[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp")}
IDS = [os.getuid(), os.geteuid(), os.getgid(), os.getegid()]
MAPS = [open("/proc/self/uid_map").read().split(), open("/proc/self/gid_map").read().split()]
DUMPABLE = libc.prctl(3, 0, 0, 0, 0)
OWN_PROC_FILES = os.stat("/proc/self/status").st_uid == os.getuid()
ROOT = sorted(os.listdir("/"))
ENV = sorted(os.environ)
# the environment block the process was started with, read from its own memory: its
# /proc/self/environ is root's (a submission's process is non-dumpable, confine.seal)
_stat = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
ENVIRON = ctypes.string_at(int(_stat[47]), int(_stat[48]) - int(_stat[47])).count(b"=")   # env_start, env_end

def attempt(f):
    try:
        f()
        return "allowed"
    except OSError as e:
        return e.errno

WRITES = {p: attempt(lambda p=p: open(p + "/probe", "w")) for p in ("/opt/autograder", "/usr", "/tmp", "/")}
MOUNT = [libc.mount(b"tmpfs", b"/usr", b"tmpfs", 0, None), ctypes.get_errno()]
NETWORK = attempt(lambda: socket.create_connection(("192.0.2.1", 80), timeout=2))
SETUID0 = attempt(lambda: os.setuid(0))
'''
NAMES = ["STATUS", "IDS", "MAPS", "DUMPABLE", "OWN_PROC_FILES", "ROOT", "ENV", "ENVIRON", "WRITES", "MOUNT",
         "NETWORK", "SETUID0"]


def _ns(pid: int, name: str) -> str:
    return os.readlink(f"/proc/{pid}/ns/{name}")


def _zygote_pid(box: Sandbox) -> int:
    """The process that forks each submission: the template's zygote proper (the child of the
    process that joined), or the Python that bubblewrap started (its init's child)."""
    parent = box.zygote_pid if box.template is not None else int(
        open(f"/proc/{box.proc.pid}/task/{box.proc.pid}/children").read().split()[0])
    return int(open(f"/proc/{parent}/task/{parent}/children").read().split()[0])


def probe(templated: bool) -> dict:
    os.environ["AUTOGRADER_TEST_SECRET"] = "do-not-leak"
    template = Template.fork() if templated else None
    box = Sandbox(limits=Limits(), warm=("numpy",), template=template)
    try:
        box.start()
        holder = int(open(f"/proc/{box.proc.pid}/task/{box.proc.pid}/children").read().split()[0])
        zygote = _zygote_pid(box)
        outside = {
            "same_namespaces": {n: _ns(zygote, n) == _ns(holder, n)
                                for n in ("user", "ipc", "uts", "net", "cgroup", "mnt", "pid")},
            "zygote_fds": sorted(os.readlink(f"/proc/{zygote}/fd/{fd}").split(":")[0]
                                 for fd in os.listdir(f"/proc/{zygote}/fd")),
            "zygote_environ_secret": b"do-not-leak" in open(f"/proc/{zygote}/environ", "rb").read(),
            "zygote_root": sorted(os.listdir(f"/proc/{zygote}/root/")),
        }
        with box.session(b"{}", "probe.ipynb", [CELL], NAMES) as session:
            inside = {"broken": session.broken, "cell_errors": session.cell_errors}
            inside.update({name: session.get(name) for name in NAMES})
        return {"outside": outside, "inside": inside, "one_submission": box.one_submission,
                "starts": box.starts, "euid": os.geteuid()}
    finally:
        box.close()
        if template is not None:
            template.close()


print(json.dumps({"template": probe(True), "bwrap-zygote": probe(False)}))
