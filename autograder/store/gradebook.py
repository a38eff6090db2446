"""The door to nbgrader's gradebook: scores in, standings out, so `nbgrader export` and
formgrader keep working, on SQLite (the default) or a shared server (`--db postgresql://...`).

Only the grading parent process writes here (one thread of it), the results that arrived since its
last write in one transaction; writing the same result twice changes nothing. What others write is
kept: formgrader's manual scores, comments and extra credit are other columns than the ones grading
sets, and a notebook's `flagged` mark is set only when the student was graded in this run. Several
graders may share one database (co-instructors, sections): a write that meets another one (a unique
row created twice, a deadlock) is rolled back and done again.

Deadlines follow nbgrader's model: `Assignment.duedate`, the submission's `timestamp` and
`extension`, and per notebook `late_submission_penalty`, set after grading by the late
policy (`nbgrader_plugins.LatePenalty`, a LateSubmissionPlugin) from the gradebook's score,
manual adjustments included.
"""
from __future__ import annotations

import os
import random
import re
import sys
import time
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from .. import startup
from ..errors import CourseError
from ..notebook import SourceNotebook
from ..term.deadlines import LatePolicy, naive_utc

if TYPE_CHECKING:
    from nbgrader.api import Gradebook

ATTEMPTS = 8


def _alembic_on_path() -> None:
    """nbgrader runs `alembic` by name: make sure this environment's bin/ is on PATH."""
    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")


def safe_url(url: str) -> str:
    """A database URL fit to print: without its password."""
    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)


def _transient():
    from nbgrader.api import InvalidEntry
    from sqlalchemy.exc import DBAPIError, InvalidRequestError

    return (InvalidEntry, DBAPIError, InvalidRequestError)


@contextmanager
def open_gradebook(url: str):
    """nbgrader's Gradebook on `url`; a URL that cannot be opened is one clear error. nbgrader
    is imported here (`startup.fast_nbgrader`), not when this module is."""
    api = startup.fast_nbgrader()
    from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError, SQLAlchemyError

    _alembic_on_path()
    gb = None
    for attempt in range(ATTEMPTS):
        try:
            gb = api.Gradebook(url)
            break
        except (ArgumentError, NoSuchModuleError, ImportError) as exc:
            raise CourseError(f"cannot use the gradebook URL {safe_url(url)}: {str(exc).splitlines()[0]} "
                              "(examples: sqlite:////path/gradebook.db, postgresql://user@host/dbname)") from None
        except OperationalError as exc:
            reason = str(exc.orig).strip().splitlines()[0] if getattr(exc, "orig", None) else str(exc)
            if "does not exist" in reason or "connection" in reason.lower() or attempt == ATTEMPTS - 1:
                raise CourseError(f"cannot open the gradebook {safe_url(url)}: {reason}") from None
            _pause(attempt)                  # another grader creating the tables at this moment
        except SQLAlchemyError as exc:
            if attempt == ATTEMPTS - 1:
                raise CourseError(f"cannot open the gradebook {safe_url(url)}: {str(exc).splitlines()[0]}") from None
            _pause(attempt)
    assert gb is not None           # every attempt but the last pauses on failure; the last raises
    try:
        yield gb
    finally:
        gb.close()


def _pause(attempt: int) -> None:
    time.sleep(min(2.0, 0.05 * 2 ** attempt) * (0.5 + random.random()))


def _retrying(gb: Gradebook, what: str, fn, *args, **kwargs):
    """Run one transaction; if it meets a concurrent writer, roll back and run it again."""
    for attempt in range(ATTEMPTS):
        try:
            return fn(*args, **kwargs)
        except _transient() as exc:
            gb.db.rollback()
            if attempt == ATTEMPTS - 1:
                raise CourseError(f"the gradebook refused to record {what}: {str(exc).splitlines()[0]}") from None
            _pause(attempt)


