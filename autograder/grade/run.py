"""`autograder grade ASSIGNMENT SUBMISSIONS`: grade a whole class, in parallel, safely.

Mistakes in the command line, the term file, the roster or the submissions' path are
reported first, in one line. Then the workers (one per core by default) start, each warming
one sandbox, while this parent reads the submissions and opens the gradebook. Each worker grades one
submission at a time. The parent is the only writer of results, the gradebook, grades.csv,
feedback and the report (through `workspace` and `gradebook`), and it watches every
submission: a worker that dies or stops answering is replaced, and the student it was
grading gets a flagged 0; the run goes on. Each student's result is written as soon as its
batch is in the gradebook, so a run that is killed can be started again: a result is reused while the
notebook and everything that decides its grade (tests, grader, limits, secret) are
unchanged (`--regrade` forces grading). Inputs are drawn from the workspace's secret and
the student's id, so re-grading gives identical results.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
import functools
from typing import Any
from pathlib import Path

from .. import course
from ..flags import Flag, flag
from . import digest, student_salt
from .book import Gradebook, Settled, read_standings
from .task import Task
from .phases import Phases
from .plan import Seen, plan
from .summary import Summary
from .pool import open_pool
from ..notebook import NotebookError, SourceNotebook, load_source, nbgrader_meta, parse_notebook, source_imports
from ..sandbox.host import Limits, bwrap_path, sandbox_problem
from ..lms.submissions import Submission, collect
from ..lms.times import TIME_SAME, lms_times
from ..store.gradebook import safe_url
from ..store.workspace import Workspace
from ..records import Result
from ..term.standing import absent_row, term_block


# ------------------------------------------------------------------------ helpers
def check_sandbox(unsafe: bool) -> None:
    if unsafe:
        print("autograder: WARNING: --unsafe-no-sandbox: student code runs WITHOUT isolation "
              "(it can read and write your files and use the network). Use only for trusted notebooks.",
              file=sys.stderr)
        return
    problem = sandbox_problem()
    if problem is None:
        return
    if not bwrap_path():
        raise course.CourseError(
            "no sandbox: bubblewrap (bwrap) is not installed, and student code must not run unsandboxed. "
            "Install it (Debian/Ubuntu: apt-get install bubblewrap), or pass --unsafe-no-sandbox "
            "to grade trusted notebooks without isolation.")
    raise course.CourseError(
        f"no sandbox: {problem}. "
        "Grade on a machine where it can, or pass --unsafe-no-sandbox for trusted notebooks only.")


def _read(sub: Submission) -> tuple[bytes | None, Flag | None]:
    """The submission's bytes, read once, here, from a regular file of the student's own."""
    if sub.problem is not None or sub.notebook is None:
        return None, sub.problem or flag("no-notebook")
    from ..notebook import TooLarge, read_submission

    try:
        return read_submission(sub.notebook)[0], None     # outputs left out of a very large one
    except TooLarge as exc:
        return None, flag("too-large", detail=str(exc))
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


def _autograded(source, result: dict, data: bytes | None) -> str | None:
    """The submission with the instructor's test cells and their outcomes, for formgrader,
    as notebook JSON, made inert (sanitise.py). The worker has parsed and validated these
    bytes already: a version 4 notebook is edited here as plain JSON (validating it again
    would cost more than grading it); any other version goes through nbformat, which
    converts it."""
    import json

    from ..report import sanitise
    from ..notebook import load_json_notebook

    if data is None or any(f.get("code") == "corrupt" for f in result.get("flags", [])):
        return None
    try:
        nb = load_json_notebook(data, result.get("notebook") or "notebook")
    except NotebookError:
        return None
    plain = nb.get("nbformat") == 4 and all(isinstance(c, dict) for c in nb["cells"])
    if not plain:
        try:
            nb = parse_notebook(data, result.get("notebook") or "notebook")
        except NotebookError:
            return None
    tests = {t["grade_id"]: t for t in result["tests"]}
    originals = {t.grade_id: t.source for t in source.tests}
    for cell in nb["cells"]:
        gid = nbgrader_meta(cell).get("grade_id")
        if cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
        if gid in tests:
            cell["source"] = originals[gid]
            if not tests[gid]["passed"]:
                message = tests[gid]["message"]
                cell["outputs"] = [{"output_type": "error", "ename": "TestFailure", "evalue": message,
                                    "traceback": [message]}]
    # nothing the student wrote reaches the instructor's Formgrader page as markup
    return json.dumps(sanitise.notebook(nb, source.nb), sort_keys=True, indent=1, ensure_ascii=False) + "\n"


def _copying(ws, source, assignment: str, notebook_name: str, submitted: dict, autograded: dict) -> list:
    """Groups of submissions worth a look (similarity.py), from the autograded notebooks: the
    whole class's, not only this run's (this run's from memory, `autograded`, the others' from
    the workspace). Every code cell a student wrote
    counts, answer cells and cells of their own; the instructor's test cells and cells just as
    released do not."""
    from ..notebook import nbgrader_meta
    from ..report.similarity import code_of, notebook_code, possible_copying, stub
    from ..lms.submissions import workspace_name

    ids = set(source.answer_ids)
    tests = {t.grade_id for t in source.tests}
    release = course.ROOT / "exercises" / assignment / f"{notebook_name}.ipynb"
    released = notebook_code(release, ids)
    solutions: dict[str, str] = {}
    for cell in source.nb.cells:
        gid = nbgrader_meta(cell).get("grade_id")
        if isinstance(gid, str) and gid in ids:
            solutions[gid] = cell.source
    templates = {gid: released.get(gid) or stub(code) for gid, code in solutions.items()}
    answers = {student: code_of(autograded[student], ids, tests, released.values()) if student in autograded
               else notebook_code(ws.autograded_notebook(workspace_name(student), notebook_name), ids, tests,
                                  released.values())
               for student in submitted}
    digests = {student: result.get("digest") for student, result in submitted.items()}
    return possible_copying(digests, answers, templates, solutions)


def _provenance(sub: Submission) -> dict:
    """Where a graded submission came from: enough to tell a later download's apart."""
    from ..term.deadlines import iso

    return {"source": sub.source, "attempt": sub.attempt, "submitted_at": iso(sub.submitted_at),
            "time_source": sub.time_source or "", "lms": sub.lms, "lms_id": sub.lms_id, "lms_name": sub.lms_name}


