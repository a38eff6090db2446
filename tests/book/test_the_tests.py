"""Test the tests: every plausible wrong implementation loses points, every correct
alternative keeps full marks, under the chapter's visible and hidden tests.

Besides each chapter's own mutants (tests/mutants/mNN_slug.py), every graded function
and class gets three generic ones, written here once: it always raises; it returns zeros
shaped like the correct result; it returns its first argument unchanged. A test suite
that lets any of them keep full marks rewards code that computes nothing.

Three more compute nothing while looking busy, and no test cell that calls the function
may give them a single point (issue 27, item 5): it validates its arguments as the solution
does (raising where the solution raises), then returns zeros; it returns the identity when
two of its arguments are equal (cosine_similarity(A, A)) and zeros otherwise; it answers the
published notebook's inputs from memory and otherwise validates and returns zeros (graded
with a secret, as `autograder grade` does, so the visible tests draw fresh inputs): a cell
that rewards raising must also check a valid input the student has not seen.
"""
import importlib
import re
from functools import lru_cache
from pathlib import Path

import pytest

from autograder.check import check_notebook, visible_only
from autograder.notebook import load_source

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = sorted(p.stem[1:] for p in (ROOT / "tests" / "mutants").glob("m[0-9][0-9]_*.py"))

# Runs after the solution's own answer cells: `_correct` is the instructor's function or
# class, and the mutant replaces it under the same name.
GENERIC = '''
import numpy as _np
_correct = {name}


def _zeros_like(value):
    if isinstance(value, _np.ndarray):
        return _np.zeros_like(value)
    if type(value).__module__.startswith("torch"):
        import torch as _torch
        return _torch.zeros_like(value)
    if isinstance(value, (tuple, list)):
        return type(value)(_zeros_like(v) for v in value)
    if isinstance(value, (int, float, _np.generic)):
        return type(value)(0)
    return value


def _identity_like(value):
    """Ones on the diagonal of the last two axes (ones for a vector), shaped like value."""
    if isinstance(value, _np.ndarray):
        if value.ndim < 2:
            return _np.ones_like(value)
        eye = _np.eye(value.shape[-2], value.shape[-1], dtype=value.dtype)
        return _np.broadcast_to(eye, value.shape).copy()
    if type(value).__module__.startswith("torch"):
        import torch as _torch
        return _torch.from_numpy(_identity_like(value.detach().cpu().numpy()))
    if isinstance(value, (tuple, list)):
        return type(value)(_identity_like(v) for v in value)
    return value


def _array_args(args, kwargs):
    arrays = []
    for a in list(args) + list(kwargs.values()):
        if type(a).__module__.startswith("torch"):
            a = a.detach().cpu().numpy()
        if isinstance(a, (_np.ndarray, list, tuple)):
            try:
                arrays.append(_np.asarray(a, dtype=float))
            except (TypeError, ValueError):
                pass
    return arrays


def _two_equal(args, kwargs):
    arrays = _array_args(args, kwargs)
    return any(a.shape == b.shape and a.size > 1 and _np.array_equal(a, b)
               for i, a in enumerate(arrays) for b in arrays[i + 1:])


def _memory_key(args, kwargs):
    import pickle
    plain = [a.detach().cpu().numpy() if type(a).__module__.startswith("torch") else a
             for a in list(args) + sorted(kwargs.items())]
    try:
        return pickle.dumps(plain)
    except Exception:
        return repr(plain)


def _mutant(correct_call, *args, **kwargs):
    if {kind!r} == "raises":
        raise ValueError("this implementation always raises")
    if {kind!r} == "zeros":
        return _zeros_like(correct_call(*args, **kwargs))
    if {kind!r} == "identity":
        return args[0] if args else next(iter(kwargs.values()))
    import tests.mutants as _store
    memory = _store.__dict__.setdefault("PUBLISHED_ANSWERS", {{}})
    if {kind!r} == "record":            # the published run: remember every answer
        result = correct_call(*args, **kwargs)
        memory[({name!r}, _memory_key(args, kwargs))] = result
        return result
    if {kind!r} == "memorised" and ({name!r}, _memory_key(args, kwargs)) in memory:
        return memory[({name!r}, _memory_key(args, kwargs))]
    result = correct_call(*args, **kwargs)         # validates: raises where the solution does
    if {kind!r} == "same-input identity" and _two_equal(args, kwargs):
        return _identity_like(result)
    return _zeros_like(result)


if isinstance(_correct, type):
    class {name}(_correct):
        def forward(self, *args, **kwargs):
            return _mutant(super().forward, *args, **kwargs)
else:
    def {name}(*args, **kwargs):
        return _mutant(_correct, *args, **kwargs)
'''
GENERIC_KINDS = {"raises": "always raises", "zeros": "returns zeros of the right shape",
                 "identity": "returns its first argument unchanged"}
