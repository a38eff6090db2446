"""`autograder grade ASSIGNMENT SUBMISSIONS`: grade a whole class, in parallel, safely.

Workers (one per core by default) start first, each warming one sandbox, while this parent
collects and reads the submissions and opens the gradebook. Each worker grades one
submission at a time. The parent is the only writer of results, the gradebook, grades.csv,
feedback and the report (through `workspace` and `gradebook`), and it watches every
submission: a worker that dies or stops answering is replaced, and the student it was
grading gets a flagged 0; the run goes on. Each student's result is written as soon as it
is known, so a run that is killed can be started again: a result is reused while the
notebook and everything that decides its grade (tests, grader, limits, secret) are
unchanged (`--regrade` forces grading). Inputs are drawn from the workspace's secret and
the student's id, so re-grading gives identical results.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import subprocess
import sys
import time
from multiprocessing.connection import wait
from pathlib import Path

from .. import course
from ..flags import Flag, flag
from .submission import digest, grade_submission, student_salt
from ..notebook import NotebookError, load_source, nbgrader_meta, parse_notebook, read_regular_file
from ..sandbox.host import Limits, Sandbox, SandboxUnavailable, bwrap_path, remove_stale_cgroups
from ..submissions import Submission, collect
from ..workspace import Workspace


# ------------------------------------------------------------------------ workers
def _worker_main(conn, slot: int, source_path: str, limits: Limits, unsafe: bool) -> None:
    """A grading worker: one warm sandbox, one submission at a time, until told to stop.
    The parent may close its end at any time (a user error found while the workers warm
    up, say): then the worker ends quietly."""
    try:
        _serve(conn, slot, source_path, limits, unsafe)
    except (EOFError, OSError, KeyboardInterrupt):
        pass


def _serve(conn, slot: int, source_path: str, limits: Limits, unsafe: bool) -> None:
    import torch

    torch.set_num_threads(1)
    source = load_source(source_path)
    box = Sandbox(slot=slot, limits=limits, unsafe=unsafe)
    try:
        box.start()
    except SandboxUnavailable as exc:
        try:
            conn.send(("unavailable", str(exc)))
        except OSError:
            pass
        return
    try:
        conn.send(("ready", None))
        while True:
            task = conn.recv()
            if task is None:
                return
            student, assignment, data, name, problem, salt = task
            try:
                result = grade_submission(source, student, assignment, data, name, box, salt, problem)
            except SandboxUnavailable as exc:
                conn.send(("unavailable", str(exc)))
                return
            except Exception as exc:  # noqa: BLE001 (one submission must never stop the class's grading)
                box.kill()
                detail = f"{type(exc).__name__} in the grader"
                result = grade_submission(source, student, assignment, None, None, box, salt,
                                          flag("internal", detail=detail))
            conn.send(("result", result))
    finally:
        box.close()


class _Worker:
    def __init__(self, ctx, slot: int, source_path: Path, limits: Limits, unsafe: bool):
        self.slot = slot
        self.conn, theirs = ctx.Pipe()
        self.proc = ctx.Process(target=_worker_main, args=(theirs, slot, str(source_path), limits, unsafe),
                                daemon=True, name=f"grading-worker-{slot}")
        self.proc.start()
        theirs.close()
        self.ready = False
        self.task: tuple | None = None
        self.started = 0.0

    def give(self, task: tuple) -> None:
        self.task, self.started = task, time.monotonic()
        self.conn.send(task)

    def stop(self, kill: bool = False) -> None:
        kill = kill or not self.ready         # still warming up: nothing to finish
        if not kill:
            try:
                self.conn.send(None)
            except OSError:
                kill = True
        if kill:
            self.proc.kill()
        self.proc.join(timeout=10)
        self.conn.close()


class _Pool:
    """Workers the parent watches: a task that outlives `limits.grace_seconds`, or a worker
    that dies, costs that student a flagged 0 and the worker is replaced."""

    def __init__(self, n: int, source_path: Path, limits: Limits, unsafe: bool):
        self.ctx = mp.get_context("spawn")
        self.source_path, self.limits, self.unsafe = source_path, limits, unsafe
        self.next_slot = 0
        self.workers = [self._spawn() for _ in range(n)]
        self.failed_starts = 0

    def _spawn(self) -> _Worker:
        slot = self.next_slot % 64          # slots name uids and cgroups; they are reused
        self.next_slot += 1
        return _Worker(self.ctx, slot, self.source_path, self.limits, self.unsafe)

    def _replace(self, worker: _Worker) -> None:
        worker.stop(kill=True)
        self.workers[self.workers.index(worker)] = self._spawn()

    def run(self, tasks: list[tuple], on_result) -> None:
        queue = list(tasks)
        while queue or any(w.task for w in self.workers):
            for w in self.workers:
                if w.ready and w.task is None and queue:
                    w.give(queue.pop(0))
            ready = wait([w.conn for w in self.workers] + [w.proc.sentinel for w in self.workers], timeout=1.0)
            for w in list(self.workers):
                if w.conn in ready:
                    try:
                        kind, payload = w.conn.recv()
                    except (EOFError, OSError):
                        self._lost(w, on_result, "the grading worker ended unexpectedly")
                        continue
                    if kind == "ready":
                        w.ready, self.failed_starts = True, 0
                    elif kind == "result":
                        w.task = None
                        on_result(payload)
                    elif kind == "unavailable":
                        raise course.CourseError(f"the sandbox could not start: {payload}")
                elif w.proc.sentinel in ready or not w.proc.is_alive():
                    self._lost(w, on_result, "the grading worker ended unexpectedly")
                elif w.task and time.monotonic() - w.started > self.limits.grace_seconds:
                    self._lost(w, on_result, None)

    def _lost(self, w: _Worker, on_result, why: str | None) -> None:
        task = w.task
        if not w.ready:
            self.failed_starts += 1
            if self.failed_starts >= 3:
                raise course.CourseError("grading workers keep failing to start; run with a single "
                                         "submission to see why")
        self._replace(w)
        if task is not None:
            student, assignment, _data, name, _problem, salt = task
            seconds = self.limits.grace_seconds
            problem = flag("unresponsive", seconds=seconds) if why is None else flag("internal", detail=why)
            on_result({"student": student, "abandoned": problem.to_dict(), "notebook": name})

    def close(self) -> None:
        for w in self.workers:
            w.stop(kill=w.task is not None)
        remove_stale_cgroups()


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


def _read(sub: Submission) -> tuple[bytes | None, Flag | None]:
    """The submission's bytes, read once, here, from a regular file of the student's own."""
    if sub.problem is not None or sub.notebook is None:
        return None, sub.problem or flag("no-notebook")
    try:
        return read_regular_file(sub.notebook), None
    except NotebookError as exc:
        return None, flag("corrupt", detail=str(exc))


def _abandoned(source, result: dict, assignment: str) -> dict:
    """The record of a submission whose grading was abandoned (worker lost)."""
    problem = Flag(**result["abandoned"])
    return {"student": result["student"], "assignment": assignment, "notebook": result.get("notebook"),
            "digest": None, "score": 0.0, "max_score": source.max_score,
            "tests": [{"grade_id": t.grade_id, "description": t.description, "points": 0.0,
                       "max_points": t.points, "passed": False, "message": problem.message,
                       "hidden": t.has_hidden} for t in source.tests],
            "flags": [problem.to_dict()], "seconds": 0.0}


def _autograded(source, result: dict, data: bytes | None):
    """The submission with the instructor's test cells and their outcomes, for formgrader."""
    import nbformat

    if data is None:
        return None
    try:
        nb = parse_notebook(data, result.get("notebook") or "notebook")
    except NotebookError:
        return None
    tests = {t["grade_id"]: t for t in result["tests"]}
    originals = {t.grade_id: t.source for t in source.tests}
    for cell in nb.cells:
        gid = nbgrader_meta(cell).get("grade_id")
        if cell.get("cell_type") == "code":
            cell.outputs, cell.execution_count = [], None
        if gid in tests:
            cell.source = originals[gid]
            if not tests[gid]["passed"]:
                message = tests[gid]["message"]
                cell.outputs = [nbformat.v4.new_output("error", ename="TestFailure", evalue=message,
                                                       traceback=[message])]
    return nb