def _seen(ws: Workspace, sub: Submission) -> Seen:
    """The submission read, against the result stored for its student."""
    old = ws.load_result(sub.slug)
    if old and old.get("student") != sub.student:
        old = None
    data, problem = _read(sub)
    return Seen(sub.student, data, problem, sub.notebook.name if sub.notebook else None,
                digest(data) if data else None, old, old is not None and _newer(sub, old))


def _newer(sub: Submission, old: dict) -> bool:
    """Whether `sub` is known to be newer than the submission `old` was graded from: a later
    Canvas upload (larger attachment id), or a later known submission time."""
    from ..term.deadlines import iso

    was = old.get("submission") or {}
    if sub.attempt and was.get("attempt"):
        return sub.attempt > was["attempt"]
    if sub.submitted_at is not None and was.get("submitted_at") and sub.time_source != was.get("time_source", ""):
        return False                # times from different sources do not compare
    return bool(sub.submitted_at is not None and was.get("submitted_at")
                and iso(sub.submitted_at) > was["submitted_at"])


def _cluster_settings(cluster: str | None, tls: dict | None, terms, unsafe: bool) -> dict | None:
    """The Dask cluster to grade on: the command line's, else term.toml's; None: this machine."""
    address = cluster or terms.cluster
    if not address:
        return None
    if unsafe:
        raise course.CourseError("--unsafe-no-sandbox and --cluster: nothing is graded unsandboxed on a cluster")
    files = {k: v for k, v in {**(terms.cluster_tls or {}), **(tls or {})}.items() if v}
    return {"address": str(address), "tls": files}


