"""Scores into nbgrader's gradebook, so `nbgrader export` and formgrader keep working.

Only the grading parent process calls this (one writer); each student's scores are
written in one transaction, and writing the same result twice changes nothing.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from .notebook import SourceNotebook


def _alembic_on_path() -> None:
    """nbgrader runs `alembic` by name: make sure this environment's bin/ is on PATH."""
    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


@contextmanager
def open_gradebook(url: str):
    _alembic_on_path()
    gb = Gradebook(url)
    try:
        yield gb
    finally:
        gb.close()


def ensure_assignment(gb: Gradebook, assignment: str, source: SourceNotebook) -> None:
    """Register the assignment, its notebook and its test cells (as generate_assignment does)."""
    notebook = source.path.stem
    gb.update_or_create_assignment(assignment)
    gb.update_or_create_notebook(notebook, assignment)
    for test in source.tests:
        gb.update_or_create_grade_cell(test.grade_id, notebook, assignment,
                                       max_score=test.points, cell_type="code")
    for gid in source.answer_ids:
        gb.update_or_create_solution_cell(gid, notebook, assignment)


def record(gb: Gradebook, assignment: str, notebook: str, result: dict) -> None:
    """Write one student's per-test scores; idempotent. Manual scores an instructor entered
    in formgrader are kept (nbgrader's own autograde keeps them too)."""
    student = result["student"]
    gb.update_or_create_student(student)
    try:
        submission = gb.find_submission(assignment, student)
    except MissingEntry:
        submission = gb.add_submission(assignment, student)
    scores = {t["grade_id"]: t["points"] for t in result["tests"]}
    for nb in submission.notebooks:
        if nb.name != notebook:
            continue
        for grade in nb.grades:
            grade.auto_score = float(scores.get(grade.name, 0.0))
            grade.needs_manual_grade = False
        nb.flagged = bool(result["flags"])
    gb.db.commit()


def scores(gb: Gradebook, assignment: str) -> dict[str, float]:
    """{student: total score} as the gradebook has it (what `nbgrader export` reports)."""
    out = {}
    for sub in gb.find_assignment(assignment).submissions:
        out[sub.student.id] = float(sub.score)
    return out
