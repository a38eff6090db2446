"""What Canvas and Moodle hand an instructor, read as they are downloaded.

Submissions (a zip, unpacked by `submissions.collect`):

- **Canvas** ("Download Submissions"): a flat zip, one file per submitted file, named
  `lastnamefirstname_[LATE_]USERID_ATTACHMENTID_original name.ipynb`. USERID is Canvas's
  numeric user id (the gradebook export's `ID` column), ATTACHMENTID grows with every upload
  (so the larger one is the newer), and `LATE` is Canvas's own verdict, after its due dates,
  section overrides and extensions. Canvas adds the entries without a time, so every entry
  carries the moment the zip was made: entry times are never submission times here. A file
  uploaded again under the same name gets `-1`, `-2` ... before its extension. Every uploaded
  file is named so, whatever its type; a text entry or a link is `name_[LATE_]USERID_text.html`
  or `..._link.html`.
- **Moodle** ("Download all submissions"): a folder per student,
  `Full Name_PARTICIPANT_assignsubmission_file_/original name.ipynb`, or, without the folders
  option, flat files `Full Name_PARTICIPANT_assignsubmission_file_original name.ipynb`.
  PARTICIPANT is the number of the grading worksheet's "Participant N" identifier.
  `..._onlinetext_` folders are ignored.

Rosters (`roster.read_roster` recognises them by their header row):

- **Canvas's gradebook export** (Grades > Export): Student, ID, SIS User ID, SIS Login ID,
  [Integration ID,] Section, then the assignments; a "Points Possible" row (and, in newer
  Canvas, a "Manual Posting" row) under the header; the "Student, Test" of Student View.
- **Moodle's grading worksheet** (Assignment > Submissions > Download grading worksheet):
  Identifier ("Participant N"), Full name, Email address, ..., Last modified (submission).
- **Moodle's gradebook export** (Grades > Export > Plain text file): First name, Last name,
  [ID number,] Email address, ....

Each submission is matched to the roster by the LMS's own id (Canvas user id or Moodle
participant number -> the roster's `lms_id`), and for Moodle, when the roster has no
participant numbers, by full name.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datetime import datetime

    from .roster import Roster

CANVAS_FILE = re.compile(r"^(?P<name>.*?)(?P<late>_LATE)?_(?P<user>\d+)_(?P<attachment>\d+)_(?P<original>.+)$")
# a text entry or a link submitted instead of a file: Canvas writes a page, with no attachment id
CANVAS_PAGE = re.compile(r"^(?P<name>.*?)(?P<late>_LATE)?_(?P<user>\d+)_(?P<original>text\.html|link\.html)$")
# Non-greedy names: the first "_N_assign..." is Moodle's (a name has no "_": Moodle writes them
# as spaces), whatever the student's own file name repeats after it.
MOODLE_ENTRY = re.compile(r"^(?P<name>.+?)_(?P<participant>\d+)_assign(?:submission|feedback)_(?P<plugin>[a-z]+)_"
                          r"(?P<original>.*)$")
RESUBMITTED = re.compile(r"-\d+(?=\.ipynb$)")


@dataclass
class LmsFile:
    """One student's file as an LMS named it."""
    lms: str                      # "canvas" or "moodle"
    lms_id: str                   # Canvas user id, or Moodle participant number
    name: str                     # the name part (Canvas: lastnamefirstname; Moodle: Full Name)
    path: Path                    # the file, or (Moodle with folders) the student's folder
    original: str = ""            # the name the student gave the file
    late: bool | None = None      # Canvas's LATE marker (None: the LMS does not say)
    attempt: int = 0              # Canvas's attachment id: larger is newer
    others: list[Path] = field(default_factory=list)   # the same student's other files (older uploads)
    shared: list[str] = field(default_factory=list)    # other entries with the same id (names differ)


def detect(folder: Path) -> str | None:
    """'canvas', 'moodle' or None (folders named by student id) for an unpacked download:
    the layout most of its top-level entries follow. Canvas names every file it zips
    (notebook or not) by its pattern, and zips no folders; Moodle names its folders (or flat
    files) by its own."""
    entries = [p for p in folder.iterdir() if not p.name.startswith(".") and p.name != "__MACOSX"]
    if not entries:
        return None
    moodle = sum(1 for p in entries if MOODLE_ENTRY.match(p.name))
    canvas = sum(1 for p in entries if not p.is_dir() and (CANVAS_FILE.match(p.name) or CANVAS_PAGE.match(p.name)))
    if moodle * 2 > len(entries):
        return "moodle"
    if canvas * 2 > len(entries):
        return "canvas"
    return None


def read_canvas(folder: Path, assignment: str = "") -> tuple[dict[str, LmsFile], list[str]]:
    """{Canvas user id: that student's newest notebook}, and the entries that are not
    Canvas submission files. A student with several notebooks keeps the one uploaded last
    (largest attachment id) among those named after the assignment (a resubmission's `-1`
    aside), else among all; the others (and files that are not notebooks) are listed in
    `others`. A student who uploaded no notebook keeps their newest file (graded as no
    notebook)."""
    found: dict[str, list[LmsFile]] = {}
    stray = []
    for p in sorted(folder.iterdir()):
        if p.name.startswith(".") or p.name == "__MACOSX":
            continue
        m = CANVAS_FILE.match(p.name) or CANVAS_PAGE.match(p.name)
        if not m or p.is_dir():
            stray.append(p.name)
            continue
        found.setdefault(m["user"], []).append(
            LmsFile("canvas", m["user"], m["name"], p, m["original"], late=bool(m["late"]),
                    attempt=int(m.groupdict().get("attachment") or 0)))
    out = {}
    for user, files in found.items():
        notebooks = [f for f in files if f.path.suffix == ".ipynb"]
        named = [f for f in notebooks if RESUBMITTED.sub("", f.original) == f"{assignment}.ipynb"]
        newest = max(named or notebooks or files, key=lambda f: f.attempt)
        newest.others = [f.path for f in files if f is not newest]
        out[user] = newest
    return out, stray


