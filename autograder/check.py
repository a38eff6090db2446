"""`autograder check`: run a notebook and all its tests (hidden ones too) in this process.

For instructors and course authors only: it runs the notebook's code unsandboxed, so it
is for trusted notebooks (solutions, and the wrong-on-purpose implementations under tests/).
Students' submissions go through `autograder grade`, which sandboxes them.
"""
from __future__ import annotations

import contextlib
import io
from pathlib import Path

from .notebook import cells_to_run, load_source, read_notebook
from .testcells import TestResult, compile_cell, run_test_cells


def check_notebook(source_path: str | Path, submission_path: str | Path | None = None,
                   extra_code: str | None = None, quiet: bool = True) -> list[TestResult]:
    """Run the answer cells (of `submission_path`, or of the source itself), then
    `extra_code` (e.g. a replacement implementation), then every test cell."""
    source = load_source(source_path)
    nb = read_notebook(submission_path) if submission_path else source.nb
    namespace: dict = {"__name__": "__main__"}
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink) if quiet else contextlib.nullcontext():
        for i, code in enumerate(cells_to_run(source, nb) + ([extra_code] if extra_code else [])):
            try:
                exec(compile_cell(code, f"<cell {i}>"), namespace)
            except Exception:  # noqa: BLE001 (like a notebook: a failing cell does not stop the rest)
                pass
        return run_test_cells(source, namespace)