# computing nothing while looking busy: no test cell calling the function may pay them
NOTHING_KINDS = {"validates": "validates like the solution, then returns zeros",
                 "same-input identity": "returns the identity when two arguments are equal, else zeros",
                 "memorised": "answers the published inputs from memory, else validates and returns zeros",
                 "memorised, hidden too": "answers every hand-made input of the tests (hidden ones too) from "
                                          "memory, else validates and returns zeros"}


@lru_cache(maxsize=None)
def solution(chapter: str):
    """The chapter's solution notebook, loaded once: every case below runs against it."""
    return load_source(ROOT / "solutions" / chapter / f"{chapter}.ipynb")


def graded_functions(chapter: str) -> list[str]:
    """The names the answer cells grade: one per answer cell, named by its grade_id."""
    source = solution(chapter)
    return [gid for gid in source.answer_ids if gid in source.graded_names]


def _cases(kind):
    for chapter in CHAPTERS:
        module = importlib.import_module(f"tests.mutants.m{chapter}")
        for function, impls in getattr(module, kind).items():
            for label, code in impls.items():
                yield pytest.param(chapter, function, code, id=f"{chapter}:{function}:{label}")


def _generic_cases():
    for chapter in CHAPTERS:
        for function in graded_functions(chapter):
            for kind, label in GENERIC_KINDS.items():
                yield pytest.param(chapter, function, GENERIC.format(name=function, kind=kind),
                                   id=f"{chapter}:{function}:generic {label}")


def _score(chapter, code):
    results = check_notebook(solution(chapter), extra_code=code)
    return results, sum(r.points for r in results), sum(r.max_points for r in results)


@pytest.mark.parametrize("chapter,function,code", list(_cases("WRONG")) + list(_generic_cases()))
def test_wrong_implementation_loses_points(chapter, function, code):
    results, earned, total = _score(chapter, code)
    assert earned < total, f"every test passed a wrong {function}"
    # the failing test's message must say something, not be a bare assertion
    assert all(r.message for r in results if not r.passed)


@pytest.mark.parametrize("chapter,function,code", list(_cases("WRONG")))
def test_a_bug_fails_for_every_student_or_for_none(chapter, function, code):
    """Graded, every test draws its inputs from the course's secret and the student's id. Two
    students with the same bug lose the same tests: no draw lets a bug through for one student
    and not for another (a softmax that overflows only when one student's draw has a score
    over 709, weights that are one-hot for some draws so a wrong scale goes unseen)."""
    from autograder.grade import student_salt
    from autograder.testing import grading_context

    failed = {}
    for student in ("student a", "student b"):
        grading_context.salt = student_salt("a course secret", chapter, student)
        try:
            results, _, _ = _score(chapter, code)
        finally:
            grading_context.salt = ""
        failed[student] = sorted(r.grade_id for r in results if not r.passed)
    assert failed["student a"] == failed["student b"], \
        f"{function}: the same bug fails different tests for two students: {failed}"


