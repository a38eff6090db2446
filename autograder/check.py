"""`autograder check`: run a notebook's tests.

Two uses, two functions:

* `check_student` (`autograder check NOTEBOOK`): a student's copy of an exercise. Its
  *visible* tests only (the hidden parts are stripped), with the published inputs (no
  grading secret), through the same path as grading: the student's code runs in the
  sandbox where bubblewrap works, otherwise in a plain child process; the tests run here.
  So the student sees the numbers of their own notebook.
* `check_notebook` (`autograder check --hidden SOURCE`): for instructors and course authors
  only. It runs a trusted notebook (a solution, or the wrong-on-purpose implementations
  under tests/) and all its tests, hidden ones too, in this process, unsandboxed.
"""
from __future__ import annotations

import contextlib
import dataclasses
import io
import os
from dataclasses import dataclass, field
from pathlib import Path

from . import course
from .notebook import (NotebookError, SourceNotebook, assignment_ids, cells_to_run, load_source,
                       parse_notebook, read_notebook, read_regular_file)
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


# --------------------------------------------------------------------------------------
# The student's check
# --------------------------------------------------------------------------------------
@dataclass
class StudentCheck:
    assignment: str
    where: str                                   # one line: how the student's code ran
    results: list[TestResult]
    notes: list[str] = field(default_factory=list)   # flags the student may see

    @property
    def score(self) -> float:
        return sum(r.points for r in self.results)

    @property
    def max_score(self) -> float:
        return sum(r.max_points for r in self.results)


def visible_only(source: SourceNotebook) -> SourceNotebook:
    """The source with every test cell reduced to what students see (hidden parts removed)."""
    tests = [dataclasses.replace(t, source=t.visible_source, has_hidden=False) for t in source.tests]
    return dataclasses.replace(source, tests=tests)


def recognise_assignment(nb, name: str = "notebook") -> str:
    """The assignment a notebook belongs to: the one whose answer and test ids it shares most."""
    ids = assignment_ids(nb)
    best, overlap = None, 0
    for assignment in course.assignments():
        source = load_source(course.source_notebook(assignment))
        shared = len(ids & (set(source.answer_ids) | {t.grade_id for t in source.tests}))
        if shared > overlap:
            best, overlap = assignment, shared
    if best is None:
        raise course.CourseError(f"{name} is not an exercise of this course (none of its cells belong to one); "
                                 f"name the assignment with --assignment")
    return best


def _sandbox(unsafe: bool):
    from .sandbox.host import Limits, Sandbox, SandboxUnavailable, bwrap_path

    if not unsafe and bwrap_path():
        box = Sandbox(limits=Limits())
        try:
            box.start()
            return box, "your code ran in the sandbox (bubblewrap), as when it is graded"
        except SandboxUnavailable as exc:
            box.close()
            why = f"the sandbox could not start: {exc}"
    else:
        why = "asked for no sandbox" if unsafe else "bubblewrap (bwrap) is not installed"
    box = Sandbox(limits=Limits(), unsafe=True)
    try:
        box.start()
    except SandboxUnavailable as exc:
        box.close()
        raise course.CourseError(f"your notebook's code could not be started ({why}; {exc})") from None
    return box, f"your code ran in a plain child process, not in the sandbox ({why})"


def check_student(notebook: str | Path, assignment: str | None = None, *,
                  no_sandbox: bool = False) -> StudentCheck:
    """Run the visible tests of a student's notebook with the published inputs."""
    from .grade.submission import grade_submission

    path = Path(notebook)
    data = read_regular_file(path)
    nb = parse_notebook(data, path.name)
    assignment = assignment or recognise_assignment(nb, path.name)
    source = visible_only(load_source(course.source_notebook(assignment)))
    box, where = _sandbox(no_sandbox)
    sink = io.StringIO()
    try:
        # Tests run in this process; anything they print stays out of the table.
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            record = grade_submission(source, "you", assignment, data, path.name, box, salt="")
    finally:
        box.close()
    results = [TestResult(**t) for t in record["tests"]]
    notes = [f["message"] for f in record["flags"] if f["student_visible"]]
    return StudentCheck(assignment, where, results, notes)


def format_table(check: StudentCheck, width: int | None = None) -> str:
    """The check as a table: test, points, pass/fail, the message naming the likely bug."""
    rows = [(r.grade_id, f"{r.points:g}/{r.max_points:g}", "pass" if r.passed else "FAIL", r.message)
            for r in check.results]
    head = ("test", "points", "result", "message")
    widths = [max(len(head[i]), *(len(row[i]) for row in rows)) for i in range(3)]
    line = lambda cols: "  ".join(c.ljust(w) for c, w in zip(cols, widths + [0])).rstrip()  # noqa: E731
    out = [f"{check.assignment}: visible tests, published inputs; {check.where}", "",
           line(head), line(["-" * w for w in widths] + ["-" * 7])]
    out += [line(row) for row in rows]
    out += ["", f"total {check.score:g}/{check.max_score:g} visible points"
            + ("" if check.score == check.max_score else
               f" ({sum(not r.passed for r in check.results)} of {len(rows)} tests fail)")]
    out += [f"note: {n}" for n in check.notes]
    if check.score == check.max_score:
        out.append("hidden tests check more when your notebook is graded, with fresh inputs")
    return "\n".join(out)
