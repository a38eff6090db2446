"""Test the tests: every plausible wrong implementation loses points, every correct
alternative keeps full marks, under the chapter's visible and hidden tests.

Besides each chapter's own mutants (tests/mutants/mNN_slug.py), every graded function
and class gets three generic ones, written here once: it always raises; it returns zeros
shaped like the correct result; it returns its first argument unchanged. A test suite
that lets any of them keep full marks rewards code that computes nothing.
"""
import importlib
import re
from functools import lru_cache
from pathlib import Path

import pytest

from autograder.check import check_notebook
from autograder.notebook import load_source

ROOT = Path(__file__).resolve().parent.parent
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


def _mutant(correct_call, *args, **kwargs):
    if {kind!r} == "raises":
        raise ValueError("this implementation always raises")
    if {kind!r} == "zeros":
        return _zeros_like(correct_call(*args, **kwargs))
    return args[0] if args else next(iter(kwargs.values()))


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


@pytest.mark.parametrize("chapter,function", [(c, f) for c in CHAPTERS for f in graded_functions(c)])
def test_a_function_that_always_raises_earns_nothing(chapter, function):
    """Every test cell that calls the function gives 0 to one that always raises, even a
    test of "raises on bad input": such a test must also want a right answer on valid input."""
    source = solution(chapter)
    calling = {t.grade_id for t in source.tests if re.search(rf"(?<![\w.]){function}\b", t.source)}
    results, _, _ = _score(chapter, GENERIC.format(name=function, kind="raises"))
    rewarded = [f"{r.grade_id} ({r.points:g} points)" for r in results if r.grade_id in calling and r.points]
    assert not rewarded, f"{function} always raises, yet earns points in " + ", ".join(rewarded)


@pytest.mark.parametrize("chapter,function,code", list(_cases("CORRECT")))
def test_correct_alternative_keeps_full_marks(chapter, function, code):
    results, earned, total = _score(chapter, code)
    failures = [f"{r.grade_id}: {r.message}" for r in results if not r.passed]
    assert earned == total, failures


def test_every_chapter_grades_something():
    for chapter in CHAPTERS:
        assert graded_functions(chapter), f"{chapter}: no answer cell defines a function named by its grade_id"
