"""`autograder grade ASSIGNMENT SUBMISSIONS`: grade a whole class, in parallel, safely.

Mistakes in the command line, the term file, the roster or the submissions' path are
reported first, in one line. Then the workers (one per core by default) start, each warming
one sandbox, while this parent reads the submissions and opens the gradebook. Each worker grades one
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

import os
import sys
import threading
import time
from pathlib import Path

from .. import course
from ..flags import Flag, all_flags, flag
from . import digest, student_salt
from .task import Task
from .phases import Phases
from .plan import Seen, plan
from .pool import open_pool
from ..notebook import NotebookError, load_source, nbgrader_meta, parse_notebook, source_imports
from ..sandbox.host import Limits, bwrap_path, sandbox_problem
from ..lms.submissions import Submission, collect
from ..lms.times import TIME_SAME, lms_times
from ..store.workspace import Workspace


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


# ------------------------------------------------------------------------ the term
def _term_block(result: dict, sub: Submission | None, terms, late: dict, standing: dict | None) -> dict:
    """A student's standing in the term, after grading: when they submitted and how that is
    known, the deadline that applied (with their extension), the late penalty, the points an
    instructor set by hand, and the score that counts (what `nbgrader export` reports)."""
    from ..term.deadlines import extension_for, human, iso

    student = result["student"]
    entry = terms.entry(student)
    extension = extension_for(entry.extension if entry else None, terms.due)
    due = terms.due + extension if terms.due is not None and extension else terms.due
    flags = []
    if terms.roster is not None and entry is None:
        flags.append(flag("not-on-roster", student=student).to_dict())
    if sub is not None and sub.time_problem is not None:
        flags.append(sub.time_problem.to_dict())
    flags += [remark.to_dict() for remark in (sub.remarks if sub is not None else [])]
    raw = standing["raw_score"] if standing else result["score"]
    penalty = late["penalty"]
    return {
        "status": "late" if late["seconds_late"] > 0 else "graded",
        "name": entry.name if entry else "", "email": entry.email if entry else "",
        "submitted_at": iso(sub.submitted_at) if sub else "",
        "submitted_at_text": human(sub.submitted_at) if sub else "",
        "time_source": (sub.time_source or "") if sub else "",
        # Canvas's LATE marker, no time: submitted_at is the time the penalty is computed from
        "marked_late_by": "Canvas" if sub is not None and sub.lms_late and sub.submitted_at is not None else "",
        "due": iso(due), "due_text": human(due),
        "extension_hours": round(extension.total_seconds() / 3600, 4) if extension else 0,
        "seconds_late": round(late["seconds_late"], 3),
        "late_policy": terms.policy.describe() if late["seconds_late"] > 0 else "",
        "late_penalty": penalty,
        "raw_score": round(raw, 6),
        "score": round(standing["score"] if standing else max(0.0, raw - penalty), 6),
        "manual": {k: v for k, v in sorted((standing or {}).get("manual", {}).items())},
        "comments": {k: v for k, v in sorted((standing or {}).get("comments", {}).items())},
        "flags": flags,
    }


def _absent(student: str, assignment: str, max_score: float, terms, status: str) -> dict:
    """A row for a rostered student with no submission (`missing`), or a submission a
    partial regrade did not reach and that was never graded (`not graded`)."""
    from ..term.deadlines import extension_for, iso

    entry = terms.entry(student)
    extension = extension_for(entry.extension if entry else None, terms.due)
    due = terms.due + extension if terms.due is not None and extension else terms.due
    return {"student": student, "assignment": assignment, "score": 0.0, "max_score": max_score,
            "tests": [], "flags": [],
            "term": {"status": status, "name": entry.name if entry else "", "email": entry.email if entry else "",
                     "due": iso(due), "score": 0.0, "raw_score": 0.0, "late_penalty": 0.0, "flags": []}}


def _copying(ws, source, assignment: str, notebook_name: str, submitted: dict) -> list:
    """Groups of submissions worth a look (similarity.py), from the autograded notebooks in
    the workspace: the whole class's, not only this run's. Every code cell a student wrote
    counts, answer cells and cells of their own; the instructor's test cells and cells just as
    released do not."""
    from ..notebook import nbgrader_meta
    from ..report.similarity import notebook_code, possible_copying, stub
    from ..lms.submissions import workspace_name

    ids = set(source.answer_ids)
    tests = {t.grade_id for t in source.tests}
    release = course.ROOT / "exercises" / assignment / f"{notebook_name}.ipynb"
    released = notebook_code(release, ids)
    solutions = {nbgrader_meta(c).get("grade_id"): c.source for c in source.nb.cells
                 if nbgrader_meta(c).get("grade_id") in ids}
    templates = {gid: released.get(gid) or stub(code) for gid, code in solutions.items()}
    answers = {student: notebook_code(ws.root / "autograded" / workspace_name(student) / assignment
                                      / f"{notebook_name}.ipynb", ids, tests, released.values())
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


# ------------------------------------------------------------------------ the gradebook
class _Gradebook:
    """nbgrader's gradebook, in a thread of its own: importing nbgrader (about a second),
    creating or opening the database and every write happen while the workers grade. Jobs
    run in order on the thread's one connection: `later` queues one, `now` waits for its
    answer. A gradebook that cannot be opened stops the run at the next student, in one line."""

    def __init__(self, url: str, assignment: str, source, terms):
        from concurrent.futures import ThreadPoolExecutor

        self._thread = ThreadPoolExecutor(1, thread_name_prefix="gradebook")
        self._jobs: list = []
        self._pending: list[tuple[dict, bool]] = []
        self._where = (assignment, source.path.stem)
        # a batch's second starts with its first student, not when the gradebook opened (then
        # the first result was written alone, while the workers grade: 25-45 ms of CPU they lack)
        self._queued, self._last = False, None
        self._lock = threading.Lock()
        self._gb = self._opened = None
        self._closed = False
        self.settle = None          # settle(gb, results): called, in this thread, after each batch is written
        self.opened = self._thread.submit(self._open, url, assignment, source, terms)

    def _open(self, url: str, assignment: str, source, terms) -> None:
        from ..store import gradebook

        self._opened = gradebook.open_gradebook(url)
        self._gb = self._opened.__enter__()
        gradebook.ensure_assignment(self._gb, assignment, source, terms.due)
        if terms.roster:
            gradebook.add_students(self._gb, terms.roster)
        gradebook.rehearse(self._gb, assignment, source.path.stem, terms.policy)

    def _job(self, fn, *args):
        self.opened.result()
        return fn(self._gb, *args)

    def check(self) -> None:
        """Raise now if opening failed (a bad --db URL, say)."""
        if self.opened.done():
            self.opened.result()

    def later(self, fn, *args) -> None:
        self._jobs.append(self._thread.submit(self._job, fn, *args))

    # Scores are written in batches: every `BATCH_SECONDS`, or `BATCH_SIZE` students,
    # whichever comes first, and before anything reads the gradebook back (`now`, `close`).
    # A batch costs a commit (a disk flush) and a few queries: one per student made the
    # gradebook thread the grading parent's largest user of CPU. (Each result is already
    # saved, flushed, in the workspace: a run stopped before a batch was written records it
    # the next time.)
    # (Writing each of a run's last 8 results as soon as the thread was free left 0.02 s less
    # to write after the last student, and made 10 students take 0.08 s longer in all: each
    # batch costs this thread 25-45 ms of CPU, which the workers then lack.)
    BATCH_SECONDS, BATCH_SIZE = 1.0, 50

    def record_later(self, result: dict, fresh: bool) -> None:
        """Queue a student's scores; the thread writes what has queued up in one transaction."""
        with self._lock:
            self._pending.append((result, fresh))
            if self._last is None:
                self._last = time.monotonic()
            due = not self._queued and (len(self._pending) >= self.BATCH_SIZE
                                        or time.monotonic() - self._last >= self.BATCH_SECONDS)
            self._queued |= due
        if due:
            self.later(self._drain)

    def _write_pending(self) -> None:
        with self._lock:
            if self._pending and not self._queued:
                self._queued = True
                self.later(self._drain)

    def _drain(self, gb) -> None:
        from ..store.gradebook import record_many

        with self._lock:
            batch, self._pending = self._pending, []
            self._queued, self._last = False, None
        if batch:
            record_many(gb, *self._where, batch)
            if self.settle is not None:
                self.settle(gb, [result for result, _ in batch])

    def now(self, fn, *args):
        self._write_pending()
        return self._thread.submit(self._job, fn, *args).result()

    def close(self, quietly: bool = False) -> None:
        """Wait for every write; raise the first that failed (unless `quietly`: an error is
        already on its way), then close the connection in its thread."""
        if self._closed:
            return
        self._closed = True
        try:
            if not quietly:
                self._write_pending()
                for job in self._jobs:
                    job.result()
        finally:
            def shut():
                if self._opened is not None:
                    self._opened.__exit__(None, None, None)
                    self._opened = None

            self._thread.submit(shut).result()
            self._thread.shutdown()


