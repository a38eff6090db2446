"""`autograder grade ASSIGNMENT SUBMISSIONS`: grade a whole class, in parallel, safely.

Workers (one per core by default) each keep one warm sandbox and grade one submission at
a time; this parent process is the only writer of results, the gradebook, grades.csv,
feedback and the report. Each student's result is written (atomically) as soon as it is
known, so a run that is killed can be started again: students already graded, whose
notebook has not changed since, are not graded again (`--regrade` forces it).
Re-grading gives identical results: inputs are drawn from a secret kept in the workspace.

Workspace (grading/ by default, or --workspace):
    gradebook.db                      nbgrader's gradebook (or --db URL)
    secret.key                        seeds the tests' inputs at grading time; keep it private
    results/A/STUDENT.json            each student's full result
    results/A/graded.log              one line per grading actually done
    feedback/STUDENT/A/feedback.html  what students get back
    autograded/STUDENT/A/NB.ipynb     the submission with its test results, for formgrader
    reports/A/grades.csv, report.html the class's scores, and the instructor's report
"""
from __future__ import annotations

import argparse
import csv
from contextlib import contextmanager
import fcntl
import json
import multiprocessing as mp
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

import nbformat

from . import course
from .feedback import instructor_report, student_feedback, write_text_atomic
from .gradebook import default_url, ensure_assignment, open_gradebook, record
from .grader import VERSION, digest, grade_submission
from .notebook import load_source, read_notebook, NotebookError, nbgrader_meta
from .sandbox import Limits, Sandbox, SandboxUnavailable, bwrap_path
from .submissions import collect


# ------------------------------------------------------------------------ workers
_WORKER: dict = {}


def _init_worker(source_path: str, slots, limits: Limits, unsafe: bool) -> None:
    import torch

    torch.set_num_threads(1)
    with slots.get_lock():
        slot = slots.value
        slots.value += 1
    _WORKER["source"] = load_source(source_path)
    _WORKER["box"] = Sandbox(slot=slot, limits=limits, unsafe=unsafe)


def _grade_task(task: tuple) -> dict:
    student, assignment, notebook, problem, salt = task
    box: Sandbox = _WORKER["box"]
    try:
        return grade_submission(_WORKER["source"], student, assignment,
                                Path(notebook) if notebook else None, box, salt, problem)
    except SandboxUnavailable as exc:
        return {"student": student, "error": f"the sandbox could not start: {exc}"}
    except Exception as exc:  # noqa: BLE001 (one submission must never stop the class's grading)
        import traceback

        _WORKER["box"].kill()
        detail = traceback.format_exc(limit=3).strip().splitlines()[-1]
        return grade_submission(_WORKER["source"], student, assignment, None, box, salt,
                                f"internal grading error, graded 0: {type(exc).__name__} ({detail[:200]}); "
                                "please report it")


