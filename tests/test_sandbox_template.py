"""A zygote forked from a template (autograder/sandbox/template.py) must be in the same box as
a zygote bubblewrap starts itself: the sandbox's namespaces and root, nothing of its parent's
open files, environment or privileges beyond what bubblewrap leaves a zygote. Compared here
with the holder process bubblewrap built the sandbox around, and with a zygote bubblewrap
started (the way grading worked before templates, and still works where they cannot)."""
from __future__ import annotations

import os
import socket

import pytest

from autograder.sandbox.host import SANDBOX_SCRATCH, Limits, Sandbox, sandbox_env
from autograder.sandbox.template import Template
from tests.conftest import SANDBOX

pytestmark = pytest.mark.skipif(not SANDBOX or os.geteuid() != 0,
                                reason="templates are used as root, with bubblewrap")

SHARED = ("ipc", "uts", "net", "cgroup", "mnt")


def _status(pid: int) -> dict[str, str]:
    lines = open(f"/proc/{pid}/status").read().splitlines()
    return dict(line.split(":\t", 1) for line in lines if ":\t" in line)


def _ns(pid: int, name: str) -> str:
    return os.readlink(f"/proc/{pid}/ns/{name}")


@pytest.fixture
def forked(monkeypatch):
    monkeypatch.setenv("AUTOGRADER_TEST_SECRET", "do-not-leak-" + os.urandom(6).hex())
    template = Template.fork()
    box = Sandbox(limits=Limits(), warm=("numpy",), template=template)
    box.start()
    yield box
    box.close()
    template.close()


def _holder(box: Sandbox) -> int:
    """bubblewrap's process inside the sandbox (pid 1 of its PID namespace)."""
    children = open(f"/proc/{box.proc.pid}/task/{box.proc.pid}/children").read().split()
    return int(children[0])


def _zygote(box: Sandbox) -> int:
    """The process that forks each submission: the one child of the process the template
    forked (which joined the namespaces, and waits)."""
    joiner = box.zygote_pid
    children = open(f"/proc/{joiner}/task/{joiner}/children").read().split()
    assert len(children) == 1, children
    return int(children[0])


def test_the_zygote_is_inside_the_sandbox(forked):
    joiner, zygote, holder = forked.zygote_pid, _zygote(forked), _holder(forked)
    for pid in (joiner, zygote):
        for name in SHARED:
            assert _ns(pid, name) == _ns(holder, name), name
            assert _ns(pid, name) != _ns(os.getpid(), name), name
        # its children are born in the sandbox's PID namespace
        assert _ns(pid, "pid_for_children") == _ns(holder, "pid")
    # the zygote is a process of the sandbox (the one that joined stays outside, waiting)
    assert _ns(zygote, "pid") == _ns(holder, "pid")
    assert _ns(joiner, "pid") == _ns(os.getpid(), "pid")
    assert os.readlink(f"/proc/{zygote}/cwd") == SANDBOX_SCRATCH
    assert sorted(os.listdir(f"/proc/{zygote}/root/")) == sorted(os.listdir(f"/proc/{holder}/root/"))
    assert not os.path.exists(f"/proc/{zygote}/root/{os.getcwd()}/solutions")


def test_the_zygote_keeps_nothing_of_its_parent(forked):
    joiner, zygote = forked.zygote_pid, _zygote(forked)
    fds = {int(fd): os.readlink(f"/proc/{zygote}/fd/{fd}") for fd in os.listdir(f"/proc/{zygote}/fd")}
    assert {fds[0], fds[1], fds[2]} == {"/dev/null"}
    # its control socket, and its own PID namespace (to return to after each submission's fork)
    assert sorted(fds) == [0, 1, 2, 3, 4], fds
    assert sorted(v.split(":")[0] for k, v in fds.items() if k > 2) == ["pid", "socket"], fds
    joiner_fds = {os.readlink(f"/proc/{joiner}/fd/{fd}") for fd in os.listdir(f"/proc/{joiner}/fd")}
    assert joiner_fds == {"/dev/null"}, joiner_fds
    for pid in (joiner, zygote):
        environ = open(f"/proc/{pid}/environ", "rb").read()
        assert environ.strip(b"\0") == b"", "the environment it was started with is still readable"
        status = _status(pid)
        assert status["NoNewPrivs"].strip() == "1"
        assert status["Seccomp"].strip() == "0"
        # as bwrap leaves its own zygote (root, and the capabilities it needs to hand each
        # submission its own uid and namespaces); every submission drops all of them
        assert status["Uid"].split()[0] == "0"


def test_the_zygote_environment_is_the_sandboxes(forked):
    session = forked.session(b"{}", "probe.ipynb", ["import os\nENV = dict(os.environ)\nUID = os.getuid()\n"
                                                    "CAPS = open('/proc/self/status').read()"], ["ENV", "UID", "CAPS"])
    try:
        env = session.get("ENV")
        uid = session.get("UID")
        caps = dict(line.split(":\t", 1) for line in session.get("CAPS").splitlines() if ":\t" in line)
    finally:
        session.close()
    # the student's process: the sandbox's environment (plus what IPython and its own setup
    # add), its own uid, no capabilities
    assert {k: env[k] for k in sandbox_env() if k not in ("HOME",)} == \
        {k: v for k, v in sandbox_env().items() if k != "HOME"}
    assert "AUTOGRADER_TEST_SECRET" not in env
    assert uid != 0
    assert int(caps["CapEff"], 16) == 0 and int(caps["CapPrm"], 16) == 0


