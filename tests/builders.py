"""What many test modules build with: chapter 02's notebook with a chosen answer, a student's
folder, the command line as an instructor types it, and the CSV rows it writes. One home for
them (they lived in test_adversarial.py and test_term.py, which six modules imported)."""
from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
import zipfile
from datetime import datetime
from pathlib import Path

import nbformat
import pytest

from autograder.notebook import hidden_parts, load_source, solution_parts, strip_hidden
from tests.conftest import ROOT, run_grade, sandbox_works, source_path, student_folder

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


def nbgrader_export(workspace: Path, out: Path, *db: str) -> dict[str, dict]:
    """nbgrader's own `nbgrader export` of the workspace's gradebook (or of `--db URL`), as
    {student id: its row}."""
    proc = subprocess.run([sys.executable, "-m", "nbgrader", "export", *db, "--to", str(out)], cwd=ROOT,
                          env=dict(os.environ, AUTOGRADER_WORKSPACE=str(workspace)), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    with open(out, newline="") as f:
        return {r["student_id"]: r for r in csv.DictReader(f)}


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


# An LMS's downloads, as Canvas and Moodle make them (tests/e2e/test_lms.py grades them).
CANVAS_ROSTER = """Student,ID,SIS User ID,SIS Login ID,Section,Similarity (4821),Current Score
    Points Possible,,,,,11.00,(read only)
"Usman, Zainab",31022,s2401016,zusman,Section A,,
"Liddell, Alice",31023,s2401017,aliddell,Section A,,
"Builder, Bob",31024,s2401018,bbuilder,Section B,,
"Danvers, Carol",31025,s2401019,cdanvers,Section B,,
"Student, Test",31099,,,Section A,,
"""
# Canvas's zipper adds every entry without a time: all carry the moment the zip was made
ZIPPED_AT = (2025, 3, 20, 9, 41, 0)


def text(nb) -> bytes:
    return nbformat.writes(nb).encode()


def canvas_zip(path: Path, files: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(zipfile.ZipInfo(name, date_time=ZIPPED_AT), data)
    return path


MOODLE_WORKSHEET = """Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be changed,\
Last modified (submission),Last modified (grade),Feedback comments
Participant 2101,Zainab Usman,zusman@example.org,Submitted for grading,,11.00,Yes,"Friday, 14 March 2025, 10:00 PM",-,
Participant 2102,Alice Liddell,aliddell@example.org,Submitted for grading,,11.00,Yes,"Sunday, 16 March 2025, 1:00 AM",-,
Participant 2103,Bob Builder,bbuilder@example.org,No submission,,11.00,Yes,-,-,
"""


def moodle_workspace(tmp_path: Path) -> Path:
    """A workspace whose term has Moodle's grading worksheet as roster, due the end of 14 March in Paris."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "worksheet.csv").write_text(MOODLE_WORKSHEET)
    (ws / "term.toml").write_text('roster = "worksheet.csv"\nlate_policy = "per-day:10"\ntimezone = "Europe/Paris"\n'
                                  f'[{A}]\ndue = "2025-03-14"\n')
    return ws


def readme_blocks(heading: str) -> list[str]:
    """The ```bash blocks of README.md's section `heading`, in order."""
    readme = (ROOT / "README.md").read_text()
    start = readme.index(f"\n{heading}\n")
    end = readme.find("\n### ", start + 1)
    section = readme[start:end if end != -1 else None]
    return re.findall(r"```bash\n(.*?)```", section, re.S)


# Who grades an adversarial class: root (each submission its own uid and namespaces in a
# sandbox that grades many), and an instructor without root (`nobody` when the tests run as
# root: bubblewrap's user namespaces, a fresh sandbox for each submission).
MODES = ("root", "without-root")


def grade_attackers_then_controls(assignment: str, mode: str, tmp_path_factory, build, *, cell_timeout: int,
                                  timeout: float, env: dict[str, str] | None = None):
    """A class of attackers and honest controls (zz_*) graded in one run of the real command,
    as `mode` grades (MODES): the module-scoped `graded` fixtures of test_adversarial.py and
    test_adversarial_chapters.py. `build(submissions, workspace)` writes each student's
    folder; what it returns comes back as the last of (proc, submissions, workspace, built)."""
    if not sandbox_works():
        pytest.skip("bubblewrap cannot run here")
    if mode == "root" and os.geteuid() != 0:
        pytest.skip("grading as root needs root")
    root = tmp_path_factory.mktemp(f"attack-{assignment}")
    subs, ws = root / "submissions", root / "workspace"
    subs.mkdir()
    home = None
    if mode == "without-root":
        home, _ = student_folder(root / "home"), student_folder(ws)
    built = build(subs, ws)
    # One worker: the honest controls (zz_*) are graded after every attacker, by the same
    # worker, so anything an attacker leaves behind would reach them.
    proc = run_grade(assignment, subs, ws, "--workers", "1", "--timeout", str(cell_timeout), check=False,
                     timeout=timeout, env=env, unprivileged_home=home)
    return proc, subs, ws, built


def secret_lines(assignment: str) -> tuple[set[str], set[str]]:
    """Significant lines of the solution regions and of the hidden tests (not also visible)."""
    nb = load_source(source_path(assignment)).nb
    visible = set()
    solution, hidden = set(), set()
    for cell in nb.cells:
        for part in solution_parts(cell.source):
            solution |= {ln.strip() for ln in part.splitlines()}
        for part in hidden_parts(cell.source):
            hidden |= {ln.strip() for ln in part.splitlines()}
        visible |= {ln.strip() for ln in re.sub(r"### BEGIN SOLUTION.*?### END SOLUTION", "",
                                                 strip_hidden(cell.source), flags=re.S).splitlines()}

    def significant(lines):
        return {ln for ln in lines if len(ln) >= 16 and not ln.startswith("#") and ln not in visible}

    return significant(solution), significant(hidden)
