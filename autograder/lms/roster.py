"""The class roster: who should have submitted, their names and e-mail, their extensions.

A CSV file with a header row. `id` is required: the student id exactly as grading sees it
(the submission's folder name). Optional columns: `name` ("Doe, Jane" or "Jane Doe"),
`email`, `extension` (a duration such as 2d, 36h, 1d12h, 90m, a plain number of hours, or a
personal due date and time), and for the LMS exports `lms_id` (Canvas's numeric user ID),
`login` (Canvas's SIS Login ID) and `section`. Anything else is refused, so a misspelt
column never silently drops extensions. Errors name the file and line.

An LMS's own export is read as it is downloaded, recognised by its header (formats.py lists
them): Canvas's gradebook export (id: SIS User ID, else SIS Login ID, else Canvas's ID;
lms_id: Canvas's ID), Moodle's grading worksheet (id: the e-mail address; lms_id: the
participant number of "Participant N") and Moodle's gradebook export or participants table
(id: the e-mail address). Extensions then come from term.toml's roster, not from these files: Canvas has
already applied its own to its LATE marker.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from ..errors import CourseError
from ..term.deadlines import parse_extension

COLUMNS = ("id", "name", "email", "extension", "lms_id", "login", "section")
MAX_BYTES = 16 << 20


@dataclass(frozen=True)
class Student:
    id: str
    name: str = ""
    email: str = ""
    extension: timedelta | datetime | None = None
    lms_id: str = ""
    login: str = ""
    section: str = ""
    sis_id: str | None = None     # Canvas's SIS User ID, when the roster is Canvas's export

    @property
    def first_name(self) -> str:
        return _split(self.name)[0]

    @property
    def last_name(self) -> str:
        return _split(self.name)[1]


def _split(name: str) -> tuple[str, str]:
    """("first", "last") from "Doe, Jane" or "Jane Doe" (a single word is a last name)."""
    name = " ".join(name.split())
    if "," in name:
        last, _, first = name.partition(",")
        return first.strip(), last.strip()
    first, _, last = name.rpartition(" ")
    return first, last


class Roster(dict[str, Student]):
    """{student id: Student}, in the file's order."""

    path: Path | None = None
    kind: str = "CSV"          # or the LMS export it was read from


def read_roster(path: Path) -> Roster:
    path = Path(path)
    try:
        if not path.is_file():
            raise CourseError(f"roster {path} does not exist (give a CSV file with a header: "
                              "id,name,email,extension)")
        raw = path.read_bytes()[:MAX_BYTES + 1]
    except OSError as exc:
        raise CourseError(f"roster {path} cannot be read ({exc.strerror})") from None
    if len(raw) > MAX_BYTES:
        raise CourseError(f"roster {path} is larger than {MAX_BYTES >> 20} MiB")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CourseError(f"roster {path} is not UTF-8 text (save it as CSV UTF-8)") from None
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as exc:
        raise CourseError(f"roster {path} is not valid CSV ({exc})") from None
    rows = [r for r in rows if any(cell.strip() for cell in r)]
    if not rows:
        raise CourseError(f"roster {path} is empty (expected a header: id,name,email,extension)")
    lms = _lms_roster(path, rows)
    if lms is not None:
        return lms
    header = [h.strip().lower() for h in rows[0]]
    unknown = [h for h in header if h not in COLUMNS]
    if "id" not in header or unknown:
        what = f"unknown column '{unknown[0]}'" if unknown else "no 'id' column"
        raise CourseError(f"roster {path}, line 1: {what} (columns: {', '.join(COLUMNS)}; id is required)")
    if len(set(header)) != len(header):
        raise CourseError(f"roster {path}, line 1: a column appears twice")
    roster = Roster()
    roster.path = path
    for number, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise CourseError(f"roster {path}, line {number}: {len(row)} fields where the header has "
                              f"{len(header)}")
        fields = {h: cell.strip() for h, cell in zip(header, row)}
        sid = fields["id"]
        if not sid or not sid.isprintable():
            raise CourseError(f"roster {path}, line {number}: an empty or unprintable id")
        if sid in roster:
            raise CourseError(f"roster {path}, line {number}: the id '{sid}' appears twice")
        extension = parse_extension(fields.get("extension", ""),
                                    what=f"roster {path}, line {number}: extension")
        roster[sid] = Student(sid, fields.get("name", ""), fields.get("email", ""), extension,
                              fields.get("lms_id", ""), fields.get("login", ""), fields.get("section", ""))
    return roster


def _lms_roster(path: Path, rows: list[list[str]]) -> Roster | None:
    """A Canvas or Moodle export as a roster, or None if the header is neither."""
    header = [h.strip() for h in rows[0]]
    col = {h: i for i, h in enumerate(header)}

    def cell(row, name):
        i = col.get(name)
        return row[i].strip() if i is not None and i < len(row) else ""

    students: list[Student] = []
    if header and header[0] == "Student" and {"ID", "SIS User ID", "SIS Login ID"} <= set(col):
        kind = "Canvas gradebook export"
        for row in rows[1:]:
            name, canvas_id = cell(row, "Student"), cell(row, "ID")
            if not canvas_id or name in ("Points Possible", "Student, Test", "Test Student") \
                    or name.startswith(("Points Possible", "Manual Posting")):
                continue        # the points row, the posting-policy row, Student View's test student
            sid = cell(row, "SIS User ID") or cell(row, "SIS Login ID") or canvas_id
            students.append(Student(sid, name, "", None, canvas_id, cell(row, "SIS Login ID"),
                                    cell(row, "Section"), cell(row, "SIS User ID")))
    elif {"Identifier", "Full name"} <= set(col):
        kind = "Moodle grading worksheet"
        for row in rows[1:]:
            ident = cell(row, "Identifier")
            number = ident.rsplit(" ", 1)[-1] if ident else ""
            if not number.isdigit():
                continue
            email = cell(row, "Email address")
            students.append(Student(email or f"participant-{number}", cell(row, "Full name"), email, None, number))
    elif "Email address" in col and ({"First name", "Last name"} <= set(col) or "Full name" in col):
        kind = "Moodle export"          # the gradebook's plain-text export, or the participants table
        for row in rows[1:]:
            email = cell(row, "Email address")
            name = cell(row, "Full name") or f"{cell(row, 'First name')} {cell(row, 'Last name')}".strip()
            if not email and not name:
                continue
            students.append(Student(email or cell(row, "ID number") or name, name, email))
    else:
        return None
    roster = Roster()
    roster.path, roster.kind = path, kind
    for st in students:
        if st.id in roster:
            raise CourseError(f"roster {path} ({kind}): the id '{st.id}' appears twice")
        roster[st.id] = st
    if not roster:
        raise CourseError(f"roster {path} ({kind}) lists no students")
    return roster


__all__ = ["Roster", "Student", "read_roster", "COLUMNS"]
