"""Test the tests: every plausible wrong implementation loses points, every correct
alternative keeps full marks, under the chapter's visible and hidden tests."""
import importlib
from pathlib import Path

import pytest

from autograder.local import check_notebook

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted(p.stem[1:] for p in (ROOT / "tests" / "mutants").glob("m[0-9][0-9]_*.py"))


def _cases(kind):
    for chapter in CHAPTERS:
        module = importlib.import_module(f"tests.mutants.m{chapter}")
        for function, impls in getattr(module, kind).items():
            for label, code in impls.items():
                yield pytest.param(chapter, function, code, id=f"{chapter}:{function}:{label}")


def _score(chapter, code):
    results = check_notebook(ROOT / "solutions" / chapter / f"{chapter}.ipynb", extra_code=code)
    return results, sum(r.points for r in results), sum(r.max_points for r in results)


@pytest.mark.parametrize("chapter,function,code", list(_cases("WRONG")))
def test_wrong_implementation_loses_points(chapter, function, code):
    results, earned, total = _score(chapter, code)
    assert earned < total, f"every test passed a wrong {function}"
    # the failing test's message must say something, not be a bare assertion
    assert all(r.message for r in results if not r.passed)


@pytest.mark.parametrize("chapter,function,code", list(_cases("CORRECT")))
def test_correct_alternative_keeps_full_marks(chapter, function, code):
    results, earned, total = _score(chapter, code)
    failures = [f"{r.grade_id}: {r.message}" for r in results if not r.passed]
    assert earned == total, failures