# ------------------------------------------------------------------------ main entry
def grade(assignment: str, submissions_path: Path, *, workers: int | None = None,
          workspace: Path | None = None, db_url: str | None = None, limits: Limits | None = None,
          regrade: bool = False, unsafe: bool = False, quiet: bool = False,
          due: str | None = None, late_policy: str | None = None, late_floor: str | None = None,
          roster: Path | None = None, students: list[str] | tuple = (), flagged: bool = False,
          times: Path | None = None, cluster: str | None = None, tls: dict | None = None) -> Summary:
    """Grade every submission (or, with `students` / `flagged`, only those, leaving everyone
    else's results as they are); returns the run's Summary. Raises CourseError for user errors.
    `cluster` (a Dask scheduler's address or scheduler file; else term.toml's `cluster`) grades
    on that cluster's workers (pool_dask.py), with `tls` ({"ca", "cert", "key"} files) if given.

    The run, step by step: collect the submissions, plan who is graded, grade them, apply the
    term to each result, record results and feedback, report on the class."""
    phases = Phases()
    phases.mark("imported")
    source_path = course.source_notebook(assignment)
    limits = limits or Limits()
    partial = bool(students) or flagged
    if partial and regrade:
        raise course.CourseError("--regrade grades everyone; --student and --flagged grade only some: use one")
    from ..term import settings as term

    # Every mistake on the command line, in the term file or the roster, or in the
    # submissions' path is reported here, in one line, before anything slow has started.
    ws = Workspace(Path(workspace or course.workspace()), assignment)
    terms = term.resolve(ws.root, assignment, due=due, late_policy=late_policy, late_floor=late_floor,
                         roster=roster, db=db_url, times=times)
    remote = _cluster_settings(cluster, tls, terms, unsafe)
    with ws.lock(), ws.scratch() as scratch:
        if remote is None:
            check_sandbox(unsafe)           # on a cluster, each worker checks its own (pool_dask.py)
        subs, notes = _collect(Path(submissions_path), assignment, scratch, terms, ws, students)
        # The workers (and their sandboxes) start now: they take longest to warm up. This
        # process reads the assignment and the submissions, and opens the gradebook, meanwhile.
        n_workers = max(1, min(workers or os.cpu_count() or 1, len(subs)))   # none idle from the start
        pool = open_pool(n_workers, source_path, limits, unsafe, source_imports(source_path), phases, remote)
        try:
            run = _Run(assignment, source_path, load_source(source_path), ws, terms, subs, phases, partial,
                       tuple(students))
            summary = _grade(pool, run, limits, regrade, flagged, quiet)
            summary.notes = notes + summary.notes
            summary.layout = subs.layout
            return summary
        finally:
            pool.close()
            phases.mark("workers stopped")
            phases.report()


def _collect(path: Path, assignment: str, scratch: Path, terms, ws: Workspace, students) -> tuple:
    """Step 1: every submission found, with its time (the LMS's, where it gives one), and the
    notes the run prints about the download."""
    subs = collect(path, assignment, scratch=scratch, roster=terms.roster)
    notes = list(subs.notes) + lms_times(subs, terms)
    if subs.same_times in notes and all(s.time_source != TIME_SAME for s in subs):
        notes.remove(subs.same_times)      # the LMS's own times replaced every one of them
    notes += [line for line in [ws.term_version(course.version())] if line]
    unknown = [s for s in students if s not in {sub.student for sub in subs}
               and not (terms.roster and s in terms.roster)]
    if unknown:
        raise course.CourseError(f"--student {unknown[0]}: no submission and no roster entry has this id "
                                 f"(ids are the submission folders' names)")
    return subs, notes


@dataclass
class _Run:
    """What a grading run knows before it grades anyone."""

    assignment: str
    source_path: Path
    source: SourceNotebook
    ws: Workspace
    terms: Any
    subs: list
    phases: Phases
    partial: bool
    students: tuple

    def __post_init__(self):
        self.terms = self.terms.out_of(self.source.max_score)
        self.notebook_name = self.source_path.stem
        self.by_id = {s.student: s for s in self.subs}
        self.slugs = {s.student: s.slug for s in self.subs}
        self.done: dict[str, dict] = {}        # graded now or reused: their standing brought up to date
        self.written: set[str] = set()         # graded now: their autograded notebook written
        self.autograded: dict[str, str] = {}   # the autograded notebooks written in this run, for copying


