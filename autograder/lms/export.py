"""`autograder export ASSIGNMENT --format canvas|moodle|csv`: grades for an LMS, from the gradebook.

The numbers are the gradebook's, as `nbgrader export` computes them: per test the manual
score when an instructor set one in formgrader (else the automatic one), the sum, minus the
late penalty, never below 0. A student with no submission scores 0. With a roster (the
term's, or `--roster`) the file has exactly the roster's students, in its order, with the
names, e-mail and LMS ids it gives; without one, every student in the gradebook.

- canvas: the layout of Canvas's gradebook export, which its Grades > Import takes back:
  `Student` ("Last, First"), `ID` (Canvas's user id: the roster's lms_id), `SIS User ID` (the
  roster's, when it is Canvas's export; else the student id), `SIS Login ID` (the roster's login),
  `Section`, then one column for the assignment. A "Points Possible" row follows the header, as in
  Canvas's own export. Canvas matches an existing assignment by the column title it exports, "Name
  (12345)": pass it with `--column`; a title Canvas does not know becomes a new assignment.
- moodle: for Moodle's "Import grades > CSV file": `First name`, `Last name`, `ID number`
  (the student id), `Email address`, then one column for the grade item. In the import,
  map "Email address" to `useremail` (or "ID number" to `useridnumber`) and the grade
  column to the grade item.
- moodle-worksheet: Moodle's grading worksheet as its "Upload grading worksheet" takes it:
  `Identifier` ("Participant N", the roster's lms_id: the roster must be Moodle's worksheet),
  `Full name`, `Email address`, `Grade`, `Maximum Grade`, `Feedback comments` (the score and
  the instructor's comments from formgrader).
- csv: everything: id, names, e-mail, submission time, one column per test, raw score,
  late penalty, score, maximum.

`--feedback canvas|moodle` writes the feedback pages as a zip the LMS takes back:
Canvas's "Re-Upload Submissions" (each page named as Canvas named the student's file,
`name_USERID_ATTACHMENTID_feedback.html`: Canvas reads the two numbers) or Moodle's "Upload
multiple feedback files in a zip" (`Full Name_PARTICIPANT_assignsubmission_file_feedback.html`).
Only students graded from that LMS's download have one; the others are listed.
"""
from __future__ import annotations

import io
from pathlib import Path

from .. import course
from ..store import spreadsheet
from ..term.deadlines import iso
from ..notebook import NotebookError, load_source
from ..records import Result
from ..store.workspace import Workspace

FORMATS = ("canvas", "moodle", "moodle-worksheet", "csv")
FILES = {"canvas": "canvas.csv", "moodle": "moodle.csv", "moodle-worksheet": "moodle-worksheet.csv",
         "csv": "export.csv"}
FEEDBACK = {"canvas": "canvas-feedback.zip", "moodle": "moodle-feedback.zip"}


def _num(x: float) -> str:
    return f"{round(float(x), 4):g}"


def _class(gb, assignment: str, roster) -> tuple[list[dict], list[str], dict]:
    """The students to export (in order), the graded ids left out (not on the roster), and
    the assignment's tests and maximum."""
    from ..store.gradebook import assignment_info, book_id, standings, students

    info = assignment_info(gb, assignment)
    try:                                         # the notebook's order of tests, if it is here
        order = [t.grade_id for t in load_source(course.source_notebook(assignment)).tests]
        info["tests"] = {g: info["tests"][g] for g in order if g in info["tests"]} | info["tests"]
    except (course.CourseError, NotebookError, OSError, ValueError):
        pass
    stand = standings(gb, assignment)
    known = students(gb)
    ids = list(roster) if roster is not None else sorted(known)
    left_out = sorted(set(stand) - {book_id(i) for i in ids})
    rows = []
    for sid in ids:
        person = known.get(book_id(sid), {})
        entry = roster.get(sid) if roster is not None else None
        s = stand.get(book_id(sid))
        rows.append({
            "id": sid,
            "first_name": (entry.first_name if entry else "") or person.get("first_name", ""),
            "last_name": (entry.last_name if entry else "") or person.get("last_name", ""),
            "email": (entry.email if entry else "") or person.get("email", ""),
            "lms_id": (entry.lms_id if entry else "") or person.get("lms_user_id", ""),
            "login": entry.login if entry else "", "section": entry.section if entry else "",
            "sis_id": sid if entry is None or entry.sis_id is None else entry.sis_id,
            "submitted": s is not None,
            "timestamp": s["timestamp"] if s else None,
            "tests": s["tests"] if s else {},
            "raw_score": s["raw_score"] if s else 0.0, "penalty": s["penalty"] if s else 0.0,
            "score": s["score"] if s else 0.0, "seconds_late": s["seconds_late"] if s else 0.0,
            "comments": s.get("comments", {}) if s else {},
        })
    return rows, left_out, info