def _standings(gb, assignment: str, notebook_name: str, students, by_id: dict, terms) -> tuple[dict, dict]:
    from ..term.deadlines import extension_for
    from ..store.gradebook import apply_late_policy, standings

    times = {}
    for student in students:
        entry = terms.entry(student)
        times[student] = (by_id[student].submitted_at, extension_for(entry.extension if entry else None, terms.due))
    lateness = apply_late_policy(gb, assignment, notebook_name, times, terms.policy) if times else {}
    return lateness, standings(gb, assignment, students=times)


def _cluster_settings(cluster: str | None, tls: dict | None, terms, unsafe: bool) -> dict | None:
    """The Dask cluster to grade on: the command line's, else term.toml's; None: this machine."""
    address = cluster or terms.cluster
    if not address:
        return None
    if unsafe:
        raise course.CourseError("--unsafe-no-sandbox and --cluster: nothing is graded unsandboxed on a cluster")
    files = {k: v for k, v in {**(terms.cluster_tls or {}), **(tls or {})}.items() if v}
    return {"address": str(address), "tls": files}


def _safe_url(url: str) -> str:
    from ..store.gradebook import safe_url

    return safe_url(url)


# ------------------------------------------------------------------------ main entry
def grade(assignment: str, submissions_path: Path, *, workers: int | None = None,
          workspace: Path | None = None, db_url: str | None = None, limits: Limits | None = None,
          regrade: bool = False, unsafe: bool = False, quiet: bool = False,
          due: str | None = None, late_policy: str | None = None, late_floor: str | None = None,
          roster: Path | None = None, students: list[str] | tuple = (), flagged: bool = False,
          times: Path | None = None, cluster: str | None = None, tls: dict | None = None) -> dict:
    """Grade every submission (or, with `students` / `flagged`, only those, leaving everyone
    else's results as they are); returns a summary dict. Raises CourseError for user errors.
    `cluster` (a Dask scheduler's address or scheduler file; else term.toml's `cluster`) grades
    on that cluster's workers (pool_dask.py), with `tls` ({"ca", "cert", "key"} files) if given."""
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
        subs = collect(Path(submissions_path), assignment, scratch=scratch, roster=terms.roster)
        notes = list(subs.notes) + lms_times(subs, terms)
        if subs.same_times in notes and all(s.time_source != TIME_SAME for s in subs):
            notes.remove(subs.same_times)      # the LMS's own times replaced every one of them
        notes += [line for line in [ws.term_version(course.version())] if line]
        unknown = [s for s in students if s not in {sub.student for sub in subs}
                   and not (terms.roster and s in terms.roster)]
        if unknown:
            raise course.CourseError(f"--student {unknown[0]}: no submission and no roster entry has this id "
                                     f"(ids are the submission folders' names)")
        # The workers (and their sandboxes) start now: they take longest to warm up. This
        # process reads the assignment and the submissions, and opens the gradebook, meanwhile.
        n_workers = max(1, min(workers or os.cpu_count() or 1, len(subs)))   # none idle from the start
        pool = open_pool(n_workers, source_path, limits, unsafe, source_imports(source_path), phases, remote)
        try:
            summary = _grade(pool, phases, assignment, source_path, subs, ws, terms, limits, regrade, partial,
                             quiet, students, flagged)
            summary["notes"] = notes + summary["notes"]
            summary["layout"] = subs.layout
            return summary
        finally:
            pool.close()
            phases.mark("workers stopped")
            phases.report()


