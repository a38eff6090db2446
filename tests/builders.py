"""What many test modules build with: chapter 02's notebook with a chosen answer, a student's
folder, the command line as an instructor types it, and the CSV rows it writes. One home for
them (they lived in test_adversarial.py and test_term.py, which six modules imported)."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import nbformat

from tests.conftest import ROOT, source_path

A = "02_similarity"
MAX = 11.0

WRONG = '''
def dot_similarity(A, B):
    return np.zeros((np.shape(A)[0], np.shape(B)[0]))

def cosine_similarity(A, B, eps=1e-8):
    return np.zeros((np.shape(A)[0], np.shape(B)[0]))

def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    return np.zeros(x.shape)
'''


def base_notebook() -> nbformat.NotebookNode:
    return nbformat.read(str(source_path(A)), as_version=4)


def answers(nb) -> list:
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]


def graded_cells(nb) -> list:
    return [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")
            and not c.metadata.get("nbgrader", {}).get("solution")]


def correct_code() -> str:
    return "\n\n".join(c.source for c in answers(base_notebook()))


def with_answer(code: str, nb=None) -> nbformat.NotebookNode:
    """The notebook with its first answer cell replaced by `code` and the others emptied."""
    nb = nb or base_notebook()
    cells = answers(nb)
    cells[0].source = code
    for c in cells[1:]:
        c.source = "# (answer given above)"
    return nb


def write(folder: Path, nb, name: str = f"{A}.ipynb") -> None:
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(folder / name))


def answer_case(code: str):
    return lambda folder, ctx: write(folder, with_answer(code))


def autograder(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """`python -m autograder ...` as an instructor types it (no --quiet added)."""
    return subprocess.run([sys.executable, "-m", "autograder", *map(str, args)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, f"failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr[-3000:]}"
    return proc


def submit(folder: Path, nb, when: datetime) -> None:
    """A student's folder with one notebook whose modification time is `when`."""
    write(folder, nb)
    stamp = when.timestamp()
    os.utime(folder / f"{A}.ipynb", (stamp, stamp))


def rows_of(path: Path) -> dict[str, dict]:
    with open(path, newline="") as f:
        return {r.get("student") or r.get("student_id") or r.get("SIS User ID"): r for r in csv.DictReader(f)}


def clean_terminal(proc: subprocess.CompletedProcess) -> None:
    """A grading run prints its progress bar (stderr) and its summary (stdout), nothing else."""
    text = proc.stdout + proc.stderr
    assert "warning" not in text.lower(), text[-3000:]
    for piece in proc.stderr.replace("\r", "\n").splitlines():
        assert piece.strip() == "" or piece.startswith("grading:"), f"unexpected stderr: {piece!r}"
    prefixes = ("graded ", "regraded ", "mean score", "deadline:", "roster:", "not graded yet", "changed since graded", "not in this download", "grades:",
                "report:", "feedback:", "gradebook:")
    for line in proc.stdout.splitlines():
        assert line.startswith(prefixes), f"unexpected stdout: {line!r}"