def _check_penalties_current(ws: Workspace, rows: list[dict], assignment: str) -> None:
    """A late penalty is set from the score when grading runs. If a late student's score was
    changed by hand since, the penalty in the gradebook may no longer fit it: refuse to export
    numbers the LMS would keep, and say what brings them up to date."""
    from .submissions import workspace_name

    stale = []
    for r in rows:
        if not r["submitted"] or not r["seconds_late"]:
            continue
        result = ws.load_result(workspace_name(r["id"]))
        term = Result.of(result or {}).standing
        if "raw_score" in term and abs(float(term["raw_score"]) - r["raw_score"]) > 1e-9:
            stale.append(r["id"])
    if stale:
        raise course.CourseError(
            f"the score of late submission{'s' if len(stale) > 1 else ''} {', '.join(stale[:5])} changed by hand "
            f"since the last grading run, so the late penalty may not fit it: run `autograder grade {assignment} "
            "SUBMISSIONS` again (nothing is regraded; penalties and feedback are brought up to date), then export")


def _canvas(rows, info, column: str) -> str:
    out = io.StringIO()
    w = spreadsheet.writer(out, lineterminator="\r\n")
    w.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", column])
    w.writerow(["    Points Possible", "", "", "", "", _num(info["max_score"])])
    for r in rows:
        name = ", ".join(p for p in (r["last_name"], r["first_name"]) if p) or r["id"]
        w.writerow([name, r["lms_id"], r["sis_id"], r["login"], r["section"], _num(r["score"])])
    return out.getvalue()


def _moodle(rows, info, column: str) -> str:
    out = io.StringIO()
    w = spreadsheet.writer(out, lineterminator="\r\n")
    w.writerow(["First name", "Last name", "ID number", "Email address", column])
    for r in rows:
        w.writerow([r["first_name"], r["last_name"], r["id"], r["email"], _num(r["score"])])
    return out.getvalue()


def _moodle_worksheet(rows, info, column: str) -> str:
    if not any(r["lms_id"] for r in rows):
        raise course.CourseError("the moodle-worksheet format needs Moodle's participant numbers: use Moodle's "
                                 "grading worksheet as the roster (roster in term.toml, or --roster)")
    out = io.StringIO()
    w = spreadsheet.writer(out, lineterminator="\r\n")
    w.writerow(["Identifier", "Full name", "Email address", "Grade", "Maximum Grade", "Feedback comments"])
    for r in rows:
        if not r["lms_id"]:
            continue
        name = " ".join(p for p in (r["first_name"], r["last_name"]) if p)
        said = " ".join(f"{cell}: {text}" for cell, text in r["comments"].items())
        comment = (f"Score {_num(r['score'])} / {_num(info['max_score'])}" + (f". {said}" if said else "")
                   if r["submitted"] else "No submission.")
        w.writerow([f"Participant {r['lms_id']}", name, r["email"], _num(r["score"]), _num(info["max_score"]),
                    comment])
    return out.getvalue()


