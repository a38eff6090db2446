"""Running test cells and turning what happened into per-test results.

Used twice: by the trusted grader, where the graded names in the namespace are sandbox
proxies, and by `autograder check`, which runs an instructor's own notebook in-process.
"""
from __future__ import annotations

import functools
import traceback
from dataclasses import asdict, dataclass

from .notebook import SourceNotebook, hidden_line_numbers

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


class StudentError(Exception):
    """The student's code raised; carries the exception's type names and message."""

    def __init__(self, type_names: list[str], message: str):
        super().__init__(message)
        self.remote_type_names = type_names
        self.message = message


class SubmissionBroken(Exception):
    """The sandbox died, timed out or misbehaved: no further call can be answered."""


@functools.lru_cache(maxsize=1024)
def compile_cell(source: str, name: str):
    """Compile notebook cell source (IPython syntax such as %magics allowed). The same test
    cells run for every student: each is transformed and compiled once (code objects are
    immutable; every run gets a namespace of its own)."""
    return compile(_transform(source), name, "exec")


AFTER_HIDDEN = "this check failed (its details are not shown once your code has received a hidden input)"


def describe_failure(exc: BaseException, hidden: bool = False, tainted: bool = False) -> str:
    """The feedback line for a failed test. For a failure inside a hidden region only fixed
    words are shown: the failure's `public` text, made of the test author's words (the name
    and hint given to the helper) and the kind of check that failed, never anything the
    student's code returned or chose (a dtype, a shape, which known mistake its answer
    matched, a number a test computed from it); a failure with no public text shows
    AFTER_HIDDEN. Once the student's code has been called with a hidden input (`tainted`),
    visible tests get the same treatment: their code could have kept that input to encode it
    in what it returns later."""
    from .testing import TestFailure        # with NumPy: not for the grading parent, which imports this module

    if tainted and not hidden:
        if isinstance(exc, TestFailure):
            return exc.public or AFTER_HIDDEN
        if isinstance(exc, SubmissionBroken):
            return str(exc)
        if isinstance(exc, StudentError) and exc.remote_type_names[0] == "TimeLimitExceeded":
            return "time limit reached while your function ran: an infinite loop, or very slow code?"
        if isinstance(exc, StudentError):
            return "your code raised an error (its message is not shown once hidden tests have run)"
        return f"the result could not be checked ({type(exc).__name__})"
    if hidden:
        if isinstance(exc, TestFailure):
            return f"hidden test: {exc.public or AFTER_HIDDEN}"
        if isinstance(exc, SubmissionBroken):
            return str(exc)
        if isinstance(exc, StudentError) and exc.remote_type_names[0] == "TimeLimitExceeded":
            return "hidden test: time limit reached while your function ran (an infinite loop?)"
        if isinstance(exc, StudentError):
            return "hidden test: your code raised an error"
        return f"hidden test: the result could not be checked ({type(exc).__name__})"
    if isinstance(exc, TestFailure):
        return str(exc)
    if isinstance(exc, StudentError) and exc.remote_type_names[0] == "TimeLimitExceeded":
        return "time limit reached while your function ran: an infinite loop, or very slow code?"
    if isinstance(exc, StudentError) and exc.remote_type_names[0] == "NotImplementedError":
        return "not implemented yet (the function still raises NotImplementedError)"
    if isinstance(exc, NotImplementedError):
        return "not implemented yet (the function still raises NotImplementedError)"
    if isinstance(exc, StudentError):
        return f"your code raised {exc.remote_type_names[0]}: {exc.message}"[:500]
    if isinstance(exc, SubmissionBroken):
        return str(exc)
    if isinstance(exc, NameError):
        return f"{exc}: is the function defined, with exactly this name?"
    if isinstance(exc, AssertionError):
        return str(exc) or "a check failed"
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"the result could not be checked ({type(exc).__name__}: {text})"[:500]


def _failed_in_hidden(test, tb) -> bool:
    """Did the failure come through a line inside the cell's hidden region (directly, or in a
    helper of the cell called from there)?"""
    hidden = hidden_line_numbers(test.source)
    if not hidden:
        return False
    lines = []
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == f"<{test.grade_id}>":
            lines.append(tb.tb_lineno)
        tb = tb.tb_next
    return not lines or any(line in hidden for line in lines)


def run_test_cells(source: SourceNotebook, namespace: dict, *, on_error=None) -> list[TestResult]:
    """Run every test cell of `source` (hidden parts included) in `namespace`."""
    from . import testing

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
            passed, message = False, str(exc)
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 (a test may fail in any way, SystemExit too)
            passed, message = False, describe_failure(exc, _failed_in_hidden(test, exc.__traceback__),
                                                      context.tainted)
            if on_error is not None:
                on_error(test, exc, traceback.format_exc())
        results.append(TestResult(test.grade_id, test.description,
                                  test.points if passed else 0.0, test.points,
                                  passed, message, test.has_hidden))
    context.current_file, context.hidden_lines = "", frozenset()
    return results
