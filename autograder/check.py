"""`autograder check`: run a notebook's tests.

Two uses, two functions:

* `check_student` (`autograder check NOTEBOOK`): a student's copy of an exercise. Its
  *visible* tests only (the hidden parts are stripped; in a student repository, which has
  no solutions, they come from the released notebook), with the published inputs (no
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
from dataclasses import dataclass, field
from pathlib import Path

from . import course
from .notebook import (SourceNotebook, assignment_ids, cells_to_run, load_source, nbgrader_meta,
                       parse_notebook, read_notebook, read_submission, source_imports)
from .grade.testcells import TestResult, compile_cell, run_test_cells


def check_notebook(source_path: str | Path | SourceNotebook, submission_path: str | Path | None = None,
                   extra_code: str | None = None, quiet: bool = True) -> list[TestResult]:
    """Run the answer cells (of `submission_path`, or of the source itself), then
    `extra_code` (e.g. a replacement implementation), then every test cell. The source may
    be given loaded (`load_source`), to check many implementations against one notebook."""
    source = source_path if isinstance(source_path, SourceNotebook) else load_source(source_path)
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
    version: str = ""                            # the course's version (course.version)

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


def _grade_ids(path: Path) -> set[str]:
    """The grade ids of a trusted notebook's cells, read as plain JSON (no validation: it is
    one of the course's own notebooks)."""
    import json

    cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    return {gid for cell in cells if isinstance(gid := nbgrader_meta(cell).get("grade_id"), str)}


def recognise_assignment(nb, name: str = "notebook") -> str:
    """The assignment a notebook belongs to: the one whose answer and test ids it shares most."""
    ids = assignment_ids(nb)
    best, overlap = None, 0
    for assignment in course.checked_assignments():
        shared = len(ids & _grade_ids(course.tests_notebook(assignment)))
        if shared > overlap:
            best, overlap = assignment, shared
    if best is None:
        raise course.CourseError(f"{name} is not an exercise of this course (none of its cells belong to one); "
                                 f"name the assignment with --assignment")
    return best


def _template(no_sandbox: bool, warm: tuple[str, ...]):
    """torch is imported once, here, and the sandbox's zygote is forked from this process
    (sandbox/template.py), with or without root; None without the sandbox. Nothing here is
    secret from the student: the check runs as them. (A zygote that bubblewrap starts
    imports torch again, beside this process's own import: in 34 alternating checks without
    root, a median of 2.99 s that way against 2.53 s forked.)"""
    from .sandbox.host import bwrap_path

    if no_sandbox or not bwrap_path():
        return None
    from .sandbox.server import collector_paused, import_modules
    from .sandbox.template import Template

    with collector_paused():
        from .grade import worker

        worker.warm()
        import_modules(warm)
    return Template.fork()


def _launch(no_sandbox: bool, warm: tuple[str, ...], template=None):
    """Start the sandbox (its zygote warms up while this process imports); (box, None), or
    (None, why not) where it cannot be used."""
    from .sandbox.host import Limits, Sandbox, SandboxUnavailable, bwrap_path

    if no_sandbox or not bwrap_path():
        return None, "asked for no sandbox" if no_sandbox else "bubblewrap (bwrap) is not installed"
    try:
        box = Sandbox(limits=Limits(), warm=warm, template=template)
    except SandboxUnavailable as exc:         # no slot free on this machine
        return None, f"the sandbox could not start: {exc}"
    try:
        box.launch()
        return box, None
    except SandboxUnavailable as exc:
        box.close()
        return None, f"the sandbox could not start: {exc}"


def _ready(box, why: str | None, warm: tuple[str, ...]):
    """The launched sandbox once it is ready, or else a plain child process; and one line
    that says which the student's code ran in."""
    from .sandbox.host import Limits, Sandbox, SandboxUnavailable

    if box is not None:
        try:
            box.wait_ready()        # a forked zygote that cannot join: one bubblewrap starts
            return box, "your code ran in the sandbox (bubblewrap), as when it is graded"
        except SandboxUnavailable as exc:
            box.close()
            why = f"the sandbox could not start: {exc}"
    box = Sandbox(limits=Limits(), unsafe=True, warm=warm)
    try:
        box.start()
    except SandboxUnavailable as exc:
        box.close()
        raise course.CourseError(f"your notebook's code could not be started ({why}; {exc})") from None
    return box, f"your code ran in a plain child process, not in the sandbox ({why})"


def check_student(notebook: str | Path, assignment: str | None = None, *,
                  no_sandbox: bool = False) -> StudentCheck:
    """Run the visible tests of a student's notebook with the published inputs."""
    path = Path(notebook)
    data, _ = read_submission(path)       # a notebook with huge outputs is read without them
    nb = parse_notebook(data, path.name)
    assignment = assignment or recognise_assignment(nb, path.name)
    source_path = course.tests_notebook(assignment)
    template = _template(no_sandbox, source_imports(source_path))
    source = visible_only(load_source(source_path))
    box, why = _launch(no_sandbox, source.imports, template)
    try:
        from .grade.submission import grade_submission    # NumPy, torch: while the sandbox warms up
        from .sandbox.server import import_modules

        import_modules(source.imports)
        box, where = _ready(box, why, source.imports)
        sink = io.StringIO()
        # Tests run in this process; anything they print stays out of the table.
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            record = grade_submission(source, "you", assignment, data, path.name, box, salt="")
    finally:
        if box is not None:
            box.close()
        if template is not None:
            template.close()
    results = [TestResult(**t) for t in record["tests"]]
    notes = [f["message"] for f in record["flags"] if f["student_visible"]]
    return StudentCheck(assignment, where, results, notes, course.version())


def format_table(check: StudentCheck, width: int | None = None) -> str:
    """The check as a table: test, points, pass/fail, the message naming the likely bug."""
    rows = [(r.grade_id, f"{r.points:g}/{r.max_points:g}", "pass" if r.passed else "FAIL", r.message)
            for r in check.results]
    head = ("test", "points", "result", "message")
    widths = [max(len(head[i]), *(len(row[i]) for row in rows)) for i in range(3)]
    line = lambda cols: "  ".join(c.ljust(w) for c, w in zip(cols, widths + [0])).rstrip()  # noqa: E731
    out = [f"{check.assignment}: visible tests, published inputs; {check.where}",
           f"course version {check.version}", "",
           line(head), line(["-" * w for w in widths] + ["-" * 7])]
    out += [line(row) for row in rows]
    out += ["", f"total {check.score:g}/{check.max_score:g} visible points"
            + ("" if check.score == check.max_score else
               f" ({sum(not r.passed for r in check.results)} of {len(rows)} tests fail)")]
    out += [f"note: {n}" for n in check.notes]
    if check.score == check.max_score:
        out.append("hidden tests check more when your notebook is graded, with fresh inputs")
    return "\n".join(out)
