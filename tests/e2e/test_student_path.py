"""A new student's path, end to end: download the exercise notebook from the book, open it
without the course's environment (its first cell says so, in one sentence), set up, fill in
one function wrongly, check, fix it, check again."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import nbformat
import pytest

from autograder.notebook import nbgrader_meta
from tests.conftest import ROOT, needs_sandbox, release_path, source_path

A = "02_similarity"
WRONG_SOFTMAX = """
    x = as_float_array(x)
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)
"""


def _python_without_the_course(tmp_path):
    """A Python with NumPy, PyTorch and IPython but not the course's package, as on a
    student's own machine: a fresh venv that sees the course venv's site-packages through a
    .pth line. The course package is installed there in editable mode, through a .pth file
    of its own, and .pth files in a directory added that way are not processed."""
    venv = tmp_path / "elsewhere-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (Path(site) / "course-deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def _run_isolated(python, code: str, cwd) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd)}   # no PYTHONPATH, no course on any path
    return subprocess.run([str(python), "-I", "-c", code], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300)


def _first_code_cell(path) -> str:
    nb = nbformat.read(str(path), as_version=4)
    return next(c.source for c in nb.cells if c.cell_type == "code")


def _fill(path, answers: dict[str, str]) -> None:
    """Write a student's answers: each answer cell's `raise NotImplementedError()` replaced."""
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        gid = nbgrader_meta(cell).get("grade_id")
        if gid in answers:
            assert "raise NotImplementedError()" in cell.source
            head = cell.source[:cell.source.index("    # YOUR CODE HERE")]
            cell.source = head + answers[gid].strip("\n") + "\n"
    nbformat.write(nb, str(path))


def _solutions() -> dict[str, str]:
    """The instructor's solution regions, as a correct student would write them."""
    nb = nbformat.read(str(source_path(A)), as_version=4)
    answers = {}
    for cell in nb.cells:
        if nbgrader_meta(cell).get("solution"):
            body = cell.source.split("### BEGIN SOLUTION\n", 1)[1].split("    ### END SOLUTION", 1)[0]
            answers[nbgrader_meta(cell)["grade_id"]] = body
    return answers


def _check(notebook, *extra, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", "check", str(notebook), *extra], cwd=ROOT,
                          capture_output=True, text=True, timeout=300, env=env)


def _row(table: str, test: str) -> str:
    return next(line for line in table.splitlines() if line.startswith(test + " "))


def test_a_downloaded_notebook_without_the_course_says_so_in_one_sentence(tmp_path):
    downloads = tmp_path / "Downloads"
    downloads.mkdir()
    notebook = shutil.copy(release_path(A), downloads)          # as the book's download button gives it
    python = _python_without_the_course(tmp_path)
    honest = _run_isolated(python, "import numpy, torch, IPython\n"
                                   "try:\n    import autograder\nexcept ModuleNotFoundError:\n    print('absent')",
                           downloads)
    assert honest.stdout.strip() == "absent", honest.stderr   # the libraries are there, the course is not
    run_cell = ("import sys\nfrom IPython.core.interactiveshell import InteractiveShell\n"
                "shell = InteractiveShell.instance(colors='NoColor')\n"
                f"result = shell.run_cell({_first_code_cell(notebook)!r})\n"
                "sys.exit(0 if result.success else 3)\n")
    proc = _run_isolated(python, run_cell, downloads)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("This notebook needs the course's Python environment, and the module "
                               "'autograder' is not installed here: clone the course's student repository "
                               "(its address is on your course's page), run `python3 install.py` "
                               "in it"), lines[0]
    assert f"jupyter lab exercises/{A}/{A}.ipynb" in lines[0]
    assert "Traceback" not in lines[0] and "ModuleNotFoundError" not in lines[0]


def test_fill_in_wrongly_check_fix_check(tmp_path):
    notebook = tmp_path / f"{A}.ipynb"
    shutil.copy(release_path(A), notebook)
    answers = _solutions()
    _fill(notebook, {**answers, "softmax": WRONG_SOFTMAX})

    wrong = _check(notebook)
    print(wrong.stdout)
    assert wrong.returncode == 1, wrong.stdout + wrong.stderr
    assert wrong.stderr == ""                                   # nothing spills from the student's code
    assert wrong.stdout.startswith(f"{A}: visible tests, published inputs; your code ran in ")
    row = _row(wrong.stdout, "test_softmax_torch")
    assert "FAIL" in row and "softmax over axis 0 instead of the last axis" in row, row
    for test in ("test_dot_similarity_torch", "test_cosine_similarity_torch"):
        assert " pass" in _row(wrong.stdout, test)
    assert "total " in wrong.stdout and "total 11/11" not in wrong.stdout

    shutil.copy(release_path(A), notebook)
    _fill(notebook, answers)
    fixed = _check(notebook)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "FAIL" not in fixed.stdout and "total 11/11 visible points" in fixed.stdout


def test_without_bubblewrap_the_check_says_where_the_code_ran(tmp_path):
    notebook = tmp_path / "mine.ipynb"
    shutil.copy(release_path(A), notebook)
    _fill(notebook, _solutions())
    env = dict(os.environ, PATH=os.path.dirname(sys.executable))   # no bwrap on PATH
    proc = _check(notebook, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ("your code ran in a plain child process, not in the sandbox (bubblewrap (bwrap) is not installed)"
            in proc.stdout.splitlines()[0])


@pytest.mark.parametrize("content,message", [
    ('{"cells": [', "is not a notebook (invalid JSON"),
    ("print('hello')\n", "is not a notebook"),
    ('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}', "is not an exercise of this course"),
])
def test_a_wrong_file_is_one_clear_line(tmp_path, content, message):
    path = tmp_path / "x.ipynb"
    path.write_text(content)
    proc = _check(path)
    assert proc.returncode == 2 and proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("autograder: error: ") and message in lines[0], lines


def test_an_unknown_assignment_is_one_clear_line(tmp_path):
    proc = _check(release_path(A), "--assignment", "99_nothing")
    assert proc.returncode == 2
    assert proc.stderr.strip() == proc.stderr.strip().splitlines()[0]
    assert "no assignment named '99_nothing'" in proc.stderr


@needs_sandbox
def test_a_zygote_that_cannot_join_the_sandbox_leaves_the_check_in_one_bubblewrap_starts(tmp_path, monkeypatch):
    """The check forks its sandbox's zygote (sandbox/template.py). Where that zygote cannot
    join bubblewrap's namespaces (a kernel that refuses `setns`, say), the student's code
    still runs in the sandbox, in a zygote bubblewrap starts, not in a plain process."""
    from autograder import check
    from autograder.sandbox import host, template

    def refused(control_fd, request):
        raise OSError("joining the sandbox's user namespace: Operation not permitted (a test)")

    monkeypatch.setattr(template, "_zygote", refused)
    started = []
    real = host.Sandbox.launch
    monkeypatch.setattr(host.Sandbox, "launch", lambda self: (started.append(self.template is not None),
                                                              real(self))[1])
    notebook = tmp_path / "mine.ipynb"
    shutil.copy(release_path(A), notebook)
    _fill(notebook, _solutions())
    result = check.check_student(notebook)
    assert started == [True, False]                 # the forked zygote, then bubblewrap's own
    assert result.where == "your code ran in the sandbox (bubblewrap), as when it is graded"
    assert result.score == result.max_score == 11
