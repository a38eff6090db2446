"""Grading one submission: its code runs in the sandbox, its tests run here.

The instructor's test cells (hidden parts included) run in this trusted process. Each
graded name is bound to a proxy that calls the student's function inside the sandbox and
gets plain data back; every comparison, and so every point, is decided here.
"""
from __future__ import annotations

import hashlib
import time
from pathlib import Path

import numpy as np

from . import testing
from .notebook import (NotebookError, SourceNotebook, assignment_ids, cells_to_run, is_test_cell,
                       nbgrader_meta, read_notebook, strip_hidden)
from .protocol import Opaque, ReturnedSubclass
from .review import review
from .runtests import StudentError, SubmissionBroken, TestResult, compile_cell, run_test_cells
from .sandbox import Sandbox

VERSION = "1"


class RemoteFunction:
    """Stands for a student's function or class: calls go to the sandbox."""

    def __init__(self, session, name: str, notes: list[str]):
        self._session, self._name, self._notes = session, name, notes
        self.__autograder_remote__ = self
        self.__name__ = name

    def __repr__(self) -> str:
        return f"<student function {self._name}>"

    def _note(self, text: str) -> None:
        if text not in self._notes:
            self._notes.append(text)

    def _inspect(self, value, args) -> None:
        in_float64 = any(isinstance(a, np.ndarray) and a.dtype == np.float64 for a in args)
        for v in value if isinstance(value, (tuple, list)) else [value]:
            if isinstance(v, Opaque):
                self._note(f"{self._name} returned a {v.type_name} object, not data")
            elif isinstance(v, ReturnedSubclass):
                self._note(f"{self._name} returned an ndarray subclass ({v.original_type})")
            elif type(v).__module__.startswith("torch"):
                self._note(f"{self._name} returned a torch.Tensor where NumPy is expected")
            elif isinstance(v, np.ndarray) and in_float64 and v.dtype == np.float32:
                self._note(f"{self._name} returned float32 for float64 inputs")

    def __call__(self, *args, **kwargs):
        try:
            reply = self._session.call(self._name, args, kwargs)
        except StudentError as exc:
            if exc.remote_type_names[0] == "TimeLimitExceeded":
                self._note(f"time limit reached in a call of {self._name}: an infinite loop?")
            raise
        if not (isinstance(reply, dict) and {"result", "args", "kwargs"} <= set(reply)):
            raise SubmissionBroken("the notebook's process sent an invalid reply")
        # Mirror in-place modifications onto the caller's arrays, so that the test's own
        # check (`expect_unchanged`) sees them exactly as it would in a notebook.
        after_args = reply["args"] if isinstance(reply["args"], list) else []
        after_kwargs = reply["kwargs"] if isinstance(reply["kwargs"], dict) else {}
        for original, changed in zip(args, after_args):
            self._mirror(original, changed)
        for name, original in kwargs.items():
            self._mirror(original, after_kwargs.get(name))
        self._inspect(reply["result"], args)
        return reply["result"]

    def _mirror(self, original, changed) -> None:
        if isinstance(original, np.ndarray) and isinstance(changed, np.ndarray) \
                and changed.shape == original.shape and original.flags.writeable:
            if not np.array_equal(original, changed, equal_nan=True):
                self._note(f"{self._name} modified its input in place")
                np.copyto(original, changed.astype(original.dtype, copy=False), casting="unsafe")
        elif type(original).__module__.startswith("torch") and type(changed).__module__.startswith("torch"):
            import torch

            if changed.shape == original.shape and not torch.equal(original.detach(), changed.detach()):
                self._note(f"{self._name} modified its input in place")
                with torch.no_grad():
                    original.copy_(changed)

    def probe(self, probe: str, *args, **kwargs):
        reply = self._session.probe(probe, self._name, args, kwargs)
        if not (isinstance(reply, dict) and "result" in reply):
            raise SubmissionBroken("the notebook's process sent an invalid reply")
        return reply["result"]


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def integrity_flags(source: SourceNotebook, nb) -> list[str]:
    """What the student changed that they were not meant to (the originals are used anyway)."""
    flags = []
    submitted = {nbgrader_meta(c).get("grade_id"): c for c in nb.cells if nbgrader_meta(c).get("grade_id")}
    for test in source.tests:
        cell = submitted.get(test.grade_id)
        if cell is None:
            flags.append(f"test cell {test.grade_id} deleted or its metadata removed (the original was used)")
        elif strip_hidden(cell.source).strip() != test.visible_source.strip():
            flags.append(f"test cell {test.grade_id} edited (the original was used)")
    for gid in source.answer_ids:
        if gid not in submitted:
            flags.append(f"answer cell {gid} missing or its metadata removed")
    return flags


