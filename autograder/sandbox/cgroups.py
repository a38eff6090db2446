"""A sandbox's cgroups: a memory and process cap on the whole sandbox (`Cgroup`), the
kernel's count of the memory it holds during a measured call (`MemoryCounter`), and the
removal of those a killed worker left behind."""
from __future__ import annotations

import os
from pathlib import Path


class Cgroup:
    """A memory and process cap on one whole sandbox (zygote and the submission it runs),
    where the machine lets us make cgroups (root, cgroup v1 or v2). Best effort: without
    it, the per-process limits (address space, CPU, processes per uid) still hold."""

    def __init__(self, name: str, memory_bytes: int, processes: int):
        self.dirs: list[str] = []
        self.memory: str | None = None        # the directory whose memory counter MemoryCounter reads
        for controller, settings in (("memory", {"memory.limit_in_bytes": memory_bytes,
                                                 "memory.max": memory_bytes}),
                                     ("pids", {"pids.max": processes})):
            base = self._base(controller)
            if base is None:
                continue
            path = os.path.join(base, name)
            try:
                os.makedirs(path, exist_ok=True)
                wrote = False
                for key, value in settings.items():
                    if os.path.exists(os.path.join(path, key)):
                        with open(os.path.join(path, key), "w") as f:
                            f.write(str(value))
                        wrote = True
                if wrote:
                    self.dirs.append(path)
                    if controller == "memory":
                        self.memory = path
            except OSError:
                continue

    @staticmethod
    def _base(controller: str) -> str | None:
        try:
            lines = open("/proc/self/cgroup").read().splitlines()
        except OSError:
            return None
        for line in lines:
            _, controllers, path = line.split(":", 2)
            if controller in controllers.split(","):
                base = f"/sys/fs/cgroup/{controller}{path}"
                return base if os.access(base, os.W_OK) else None
        for line in lines:     # cgroup v2: one hierarchy
            if line.startswith("0::") and os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
                base = "/sys/fs/cgroup" + line[3:]
                return base if os.access(base, os.W_OK) else None
        return None

    # Joins the cgroups named before "--", then becomes the command after it. A `preexec_fn`
    # doing the same makes subprocess fork this process (torch loaded) and run Python in the
    # copy, many times the cost of this shell and its exec (docs/measurements.md).
    _JOIN = 'while [ "$1" != -- ]; do { echo $$ >"$1/cgroup.procs"; } 2>/dev/null; shift; done; shift; exec "$@"'

    def command(self, cmd: list[str]) -> list[str]:
        """`cmd`, run in these cgroups from its first instruction: it, and all it starts, count."""
        return ["/bin/sh", "-c", self._JOIN, "sh", *self.dirs, "--", *cmd] if self.dirs else cmd

    def remove(self) -> None:
        for path in self.dirs:
            try:
                os.rmdir(path)
            except OSError:
                pass


class MemoryCounter:
    """The kernel's count of the memory a sandbox's cgroup holds (every process in it, its
    files in memory, its pipes' and sockets' buffers), from the cgroup's peak, reset before a
    measured call (`start`) and read after it (`rise`): nothing inside the sandbox can reset
    or dodge it. cgroup v1: memory.max_usage_in_bytes, reset by writing 0 to it. cgroup v2:
    memory.peak, reset by writing to it, for reads through the same open file (Linux 6.12 and
    later; earlier kernels refuse the write: `start` returns False). Where the sandbox has no
    memory cgroup (no root) there is no counter: the zygote's meter alone measures
    (meter.Meter)."""

    def __init__(self, directory: str):
        self.directory = directory
        self.v1 = os.path.exists(os.path.join(directory, "memory.max_usage_in_bytes"))
        self.fd: int | None = None
        self.base: int | None = None

    def _read(self, fd: int) -> int:
        return int(os.pread(fd, 64, 0).split()[0])

    def start(self) -> bool:
        self.close()
        try:
            if self.v1:
                self.fd = os.open(os.path.join(self.directory, "memory.max_usage_in_bytes"), os.O_RDWR | os.O_CLOEXEC)
                os.write(self.fd, b"0")
            else:
                self.fd = os.open(os.path.join(self.directory, "memory.peak"), os.O_RDWR | os.O_CLOEXEC)
                os.write(self.fd, b"reset\n")
            self.base = self._read(self.fd)
            return True
        except (OSError, ValueError, IndexError):
            self.close()
            return False

    def rise(self) -> int | None:
        """How far the peak rose above what the cgroup held at `start`; None if not started."""
        if self.fd is None or self.base is None:
            return None
        try:
            return max(0, self._read(self.fd) - self.base)
        except (OSError, ValueError, IndexError):
            return None
        finally:
            self.close()

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
        self.fd = None


def remove_stale_cgroups() -> None:
    """Remove the empty cgroups of sandboxes whose worker is gone (killed while grading)."""
    for controller in ("memory", "pids"):
        base = Cgroup._base(controller)
        if base is None:
            continue
        for entry in Path(base).glob("autograder-*-*"):
            pid = entry.name.split("-")[1]
            if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
                try:
                    os.rmdir(entry)
                except OSError:
                    pass