def ensure_assignment(gb: Gradebook, assignment: str, source: SourceNotebook,
                      due: datetime | None = None) -> None:
    """Register the assignment (with its due date), its notebook and its test cells (as
    generate_assignment does)."""
    notebook = source.path.stem

    def write():
        gb.update_or_create_assignment(assignment, duedate=naive_utc(due))
        gb.update_or_create_notebook(notebook, assignment)
        for test in source.tests:
            gb.update_or_create_grade_cell(test.grade_id, notebook, assignment,
                                           max_score=test.points, cell_type="code")
        for gid in source.answer_ids:
            gb.update_or_create_solution_cell(gid, notebook, assignment)

    _retrying(gb, f"the assignment {assignment}", write)


BOOK_ID_CHARS = 128       # nbgrader's Student.id is a String(128): PostgreSQL holds it to that


def book_id(student: str) -> str:
    """The gradebook's id of a student: the id itself, or for an id longer than nbgrader's
    column (a folder name may have 255 bytes), its first 117 characters, "~" and 10 hex digits
    of its hash: the same for the same id in every run, and never another student's. Results,
    grades.csv and feedback keep the whole id; every call here maps it the same way."""
    if len(student) <= BOOK_ID_CHARS:
        return student
    import hashlib

    return f"{student[:BOOK_ID_CHARS - 11]}~{hashlib.sha256(student.encode('utf-8', 'replace')).hexdigest()[:10]}"


def add_students(gb: Gradebook, roster) -> None:
    """Every student on the roster, with name, e-mail and LMS id, so `nbgrader export` and
    formgrader list them (a student who submitted nothing scores 0 there)."""
    def write():
        with _no_commits(gb):            # one commit for the roster, not one per student
            for s in roster.values():
                fields = {"first_name": s.first_name[:128] or None, "last_name": s.last_name[:128] or None,
                          "email": s.email[:128] or None, "lms_user_id": s.lms_id[:128] or None}
                gb.update_or_create_student(book_id(s.id), **{k: v for k, v in fields.items() if v is not None})
        gb.db.commit()

    _retrying(gb, "the roster's students", write)


def record_many(gb: Gradebook, assignment: str, notebook: str, results: list[tuple[dict, bool]]) -> None:
    """Write students' per-test scores, [(result, fresh)], in one transaction: a run writes at
    once the results that arrived since its last write (a commit is a disk flush; one per
    student would make the gradebook slower than the grading). Idempotent. Manual scores,
    comments and extra credit an instructor entered in formgrader are kept (nbgrader's own
    autograde keeps them too); the notebook's `flagged` mark is set when the student was
    graded now (`fresh`), so an instructor's own mark survives runs that only reuse results.

    nbgrader's `add_student` and `add_submission` commit each row they create: a disk flush
    per student, and every object of the session expired, then read again one query per
    attribute. Here they only add: new students are flushed once, then every new
    submission's rows are written by the batch's one commit. What the batch reads (which
    students exist, their submissions with notebooks and grades, the assignment's cells)
    comes in three queries. A student's first submission is written as the rows nbgrader's
    `add_submission` makes (`_new_submission_rows`), with the scores already in them, one
    multi-row INSERT per table for the batch, not `add_submission`'s queries and objects per
    row (docs/measurements.md says what each cost)."""

    def write():
        from nbgrader.api import Assignment, MissingEntry, Student, SubmittedAssignment, SubmittedNotebook
        from sqlalchemy import insert
        from sqlalchemy.orm import selectinload

        ids = [book_id(result["student"]) for result, _ in results]
        found, names = _cell_names(gb, assignment)
        if found is None and results:
            raise MissingEntry(f"no assignment {assignment} in the gradebook")
        known = {s.id for s in gb.db.query(Student).filter(Student.id.in_(ids))}
        submissions = {s.student_id: s for s in (
            gb.db.query(SubmittedAssignment).join(Assignment)
            .filter(Assignment.name == assignment, SubmittedAssignment.student_id.in_(ids))
            .options(selectinload(SubmittedAssignment.notebooks).selectinload(SubmittedNotebook.grades)))}
        new = {}
        with _no_commits(gb):
            for student in dict.fromkeys(i for i in ids if i not in known):
                gb.add_student(student)
            gb.db.flush()
            for result, fresh in results:
                student = book_id(result["student"])
                if student in submissions:
                    _write_scores(submissions[student], notebook, names, result, fresh)
                else:
                    new[student] = result            # the last result of a student, if twice in a batch
        if new:
            for table, rows in _new_submission_rows(found, notebook, names, new.values()):
                if rows:
                    gb.db.execute(insert(table), rows)
        gb.db.commit()

    names = ", ".join(result["student"] for result, _ in results[:3]) + (" and others" if len(results) > 3 else "")
    _retrying(gb, f"the scores of {names}", write)


