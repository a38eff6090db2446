"""Grading one submission: its code runs in the sandbox, its tests run here.

The instructor's test cells (hidden parts included) run in this trusted process. Each
graded name is bound to a proxy that calls the student's function inside the sandbox and
gets plain data back; every comparison, and so every point, is decided here.
"""
from __future__ import annotations

import time

import numpy as np

from .. import testing
from . import digest
from ..flags import Flag, add, after_hidden, exception_name, flag
from ..notebook import (NotebookError, SourceNotebook, assignment_ids, cells_to_run, is_test_cell,
                       nbgrader_meta, parse_notebook, strip_hidden)
from ..sandbox.protocol import Opaque, ReturnedSubclass
from ..report.review import review
from ..sandbox.errors import StudentError, SubmissionBroken
from .testcells import TestResult, compile_cell, run_test_cells
from ..sandbox.host import Sandbox

class RemoteFunction:
    """Stands for a student's function or class: calls go to the sandbox.

    The arguments travel as copies, so the test's own arrays never change. What comes back
    after the call is compared with what was sent: a call that wrote into its inputs fails
    right there (as it does in the student's kernel) and is flagged. A call made from a hidden
    region taints the submission: from then on its feedback says only whether each test
    passed, and the flags its calls raise are the instructor's only (`raise_flag`).
    """

    def __init__(self, session, name: str, flags: list[Flag]):
        self._session, self._name, self._flags = session, name, flags
        self.__autograder_remote__ = self
        self.__name__ = name

    def __repr__(self) -> str:
        return f"<student function {self._name}>"

    def _inspect(self, value, args) -> None:
        in_float64 = any(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in args)
        for v in value if isinstance(value, (tuple, list)) else [value]:
            if isinstance(v, Opaque):
                raise_flag(self._flags, flag("not-data", name=self._name))
            elif isinstance(v, ReturnedSubclass):
                raise_flag(self._flags, flag("ndarray-subclass", name=self._name))
            elif type(v).__module__.startswith("torch"):
                raise_flag(self._flags, flag("torch-result", name=self._name))
            elif isinstance(v, np.ndarray) and in_float64 and v.dtype == np.float32:
                raise_flag(self._flags, flag("float32", name=self._name))

    def _call_started(self) -> None:
        if testing.called_from_hidden_region():
            testing.grading_context.tainted = True

    def __call__(self, *args, **kwargs):
        self._call_started()
        try:
            reply = self._session.call(self._name, args, kwargs)
        except StudentError as exc:
            if exc.timed_out:
                raise_flag(self._flags, flag("call-time-limit", name=self._name))
            raise
        if not (isinstance(reply, dict) and {"result", "args", "kwargs"} <= set(reply)):
            raise SubmissionBroken("the notebook's process sent an invalid reply")
        after = reply["args"] if isinstance(reply["args"], list) else []
        after_kw = reply["kwargs"] if isinstance(reply["kwargs"], dict) else {}
        changed = testing.modified_arguments(args, kwargs, after, after_kw)
        if changed:
            raise_flag(self._flags, flag("inputs-modified", name=self._name))
            raise testing.modified_input_failure(changed)
        self._inspect(reply["result"], args)
        return reply["result"]

    def probe(self, probe: str, *args, **kwargs):
        self._call_started()
        measured = probe in MEASURED_FROM_OUTSIDE
        reply = self._session.probe(probe, self._name, args, kwargs, measured=measured)
        if not (isinstance(reply, dict) and "result" in reply):
            raise SubmissionBroken("the notebook's process sent an invalid reply")
        if measured:
            reply["result"] = _measured(reply["result"], reply.get("meter") or {"ok": False})
        if reply.get("probes_changed") is not False:
            # the notebook changed the grader's probes (the probe itself ran as it was before
            # the notebook's code): the tests that use a probe earn nothing
            raise_flag(self._flags, flag("probes-changed", name=self._name))
            raise testing.TestFailure("your notebook changed the grader's probes (autograder.probes): "
                                      "tests that measure your code through a probe earn nothing", "",
                                      "your notebook changed the grader's probes: this test earns nothing")
        return reply["result"]


def raise_flag(flags: list[Flag], new: Flag) -> None:
    """Record a flag that the student's code caused while the tests ran. Once that code has
    received a hidden input, the flag is the instructor's only (flags.after_hidden): whether
    it is raised is the code's choice, and the code may have kept the hidden input."""
    add(flags, after_hidden(new) if testing.grading_context.tainted else new)


# Probes whose numbers the grader takes from outside the submission's process (the zygote's
# meter, sandbox/meter.Meter), never from the process itself, which runs the student's code.
MEASURED_FROM_OUTSIDE = {"peak_memory"}


def _measured(result, meter: dict) -> dict:
    """peak_memory's result with its numbers replaced by the meter's: `peak_bytes`, the rise
    of the process's peak resident memory; `touched_bytes`, the most memory it had touched
    during the call (buffers made before the call included); `processes`, processes
    it started (whose memory is not its own). Where the meter could not measure, the numbers
    are infinite and `measured` is False: no memory test can pass on them."""
    out = dict(result) if isinstance(result, dict) else {"output": None}
    if meter.get("ok"):
        out.update(peak_bytes=meter["rise"], touched_bytes=meter["touched"], processes=meter["started"],
                   measured=True)
    else:
        out.update(peak_bytes=float("inf"), touched_bytes=float("inf"), processes=0, measured=False)
    return out


