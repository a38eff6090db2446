"""Running test cells and turning what happened into per-test results.

Used twice: by the trusted grader, where the graded names in the namespace are sandbox
proxies, and by `autograder check`, which runs an instructor's own notebook in-process.
"""
from __future__ import annotations

import ast
import functools
import traceback
from dataclasses import asdict, dataclass

from ..notebook import SourceNotebook, hidden_line_numbers
from ..sandbox.errors import StudentError, SubmissionBroken

@functools.cache
def _transformer():
    """IPython's cell transformation (magics, `!`), as Jupyter applies it; IPython is
    imported when a cell is first compiled, not by every process that imports this module."""
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell


def _transform(source: str) -> str:
    return _transformer()(source)


@dataclass
class TestResult:
    grade_id: str
    description: str
    points: float
    max_points: float
    passed: bool
    message: str
    hidden: bool

    def to_dict(self) -> dict:
        return asdict(self)


@functools.lru_cache(maxsize=1024)
def compile_cell(source: str, name: str):
    """Compile notebook cell source (IPython syntax such as %magics allowed). The same test
    cells run for every student: each is transformed and compiled once (code objects are
    immutable; every run gets a namespace of its own)."""
    return compile(_transform(source), name, "exec")


AFTER_HIDDEN = ("once your code has received a hidden input, feedback says only whether a test passed, not "
                "which check failed or why (code could encode the hidden input in that): run this test in "
                "your notebook, where its visible part shows the details")


def describe_failure(exc: BaseException, hidden: bool = False, tainted: bool = False,
                     hint: str | None = None) -> str:
    """The feedback line for a failed test. Once the student's code has been called with a
    hidden input (`tainted`), and for any failure inside a hidden region, the line is
    AFTER_HIDDEN, whatever failed: a helper's reason or public text, a raised exception's
    type, a time limit, a broken submission. Each of those is chosen by the code, which could
    have kept a hidden input and encode it in the choice; a fixed line leaves it only whether
    the test passed, which the score shows anyway. `hint`: the test's own hint for the line
    where the student's code raised (`hint_at`), shown after the error's message."""
    from ..testing import TestFailure        # with NumPy: not for the grading parent, which imports this module

    if tainted or hidden:
        return AFTER_HIDDEN
    if isinstance(exc, TestFailure):
        return str(exc)
    if isinstance(exc, StudentError) and exc.timed_out:
        return "time limit reached while your function ran: an infinite loop, or very slow code?"
    if isinstance(exc, StudentError) and exc.remote_type_names[0] == "NotImplementedError":
        return "not implemented yet (the function still raises NotImplementedError)"
    if isinstance(exc, NotImplementedError):
        return "not implemented yet (the function still raises NotImplementedError)"
    if isinstance(exc, StudentError):
        raised = f"your code raised {exc.remote_type_names[0]}: {exc.message}"[:400]
        return f"{raised.rstrip('.')}. Hint: {hint}" if hint else raised
    if isinstance(exc, SubmissionBroken):
        return str(exc)
    if isinstance(exc, NameError):
        return f"{exc}: is the function defined, with exactly this name?"
    if isinstance(exc, AssertionError):
        return str(exc) or "a check failed"
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"the result could not be checked ({type(exc).__name__}: {text})"[:500]


_HINTED = ("expect_array", "expect_close")


def _constant_strings(tree) -> dict[str, str]:
    """The cell's top-level names bound to a string constant (a hint kept in a variable)."""
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            found.update((t.id, node.value.value) for t in node.targets if isinstance(t, ast.Name))
    return found


def _hint_of(call, strings: dict[str, str]) -> str | None:
    """A check's hint for an error: its shape_hint, else its hint, when given as a string."""
    given = {kw.arg: kw.value for kw in call.keywords}
    for key in ("shape_hint", "hint"):
        value = given.get(key)
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            return value.value
        if isinstance(value, ast.Name) and value.id in strings:
            return strings[value.id]
    return None


def hint_at(source: str, line: int) -> str | None:
    """The hint of the check that the statement at `line` of a test cell feeds: the first
    expect_array or expect_close with a hint in that statement or the checks right after it
    (`out, w = expect_tuple(f(x), ...)` then `expect_array(w, ..., hint=...)`). Shown when the
    student's function raised on that line, where no check ran to give it."""
    try:
        tree = ast.parse(_transform(source))
    except SyntaxError:
        return None
    strings = _constant_strings(tree)

    def calls(node):
        return [c for c in ast.walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)]

    def body_with(statements):
        for i, stmt in enumerate(statements):
            if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
                for child in ("body", "orelse", "finalbody"):
                    inner = body_with(getattr(stmt, child, None) or [])
                    if inner is not None:
                        return inner
                return statements[i:]
        return None

    for k, stmt in enumerate(body_with(tree.body) or []):
        if k and not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
                      and isinstance(stmt.value.func, ast.Name) and stmt.value.func.id.startswith("expect_")):
            break                                   # a new computation: its checks are about something else
        for call in calls(stmt):
            if call.func.id in _HINTED and (hint := _hint_of(call, strings)):
                return hint
    return None


def _cell_lines(test, tb) -> list[int]:
    """The lines of the test cell a traceback passed through, outermost first."""
    lines = []
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == f"<{test.grade_id}>":
            lines.append(tb.tb_lineno)
        tb = tb.tb_next
    return lines


def _failed_in_hidden(test, tb) -> bool:
    """Did the failure come through a line inside the cell's hidden region (directly, or in a
    helper of the cell called from there)?"""
    hidden = hidden_line_numbers(test.source)
    if not hidden:
        return False
    lines = _cell_lines(test, tb)
    return not lines or any(line in hidden for line in lines)


def run_test_cells(source: SourceNotebook, namespace: dict, *, on_error=None) -> list[TestResult]:
    """Run every test cell of `source` (hidden parts included) in `namespace`."""
    from .. import testing

    context = testing.grading_context
    results = []
    broken: SubmissionBroken | None = None
    for test in source.tests:
        context.current_file = f"<{test.grade_id}>"
        context.hidden_lines = frozenset(hidden_line_numbers(test.source))
        try:
            if broken is not None:
                raise broken
            exec(compile_cell(test.source, context.current_file), namespace)
            passed, message = True, ""
        except SubmissionBroken as exc:
            broken = exc
            passed, message = False, AFTER_HIDDEN if context.tainted else str(exc)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 (a test may fail in any way, SystemExit too)
            hidden = _failed_in_hidden(test, exc.__traceback__)
            lines = _cell_lines(test, exc.__traceback__) if isinstance(exc, StudentError) else []
            passed, message = False, describe_failure(exc, hidden, context.tainted,
                                                      hint_at(test.source, lines[0]) if lines else None)
            if on_error is not None:
                on_error(test, exc, traceback.format_exc())
        results.append(TestResult(test.grade_id, test.description,
                                  test.points if passed else 0.0, test.points,
                                  passed, message, test.has_hidden))
    context.current_file, context.hidden_lines = "", frozenset()
    return results