def _new_submission_rows(found, notebook: str, names: dict[str, str], results):
    """The rows of students' first submissions of assignment `found`, as nbgrader's
    `add_submission` makes them (a submitted notebook per notebook of the assignment, in it a
    grade per grade or task cell and a comment per solution or task cell, every id a
    `new_uuid()`), with what `_write_scores` then writes for a fresh grading: in `notebook`,
    each grade's automatic score, no manual grading needed, flagged if the result has flags.
    [(table, rows)], parents first."""
    from nbgrader.api import Comment, Grade, SubmittedAssignment, SubmittedNotebook, new_uuid

    assignments, notebooks, grades, comments = [], [], [], []
    for result in results:
        scores = {t["grade_id"]: t["points"] for t in result["tests"]}
        submission = new_uuid()
        assignments.append({"id": submission, "assignment_id": found.id, "student_id": book_id(result["student"]),
                            "timestamp": None, "extension": None})
        for nb in found.notebooks:
            graded, row = nb.name == notebook, new_uuid()
            notebooks.append({"id": row, "assignment_id": submission, "notebook_id": nb.id,
                              "flagged": graded and bool(result["flags"]), "late_submission_penalty": None})
            for cell in nb.grade_cells + nb.task_cells:
                grades.append({"id": new_uuid(), "notebook_id": row, "cell_id": cell.id,
                               "auto_score": float(scores.get(names.get(cell.id), 0.0)) if graded else None,
                               "manual_score": None, "extra_credit": None, "needs_manual_grade": not graded})
            for cell in nb.solution_cells + nb.task_cells:
                comments.append({"id": new_uuid(), "notebook_id": row, "cell_id": cell.id,
                                 "auto_comment": None, "manual_comment": None})
    return [(SubmittedAssignment.__table__, assignments), (SubmittedNotebook.__table__, notebooks),
            (Grade.__table__, grades), (Comment.__table__, comments)]


def _cell_names(gb: Gradebook, assignment: str):
    """The assignment (None if the gradebook has none of that name), with its notebooks and
    cells loaded in three queries, and {cell id: name} (a grade row names its cell by id)."""
    from nbgrader.api import Assignment, Notebook
    from sqlalchemy.orm import selectinload

    found = gb.db.query(Assignment).filter(Assignment.name == assignment).options(
        selectinload(Assignment.notebooks).selectinload(Notebook._base_cells)).one_or_none()
    return found, ({c.id: c.name for nb in found.notebooks for c in nb._base_cells} if found else {})


@contextmanager
def _no_commits(gb: Gradebook):
    session = gb.db
    session.commit = lambda: None
    try:
        yield
    finally:
        del session.commit


