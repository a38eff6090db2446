"""A grading worker: one warm sandbox, one submission at a time, until told to stop.

Imported once by the server that forks the workers (`pool_local.LocalPool`), with the assignment's own
modules: a new worker starts with NumPy, torch and the grading code already loaded. Before
it reads anything, it forks the template its sandboxes' zygotes are forked from
(sandbox/template.py); without one (no bubblewrap), each sandbox's zygote imports its
modules itself while the worker reads the assignment.
"""
from __future__ import annotations

import numpy  # noqa: F401  (the tests' inputs and comparisons)

from ..flags import flag
from .. import startup
from ..notebook import load_source, source_imports
from ..sandbox.host import Limits, Sandbox, SandboxUnavailable
from ..sandbox.server import import_modules
from ..sandbox.template import Template
from .testcells import _transformer
from .submission import compile_tests, grade_submission


def warm() -> None:
    """What every worker needs, made ready once by the process workers are forked from
    (grade/preload.py, a student's check) rather than in each worker as it starts: nbformat
    with its validator (every submission is parsed and validated here), and IPython's cell
    transformer (its tests are compiled as IPython would)."""
    nbformat = startup.fast_nbformat()
    nbformat.validate(nbformat.v4.new_notebook())
    _transformer()


def main(conn, slot: int, source_path: str, limits: Limits, unsafe: bool) -> None:
    """The parent may close its end at any time (a user error found while the workers warm
    up, say): then the worker ends quietly."""
    try:
        _serve(conn, slot, source_path, limits, unsafe)
    except (EOFError, OSError, KeyboardInterrupt):
        pass


def _serve(conn, slot: int, source_path: str, limits: Limits, unsafe: bool) -> None:
    # First, while this process holds nothing but what the fork server imported: the copy
    # its sandboxes' zygotes are forked from (no torch import in each sandbox).
    template = None if unsafe else Template.fork()
    try:
        _serve_with(conn, slot, source_path, limits, unsafe, template)
    finally:
        if template is not None:
            template.close()


def prepare(slot: int, source_path: str, limits: Limits, unsafe: bool, template):
    """The assignment, read and compiled, and a warm sandbox for it: (source, box). Raises
    SandboxUnavailable (the sandbox closed) where no sandbox can start."""
    # The sandbox starts first (bubblewrap, then its zygote), while this process parses the
    # assignment. A zygote forked from the template has what the fork server imported; one
    # that bubblewrap starts imports what the notebook imports, read from it as plain JSON.
    warm = () if template is not None else source_imports(source_path)
    box = Sandbox(slot=slot, limits=limits, unsafe=unsafe, warm=warm, template=template)
    try:
        box.launch()
        source = load_source(source_path)
        box.warm = source.imports           # should a forked zygote fail, bubblewrap starts one
        box.request_zygote()
        compile_tests(source)
        import_modules(source.imports)      # what the test cells import, before the first student
        box.wait_ready()
    except BaseException:
        box.close()
        raise
    return source, box


def grade_task(source, box, task) -> dict:
    """One submission (a pool's Task) graded in `box`: its result. A fault of the
    grader's own is that student's flagged 0, never a stopped run; SandboxUnavailable is
    raised (no sandbox: nothing may be graded)."""
    student, assignment, data, name, problem, salt = task
    try:
        return grade_submission(source, student, assignment, data, name, box, salt, problem)
    except SandboxUnavailable:
        raise
    except Exception as exc:  # noqa: BLE001 (one submission must never stop the class's grading)
        box.kill()
        detail = f"{type(exc).__name__} in the grader"
        return grade_submission(source, student, assignment, None, None, box, salt,
                                flag("internal", detail=detail))


def _serve_with(conn, slot: int, source_path: str, limits: Limits, unsafe: bool, template) -> None:
    try:
        source, box = prepare(slot, source_path, limits, unsafe, template)
    except SandboxUnavailable as exc:
        try:
            conn.send(("unavailable", str(exc)))
        except OSError:
            pass
        return
    try:
        conn.send(("ready", None))
        while True:
            task = conn.recv()
            if task is None:
                return
            try:
                result = grade_task(source, box, task)
            except SandboxUnavailable as exc:
                conn.send(("unavailable", str(exc)))
                return
            conn.send(("result", result))
    finally:
        box.close()
