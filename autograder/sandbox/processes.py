"""The processes a submission started: found by parent in /proc, and ended.

The submission's process is a subreaper (confine.seal), so every process it starts stays
below it, however orphaned. It ends them after every cell and every call
(child._end_if_a_copy); the zygote ends them before every measured call (meter.Meter).
"""
from __future__ import annotations

import os
import signal


def descendants(root: int) -> list[int]:
    """Every living process below `root` (by parent, from /proc), zombies left out."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                data = f.read()
            state, ppid = data[data.rindex(b")") + 2:].split()[:2]
        except (OSError, ValueError):
            continue
        if state not in (b"Z", b"X"):
            children.setdefault(int(ppid), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            found.append(child)
            todo.append(child)
    return found


def end_descendants(root: int, rounds: int = 100) -> bool:
    """Kill every process below `root` and wait until each has exited; False when processes
    still appeared after `rounds` sweeps (a chain that forks faster than it is killed)."""
    import select

    for _ in range(rounds):
        found = descendants(root)
        if not found:
            return True
        for pid in found:
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue
            try:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
                select.select([fd], [], [], 5)        # readable once it has exited
            except OSError:
                pass
            finally:
                os.close(fd)
    return not descendants(root)