@pytest.mark.parametrize("chapter,function", [(c, f) for c in CHAPTERS for f in graded_functions(c)])
def test_a_function_that_always_raises_earns_nothing(chapter, function):
    """Every test cell that calls the function gives 0 to one that always raises, even a
    test of "raises on bad input": such a test must also want a right answer on valid input."""
    source = solution(chapter)
    calling = {t.grade_id for t in source.tests if re.search(rf"(?<![\w.]){function}\b", t.source)}
    results, _, _ = _score(chapter, GENERIC.format(name=function, kind="raises"))
    rewarded = [f"{r.grade_id} ({r.points:g} points)" for r in results if r.grade_id in calling and r.points]
    assert not rewarded, f"{function} always raises, yet earns points in " + ", ".join(rewarded)


def _calling_cells(chapter, function):
    return {t.grade_id for t in solution(chapter).tests
            if re.search(rf"(?<![\w.]){function}\b", t.source)}


@pytest.mark.parametrize("chapter,function,kind", [(c, f, k) for c in CHAPTERS for f in graded_functions(c)
                                                   for k in NOTHING_KINDS])
def test_computing_nothing_earns_nothing(chapter, function, kind):
    """No test cell that calls the function pays one that computes nothing: not for its
    validation ("raises ValueError ..."), not for a property that zeros or the identity
    happen to have, not for the published example remembered."""
    from autograder.testing import grading_context
    import tests.mutants as store

    code = GENERIC.format(name=function, kind="memorised" if kind.startswith("memorised") else kind)
    calling = _calling_cells(chapter, function)
    if kind.startswith("memorised"):
        store.__dict__.setdefault("PUBLISHED_ANSWERS", {}).clear()
        # what the published notebook shows (or, for a cell that rewards raising, every input
        # the tests would draw without a secret: its valid input must be one nobody has seen)
        recorded = visible_only(solution(chapter)) if kind == "memorised" else solution(chapter)
        check_notebook(recorded, extra_code=GENERIC.format(name=function, kind="record"))
        if kind != "memorised":
            calling = {t.grade_id for t in solution(chapter).tests
                       if t.grade_id in calling and "expect_raises" in t.source}
        grading_context.salt = "a course secret"                         # graded: fresh inputs
        try:
            results, _, _ = _score(chapter, code)
        finally:
            grading_context.salt = ""
            store.PUBLISHED_ANSWERS.clear()
    else:
        results, _, _ = _score(chapter, code)
    rewarded = [f"{r.grade_id} ({r.points:g} points)" for r in results if r.grade_id in calling and r.points]
    assert not rewarded, f"{function} {NOTHING_KINDS[kind]}, yet earns points in " + ", ".join(rewarded)


def _own_tests_only_cases():
    for chapter in CHAPTERS:
        module = importlib.import_module(f"tests.mutants.m{chapter}")
        for function, labels in getattr(module, "OWN_TESTS_ONLY", {}).items():
            for label in labels:
                yield pytest.param(chapter, function, module.WRONG[function][label], id=f"{chapter}:{function}:{label}")


@pytest.mark.parametrize("chapter,function,code", list(_own_tests_only_cases()))
def test_a_slip_costs_only_its_own_tests(chapter, function, code):
    """A mutants file's OWN_TESTS_ONLY names wrong implementations of a helper that other graded
    functions build on (layer_norm inside encoder_block): they lose points in the helper's own
    tests (test_<function>_*) and nowhere else."""
    results, earned, total = _score(chapter, code)
    assert earned < total, f"every test passed a wrong {function}"
    elsewhere = [f"{r.grade_id}: {r.message}" for r in results
                 if not r.passed and not r.grade_id.startswith(f"test_{function}")]
    assert not elsewhere, f"a slip in {function} also costs: " + "; ".join(elsewhere)


@pytest.mark.parametrize("chapter,function,code", list(_cases("CORRECT")))
def test_correct_alternative_keeps_full_marks(chapter, function, code):
    results, earned, total = _score(chapter, code)
    failures = [f"{r.grade_id}: {r.message}" for r in results if not r.passed]
    assert earned == total, failures


def test_every_chapter_grades_something():
    for chapter in CHAPTERS:
        assert graded_functions(chapter), f"{chapter}: no answer cell defines a function named by its grade_id"
