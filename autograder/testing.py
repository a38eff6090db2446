"""Checks for test cells: one behaviour per cell, a message that names the likely bug.

The same test cell runs in three places (see autograder/README.md):
  * the student's own kernel, where the graded functions are the student's functions;
  * stock `nbgrader autograde`, the same;
  * the trusted grader, where the cell runs in the grader's own process and every graded
    name is a proxy that calls the student's function inside the sandbox and returns
    plain data. Comparisons, and so grades, are decided here, never in student code.

Every failed check raises `TestFailure` (an AssertionError) with a message meant for the
student. Messages never print hidden inputs: they report shapes, dtypes and the size
of the error, not the arrays.
"""
from __future__ import annotations

import hashlib
import math
from types import FrameType
from typing import Any, Callable, Mapping

import numpy as np

from .modified import modified_arguments

__all__ = [
    "TestFailure", "fail", "rng", "expect_array", "expect_close", "expect_true", "expect_tuple",
    "expect_unchanged", "expect_raises", "snapshot", "run_probe", "grading_context",
    "modified_input_failure", "modified_arguments",
]


class TestFailure(AssertionError):
    """A check failed; the message says what is wrong and what probably caused it.

    `reason` is the author's text; `detail` adds numbers such as shapes and error sizes.
    Both are shown for visible tests only, until the student's code receives a hidden input.
    """

    __test__ = False  # not a pytest test class

    def __init__(self, reason: str, detail: str = "", public: str | None = None):
        super().__init__(reason + (f" {detail}" if detail else ""))
        self.reason, self.detail = reason, detail
        # A summary that names the kind of check that failed without the numbers. It is never
        # shown once the student's code has received a hidden input: which check fails is the
        # code's choice, so feedback then shows testcells.AFTER_HIDDEN, whatever failed.
        self.public = public

    def _render_traceback_(self) -> list[str]:
        """What IPython shows for a failed test in the student's notebook: the message that
        names the bug, without a traceback through the checker's own code."""
        return [f"\x1b[0;31mTest failed:\x1b[0m {self}"]


def fail(reason: str, detail: str = "", public: str | None = None) -> None:
    raise TestFailure(reason, detail, public)


def modified_input_failure(names: list[str]) -> TestFailure:
    """The failure of a call that wrote into its inputs: the same words in the student's
    kernel (see _InputGuard) and in the grader (which compares what came back)."""
    what = ", ".join(f"`{n}`" for n in names)
    reason = (f"your function modified its input {what} in place: work on a copy "
              f"(e.g. x = x - m, not x -= m), and never write into an argument.")
    return TestFailure(reason, "", "your function modified its input in place: work on a copy, and never "
                                   "write into an argument.")


# --------------------------------------------------------------------------------------
# Inputs. `rng(key)` gives the same numbers in every student's kernel, so a visible
# test is reproducible; the trusted grader sets a course secret, so the same visible
# test draws fresh inputs at grading time and an answer hard-coded for the visible
# inputs earns nothing. Re-grading with the same workspace gives identical inputs.
# --------------------------------------------------------------------------------------
class _Context:
    salt: str = ""          # empty in a student's kernel
    trusted: bool = False   # True inside the trusted grader
    tainted: bool = False   # the student's code has seen a hidden input: show reasons only
    current_file: str = ""  # the test cell running now (its code's file name) ...
    hidden_lines: frozenset = frozenset()   # ... and the line numbers of its hidden regions


grading_context = _Context()


def called_from_hidden_region() -> bool:
    """Is the test cell running now at a line of one of its hidden regions (directly, or
    through a helper it called)?"""
    import sys

    ctx = grading_context
    if not ctx.current_file:
        return False
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == ctx.current_file and frame.f_lineno in ctx.hidden_lines:
            return True
        frame = frame.f_back
    return False