def read_moodle(folder: Path) -> tuple[dict[str, LmsFile], list[str]]:
    """{Moodle participant number: that student's folder (or flat files)}, and the entries
    that are not file submissions (online text, feedback, anything else). Moodle gives one
    folder (or flat files under one name) per participant: entries of one number under two
    names, or two folders, are listed in `shared`, for the instructor to sort out."""
    out: dict[str, LmsFile] = {}
    stray = []
    for p in sorted(folder.iterdir()):
        if p.name.startswith(".") or p.name == "__MACOSX":
            continue
        m = MOODLE_ENTRY.match(p.name)
        if not m or m["plugin"] != "file":
            stray.append(p.name)
            continue
        entry = out.get(m["participant"])
        if entry is None:
            out[m["participant"]] = LmsFile("moodle", m["participant"], m["name"], p, m["original"])
        elif entry.name == m["name"] and not p.is_dir() and not entry.path.is_dir():
            entry.others.append(p)     # flat files of one participant: one folder-like group
        else:
            entry.shared.append(p.name)
    return out, stray


def normal_name(name: str) -> str:
    """A person's name for matching: "Doe, Jane" and "Jane  Doe" alike, accents and case
    ignored."""
    name = " ".join(name.split())
    if "," in name:
        last, _, first = name.partition(",")
        name = f"{first.strip()} {last.strip()}"
    decomposed = unicodedata.normalize("NFKD", name)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def canvas_name(name: str) -> str:
    """A name as Canvas writes it in a download: last name then first name, lower case,
    letters and digits only ("Doe, Jane" -> "doejane")."""
    text = normal_name(name)
    first, _, last = text.rpartition(" ")
    return re.sub(r"[^a-z0-9]", "", last + first)




# ------------------------------------------------------------------ submission times
TIME_COLUMNS = ("Last modified (submission)", "submitted_at", "Submitted At", "Submitted", "submitted",
                "timestamp", "Submission date")
WHO_COLUMNS = ("Identifier", "id", "student", "student_id", "SIS User ID", "ID", "lms_id", "Email address", "email")
MOODLE_TIME_FORMATS = ("%A, %d %B %Y, %I:%M %p", "%A, %d %B %Y, %H:%M", "%d %B %Y, %I:%M %p", "%d/%m/%Y, %H:%M")


def parse_lms_time(text: str) -> datetime | None:
    """A submission time as an LMS writes it: ISO 8601, or Moodle's "Friday, 14 March 2025,
    10:00 PM" (English); without a zone, the term's. None for "-" or an empty cell."""
    from datetime import datetime, timezone

    from ..term.deadlines import zone

    value = " ".join(str(text).split())
    if value in ("", "-"):
        return None
    when: datetime | None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        when = None
        for fmt in MOODLE_TIME_FORMATS:
            try:
                when = datetime.strptime(value, fmt)
                break
            except ValueError:
                continue
        if when is None:
            raise ValueError(value)
    if when.tzinfo is None:
        when = when.replace(tzinfo=zone()) if zone() is not None else when.astimezone()
    return when.astimezone(timezone.utc)


def read_times(path: Path, roster: Roster | None) -> dict[str, datetime]:
    """{student id: submission time} from a file of submission times: Moodle's grading
    worksheet as downloaded ("Identifier", "Last modified (submission)"), or any CSV with a
    column naming the student (id, SIS User ID, Canvas's ID, lms_id, Identifier, e-mail) and one
    with the time (submitted_at, Submitted At, ...). Rows are matched to the roster by its id,
    its LMS id or its e-mail."""
    import csv
    import io

    from ..errors import CourseError

    try:
        text = Path(path).read_bytes()[:16 << 20].decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise CourseError(f"submission times {path} cannot be read ({exc})") from None
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    header = rows[0].keys() if rows else []
    when_col = next((c for c in TIME_COLUMNS if c in header), None)
    who_cols = [c for c in WHO_COLUMNS if c in header]
    if when_col is None or not who_cols:
        raise CourseError(f"submission times {path}: needs a column with the student ({', '.join(WHO_COLUMNS)}) "
                          f"and one with the time ({', '.join(TIME_COLUMNS)})")
    index: dict[str, str] = {}
    for sid, st in (roster or {}).items():
        for key in (sid, st.lms_id, f"Participant {st.lms_id}" if st.lms_id else "", st.email, st.sis_id or ""):
            if key:
                index.setdefault(key, sid)
    out = {}
    for number, row in enumerate(rows, start=2):
        who = next((index.get((row.get(c) or "").strip()) for c in who_cols if index.get((row.get(c) or "").strip())),
                   None)
        if who is None and roster is None:
            who = (row.get(who_cols[0]) or "").strip() or None
        if who is None:
            continue
        try:
            when = parse_lms_time(row.get(when_col) or "")
        except ValueError:
            raise CourseError(f"submission times {path}, line {number}: '{row.get(when_col)}' is not a time "
                              "(ISO 8601, or Moodle's 'Friday, 14 March 2025, 10:00 PM')") from None
        if when is not None:
            out[who] = when
    return out


__all__ = ["LmsFile", "detect", "read_canvas", "read_moodle", "normal_name", "canvas_name", "read_times",
           "parse_lms_time", "CANVAS_FILE", "CANVAS_PAGE", "MOODLE_ENTRY"]