def _write_scores(submission, notebook: str, names: dict[str, str], result: dict, flag: bool) -> None:
    scores = {t["grade_id"]: t["points"] for t in result["tests"]}
    for nb in submission.notebooks:
        if nb.name != notebook:
            continue
        if flag and result.get("digest") != result.get("replaces") and result.get("replaces") is not None:
            _drop_manual(nb, names, result)
        for grade in nb.grades:
            auto = float(scores.get(names.get(grade.cell_id), 0.0))
            if grade.auto_score != auto:
                grade.auto_score = auto
            if grade.needs_manual_grade:
                grade.needs_manual_grade = False
        if flag:
            nb.flagged = bool(result["flags"])


def _drop_manual(nb, names: dict[str, str], result: dict) -> None:
    """A new notebook was graded for this student: scores, extra credit and comments set by
    hand were given for the one it replaces, so they are taken out of the gradebook (never
    carried silently onto other code) and kept in the result, `dropped_manual`, for the
    instructor (the run names them)."""
    scores, extra, comments = {}, {}, {}
    for grade in nb.grades:
        name = names.get(grade.cell_id, grade.cell_id)
        if grade.manual_score is not None:
            scores[name], grade.manual_score = float(grade.manual_score), None
        if grade.extra_credit:
            extra[name], grade.extra_credit = float(grade.extra_credit), None
    for comment in nb.comments:
        if comment.manual_comment and comment.manual_comment.strip():
            comments[names.get(comment.cell_id, comment.cell_id)] = comment.manual_comment
            comment.manual_comment = None
    if scores or extra or comments:
        result["dropped_manual"] = {"scores": scores, "extra_credit": extra, "comments": comments,
                                    "replaced": result["replaces"]}


def apply_late_policy(gb: Gradebook, assignment: str, notebook: str,
                      times: dict[str, tuple[datetime | None, timedelta | None]],
                      policy: LatePolicy) -> dict[str, dict]:
    """Record when each student submitted and their extension, {student: (submitted_at,
    extension)}, then the late penalty, as nbgrader's AssignLatePenalties does after
    autograding: from the notebook's score (manual adjustments included), kept between 0
    and that score. Returns what was recorded, per student. One transaction for all of
    them (one per student took 2-3 s for a class of 200 after the last one was graded)."""
    from nbgrader.api import Assignment, MissingEntry, SubmittedAssignment
    from sqlalchemy.orm import selectinload

    from ..nbgrader_plugins import LatePenalty

    plugin = LatePenalty.of(policy)

    def write():
        by_book = {book_id(student): student for student in times}
        found = {by_book[s.student_id]: s for s in (
            gb.db.query(SubmittedAssignment).join(Assignment)
            .filter(Assignment.name == assignment, SubmittedAssignment.student_id.in_(list(by_book)))
            .options(selectinload(SubmittedAssignment.notebooks)))}
        for student, (submitted_at, extension) in times.items():
            if student not in found:
                raise MissingEntry(f"no submission of {assignment} by {student}")
            submission, when = found[student], naive_utc(submitted_at)
            if submission.timestamp != when:
                submission.timestamp = when
            if submission.extension != extension:
                submission.extension = extension
        gb.db.flush()
        out = {}
        for student in times:
            submission = found[student]
            late = float(submission.total_seconds_late) if submission.assignment.duedate is not None else 0.0
            total = 0.0
            for nb in submission.notebooks:
                if nb.name != notebook:
                    continue
                penalty = plugin.late_submission_penalty(student, float(nb.score), late) if late > 0 else None
                if penalty is not None:
                    penalty = max(0.0, min(float(nb.score), float(penalty)))
                if nb.late_submission_penalty != penalty:
                    nb.late_submission_penalty = penalty
                total += penalty or 0.0
            out[student] = {"seconds_late": late, "penalty": round(total, 6)}
        gb.db.commit()
        return out

    return _retrying(gb, "the submission times", write)