def rng(key: str) -> np.random.Generator:
    """A NumPy Generator seeded from `key` (and, when grading, the course secret)."""
    digest = hashlib.sha256((grading_context.salt + "\x00" + key).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


# --------------------------------------------------------------------------------------
# Checks
# --------------------------------------------------------------------------------------
def _type_problem(got: Any, expect_torch: bool) -> str | None:
    type_name = type(got).__module__ + "." + type(got).__qualname__
    if expect_torch:
        import torch

        if type(got) is not torch.Tensor and not isinstance(got, torch.nn.Parameter):
            return f"is a {type_name}, not a torch.Tensor"
        return None
    if type(got) is np.ndarray:
        return None
    if type_name.startswith("torch."):
        return ("is a torch.Tensor, but graded functions here return NumPy arrays "
                "(NumPy in, NumPy out): convert with .numpy() or compute with NumPy")
    if isinstance(got, np.ndarray):
        return f"is a {type_name} (a subclass of numpy.ndarray); return a plain numpy.ndarray"
    if got is None:
        return "is None: did you forget to `return` the result?"
    if type_name == "autograder.sandbox.protocol.Opaque":
        return "is not data (an object of a class other than arrays, numbers, strings, lists, tuples and dicts)"
    if isinstance(got, (list, tuple)):
        return f"is a Python {type(got).__name__}, not a numpy.ndarray: wrap it in np.asarray(...)"
    return f"is a {type_name}, not a numpy.ndarray"


def _as_numpy(x: Any) -> np.ndarray:
    if type(x).__module__.startswith("torch"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _close_mask(got: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """Elementwise closeness, written out (no np.allclose, no student-reachable code)."""
    g = got.astype(np.complex128 if np.iscomplexobj(got) else np.float64)
    e = expected.astype(np.complex128 if np.iscomplexobj(expected) else np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        both_nan = np.isnan(g) & np.isnan(e)
        same_inf = np.isinf(g) & np.isinf(e) & (g == e)
        near = np.abs(g - e) <= atol + rtol * np.abs(e)
    return both_nan | same_inf | near


def _matches(got: np.ndarray, candidate: Any, rtol: float, atol: float) -> bool:
    try:
        c = _as_numpy(candidate)
    except Exception:
        return False
    if c.shape != got.shape:
        return False
    return bool(np.all(_close_mask(got, c, rtol, atol)))


def _plural(name: str) -> bool:
    """Whether a check's `name` is a plural noun ("the weights W", "scores"), for the verb that
    follows it; a function call or an identifier ("split_heads(X, 3)", "merge_heads") is not."""
    words = name.split()
    if words and words[0].lower() == "the":
        words = words[1:]
    first = words[0] if words else ""
    return first.isalpha() and first.endswith("s") and not first.endswith(("ss", "us", "is", "as"))


def _verb(name: str, singular: str) -> str:
    """`singular` ("is", "has", "differs", ...) in agreement with `name`."""
    if not _plural(name):
        return singular
    plain = singular[:-1] if singular.endswith("s") else singular
    return {"is": "are", "has": "have", "does": "do"}.get(singular, plain)


def expect_array(got: Any, expected: Any, *, name: str = "result", rtol: float = 1e-9,
                 atol: float = 1e-11, dtype: Any = "float64", torch_tensor: bool = False,
                 like: Mapping[str, Any] | None = None, hint: str | None = None,
                 shape_hint: str | None = None) -> None:
    """Check `got` against a trusted reference `expected`.

    dtype: the dtype `got` must have ("float64" by default; None skips the check).
    like: {message: wrong_answer}; when `got` matches one of these known-wrong answers,
          the failure names that bug instead of just saying "values differ".
    hint: what to say when the values (or the shape) differ and no `like` entry matches.
    shape_hint: a hint about one bug that shows as a wrong shape (or an error raised while
          computing `got`, see testcells.describe_failure): shown for those only, instead of
          `hint`, never for wrong values, which that bug does not cause.
    rtol, atol: float64 results are held to 1e-9 relative, 1e-11 absolute. A correct float64
          computation is far inside that whatever its order of operations; one that went through
          float32 (errors near 1e-7) is outside it for every draw, so two students with that bug
          lose the same tests (at 1e-6 it depended on how each one's inputs were conditioned).
    """
    is_ = _verb(name, "is")
    hinted = f": {hint}." if hint else "."
    problem = _type_problem(got, torch_tensor)
    if problem:
        fail(f"{name} {is_}{problem[2:]}.", public=f"{name} {is_} not the kind of object the contract asks for.")
    g = _as_numpy(got)
    e = _as_numpy(expected)
    has = _verb(name, "has")
    if g.shape != e.shape:
        for message, candidate in (like or {}).items():
            if _matches(g, candidate, rtol, atol):
                fail(f"{name} {has} the wrong shape: {message}.", f"(shape {g.shape}, expected {e.shape})",
                     f"{name} {has} the wrong shape.")
        shape_hinted = f": {shape_hint}." if shape_hint else hinted
        fail(f"{name} {has} the wrong shape{shape_hinted}", f"(shape {g.shape}, expected {e.shape})",
             f"{name} {has} the wrong shape.")
    if dtype is not None and g.dtype != np.dtype(dtype):
        values = "its values are right" if np.all(_close_mask(g, e, max(rtol, 1e-4), max(atol, 1e-5))) \
            else "and its values differ from the reference too"
        fail(f"{name} {has} dtype {g.dtype}, expected {np.dtype(dtype)}: "
             f"{_dtype_advice(g.dtype, np.dtype(dtype))}.", f"({values})", f"{name} {has} the wrong dtype.")
    if not np.issubdtype(g.dtype, np.number) and g.dtype != np.bool_:
        fail(f"{name} {has} dtype {g.dtype}, not a numeric dtype.", public=f"{name} {has} the wrong dtype.")
    ok = _close_mask(g, e, rtol, atol)
    if np.all(ok):
        return
    differs = f"{name} {_verb(name, 'differs')} from the reference{hinted}"
    for message, candidate in (like or {}).items():
        if _matches(g, candidate, rtol, atol):
            fail(f"{name} {is_} wrong: {message}.", public=f"{name} {_verb(name, 'differs')} from the reference.")
    finite_ref = np.isfinite(e.astype(np.complex128 if np.iscomplexobj(e) else np.float64))
    if g.dtype.kind in "fc" and np.any(~np.isfinite(g) & finite_ref):
        n_bad = int(np.sum(~np.isfinite(g) & finite_ref))
        nonfinite = (f"{name} {_verb(name, 'contains')} NaN or infinite values where the reference is finite"
                     + (f": {hint}." if hint else ": an overflow, or a division by zero?"))
        fail(nonfinite, f"({n_bad} of {g.size})", nonfinite)
    bad = np.argwhere(~ok)
    index = tuple(int(i) for i in bad[0]) if g.ndim else ()
    with np.errstate(invalid="ignore"):
        err = np.abs(g.astype(np.float64) - e.astype(np.float64)) if g.dtype.kind != "c" \
            else np.abs(g - e)
    max_err = float(np.nanmax(err)) if err.size and not np.all(np.isnan(err)) else float("nan")
    fail(differs, f"({len(bad)} of {g.size} entries, first at index {index}, largest error {max_err:.3g})", differs)


def _dtype_advice(got: np.dtype, want: np.dtype) -> str:
    """What most likely gave a result of dtype `got` where the contract asks for `want`."""
    if want.kind == "f" and got.kind in "biu":
        return ("the result is made of integers: compute in floating point (integer inputs, such as "
                "lists of ints, are converted first: np.asarray(x, dtype=np.float64))")
    if want.kind == "f" and got.kind == "f" and got.itemsize > want.itemsize:
        return (f"the {want} input was promoted on the way: a NumPy float64 scalar or array in the "
                f"computation (np.sqrt(d), np.float64(...), a float64 array) turns {want} into {got}; "
                "use math.sqrt(d) or a constant of the input's dtype")
    if want.kind == "f" and got.kind == "f":
        return f"precision was lost: a cast, or a {got} array or constant, turned the {want} input into {got}"
    return f"the contract asks for {want}"


def expect_close(got: Any, expected: float, *, name: str = "result", rtol: float = 1e-6,
                 atol: float = 1e-8, hint: str | None = None) -> None:
    """Check a scalar result."""
    hinted = f": {hint}." if hint else "."
    is_ = _verb(name, "is")
    try:
        value = float(got)
    except Exception:
        fail(f"{name} {is_} not a number.", f"(a {type(got).__name__})", f"{name} {is_} not a number.")
    if not (math.isfinite(value) or value == expected):
        fail(f"{name} {is_} not a finite number{hinted}", f"({value})", f"{name} {is_} not a finite number{hinted}")
    if abs(value - expected) > atol + rtol * abs(expected):
        what = f"{name} {is_} wrong{hinted}"
        fail(what, f"(got {value:.6g}, expected {expected:.6g})", what)


def expect_tuple(result: Any, n: int, name: str, parts: str) -> tuple:
    """Check that `result` is a tuple (or list) of n items and return it, for unpacking:
    out, weights = expect_tuple(f(x), 2, "f(x)", "(output, weights)")."""
    if not isinstance(result, (tuple, list)) or len(result) != n:
        what = f"a {type(result).__name__}" + (f" of {len(result)} items" if isinstance(result, (tuple, list)) else "")
        must = f"{name} must return the tuple {parts}."
        fail(must, f"(it returned {what})", must)
    return tuple(result)


def expect_true(condition: Any, message: str) -> None:
    if condition is not True and not (isinstance(condition, (bool, np.bool_)) and bool(condition)):
        fail(message, public=message)


def snapshot(*arrays: Any) -> list:
    """Copies of the inputs, to check afterwards that a function left them unmodified."""
    return [np.array(_as_numpy(a), copy=True) for a in arrays]


def expect_unchanged(before: list, after: tuple | list, names: list[str]) -> None:
    """Fail if any input differs from its snapshot: the function modified it in place."""
    for b, a, n in zip(before, after, names):
        a = _as_numpy(a)
        if a.shape != b.shape or not np.array_equal(a, b, equal_nan=True):
            fail(f"your function modified its input `{n}` in place: work on a copy "
                 f"(e.g. x = x - m, not x -= m).", public="your function modified its input in place: work on a copy.")


def expect_raises(exc_type: type[BaseException], fn: Callable, *args: Any,
                  message: str, **kwargs: Any) -> None:
    """Check that fn(*args, **kwargs) raises exc_type (or a subclass)."""
    try:
        fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 (the student's exception, whatever it is)
        names = getattr(exc, "remote_type_names", None) or [c.__name__ for c in type(exc).__mro__]
        if exc_type.__name__ in names:
            return
        fail(message, f"(it raised {names[0]} instead)", message)
    fail(message, "(it raised nothing)", message)


# --------------------------------------------------------------------------------------
# In the student's kernel, a test cell's arrays must never change either: while a test cell
# runs, the notebook's own functions that it calls receive copies of their arguments, and a
# call that wrote into them fails, exactly as under the grader.
# --------------------------------------------------------------------------------------
class _InputGuard:
    """Installed on import in an IPython kernel (not in the sandbox or the grader, which
    have their own copy of this rule). Before a cell that calls the test helpers runs, the
    notebook's functions it names are wrapped for the length of that cell."""

    def __init__(self, shell):
        self.shell, self.setup_names, self.wrapped = shell, None, {}

    def pre(self, info=None) -> None:
        import ast
        import types

        ns = self.shell.user_ns
        if self.setup_names is None:      # the first cell after setup: its helpers are not graded
            self.setup_names = {n for n, v in ns.items() if isinstance(v, types.FunctionType)}
        source = getattr(info, "raw_cell", "") or ""
        if "expect_" not in source and "run_probe" not in source:
            return
        try:
            called = {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name)}
        except SyntaxError:
            return
        for name in called - self.setup_names:
            fn = ns.get(name)
            if isinstance(fn, types.FunctionType) and fn.__module__ == "__main__":
                self.wrapped[name] = fn
                ns[name] = self._guarded(fn)

    def post(self, result=None) -> None:
        ns = self.shell.user_ns
        for name, fn in self.wrapped.items():
            if getattr(ns.get(name), "__wrapped_by_guard__", None) is fn:
                ns[name] = fn
        self.wrapped = {}

    @staticmethod
    def _guarded(fn):
        import copy
        import functools

        @functools.wraps(fn)
        def call(*args, **kwargs):
            given, given_kw = copy.deepcopy(args), copy.deepcopy(kwargs)
            result = fn(*given, **given_kw)
            changed = modified_arguments(args, kwargs, list(given), given_kw)
            if changed:
                raise modified_input_failure(changed)
            return result

        call.__wrapped_by_guard__ = fn  # type: ignore[attr-defined]  # a mark on the function, read with getattr
        return call


class _VisibleTotal:
    """In the student's kernel only (installed with _InputGuard): after a test cell of a
    released notebook passes, one line with its points and the points of the test cells passed
    so far, as `autograder check` gives them in the terminal. A cell is recognised by its
    source, which must be exactly that of a test cell of exercises/; so nothing is printed for
    the instructor's cells with hidden tests (stock nbgrader), nor anywhere else: the trusted
    grader and the sandbox run no IPython hooks of this module. It prints nothing that the
    cell's own inputs did not already show, and changes no outcome (a passing cell's stdout)."""

    def __init__(self):
        self.cells: dict[str, tuple[str, str, float]] | None = None   # source: (assignment, grade id, points)
        self.max: dict[str, float] = {}
        self.passed: dict[str, dict[str, float]] = {}

    def _load(self) -> dict[str, tuple[str, str, float]]:
        """The released notebooks' test cells, by source: (assignment, grade_id, points)."""
        import json

        from .course import ROOT

        self.cells = found = {}
        for path in sorted((ROOT / "exercises").glob("*/*.ipynb")):
            try:
                cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            except (OSError, ValueError, KeyError, TypeError):
                continue
            for cell in cells if isinstance(cells, list) else []:
                meta = (cell.get("metadata") or {}).get("nbgrader") or {}
                if cell.get("cell_type") == "code" and meta.get("grade") and not meta.get("solution"):
                    source = cell.get("source", "")
                    source = "".join(source) if isinstance(source, list) else str(source)
                    points = float(meta.get("points") or 0)
                    found[source.strip()] = (path.stem, str(meta.get("grade_id")), points)
                    self.max[path.stem] = self.max.get(path.stem, 0.0) + points
        return found

    def post(self, result=None) -> None:
        info = getattr(result, "info", None)
        source = (getattr(info, "raw_cell", "") or "").strip()
        if grading_context.trusted or "expect_" not in source and "run_probe" not in source:
            return
        known = (self.cells if self.cells is not None else self._load()).get(source)
        if known is None:
            return
        assignment, grade_id, points = known
        passed = self.passed.setdefault(assignment, {})
        if not getattr(result, "success", False):
            passed.pop(grade_id, None)
            return
        passed[grade_id] = points
        print(f"\u2713 {grade_id}: {points:g} / {points:g} point{'' if points == 1 else 's'} "
              f"(visible total so far: {sum(passed.values()):g} / {self.max[assignment]:g})")


def _install_input_guard() -> None:
    import os
    import sys

    # In a kernel IPython is loaded already; anywhere else it is not imported for this.
    ipython = sys.modules.get("IPython")
    if os.environ.get("AUTOGRADER_SANDBOX") or ipython is None:
        return
    shell = ipython.get_ipython()
    if shell is None or not hasattr(shell, "events") or getattr(shell, "_autograder_guard", None):
        return
    guard = _InputGuard(shell)
    shell._autograder_guard = guard
    shell.events.register("pre_run_cell", guard.pre)
    shell.events.register("post_run_cell", guard.post)
    shell.events.register("post_run_cell", _VisibleTotal().post)


_install_input_guard()


# --------------------------------------------------------------------------------------
# Probes: fixed recipes run next to the student's code (see autograder/probes.py).
# --------------------------------------------------------------------------------------
def run_probe(probe: str, target: Any, *args: Any, **kwargs: Any) -> Any:
    """Run the named probe on `target` (a student's class or function).

    In a student's kernel the probe runs right here. In the trusted grader `target` is a
    proxy, and the probe runs inside the sandbox; only plain data comes back.
    """
    remote = getattr(target, "__autograder_remote__", None)
    if remote is not None:
        return remote.probe(probe, *args, **kwargs)
    from autograder import probes

    return probes.PROBES[probe](target, *args, **kwargs)
