"""The course pipeline: solutions validate and score full marks, released exercises score 0,
exercises/ matches what `make exercises` generates, nothing secret leaks, and stderr
output does not cost points."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.notebook import load_source
from tests.builders import autograder, ok, secret_lines
from tests.conftest import (ASSIGNMENTS, ROOT, needs_sandbox, read_csv, read_results, release_path, run_grade,
                      source_path)

# Under `make test` (pytest -n 2 --dist loadgroup) this file runs on one worker, whole:
# its module-scoped fixture runs once.
pytestmark = [pytest.mark.xdist_group("pipeline")]


def test_every_chapter_in_the_toc_has_its_notebooks():
    toc = (ROOT / "_toc.yml").read_text()
    chapters = re.findall(r"file: book/(\d\d_\w+)", toc)
    assert "02_similarity" in chapters
    for chapter in chapters:
        assert source_path(chapter).exists(), f"{chapter} is in _toc.yml but has no solution notebook"
        assert release_path(chapter).exists(), f"{chapter} is in _toc.yml but has no exercise notebook"
    assert set(ASSIGNMENTS) == set(chapters), "every solution notebook is a chapter of the book, and back"


def test_nbgrader_config_loads_without_errors():
    proc = subprocess.run([sys.executable, "-m", "nbgrader", "list", "--debug"], cwd=ROOT,
                          capture_output=True, text=True)
    log = proc.stdout + proc.stderr
    assert "Exception while loading config" not in log, log[-3000:]
    assert str(ROOT / "autograder" / "nbgrader_config.py") in log


@pytest.fixture(scope="module")
def validated() -> dict[str, str]:
    """`nbgrader validate` on every solution, in one run (one nbgrader start, one kernel per
    notebook): {assignment: what it printed about that notebook}."""
    proc = subprocess.run([sys.executable, "-m", "nbgrader", "validate", *map(str, map(source_path, ASSIGNMENTS))],
                          cwd=ROOT, capture_output=True, text=True, timeout=1200, stdin=subprocess.DEVNULL)
    # nbgrader logs "Validating '<path>'" on stderr before each notebook, and prints each
    # notebook's verdict on stdout, in the same order.
    parts = re.split(r"^\[ValidateApp \| INFO\] Validating '(.+?)'$", proc.stderr, flags=re.M)
    assert len(parts) == 2 * len(ASSIGNMENTS) + 1, proc.stderr[-3000:]
    verdicts = re.split(r"^(?=Success!|VALIDATION FAILED|NOTEBOOK PASSED|ERROR)", proc.stdout, flags=re.M)
    verdicts = [v for v in verdicts if v.strip()]
    names = [Path(p).stem for p in parts[1::2]]
    assert names == ASSIGNMENTS and len(verdicts) == len(names), proc.stdout[-3000:] + proc.stderr[-2000:]
    return dict(zip(names, verdicts))


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solution_passes_nbgrader_validate(validated, assignment):
    assert validated[assignment].startswith("Success! Your notebook passes all the tests."), validated[assignment][-3000:]


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    """What `make exercises` (`autograder release --all`) generates, into a fresh folder."""
    out = tmp_path_factory.mktemp("released")
    proc = ok(autograder("release", "--all", "--to", out, timeout=600))
    assert proc.stdout.splitlines() == [f"released {a} -> {out / a}" for a in ASSIGNMENTS]
    return out


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_exercises_match_what_make_exercises_generates(released, assignment):
    """No drift: regenerating from solutions/ gives exactly the committed exercises/, byte for byte."""
    fresh = sorted(p.relative_to(released / assignment) for p in (released / assignment).rglob("*") if p.is_file())
    committed = sorted(p.relative_to(ROOT / "exercises" / assignment)
                       for p in (ROOT / "exercises" / assignment).rglob("*") if p.is_file())
    assert fresh == committed, "run `make exercises`: the set of released files differs"
    for rel in fresh:
        a, b = (released / assignment / rel).read_bytes(), (ROOT / "exercises" / assignment / rel).read_bytes()
        assert a == b, f"exercises/{assignment}/{rel} is stale: run `make exercises`"


def _texts_of_exercises(assignment: str) -> str:
    nb = nbformat.read(str(release_path(assignment)), as_version=4)
    return "\n".join(c.source for c in nb.cells)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_no_solution_or_hidden_test_in_exercises(assignment):
    solution, hidden = secret_lines(assignment)
    assert solution and hidden, "the source notebook has solution and hidden-test regions"
    released = {ln.strip() for ln in _texts_of_exercises(assignment).splitlines()}
    assert not (solution & released), f"solution code in exercises/: {sorted(solution & released)[:3]}"
    assert not (hidden & released), f"hidden tests in exercises/: {sorted(hidden & released)[:3]}"
    raw = release_path(assignment).read_text()
    assert "BEGIN HIDDEN TESTS" not in raw and "BEGIN SOLUTION" not in raw


@needs_sandbox
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_solutions_full_marks_exercises_zero(tmp_path, assignment):
    """Each solution, submitted as is, scores full marks; each untouched exercise scores 0;
    the grader does not crash on either. Graded with the real `autograder grade`, one
    assignment a test (a failure names its chapter, and the others still run)."""
    subs = tmp_path / "submissions"
    (subs / "solution").mkdir(parents=True)
    (subs / "untouched").mkdir()
    shutil.copy(source_path(assignment), subs / "solution" / f"{assignment}.ipynb")
    shutil.copy(release_path(assignment), subs / "untouched" / "my copy.ipynb")
    ws = tmp_path / "ws"
    run_grade(assignment, subs, ws, "--workers", "1")
    results = read_results(ws, assignment)
    full = results["solution"]
    assert full["score"] == full["max_score"] > 0, [t for t in full["tests"] if not t["passed"]]
    assert results["untouched"]["score"] == 0
    assert all(t["message"] for t in results["untouched"]["tests"])
    rows = {r["student"]: r for r in read_csv(ws, assignment)}
    assert float(rows["solution"]["score"]) == full["max_score"]


def _with_stderr_noise(assignment: str) -> nbformat.NotebookNode:
    """The solution, plus code that writes to stderr in every way a correct answer might."""
    nb = nbformat.read(str(source_path(assignment)), as_version=4)
    noise = ("import sys, warnings\nimport torch\n"
             "sys.stderr.write('a note on stderr\\n')\n"
             "warnings.warn('a UserWarning from the student', UserWarning)\n"
             "torch.tensor([1.0]).storage()  # PyTorch's own deprecation warning\n")
    answer = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("solution"))
    nb.cells.insert(answer + 1, nbformat.v4.new_code_cell(noise))
    # and inside a graded function: warn every time it is called
    cell = nb.cells[answer]
    cell.source = re.sub(r"(def \w+\([^)]*\):\n(\s+\"\"\"[\s\S]*?\"\"\"\n)?)",
                         r"\1    __import__('warnings').warn('called', RuntimeWarning)\n"
                         r"    __import__('sys').stderr.write('stderr from the function\\n')\n", cell.source, count=1)
    return nb


@needs_sandbox
def test_correct_answer_that_writes_to_stderr_keeps_full_marks(tmp_path):
    subs = tmp_path / "subs" / "noisy"
    subs.mkdir(parents=True)
    nbformat.write(_with_stderr_noise("02_similarity"), str(subs / "02_similarity.ipynb"))
    run_grade("02_similarity", tmp_path / "subs", tmp_path / "ws")
    result = read_results(tmp_path / "ws", "02_similarity")["noisy"]
    assert result["score"] == result["max_score"], [t["message"] for t in result["tests"] if not t["passed"]]


def test_stock_nbgrader_autograde_also_grades_on_results(tmp_path):
    """Plain `nbgrader autograde` with the course config: the solution, the solution that
    writes to stderr, and the untouched exercise (still works without our grader)."""
    env = dict(__import__("os").environ, AUTOGRADER_WORKSPACE=str(tmp_path / "ws"))
    subs = tmp_path / "ws" / "submitted"
    for student, nb in [("solution", nbformat.read(str(source_path("02_similarity")), as_version=4)),
                        ("noisy", _with_stderr_noise("02_similarity")),
                        ("untouched", nbformat.read(str(release_path("02_similarity")), as_version=4))]:
        (subs / student / "02_similarity").mkdir(parents=True)
        nbformat.write(nb, str(subs / student / "02_similarity" / "02_similarity.ipynb"))
    for cmd in (["generate_assignment", "02_similarity", "--force",
                 f"--CourseDirectory.release_directory={tmp_path / 'release'}"],
                ["autograde", "02_similarity", "--create"],
                ["export", "--to", str(tmp_path / "grades.csv")]):
        proc = subprocess.run([sys.executable, "-m", "nbgrader", *cmd], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
    import csv

    rows = {r["student_id"]: float(r["score"]) for r in csv.DictReader(open(tmp_path / "grades.csv"))}
    max_score = load_source(source_path("02_similarity")).max_score
    assert rows == {"solution": max_score, "noisy": max_score, "untouched": 0.0}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_hidden_regions_state_no_hidden_inputs(assignment):
    """No test name, message or hint inside a hidden region carries hidden shapes or values."""
    from autograder.authoring import hidden_text_problems

    problems = [f"{t.grade_id} {p}" for t in load_source(source_path(assignment)).tests
                for p in hidden_text_problems(t.source)]
    assert not problems, "hidden regions state hidden inputs:\n" + "\n".join(problems)