def _grade(pool, run: _Run, limits, regrade: bool, flagged: bool, quiet: bool) -> Summary:
    started = time.time()
    url = run.terms.db or run.ws.default_db_url()
    book = Gradebook(url, run.assignment, run.source, run.terms,
                     functools.partial(read_standings, assignment=run.assignment, notebook_name=run.notebook_name,
                             by_id=run.by_id, terms=run.terms))        # opens while the workers warm up
    book.opened.add_done_callback(lambda _: run.phases.mark("gradebook open"))
    try:
        secret = run.ws.secret()
        key = run.ws.resume_key(run.source_path, limits, secret)
        seen = [_seen(run.ws, sub) for sub in run.subs]
        chosen = plan(seen, key, regrade=regrade, students=run.students, flagged=flagged)      # step 2
        data = {s.student: s.data for s in seen}
        todo = [Task(s.student, run.assignment, s.data, s.notebook, s.problem,
                     student_salt(secret, run.assignment, s.student)) for s in chosen.grade]
        run.phases.mark("submissions read")
        pool.trim(len(todo))
        run.done.update(chosen.reused)
        for result in chosen.reused.values():      # reused results: make sure the gradebook has them
            book.record_later(result, False)
        _grade_all(pool, book, run, todo, key, chosen.earlier, data, quiet)                 # step 3
        pool.release()                      # their sandboxes come down while the last batch is written
        book.close()                        # writes and reads back the last batch; raises if any failed
        run.phases.mark("gradebook written")
    finally:
        pool.close()
        try:
            book.close()                    # after an interrupt or a lost pool: what is queued is written
        except Exception:                   # noqa: BLE001 (the error on its way says what went wrong)
            pass
        _record(run, book.settled())
    _autograded_reused(run, data)
    return _report(run, chosen, todo, started, min(pool.size, len(todo)), url)


def _grade_all(pool, book, run: _Run, todo: list, key: str, earlier: dict, data: dict, quiet: bool) -> None:
    """Step 3: grade each planned submission; each result goes to the gradebook as it comes,
    and each batch the gradebook has written goes on to the next steps (`_record`)."""

    def finish(result: dict) -> None:
        if "abandoned" in result:
            result = _abandoned(run.source, result, run.assignment)
        student = result["student"]
        result["key"] = key
        result["submission"] = _provenance(run.by_id[student])
        if run.partial and student in run.students:
            result["accepted"] = True          # chosen by the instructor: a later run keeps it
        # a manual score belongs to the notebook it was given for (gradebook._write_scores)
        result["replaces"] = earlier.get(student)
        book.check()                    # a gradebook that cannot open stops the run here
        book.record_later(result, True)
        run.done[student] = result
        # the graded notebook now, while the workers grade (on this machine's other
        # core, in effect), rather than after the last student, on one
        text = _autograded(run.source, result, data.get(student))
        if text is not None:
            run.ws.write_autograded(run.slugs[student], run.notebook_name, text)
            run.autograded[student] = text
        run.written.add(student)
        _record(run, book.settled())
        bar.update(1)

    bar = _progress(len(todo), quiet)
    if todo:
        pool.run(todo, finish)
    bar.close()
    run.phases.mark("all graded")


def _record(run: _Run, batches: list[Settled]) -> None:
    """Steps 4 and 5, batch by batch as the gradebook settles them: the term applied to each
    result (lateness, penalty, manual scores), then the result and its feedback page written,
    once (flushed when graded in this run: a later run resumes from it)."""
    from ..report.feedback import student_feedback

    for batch in batches:
        for result, fresh in batch.results:
            student = result["student"]
            result["term"] = term_block(result, run.by_id[student], run.terms, batch.lateness[student],
                                        batch.standing.get(student))
            run.ws.save_result(run.slugs[student], result, graded=fresh)
            run.ws.write_feedback(run.slugs[student], student_feedback(result))


def _autograded_reused(run: _Run, data: dict) -> None:
    """Results reused, not graded now: their graded notebook, from this download's bytes."""
    for sub in run.subs:
        if sub.student not in run.done or sub.student in run.written:
            continue
        text = _autograded(run.source, run.done[sub.student], data.get(sub.student))
        if text is not None:
            run.ws.write_autograded(sub.slug, run.notebook_name, text)
            run.autograded[sub.student] = text