def _grade(pool, phases, assignment, source_path, subs, ws, terms, limits, regrade, partial, quiet, students,
           flagged) -> dict:
    from ..report.feedback import instructor_report, student_feedback

    source = load_source(source_path)
    terms = terms.out_of(source.max_score)
    started = time.time()
    url = terms.db or ws.default_db_url()
    notebook_name = source_path.stem
    book = _Gradebook(url, assignment, source, terms)                # opens while the workers warm up
    book.opened.add_done_callback(lambda _: phases.mark("gradebook open"))
    try:
        by_id = {s.student: s for s in subs}
        secret = ws.secret()
        key = ws.resume_key(source_path, limits, secret)
        seen = [_seen(ws, sub) for sub in subs]
        chosen = plan(seen, key, regrade=regrade, students=students, flagged=flagged)
        done = dict(chosen.reused)        # graded now or reused: their standing is brought up to date
        frozen, ungraded, kept_accepted, earlier = chosen.frozen, chosen.ungraded, chosen.kept_accepted, chosen.earlier
        data = {s.student: s.data for s in seen}
        todo = [Task(s.student, assignment, s.data, s.notebook, s.problem, student_salt(secret, assignment, s.student))
                for s in chosen.grade]
        slugs = {s.student: s.slug for s in subs}
        phases.mark("submissions read")
        pool.trim(len(todo))

        def settle(gb, results: list[dict]) -> None:
            """Students whose scores the gradebook has just written: their submission times
            and late penalties, then their standing as the gradebook has it (manual scores
            included), into their result and their feedback. In the gradebook's thread,
            batch by batch while the workers grade, not all of them after the last one."""
            batch = {result["student"]: result for result in results}
            lateness, standing = _standings(gb, assignment, notebook_name, batch, by_id, terms)
            for student, result in batch.items():
                result["term"] = _term_block(result, by_id[student], terms, lateness[student],
                                             standing.get(student))
                ws.save_result(slugs[student], result, graded=False)     # unchanged: not written
                ws.write_feedback(slugs[student], student_feedback(result))

        book.settle = settle

        for result in done.values():        # reused results: make sure the gradebook has them
            book.record_later(result, False)

        def finish(result: dict) -> None:
            if "abandoned" in result:
                result = _abandoned(source, result, assignment)
            result["key"] = key
            result["submission"] = _provenance(by_id[result["student"]])
            if partial and result["student"] in students:
                result["accepted"] = True          # chosen by the instructor: a later run keeps it
            # a manual score belongs to the notebook it was given for (gradebook._write_scores)
            result["replaces"] = earlier.get(result["student"])
            ws.save_result(slugs[result["student"]], result)
            book.check()                    # a gradebook that cannot open stops the run here
            book.record_later(result, True)
            done[result["student"]] = result
            # the graded notebook now, while the workers grade (on this machine's other
            # core, in effect), rather than after the last student, on one
            text = _autograded(source, result, data.get(result["student"]))
            if text is not None:
                ws.write_autograded(slugs[result["student"]], notebook_name, text)
            written.add(result["student"])
            bar.update(1)

        written: set[str] = set()

        bar = _progress(len(todo), quiet)
        if todo:
            pool.run(todo, finish)
        bar.close()
        phases.mark("all graded")
        pool.release()                      # their sandboxes come down while the last batch is written

        # every result in `done` went through record_later: close() writes and settles the
        # last batch (and raises if any batch failed)
        book.close()
        phases.mark("gradebook written")
    finally:
        pool.close()
        book.close(quietly=True)

    for sub in subs:                  # results reused, not graded now: their graded notebook
        if sub.student not in done or sub.student in written:
            continue
        text = _autograded(source, done[sub.student], data.get(sub.student))
        if text is not None:
            ws.write_autograded(sub.slug, notebook_name, text)
    absent: dict[str, dict] = {}      # partial regrade: graded earlier, not in this download
    if partial:
        # the rest of the class, graded in earlier runs, stays in grades.csv and the report
        for student, old in ws.stored_results():
            if student not in by_id and student not in done:
                absent[student] = old
    dropped = {s: (done[s]["dropped_manual"], ws.results / f"{slugs[s]}.json")
               for s in sorted(written) if done[s].get("dropped_manual")}
    submitted = {**absent, **frozen, **done}
    missing = sorted(set(terms.roster or ()) - set(by_id) - set(submitted))
    rows = {s: submitted[s] for s in submitted}
    rows.update({s: _absent(s, assignment, source.max_score, terms, "missing") for s in missing})
    rows.update({s: _absent(s, assignment, source.max_score, terms, "not graded") for s in ungraded})
    ordered = [rows[s] for s in sorted(rows)]
    graded_rows = [submitted[s] for s in sorted(submitted)]
    csv_path = ws.write_csv(ordered, [t.grade_id for t in source.tests])
    copying = _copying(ws, source, assignment, notebook_name, submitted)
    names = {s: (r.get("term") or {}).get("name") or (r.get("submission") or {}).get("lms_name") or ""
             for s, r in rows.items()}
    report = ws.write_report(instructor_report(assignment, graded_rows, missing, ungraded,
                                               terms.describe() if terms.due else "", copying,
                                               names=names, unmatched=list(getattr(subs, "unmatched", ()))))
    phases.mark("reports written")
    scores = [(r.get("term") or {}).get("score", r["score"]) for r in graded_rows]
    terms_of = [(r.get("term") or {}) for r in graded_rows]
    return {
        "assignment": assignment, "students": len(subs), "graded": len(todo),
        "reused": len(done) - len(todo), "frozen": sorted(frozen), "absent": sorted(absent), "partial": partial,
        "kept": len(subs) - len(todo) - len(ungraded),
        "seconds": round(time.time() - started, 1),
        "workers": min(pool.size, len(todo)), "mean": sum(scores) / len(scores) if scores else 0.0,
        "max_score": source.max_score,
        "full_marks": sum(1 for s in scores if s == source.max_score),
        "flagged": sum(1 for r in graded_rows if all_flags(r)),
        "late": sorted(r["student"] for r, t in zip(graded_rows, terms_of) if t.get("seconds_late")),
        "missing": missing, "ungraded": ungraded,
        "not_on_roster": sorted(r["student"] for r, t in zip(graded_rows, terms_of)
                                if any(f["code"] == "not-on-roster" for f in t.get("flags", []))),
        "regraded": sorted(t.student for t in todo) if partial else [],
        "notes": ([f"kept the submission{'s' if len(kept_accepted) > 1 else ''} accepted earlier with --student "
                   f"(this download's is not newer): {', '.join(kept_accepted)}; take this one with --student"]
                  if kept_accepted else []) + _dropped_notes(dropped),
        "deadline": terms.describe(), "roster": len(terms.roster) if terms.roster is not None else None,
        "grades_csv": str(csv_path), "report": str(report),
        "feedback_dir": str(ws.feedback_dir), "db_url": _safe_url(url),
    }


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