def rehearse(gb: Gradebook, assignment: str, notebook: str, policy: LatePolicy) -> None:
    """Make every query a batch of scores makes (`record_many`, `apply_late_policy`,
    `standings`), for no student: nothing is written. SQLAlchemy builds and compiles each
    statement the first time it runs, 0.3 s of CPU in the first batch a run writes; a run's
    gradebook is open well before its first student is graded, and its thread idle."""
    record_many(gb, assignment, notebook, [])
    apply_late_policy(gb, assignment, notebook, {}, policy)
    standings(gb, assignment, students=())


def standings(gb: Gradebook, assignment: str, students=None) -> dict[str, dict]:
    """{student: what the gradebook holds for this assignment}: per test the score that counts
    (a manual score over the automatic one) and whether it was set by hand, the total, the
    late penalty, the score after it (as `nbgrader export` computes it) and the timestamp.
    Every student's (by the gradebook's ids), or only those of `students` (by their ids)."""
    from nbgrader.api import SubmittedAssignment, SubmittedNotebook
    from sqlalchemy.orm import selectinload, undefer

    out: dict = {}
    found, names = _cell_names(gb, assignment)
    if found is None:
        return out
    subs = gb.db.query(SubmittedAssignment).filter(SubmittedAssignment.assignment_id == found.id)
    whole = {}                       # the gradebook's id -> the id asked for (book_id)
    if students is not None:
        whole = {book_id(student): student for student in students}
        subs = subs.filter(SubmittedAssignment.student_id.in_(list(whole)))
    subs = (subs
            .options(undefer(SubmittedAssignment.score), undefer(SubmittedAssignment.late_submission_penalty),
                     selectinload(SubmittedAssignment.notebooks).selectinload(SubmittedNotebook.grades),
                     selectinload(SubmittedAssignment.notebooks).selectinload(SubmittedNotebook.comments)))
    for sub in subs:                 # in five queries, not several per student
        tests, manual, comments = {}, {}, {}
        for nb in sub.notebooks:
            for grade in nb.grades:
                name = names[grade.cell_id]
                tests[name] = float(grade.score)
                if grade.manual_score is not None or grade.extra_credit:
                    manual[name] = float(grade.score)
            for comment in nb.comments:       # what an instructor wrote in formgrader, cell by cell
                if comment.manual_comment and comment.manual_comment.strip():
                    comments[names.get(comment.cell_id, comment.cell_id)] = comment.manual_comment.strip()
        penalty = float(sub.late_submission_penalty or 0.0)
        raw = float(sub.score)
        late = float(sub.total_seconds_late) if sub.assignment.duedate is not None else 0.0
        out[whole.get(sub.student_id, sub.student_id)] = {"tests": tests, "manual": manual, "comments": comments,
                               "raw_score": raw, "penalty": penalty,
                               "score": max(0.0, raw - penalty), "timestamp": sub.timestamp,
                               "extension": sub.extension, "seconds_late": late}
    return out


def students(gb: Gradebook) -> dict[str, dict]:
    """{id: first_name, last_name, email, lms_user_id} of every student in the gradebook."""
    return {s.id: {"first_name": s.first_name or "", "last_name": s.last_name or "",
                   "email": s.email or "", "lms_user_id": s.lms_user_id or ""} for s in gb.students}


def assignment_info(gb: Gradebook, assignment: str) -> dict:
    """The assignment's maximum score, tests (grade_id: max points, in notebook order) and due date."""
    from nbgrader.api import MissingEntry

    try:
        a = gb.find_assignment(assignment)
    except MissingEntry:
        raise CourseError(f"the gradebook has no assignment '{assignment}': grade it first") from None
    tests = {}
    for nb in a.notebooks:
        for cell in nb.grade_cells:
            tests[cell.name] = float(cell.max_score)
    return {"max_score": float(a.max_score), "tests": tests, "duedate": a.duedate}


def scores(gb: Gradebook, assignment: str) -> dict[str, float]:
    """{student: total score} as the gradebook has it, before any late penalty."""
    out = {}
    for sub in gb.find_assignment(assignment).submissions:
        out[sub.student.id] = float(sub.score)
    return out