def _report(run: _Run, chosen, todo: list, started: float, workers: int, url: str) -> Summary:
    """Step 6: grades.csv, the instructor's report (possible copying included) and the run's summary."""
    from ..report.feedback import instructor_report

    ws, terms, source, done = run.ws, run.terms, run.source, run.done
    absent: dict[str, dict] = {}      # partial regrade: graded earlier, not in this download
    if run.partial:
        # the rest of the class, graded in earlier runs, stays in grades.csv and the report
        for student, old in ws.stored_results():
            if student not in run.by_id and student not in done:
                absent[student] = old
    dropped = {s: (done[s]["dropped_manual"], ws.results / f"{run.slugs[s]}.json")
               for s in sorted(run.written) if done[s].get("dropped_manual")}
    submitted = {**absent, **chosen.frozen, **done}
    missing = sorted(set(terms.roster or ()) - set(run.by_id) - set(submitted))
    rows = dict(submitted)
    rows.update({s: absent_row(s, run.assignment, source.max_score, terms, "missing") for s in missing})
    rows.update({s: absent_row(s, run.assignment, source.max_score, terms, "not graded") for s in chosen.ungraded})
    graded_rows = [submitted[s] for s in sorted(submitted)]
    csv_path = ws.write_csv([rows[s] for s in sorted(rows)], [t.grade_id for t in source.tests])
    copying = _copying(ws, source, run.assignment, run.notebook_name, submitted, run.autograded)
    names = {s: Result.of(r).name for s, r in rows.items()}
    report = ws.write_report(instructor_report(run.assignment, graded_rows, missing, chosen.ungraded,
                                               terms.describe() if terms.due else "", copying, names=names,
                                               unmatched=list(getattr(run.subs, "unmatched", ()))))
    run.phases.mark("reports written")
    summary = _summary(run, chosen, todo, graded_rows, missing, absent, dropped, started, workers)
    summary.grades_csv, summary.report, summary.feedback_dir = str(csv_path), str(report), str(ws.feedback_dir)
    summary.db_url = safe_url(url)
    return summary


def _summary(run: _Run, chosen, todo, graded_rows, missing, absent, dropped, started, workers) -> Summary:
    """The run in numbers, for the command line's summary."""
    kept = chosen.kept_accepted
    return Summary(
        assignment=run.assignment, students=len(run.subs), graded=len(todo),
        reused=len(run.done) - len(todo), frozen=sorted(chosen.frozen), absent=sorted(absent),
        partial=run.partial, kept=len(run.subs) - len(todo) - len(chosen.ungraded),
        seconds=round(time.time() - started, 1), workers=workers, max_score=run.source.max_score,
        missing=missing, ungraded=chosen.ungraded,
        regraded=sorted(t.student for t in todo) if run.partial else [],
        notes=([f"kept the submission{'s' if len(kept) > 1 else ''} accepted earlier with --student "
                f"(this download's is not newer): {', '.join(kept)}; take this one with --student"]
               if kept else []) + _dropped_notes(dropped),
        deadline=run.terms.describe(), roster=len(run.terms.roster) if run.terms.roster is not None else None,
        results=[Result.of(r) for r in graded_rows])


def _dropped_notes(dropped: dict[str, tuple[dict, Path]]) -> list[str]:
    """What the instructor set by hand for a notebook that has since been replaced: one line
    per student, with what was set (kept in their result, under dropped_manual)."""
    notes = []
    for student, (what, path) in dropped.items():
        said = [f"{test} {score:g}" for test, score in what.get("scores", {}).items()]
        said += [f"{test} +{extra:g} extra credit" for test, extra in what.get("extra_credit", {}).items()]
        said += [f"a comment on {cell}" for cell in what.get("comments", {})]
        notes.append(f"{student} submitted a new notebook: what you set by hand in Formgrader for the earlier one "
                     f"({'; '.join(said)}) is not carried over; set it again if it still applies "
                     f"(kept in {path})")
    return notes


def _progress(total: int, quiet: bool):
    from tqdm import tqdm

    tqdm.monitor_interval = 0          # no monitor thread: this bar is updated from one place
    return tqdm(total=total, desc="grading", unit="student", disable=quiet or not total, file=sys.stderr,
                mininterval=0.3, dynamic_ncols=True)


__all__ = ["grade", "check_sandbox"]