def test_a_failed_join_is_reported_not_hung():
    """A holder that is gone before the zygote joins it: the sandbox does not start, in one
    clear error, within seconds."""
    template = Template.fork()
    try:
        ours, theirs = socket.socketpair()
        pid = template.zygote(theirs, 2 ** 22 - 1, [])      # no such process
        theirs.close()
        ours.settimeout(10)
        from autograder.sandbox import protocol

        header, _ = protocol.recv(ours)
        assert header["op"] == "failed" and "No such file" in header["error"], header
        assert pid > 0
    finally:
        template.close()


def test_a_zygote_that_cannot_join_leaves_a_sandbox_whose_zygotes_bubblewrap_starts(monkeypatch):
    """Where a forked zygote cannot join bubblewrap's namespaces (a kernel that refuses the
    `setns`, say), the sandbox starts as it would without a template, and grading goes on in it."""
    from autograder.sandbox import template as template_module

    def refused(control_fd, request):
        raise OSError("joining the sandbox's pid namespace: Operation not permitted (a test)")

    monkeypatch.setattr(template_module, "_zygote", refused)
    template = Template.fork()
    box = Sandbox(limits=Limits(), warm=("numpy",), template=template)
    try:
        box.start()
        assert box.template is None and box.starts == 2
        cell = "import os, sys\nSANDBOXED = os.environ.get('AUTOGRADER_SANDBOX')\nNUMPY = 'numpy' in sys.modules"
        for _ in range(2):
            with box.session(b"{}", "n.ipynb", [cell], ["SANDBOXED", "NUMPY"]) as session:
                assert session.broken is None and session.cell_errors == [None], session.broken
                assert session.get("SANDBOXED") == "1" and session.get("NUMPY") is True
        assert box.starts == 2 + box.one_submission     # bubblewrap's zygote, as without a template
    finally:
        box.close()
        template.close()


def test_at_its_cpu_limit_a_submission_ends_as_sigxcpu_would_end_it():
    """The submission's process is the first of its PID namespace, which the kernel spares
    the signals it has no handler for: without its own handler, SIGXCPU would be ignored and
    the process killed a second later, reported as killed rather than out of CPU time."""
    import time

    template = Template.fork()
    box = Sandbox(limits=Limits(cpu_seconds=1, wall_seconds=30), warm=("numpy",), template=template)
    try:
        box.start()
        spin = ("import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)   # no step limit\n"
                "while True:\n    pass\n")
        start = time.monotonic()
        session = box.session(b"{}", "spin.ipynb", [spin], [])
        try:
            assert session.broken is not None and session.broken.startswith("CPU time limit reached"), \
                session.broken
            assert session.crash.get("signal") == "SIGXCPU", session.crash
        finally:
            session.close()
        assert time.monotonic() - start < 10
    finally:
        box.close()
        template.close()


def test_a_zygote_that_may_not_make_namespaces_runs_one_submission_per_sandbox(monkeypatch):
    """Without root, bubblewrap's user namespace leaves the zygote no CAP_SYS_ADMIN: it cannot
    give each submission namespaces of its own (every submission used to fail, "exited
    early"). Then each submission gets a fresh sandbox, and still sees nothing of the last.
    Simulated here as root: bubblewrap drops that capability from the zygote's bounding set."""
    from autograder.sandbox import host

    real = host.bwrap_command

    def without_sys_admin(*args, **kwargs):
        cmd = real(*args, **kwargs)
        i = cmd.index("CAP_SYS_ADMIN")
        return cmd[:1] + ["--cap-drop", "CAP_SYS_ADMIN"] + cmd[1:i - 1] + cmd[i + 1:]

    monkeypatch.setattr(host, "bwrap_command", without_sys_admin)
    box = Sandbox(limits=Limits(), warm=("numpy",))
    cell = ("import os\nSEEN = sorted(os.listdir('/scratch/work'))\n"
            "open('/scratch/work/left-behind.txt', 'w').write('x')\nUID = os.getuid()")
    try:
        box.start()
        seen = []
        for _ in range(2):
            with box.session(b"{}", "n.ipynb", [cell], ["SEEN", "UID"]) as session:
                assert session.broken is None, session.broken
                assert session.cell_errors == [None], session.cell_errors
                seen.append(session.get("SEEN"))
                assert session.get("UID") != 0
        assert box.one_submission and box.starts == 2
        assert seen == [["n.ipynb"], ["n.ipynb"]], seen       # nothing of the first submission
    finally:
        box.close()


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            todo += [int(c) for c in open(f"/proc/{p}/task/{p}/children").read().split()]
        except OSError:
            pass
    return out


def _in_cgroups(box: Sandbox, pids: list[int]) -> None:
    for folder in box.cgroup.dirs:
        members = set(map(int, open(os.path.join(folder, "cgroup.procs")).read().split()))
        outside = [p for p in pids if os.path.exists(f"/proc/{p}") and p not in members]
        assert not outside, (folder, outside)


@pytest.mark.parametrize("templated", [True, False], ids=["template", "bwrap-zygote"])
def test_every_process_of_a_sandbox_counts_in_its_cgroups(templated):
    """bubblewrap joins the sandbox's cgroups (memory, pids) before it starts anything, so
    every process it makes counts, and so do the zygote and each submission's process."""
    template = Template.fork() if templated else None
    box = Sandbox(limits=Limits(), warm=("numpy",), template=template)
    try:
        box.start()
        if not box.cgroup or not box.cgroup.dirs:
            pytest.skip("no cgroup this process may create here")
        session = box.session(b"{}", "probe.ipynb", ["import time\nX = 1\n"], ["X"])
        try:
            assert session.get("X") == 1
            pids = _descendants(box.proc.pid) + (_descendants(box.zygote_pid) if templated else [])
            assert len(pids) >= (4 if templated else 3), pids     # a submission's process among them
            _in_cgroups(box, pids)
        finally:
            session.close()
    finally:
        box.close()
        if template is not None:
            template.close()