# ------------------------------------------------------------------------ the term
def _term_block(result: dict, sub: Submission | None, terms, late: dict, standing: dict | None) -> dict:
    """A student's standing in the term, after grading: when they submitted and how that is
    known, the deadline that applied (with their extension), the late penalty, the points an
    instructor set by hand, and the score that counts (what `nbgrader export` reports)."""
    from ..deadlines import extension_for, human, iso

    student = result["student"]
    entry = terms.roster.get(student) if terms.roster is not None else None
    extension = extension_for(entry.extension if entry else None, terms.due)
    due = terms.due + extension if terms.due is not None and extension else terms.due
    flags = []
    if terms.roster is not None and entry is None:
        flags.append(flag("not-on-roster", student=student).to_dict())
    if sub is not None and sub.time_problem is not None:
        flags.append(sub.time_problem.to_dict())
    raw = standing["raw_score"] if standing else result["score"]
    penalty = late["penalty"]
    return {
        "status": "late" if late["seconds_late"] > 0 else "graded",
        "name": entry.name if entry else "", "email": entry.email if entry else "",
        "submitted_at": iso(sub.submitted_at) if sub else "",
        "submitted_at_text": human(sub.submitted_at) if sub else "",
        "time_source": (sub.time_source or "") if sub else "",
        "due": iso(due), "due_text": human(due),
        "extension_hours": round(extension.total_seconds() / 3600, 4) if extension else 0,
        "seconds_late": round(late["seconds_late"], 3),
        "late_policy": terms.policy.describe() if late["seconds_late"] > 0 else "",
        "late_penalty": penalty,
        "raw_score": round(raw, 6),
        "score": round(standing["score"] if standing else max(0.0, raw - penalty), 6),
        "manual": {k: v for k, v in sorted((standing or {}).get("manual", {}).items())},
        "flags": flags,
    }