def _csv(rows, info, column: str) -> str:
    from datetime import timezone

    out = io.StringIO()
    w = spreadsheet.writer(out)
    tests = list(info["tests"])
    w.writerow(["student_id", "last_name", "first_name", "email", "status", "timestamp", *tests,
                "raw_score", "late_penalty", "score", "max_score"])
    for r in rows:
        when = r["timestamp"].replace(tzinfo=timezone.utc) if r["timestamp"] else None
        status = "missing" if not r["submitted"] else ("late" if r["seconds_late"] > 0 else "graded")
        w.writerow([r["id"], r["last_name"], r["first_name"], r["email"], status, iso(when),
                    *[_num(r["tests"][t]) if t in r["tests"] else "" for t in tests],
                    _num(r["raw_score"]), _num(r["penalty"]), _num(r["score"]), _num(info["max_score"])])
    return out.getvalue()


def export(assignment: str, fmt: str, *, workspace: Path | None = None, db_url: str | None = None,
           roster: Path | None = None, to: Path | None = None, column: str | None = None) -> dict:
    from ..store.gradebook import open_gradebook
    from .roster import read_roster
    from ..term.settings import FILE, read_file

    if fmt not in FORMATS:
        raise course.CourseError(f"unknown export format '{fmt}' (known: {', '.join(FORMATS)})")
    ws = Workspace(Path(workspace or course.workspace()), assignment)
    settings = read_file(ws.root / FILE)
    roster_path = roster or (ws.root / str(settings["roster"]) if settings.get("roster") else None)
    people = read_roster(roster_path) if roster_path else None
    url = db_url or settings.get("db") or ws.default_db_url()
    if url == ws.default_db_url() and not ws.gradebook_file.exists():
        raise course.CourseError(f"no gradebook at {ws.gradebook_file}: grade {assignment} first "
                                 "(or pass --db URL, --workspace DIR)")
    column = column or assignment
    with open_gradebook(url) as gb:
        rows, left_out, info = _class(gb, assignment, people)
    _check_penalties_current(ws, rows, assignment)
    text = {"canvas": _canvas, "moodle": _moodle, "moodle-worksheet": _moodle_worksheet,
            "csv": _csv}[fmt](rows, info, column)
    path = ws.write_export(FILES[fmt], text, to)
    return {"path": str(path), "students": len(rows), "missing": sum(1 for r in rows if not r["submitted"]),
            "left_out": left_out, "format": fmt, "column": column}


def export_feedback(assignment: str, lms: str, *, workspace: Path | None = None, to: Path | None = None) -> dict:
    """Every student's feedback.html in a zip named as `lms` takes feedback back, from what
    each graded submission's download said of it (results/A/STUDENT.json)."""
    import zipfile

    from .formats import canvas_name
    from .submissions import workspace_name

    if lms not in FEEDBACK:
        raise course.CourseError(f"unknown feedback format '{lms}' (known: {', '.join(FEEDBACK)})")
    ws = Workspace(Path(workspace or course.workspace()), assignment)
    entries, without = {}, []
    for student, result in ws.stored_results():
        came = result.get("submission") or {}
        page = ws.feedback_page(workspace_name(student))
        if came.get("lms") != lms or not came.get("lms_id") or not page.is_file():
            without.append(student)
            continue
        if lms == "canvas":
            name = canvas_name(came.get("lms_name") or "") or "student"
            entry = f"{name}_{came['lms_id']}_{came.get('attempt') or 0}_feedback.html"
        else:
            name = " ".join((came.get("lms_name") or "Student").replace("_", " ").split())
            entry = f"{name}_{came['lms_id']}_assignsubmission_file_feedback.html"
        entries[entry] = page.read_bytes()
    if not entries:
        raise course.CourseError(f"no student of {assignment} was graded from a {lms.capitalize()} download "
                                 f"in {ws.root}: grade the {lms.capitalize()} zip first")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for name in sorted(entries):
            z.writestr(name, entries[name])
    path = ws.write_export(FEEDBACK[lms], out.getvalue(), to)
    return {"path": str(path), "pages": len(entries), "without": sorted(without), "lms": lms}


__all__ = ["export", "export_feedback", "FORMATS"]