def _zero(source: SourceNotebook, message: str) -> list[TestResult]:
    return [TestResult(t.grade_id, t.description, 0.0, t.points, False, message, t.has_hidden)
            for t in source.tests]


def grade_submission(source: SourceNotebook, student: str, assignment: str,
                     notebook_path: Path | None, box: Sandbox, salt: str,
                     problem: str | None = None) -> dict:
    """Grade one student's notebook; returns the result record (plain JSON-able data)."""
    started = time.time()
    flags: list[str] = []
    data = b""
    if problem is None and notebook_path is not None:
        try:
            data = Path(notebook_path).read_bytes()
            nb = read_notebook(notebook_path)
        except NotebookError as exc:
            problem = f"corrupt notebook: {exc}"
        else:
            ids = assignment_ids(nb)
            if not ids & (set(source.answer_ids) | {t.grade_id for t in source.tests}):
                problem = f"not a {assignment} notebook (none of its cells belong to this assignment)"
    if problem is not None:
        results = _zero(source, problem)
        flags.append(problem)
    else:
        flags += integrity_flags(source, nb)
        cells = cells_to_run(source, nb)
        notes: list[str] = []
        results = _run_tests(source, nb, cells, data, Path(notebook_path).name, box, salt, flags, notes)
        flags += review([c.source for c in nb.cells if c.get("cell_type") == "code" and not is_test_cell(c)])
        flags += notes
    score = sum(r.points for r in results)
    return {
        "student": student, "assignment": assignment,
        "notebook": str(Path(notebook_path).name) if notebook_path else None,
        "digest": digest(data) if data else None,
        "score": round(score, 6), "max_score": source.max_score,
        "tests": [r.to_dict() for r in results], "flags": flags,
        "seconds": round(time.time() - started, 3), "grader_version": VERSION,
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


def _hardcoding_check(source, results, namespace, salt, flags) -> None:
    """A visible test that passes with the inputs students see, but fails with the fresh
    inputs drawn at grading time, points to answers hard-coded for the published inputs.
    (Only a note: the score already reflects it.)"""
    for test, result in zip(source.tests, results):
        if result.passed or "rng(" not in test.visible_source:
            continue
        if _visible_passes(test, namespace, "") and not _visible_passes(test, namespace, salt):
            flags.append("passes visible tests only with their published inputs: answers hard-coded?")
            return


def _run_tests(source, nb, cells, data, name, box, salt, flags, notes) -> list[TestResult]:
    namespace: dict = {"__name__": "__main__"}
    # The instructor's locked cells (imports, helpers) run here too: tests rely on them.
    for cell in source.nb.cells:
        meta = nbgrader_meta(cell)
        if cell.cell_type == "code" and meta.get("locked") and not meta.get("grade") and not meta.get("solution"):
            exec(compile_cell(cell.source, f"<{meta.get('grade_id', 'setup')}>"), namespace)
    testing.grading_context.salt, testing.grading_context.trusted = salt, True
    try:
        with box.session(data, name, cells, source.graded_names) as session:
            for error in session.cell_errors:
                if error and error.startswith("TimeLimitExceeded"):
                    flags.append("time limit reached in a code cell: it was interrupted")
                    break
                if error:
                    flags.append(f"a code cell raised {error.split(':')[0]} when run")
                    break
            if session.broken:
                flags.append(session.broken)
            for graded in source.graded_names:
                kind = session.names.get(graded, "missing")
                if kind == "callable":
                    namespace[graded] = RemoteFunction(session, graded, notes)
                elif kind == "value":
                    try:
                        namespace[graded] = session.get(graded)
                    except (StudentError, SubmissionBroken):
                        pass
                elif not session.broken:
                    flags.append(f"{graded} is not defined")
            results = run_test_cells(source, namespace)
            if not session.broken:
                _hardcoding_check(source, results, namespace, salt, flags)
            if session.broken and session.broken not in flags:
                flags.append(session.broken)
    finally:
        testing.grading_context.salt, testing.grading_context.trusted = "", False
    return results
