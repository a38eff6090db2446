"""README.md's instructor section, run as written: every ```bash block of "A Canvas term",
"A Moodle term" and "Folders, and JupyterHub's nbgrader exchange", in order, in a folder
holding the downloads the README names (made as Canvas and Moodle make them), with the
environment the README's set-up line gives (PATH, JUPYTER_CONFIG_PATH) and the workspace at
./grading. `autograder formgrade`, which serves until stopped, is started on a free port and
its Formgrader page fetched. Of "Before the term", `autograder check --hidden` is run here
and `make exercises` by test_pipeline.py (the release it writes is the committed one); the
PostgreSQL command by test_postgres.py."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT, needs_sandbox
from tests.builders import (A, CANVAS_ROSTER, MAX, MOODLE_WORKSHEET, WRONG, ZIPPED_AT, base_notebook, canvas_zip,
                            readme_blocks, rows_of, text, with_answer)

pytestmark = [pytest.mark.xdist_group("lms")]


def environment(folder: Path) -> dict[str, str]:
    """What the README's set-up line gives the shell, the workspace in `folder`."""
    env = {k: v for k, v in os.environ.items() if k not in ("AUTOGRADER_WORKSPACE", "JUPYTER_CONFIG_PATH")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["JUPYTER_CONFIG_PATH"] = str(ROOT / "autograder")
    env["AUTOGRADER_WORKSPACE"] = str(folder / "grading")
    return env


def run_blocks(heading: str, folder: Path) -> list[str]:
    """Each block of the section, as bash runs it; the output of each."""
    env, outputs = environment(folder), []
    for block in readme_blocks(heading):
        if block.strip().startswith("autograder formgrade"):
            outputs.append(_formgrade(block.strip(), folder, env))
            continue
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=folder, env=env, capture_output=True,
                              text=True, timeout=900)
        assert proc.returncode == 0, f"README block failed:\n{block}\n{proc.stdout}\n{proc.stderr[-3000:]}"
        outputs.append(proc.stdout)
    return outputs


def _formgrade(command: str, folder: Path, env: dict) -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    token = "readme-test"
    proc = subprocess.Popen(["bash", "-c", f"exec {command} --port {port} --no-browser"], cwd=folder,
                            env={**env, "JUPYTER_TOKEN": token}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                page = urllib.request.urlopen(f"http://127.0.0.1:{port}/formgrader/manage_assignments?token={token}",
                                              timeout=10).read().decode()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stdout.read() if proc.poll() else ""
                time.sleep(0.5)
        assert "Manage Assignments" in page or "formgrader" in page.lower()
        return page
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@needs_sandbox
def test_the_readmes_canvas_term(tmp_path):
    (tmp_path / "canvas-gradebook.csv").write_text(CANVAS_ROSTER)
    right, wrong = text(base_notebook()), text(with_answer(WRONG))
    canvas_zip(tmp_path / "canvas-submissions.zip", {
        f"usmanzainab_LATE_31022_6789160_{A}.ipynb": right,
        f"liddellalice_31023_6789161_{A}.ipynb": wrong,
        f"builderbob_31024_6789170_{A}.ipynb": right})
    canvas_zip(tmp_path / "canvas-resubmission.zip", {f"liddellalice_31023_6790001_{A}-1.ipynb": right})
    outputs = run_blocks("### A Canvas term", tmp_path)
    assert "read as a Canvas download: 3 students" in outputs[1] and "Canvas marked 1 submission late" in outputs[1]
    rows = rows_of(tmp_path / "grading" / "reports" / A / "grades.csv")
    assert set(rows) == {"s2401016", "s2401017", "s2401018", "s2401019"}
    assert float(rows["s2401017"]["score"]) == MAX and rows["s2401016"]["status"] == "late"
    assert rows["s2401019"]["status"] == "missing"
    reports = tmp_path / "grading" / "reports" / A
    assert (reports / "canvas.csv").read_text().startswith("Student,ID,SIS User ID,SIS Login ID,Section,Similarity (4821)")
    with zipfile.ZipFile(reports / "canvas-feedback.zip") as z:
        assert len(z.namelist()) == 3


@needs_sandbox
def test_the_readmes_moodle_term(tmp_path):
    (tmp_path / "moodle-worksheet.csv").write_text(MOODLE_WORKSHEET)
    with zipfile.ZipFile(tmp_path / "moodle-submissions.zip", "w") as z:
        for folder in ("Zainab Usman_2101_assignsubmission_file_", "Alice Liddell_2102_assignsubmission_file_"):
            z.writestr(zipfile.ZipInfo(f"{folder}/{A}.ipynb", date_time=ZIPPED_AT), text(base_notebook()))
    outputs = run_blocks("### A Moodle term", tmp_path)
    assert "submission times from moodle-worksheet.csv for 2 of 2 submissions" in outputs[1], outputs[1]
    rows = rows_of(tmp_path / "grading" / "reports" / A / "grades.csv")
    assert rows["zusman@example.org"]["status"] == "graded" and rows["aliddell@example.org"]["status"] == "late"
    assert rows["bbuilder@example.org"]["status"] == "missing"
    reports = tmp_path / "grading" / "reports" / A
    assert (reports / "moodle-worksheet.csv").read_text().startswith("Identifier,Full name")
    assert (reports / "moodle-feedback.zip").is_file()


@needs_sandbox
def test_the_readmes_folder_term_through_nbgraders_exchange(tmp_path):
    """The hub's configuration (an exchange, a course id) is what the folder has in its
    nbgrader_config.py; a student fetched and submitted before the README's commands run."""
    import nbformat

    exchange = tmp_path / "exchange"
    exchange.mkdir()
    os.chmod(exchange, 0o777)
    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text(f"c = get_config()\nc.Exchange.root = {str(exchange)!r}\n"
                                               "c.CourseDirectory.course_id = 'attention'\n")
    env = environment(course)
    home = tmp_path / "student"
    home.mkdir()

    def nbgrader(*args, cwd):
        proc = subprocess.run([sys.executable, "-m", "nbgrader", *args, f"--Exchange.root={exchange}",
                               "--CourseDirectory.course_id=attention"], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr[-2000:])

    nbgrader("release_assignment", A, cwd=course)
    nbgrader("fetch_assignment", A, f"--CourseDirectory.root={home}", cwd=home)
    nbformat.write(base_notebook(), str(home / A / f"{A}.ipynb"))
    nbgrader("submit", A, f"--CourseDirectory.root={home}", cwd=home)

    outputs = run_blocks("### Folders, and JupyterHub's nbgrader exchange", course)
    assert "graded 1 submissions" in outputs[0], outputs[0]
    rows = rows_of(course / "grading" / "reports" / A / "grades.csv")
    me = next(r for r in rows.values() if r["status"] not in ("missing",))
    # submitted today, long after the README's 2025 deadline: late, and per-hour:2 leaves nothing
    assert float(me["raw_score"]) == MAX and me["time_source"] == "timestamp.txt" and me["status"] == "late"
    assert float(me["score"]) == 0 and "not on the roster" in me["flags"]
    assert rows["alice"]["status"] == rows["bob"]["status"] == "missing"
    assert (course / "grading" / "reports" / A / "export.csv").is_file()


def test_the_readmes_check_of_the_instructors_notebook():
    readme = (ROOT / "README.md").read_text()
    command = re.search(r"`(autograder check --hidden [^`]+)`", readme).group(1)
    proc = subprocess.run(["bash", "-c", command], cwd=ROOT, env=environment(Path("/nonexistent")),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and f"score {MAX:g}/{MAX:g}" in proc.stdout, proc.stdout + proc.stderr[-2000:]
