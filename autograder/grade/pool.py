"""How work reaches a grader: one interface, two implementations. `run` orchestrates a class's
grading (what to grade, resume, the gradebook, feedback) and hands each submission to a pool:

- `pool_local.LocalPool`: workers forked on this machine, each with a warm sandbox (default);
- `pool_dask.DaskPool`: the workers of a Dask cluster (`--cluster ADDRESS`), each Dask worker
  process with its own warm sandbox.

A task is a grade.Task (student, assignment, notebook bytes or None, notebook name, problem flag or
None, salt); a result is the plain dict `submission.grade_submission` returns, or
{"student", "abandoned": flag dict, "notebook"} when the grading was given up (worker lost).
"""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Protocol

from ..sandbox.host import Limits

if TYPE_CHECKING:
    from .task import Task


class Pool(Protocol):
    size: int                         # how many workers grade at once

    def trim(self, needed: int) -> None:
        """No more workers than submissions to grade."""

    def run(self, tasks: list[Task], on_result: Callable[[dict], None]) -> None:
        """Grade every task; `on_result` is called in this thread, once per task."""

    def release(self) -> None:
        """Tell the workers the run is over (without waiting)."""

    def close(self) -> None:
        """Stop what this pool started; safe to call twice."""


def open_pool(n: int, source_path: Path, limits: Limits, unsafe: bool, warm: tuple[str, ...], phases,
              cluster: dict | None = None) -> Pool:
    """The local pool, or, with `cluster` (`pool_dask.connect`'s settings), the Dask one."""
    if cluster is not None:
        from .pool_dask import DaskPool

        return DaskPool(cluster, source_path, limits, phases)
    from .pool_local import LocalPool

    return LocalPool(n, source_path, limits, unsafe, warm, phases)


__all__ = ["Pool", "open_pool"]