def _absent(student: str, assignment: str, max_score: float, terms, status: str) -> dict:
    """A row for a rostered student with no submission (`missing`), or a submission a
    partial regrade did not reach and that was never graded (`not graded`)."""
    from ..deadlines import extension_for, iso

    entry = terms.roster.get(student) if terms.roster is not None else None
    extension = extension_for(entry.extension if entry else None, terms.due)
    due = terms.due + extension if terms.due is not None and extension else terms.due
    return {"student": student, "assignment": assignment, "score": 0.0, "max_score": max_score,
            "tests": [], "flags": [],
            "term": {"status": status, "name": entry.name if entry else "", "email": entry.email if entry else "",
                     "due": iso(due), "score": 0.0, "raw_score": 0.0, "late_penalty": 0.0, "flags": []}}


def _all_flags(result: dict) -> list:
    return result.get("flags", []) + ((result.get("term") or {}).get("flags") or [])


# ------------------------------------------------------------------------ main entry
def grade(assignment: str, submissions_path: Path, *, workers: int | None = None,
          workspace: Path | None = None, db_url: str | None = None, limits: Limits | None = None,
          regrade: bool = False, unsafe: bool = False, quiet: bool = False,
          due: str | None = None, late_policy: str | None = None, late_floor: str | None = None,
          roster: Path | None = None, students: list[str] | tuple = (), flagged: bool = False) -> dict:
    """Grade every submission (or, with `students` / `flagged`, only those, leaving everyone
    else's results as they are); returns a summary dict. Raises CourseError for user errors."""
    from ..feedback import instructor_report, student_feedback
    from ..gradebook import (add_students, apply_late_policy, ensure_assignment, open_gradebook, record,
                             safe_url, standings)
    from .. import term

    source_path = course.source_notebook(assignment)
    source = load_source(source_path)
    limits = limits or Limits()
    ws = Workspace(Path(workspace or course.workspace()), assignment)
    terms = term.resolve(ws.root, assignment, source.max_score, due=due, late_policy=late_policy,
                         late_floor=late_floor, roster=roster, db=db_url)
    partial = bool(students) or flagged
    if partial and regrade:
        raise course.CourseError("--regrade grades everyone; --student and --flagged grade only some: use one")
    started = time.time()
    with ws.lock():
        check_sandbox(unsafe)
        n_workers = max(1, workers or os.cpu_count() or 1)
        pool = _Pool(n_workers, source_path, limits, unsafe)     # warms up while we collect
        try:
            subs = collect(Path(submissions_path), assignment, scratch=ws.root)
            by_id = {s.student: s for s in subs}
            unknown = [s for s in students if s not in by_id and not (terms.roster and s in terms.roster)]
            if unknown:
                raise course.CourseError(f"--student {unknown[0]}: no submission and no roster entry has this id "
                                         f"(ids are the submission folders' names)")
            secret = ws.secret()
            key = ws.resume_key(source_path, limits, secret)
            url = terms.db or ws.default_db_url()
            notebook_name = source_path.stem

            done: dict[str, dict] = {}        # graded now or reused: their standing is brought up to date
            frozen: dict[str, dict] = {}      # partial regrade, submission changed since: left exactly as they are
            ungraded: list[str] = []
            data: dict[str, bytes | None] = {}
            todo = []
            for sub in subs:
                old = ws.load_result(sub.slug)
                if old and old.get("student") != sub.student:
                    old = None
                data[sub.student], problem = _read(sub)
                digest_now = digest(data[sub.student]) if data[sub.student] else None
                name = sub.notebook.name if sub.notebook else None
                same = old is not None and old.get("digest") == digest_now and old.get("notebook") == name
                if partial and not (sub.student in students or (flagged and old is not None and _all_flags(old))):
                    # not chosen: never graded here. Its standing (penalty, manual scores) is brought
                    # up to date while the result fits the submission; else it stays as it was.
                    if same:
                        done[sub.student] = old
                    elif old is not None:
                        frozen[sub.student] = old
                    else:
                        ungraded.append(sub.student)
                    continue
                if not (regrade or partial) and same and old.get("key") == key:
                    done[sub.student] = old
                    continue
                todo.append((sub.student, assignment, data[sub.student], name, problem,
                             student_salt(secret, assignment, sub.student)))
            slugs = {s.student: s.slug for s in subs}
            for s in list(pool.workers)[len(todo):]:     # more workers than work
                pool.workers.remove(s)
                s.stop(kill=True)

            with open_gradebook(url) as gb:
                ensure_assignment(gb, assignment, source, terms.due)
                if terms.roster:
                    add_students(gb, terms.roster)
                for result in done.values():        # reused results: make sure the gradebook has them
                    record(gb, assignment, notebook_name, result, fresh=False)

                def finish(result: dict) -> None:
                    if "abandoned" in result:
                        result = _abandoned(source, result, assignment)
                    result["key"] = key
                    ws.save_result(slugs[result["student"]], result)
                    record(gb, assignment, notebook_name, result)
                    done[result["student"]] = result
                    bar.update(1)

                bar = _progress(len(todo), quiet)
                if todo:
                    pool.run(todo, finish)
                bar.close()

                # after grading: submission times, extensions and late penalties, then each
                # student's standing as the gradebook has it (manual adjustments included)
                from ..deadlines import extension_for

                lateness = {}
                for student in done:
                    entry = terms.roster.get(student) if terms.roster is not None else None
                    lateness[student] = apply_late_policy(
                        gb, assignment, notebook_name, student, by_id[student].submitted_at,
                        extension_for(entry.extension if entry else None, terms.due), terms.policy)
                standing = standings(gb, assignment)
                for student, result in done.items():
                    result["term"] = _term_block(result, by_id[student], terms, lateness[student],
                                                 standing.get(student))
        finally:
            pool.close()

        for sub in subs:
            if sub.student not in done:
                continue
            result = done[sub.student]
            ws.save_result(sub.slug, result, graded=False)           # unchanged: not written
            ws.write_feedback(sub.slug, student_feedback(result))
            nb = _autograded(source, result, data.get(sub.student))
            if nb is not None:
                ws.write_autograded(sub.slug, notebook_name, nb)
        submitted = {**frozen, **done}
        missing = sorted(set(terms.roster or ()) - set(by_id))
        rows = {s: submitted[s] for s in submitted}
        rows.update({s: _absent(s, assignment, source.max_score, terms, "missing") for s in missing})
        rows.update({s: _absent(s, assignment, source.max_score, terms, "not graded") for s in ungraded})
        ordered = [rows[s] for s in sorted(rows)]
        graded_rows = [submitted[s] for s in sorted(submitted)]
        csv_path = ws.write_csv(ordered, [t.grade_id for t in source.tests])
        report = ws.write_report(instructor_report(assignment, graded_rows, missing, ungraded,
                                                   terms.describe() if terms.due else ""))
    scores = [(r.get("term") or {}).get("score", r["score"]) for r in graded_rows]
    terms_of = [(r.get("term") or {}) for r in graded_rows]
    return {
        "assignment": assignment, "students": len(subs), "graded": len(todo),
        "reused": len(done) - len(todo), "frozen": sorted(frozen), "partial": partial,
        "kept": len(subs) - len(todo) - len(ungraded),
        "seconds": round(time.time() - started, 1),
        "workers": min(n_workers, len(todo)), "mean": sum(scores) / len(scores) if scores else 0.0,
        "max_score": source.max_score,
        "full_marks": sum(1 for s in scores if s == source.max_score),
        "flagged": sum(1 for r in graded_rows if _all_flags(r)),
        "late": sorted(r["student"] for r, t in zip(graded_rows, terms_of) if t.get("seconds_late")),
        "missing": missing, "ungraded": ungraded,
        "not_on_roster": sorted(r["student"] for r, t in zip(graded_rows, terms_of)
                                if any(f["code"] == "not-on-roster" for f in t.get("flags", []))),
        "regraded": sorted(t[0] for t in todo) if partial else [],
        "deadline": terms.describe(), "roster": len(terms.roster) if terms.roster is not None else None,
        "grades_csv": str(csv_path), "report": str(report),
        "feedback_dir": str(ws.feedback_dir), "db_url": safe_url(url),
    }