def integrity_flags(source: SourceNotebook, nb) -> list[Flag]:
    """What the student changed that they were not meant to (the originals are used anyway)."""
    flags = []
    submitted = {nbgrader_meta(c).get("grade_id"): c for c in nb.cells if nbgrader_meta(c).get("grade_id")}
    for test in source.tests:
        cell = submitted.get(test.grade_id)
        if cell is None:
            flags.append(flag("test-deleted", grade_id=test.grade_id))
        elif strip_hidden(cell.source).strip() != test.visible_source.strip():
            flags.append(flag("test-edited", grade_id=test.grade_id))
    for gid in source.answer_ids:
        if gid not in submitted:
            flags.append(flag("answer-missing", grade_id=gid))
    return flags


def _zero(source: SourceNotebook, message: str) -> list[TestResult]:
    return [TestResult(t.grade_id, t.description, 0.0, t.points, False, message, t.has_hidden)
            for t in source.tests]


def grade_submission(source: SourceNotebook, student: str, assignment: str,
                     data: bytes | None, notebook_name: str | None, box: Sandbox, salt: str,
                     problem: Flag | None = None) -> dict:
    """Grade one student's notebook (its bytes, read by the caller from a regular file in
    the student's own folder); returns the result record (plain JSON-able data)."""
    started = time.time()
    flags: list[Flag] = []
    if problem is None and data is None:
        problem = flag("no-notebook")
    if problem is None and data is not None:
        try:
            nb = parse_notebook(data, notebook_name or "notebook")
        except NotebookError as exc:
            problem = flag("corrupt", detail=str(exc))
        else:
            ids = assignment_ids(nb)
            if not ids & (set(source.answer_ids) | {t.grade_id for t in source.tests}):
                problem = flag("other-assignment", assignment=assignment)
    if problem is not None:
        results = _zero(source, problem.message)
        flags.append(problem)
    else:
        flags += integrity_flags(source, nb)
        cells = cells_to_run(source, nb)
        results = _run_tests(source, cells, data, notebook_name, box, salt, flags)
        for note in review([c.source for c in nb.cells if c.get("cell_type") == "code" and not is_test_cell(c)]):
            add(flags, flag("review", detail=note))
    score = sum(r.points for r in results)
    return {
        "student": student, "assignment": assignment, "notebook": notebook_name,
        "digest": digest(data) if data else None,
        "score": round(score, 6), "max_score": source.max_score,
        "tests": [r.to_dict() for r in results], "flags": [f.to_dict() for f in flags],
        "seconds": round(time.time() - started, 3),
    }


def _visible_passes(test, namespace, salt: str) -> bool:
    testing.grading_context.salt = salt
    try:
        exec(compile_cell(test.visible_source, f"<{test.grade_id}>"), namespace)
        return True
    except Exception:  # noqa: BLE001 (any failure counts as failing)
        return False
    finally:
        testing.grading_context.salt = ""


def _hardcoding_check(source, results, namespace, salt, flags: list[Flag]) -> None:
    """A visible test that passes with the inputs students see, but fails with the fresh
    inputs drawn at grading time, points to answers hard-coded for the published inputs.
    (Only a note: the score already reflects it.)"""
    for test, result in zip(source.tests, results):
        if result.passed or "rng(" not in test.visible_source:
            continue
        if _visible_passes(test, namespace, "") and not _visible_passes(test, namespace, salt):
            add(flags, flag("hardcoded"))
            return


def _setup_cells(source: SourceNotebook):
    """The instructor's locked cells (imports, helpers), which tests rely on: (code, name)."""
    for cell in source.nb.cells:
        meta = nbgrader_meta(cell)
        if cell.cell_type == "code" and meta.get("locked") and not meta.get("grade") and not meta.get("solution"):
            yield cell.source, f"<{meta.get('grade_id', 'setup')}>"


def compile_tests(source: SourceNotebook) -> None:
    """Compile, once per worker, every cell grading runs here (`compile_cell` keeps them):
    the worker does it while its sandbox's zygote starts, instead of during its first
    submission (40 ms of IPython's tokenizer and Python's compiler)."""
    for code, name in _setup_cells(source):
        compile_cell(code, name)
    for test in source.tests:
        compile_cell(test.source, f"<{test.grade_id}>")
        compile_cell(test.visible_source, f"<{test.grade_id}>")


def _run_tests(source, cells, data, name, box, salt, flags: list[Flag]) -> list[TestResult]:
    namespace: dict = {"__name__": "__main__"}
    # The instructor's locked cells (imports, helpers) run here too: tests rely on them.
    for code, cell_name in _setup_cells(source):
        exec(compile_cell(code, cell_name), namespace)
    context = testing.grading_context
    context.salt, context.trusted, context.tainted = salt, True, False
    try:
        with box.session(data, name, cells, source.graded_names) as session:
            for error in session.cell_errors:
                if error and error.startswith("TimeLimitExceeded"):
                    add(flags, flag("cell-time-limit"))
                    break
                if error and error.startswith("OutputLimitExceeded"):
                    add(flags, flag("cell-output-limit"))
                    break
                if error:
                    add(flags, flag("cell-error", error=exception_name(error)))
                    break
            if session.broken:
                add(flags, flag("broken", detail=session.broken))
            for graded in source.graded_names:
                kind = session.names.get(graded, "missing")
                if kind == "callable":
                    namespace[graded] = RemoteFunction(session, graded, flags)
                elif kind == "value":
                    try:
                        namespace[graded] = session.get(graded)
                    except (StudentError, SubmissionBroken):
                        pass
                elif not session.broken:
                    add(flags, flag("not-defined", name=graded))
            results = run_test_cells(source, namespace)
            if not session.broken:
                _hardcoding_check(source, results, namespace, salt, flags)
            if session.broken:
                raise_flag(flags, flag("broken", detail=session.broken))
    finally:
        context.salt, context.trusted, context.tainted = "", False, False
    return results