# ------------------------------------------------------------------------ helpers
def check_sandbox(unsafe: bool) -> None:
    if unsafe:
        print("autograder: WARNING: --unsafe-no-sandbox: student code runs WITHOUT isolation "
              "(it can read and write your files and use the network). Use only for trusted notebooks.",
              file=sys.stderr)
        return
    if not bwrap_path():
        raise course.CourseError(
            "no sandbox: bubblewrap (bwrap) is not installed, and student code must not run unsandboxed. "
            "Install it (Debian/Ubuntu: apt-get install bubblewrap), or pass --unsafe-no-sandbox "
            "to grade trusted notebooks without isolation.")
    probe = subprocess.run([bwrap_path(), "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid",
                            "--dev", "/dev", "--proc", "/proc", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        raise course.CourseError(
            f"no sandbox: bubblewrap cannot create namespaces here ({probe.stderr.strip()[:200]}). "
            "Grade on a machine where it can, or pass --unsafe-no-sandbox for trusted notebooks only.")


@contextmanager
def workspace_lock(workspace: Path):
    """One grading run per workspace at a time; released however the run ends."""
    with open(workspace / ".grading.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise course.CourseError(f"another grading run is using {workspace}; wait for it to finish") from None
        yield


def secret(workspace: Path) -> str:
    path = workspace / "secret.key"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
    return path.read_text().strip()


def _write_json_atomic(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)


def _append_line(path: Path, line: str) -> None:
    with open(path, "a", encoding="utf-8") as f:
        f.write(line + "\n")
        f.flush()
        os.fsync(f.fileno())


def _autograded_notebook(source, result: dict, notebook: Path | None, out: Path) -> None:
    """The submission with the instructor's test cells and their outcomes, for formgrader."""
    if notebook is None:
        return
    try:
        nb = read_notebook(notebook)
    except NotebookError:
        return
    tests = {t["grade_id"]: t for t in result["tests"]}
    originals = {t.grade_id: t.source for t in source.tests}
    for cell in nb.cells:
        gid = nbgrader_meta(cell).get("grade_id")
        if cell.get("cell_type") == "code":
            cell.outputs, cell.execution_count = [], None
        if gid in tests:
            cell.source = originals[gid]
            t = tests[gid]
            if not t["passed"]:
                cell.outputs = [nbformat.v4.new_output("error", ename="TestFailure", evalue=t["message"],
                                                       traceback=[t["message"]])]

    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(out))


# ------------------------------------------------------------------------ main entry
def grade(assignment: str, submissions_path: Path, *, workers: int | None = None,
          workspace: Path | None = None, db_url: str | None = None, limits: Limits | None = None,
          regrade: bool = False, unsafe: bool = False, quiet: bool = False) -> dict:
    """Grade every submission; returns a summary dict. Raises CourseError for user errors."""
    source_path = course.source_notebook(assignment)
    source = load_source(source_path)
    workspace = Path(workspace or course.workspace()).resolve()
    workspace.mkdir(parents=True, exist_ok=True)
    with workspace_lock(workspace):
        check_sandbox(unsafe)
        subs = collect(Path(submissions_path), assignment, scratch=workspace)
        salt = secret(workspace)
        results_dir = workspace / "results" / assignment
        results_dir.mkdir(parents=True, exist_ok=True)
        url = db_url or default_url(workspace)
        notebook_name = source_path.stem
        started = time.time()

        done: dict[str, dict] = {}
        todo = []
        for sub in subs:
            digest_now = digest(sub.notebook.read_bytes()) if sub.notebook else None
            previous = results_dir / f"{sub.student}.json"
            if previous.exists() and not regrade:
                try:
                    old = json.loads(previous.read_text())
                except (OSError, json.JSONDecodeError):
                    old = None
                if old and old.get("digest") == digest_now and old.get("grader_version") == VERSION \
                        and old.get("notebook") == (sub.notebook.name if sub.notebook else None):
                    done[sub.student] = old
                    continue
            todo.append((sub.student, assignment, str(sub.notebook) if sub.notebook else None, sub.problem, salt))

        with open_gradebook(url) as gb:
            ensure_assignment(gb, assignment, source)
            for result in done.values():        # reused results: make sure the gradebook has them
                record(gb, assignment, notebook_name, result)

            def finish(result: dict) -> None:
                _write_json_atomic(results_dir / f"{result['student']}.json", result)
                _append_line(results_dir / "graded.log", f"{result['student']} {result['digest']} {result['score']}")
                record(gb, assignment, notebook_name, result)
                done[result["student"]] = result

            n_workers = max(1, min(workers or os.cpu_count() or 1, len(todo) or 1))
            if todo:
                bar = _progress(len(todo), quiet)
                ctx = mp.get_context("spawn")
                slots = ctx.Value("i", 0)
                with ctx.Pool(n_workers, initializer=_init_worker,
                              initargs=(str(source_path), slots, limits or Limits(), unsafe)) as pool:
                    for result in pool.imap_unordered(_grade_task, todo):
                        if "error" in result:
                            pool.terminate()
                            raise course.CourseError(result["error"])
                        finish(result)
                        bar.update(1)
                bar.close()

        ordered = [done[s.student] for s in subs]
        by_notebook = {s.student: s.notebook for s in subs}
        for result in ordered:
            write_text_atomic(workspace / "feedback" / result["student"] / assignment / "feedback.html",
                              student_feedback(result))
            _autograded_notebook(source, result, by_notebook[result["student"]],
                                 workspace / "autograded" / result["student"] / assignment / f"{notebook_name}.ipynb")
        report_dir = workspace / "reports" / assignment
        csv_path = report_dir / "grades.csv"
        report_dir.mkdir(parents=True, exist_ok=True)
        tmp = csv_path.with_name("grades.csv.tmp")
        with open(tmp, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["student", "assignment", "score", "max_score", "flags"])
            for r in ordered:
                w.writerow([r["student"], assignment, f"{r['score']:g}", f"{r['max_score']:g}", "; ".join(r["flags"])])
        tmp.replace(csv_path)
        write_text_atomic(report_dir / "report.html", instructor_report(assignment, ordered))
    scores = [r["score"] for r in ordered]
    return {
        "assignment": assignment, "students": len(ordered), "graded": len(todo),
        "reused": len(ordered) - len(todo), "seconds": round(time.time() - started, 1),
        "workers": n_workers if todo else 0, "mean": sum(scores) / len(scores),
        "max_score": source.max_score,
        "full_marks": sum(1 for r in ordered if r["score"] == r["max_score"]),
        "flagged": sum(1 for r in ordered if r["flags"]),
        "grades_csv": str(csv_path), "report": str(report_dir / "report.html"),
        "feedback_dir": str(workspace / "feedback"), "db_url": url,
    }


def _progress(total: int, quiet: bool):
    from tqdm import tqdm

    return tqdm(total=total, desc="grading", unit="student", disable=quiet, file=sys.stderr,
                mininterval=0.3, dynamic_ncols=True)


# ------------------------------------------------------------------------ command line
def _cmd_grade(args) -> int:
    limits = Limits(wall_seconds=args.timeout, cpu_seconds=int(args.timeout),
                    memory_bytes=args.memory_mb << 20)
    summary = grade(args.assignment, args.submissions, workers=args.workers, workspace=args.workspace,
                    db_url=args.db, limits=limits, regrade=args.regrade, unsafe=args.unsafe_no_sandbox,
                    quiet=args.quiet)
    print(f"graded {summary['students']} submissions of {summary['assignment']} in {summary['seconds']} s "
          f"({summary['graded']} graded now with {summary['workers']} workers, {summary['reused']} unchanged "
          f"since the last run)")
    print(f"mean score {summary['mean']:.2f} / {summary['max_score']:g}; {summary['full_marks']} with full "
          f"marks; {summary['flagged']} flagged")
    print(f"grades:   {summary['grades_csv']}")
    print(f"report:   {summary['report']}")
    print(f"feedback: {summary['feedback_dir']}/STUDENT/{summary['assignment']}/feedback.html")
    print(f"gradebook: {summary['db_url']} (nbgrader export works on it)")
    return 0


def add_grade_parser(sub) -> None:
    p = sub.add_parser(
        "grade", help="grade every student's notebook for an assignment (sandboxed, in parallel)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Grade every submission of ASSIGNMENT found in SUBMISSIONS: run each student's "
                    "notebook in its own sandbox (no network, no view of solutions, hidden tests, the "
                    "gradebook or other students), run the instructor's visible and hidden tests in "
                    "this process against the results, and write scores to the nbgrader gradebook, "
                    "grades.csv, one feedback page per student and an instructor report.",
        epilog="SUBMISSIONS is a folder with one sub-folder per student id holding that student's "
               "notebook (any file name), or a .zip of such folders as downloaded from an LMS.\n"
               "A run that is interrupted can simply be started again: students already graded are "
               "not graded twice.\n\nexample:\n  autograder grade 02_similarity submissions/ --workers 2")
    p.add_argument("assignment", help="the assignment name, e.g. 02_similarity (a folder of solutions/)")
    p.add_argument("submissions", type=Path, help="folder of student folders, or a .zip of them")
    p.add_argument("--workers", type=int, default=None, help="parallel workers (default: one per core)")
    p.add_argument("--workspace", type=Path, default=None,
                   help="where results, feedback, reports and the default gradebook go "
                        "(default: grading/ in the course, or $AUTOGRADER_WORKSPACE)")
    p.add_argument("--db", default=None, metavar="URL",
                   help="gradebook database URL, any that nbgrader accepts "
                        "(default: sqlite:///WORKSPACE/gradebook.db)")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds one notebook may take, its cells and all its tests (default: 60)")
    p.add_argument("--memory-mb", type=int, default=3072, help="memory limit per notebook in MiB (default: 3072)")
    p.add_argument("--regrade", action="store_true", help="grade every student again, even if unchanged")
    p.add_argument("--unsafe-no-sandbox", action="store_true",
                   help="run student code without bubblewrap isolation (trusted notebooks only)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_grade)


__all__ = ["grade", "add_grade_parser"]