def _progress(total: int, quiet: bool):
    from tqdm import tqdm

    return tqdm(total=total, desc="grading", unit="student", disable=quiet or not total, file=sys.stderr,
                mininterval=0.3, dynamic_ncols=True)


# ------------------------------------------------------------------------ command line
def _names(ids: list[str], most: int = 8) -> str:
    return ", ".join(ids[:most]) + (f" and {len(ids) - most} more" if len(ids) > most else "")


def _cmd_grade(args) -> int:
    limits = Limits(wall_seconds=args.timeout, cpu_seconds=int(args.timeout),
                    memory_bytes=args.memory_mb << 20)
    summary = grade(args.assignment, args.submissions, workers=args.workers, workspace=args.workspace,
                    db_url=args.db, limits=limits, regrade=args.regrade, unsafe=args.unsafe_no_sandbox,
                    quiet=args.quiet, due=args.due, late_policy=args.late_policy, late_floor=args.late_floor,
                    roster=args.roster, students=args.student or (), flagged=args.flagged)
    if summary["partial"]:
        print(f"regraded {len(summary['regraded'])} of {summary['students']} submissions of "
              f"{summary['assignment']} in {summary['seconds']} s ({_names(summary['regraded']) or 'none'}); "
              f"{summary['kept']} other{'s' if summary['kept'] != 1 else ''} not graded again")
        if summary["frozen"]:
            print(f"changed since graded, kept as they were (regrade them with --student): "
                  f"{_names(summary['frozen'])}")
    else:
        print(f"graded {summary['students']} submissions of {summary['assignment']} in {summary['seconds']} s "
              f"({summary['graded']} graded now with {summary['workers']} workers, {summary['reused']} unchanged "
              f"since the last run)")
    print(f"mean score {summary['mean']:.2f} / {summary['max_score']:g}; {summary['full_marks']} with full "
          f"marks; {summary['flagged']} flagged")
    print(f"deadline: {summary['deadline']}" + (f"; late: {_names(summary['late'])}" if summary["late"] else ""))
    if summary["roster"] is not None:
        print(f"roster:   {summary['roster']} students; missing: {_names(summary['missing']) or 'none'}; "
              f"not on the roster: {_names(summary['not_on_roster']) or 'none'}")
    if summary["ungraded"]:
        print(f"not graded yet (not selected): {_names(summary['ungraded'])}")
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
               "not graded twice.\n\nexamples:\n  autograder grade 02_similarity submissions/ --workers 2\n"
               "  autograder grade 02_similarity lms.zip --due 2025-03-14T23:59+01:00 --late-policy per-day:10 "
               "--roster roster.csv\n  autograder grade 02_similarity lms.zip --student alice   "
               "# regrade one student")
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
    p.add_argument("--student", action="append", metavar="ID",
                   help="regrade only this student (repeatable); everyone else's results stay as they are")
    p.add_argument("--flagged", action="store_true",
                   help="regrade only the students whose result is flagged; everyone else's stay as they are")
    t = p.add_argument_group("the term (defaults from WORKSPACE/term.toml, see autograder/README.md)")
    t.add_argument("--due", metavar="ISO-DATETIME",
                   help="the deadline, e.g. 2025-03-14T23:59 (this machine's local time) or 2025-03-14T23:59+01:00")
    t.add_argument("--late-policy", metavar="POLICY",
                   help="none (default), zero, per-hour:P or per-day:P: P percent of the maximum score "
                        "deducted per started hour or day late")
    t.add_argument("--late-floor", metavar="PERCENT",
                   help="per-hour and per-day: a deduction never takes a score below this percent of the maximum")
    t.add_argument("--roster", type=Path, metavar="FILE",
                   help="CSV with a header id,name,email,extension: every student on it gets a row "
                        "(missing when nothing was submitted); ids not on it are graded and flagged")
    p.add_argument("--unsafe-no-sandbox", action="store_true",
                   help="run student code without bubblewrap isolation (trusted notebooks only)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_grade)


__all__ = ["grade", "add_grade_parser"]
