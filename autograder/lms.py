"""What Canvas and Moodle hand an instructor, read as they are downloaded.

Submissions (a zip, unpacked by `submissions.collect`):

- **Canvas** ("Download Submissions"): a flat zip, one file per submitted file, named
  `lastnamefirstname_[LATE_]USERID_ATTACHMENTID_original name.ipynb`. USERID is Canvas's
  numeric user id (the gradebook export's `ID` column), ATTACHMENTID grows with every upload
  (so the larger one is the newer), and `LATE` is Canvas's own verdict, after its due dates,
  section overrides and extensions. Canvas adds the entries without a time, so every entry
  carries the moment the zip was made: entry times are never submission times here. A file
  uploaded again under the same name gets `-1`, `-2` ... before its extension.
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

CANVAS_FILE = re.compile(r"^(?P<name>.*?)(?P<late>_LATE)?_(?P<user>\d+)_(?P<attachment>\d+)_(?P<original>.+)$")
MOODLE_ENTRY = re.compile(r"^(?P<name>.+)_(?P<participant>\d+)_assign(?:submission|feedback)_(?P<plugin>[a-z]+)_"
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
    others: list[Path] = field(default_factory=list)   # older uploads of the same student


def _ipynbs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.suffix == ".ipynb" and not p.name.startswith("."))


def detect(folder: Path) -> str | None:
    """'canvas', 'moodle' or None (folders named by student id) for an unpacked download:
    the layout most of its top-level entries follow."""
    entries = [p for p in folder.iterdir() if not p.name.startswith(".") and p.name != "__MACOSX"]
    if not entries:
        return None
    moodle = sum(1 for p in entries if MOODLE_ENTRY.match(p.name))
    canvas = sum(1 for p in entries if p.is_file() and p.suffix == ".ipynb" and CANVAS_FILE.match(p.name))
    if moodle * 2 > len(entries):
        return "moodle"
    if canvas * 2 > len(entries):
        return "canvas"
    return None


def read_canvas(folder: Path) -> tuple[dict[str, LmsFile], list[str]]:
    """{Canvas user id: that student's newest notebook}, and the entries that are not
    Canvas submission files. A student with several notebooks keeps the one uploaded last
    (largest attachment id); the others are listed in `others`."""
    found: dict[str, list[LmsFile]] = {}
    stray = []
    for p in sorted(folder.iterdir()):
        if p.name.startswith(".") or p.name == "__MACOSX":
            continue
        m = CANVAS_FILE.match(p.name)
        if not m or p.suffix != ".ipynb":
            stray.append(p.name)
            continue
        found.setdefault(m["user"], []).append(
            LmsFile("canvas", m["user"], m["name"], p, m["original"], late=bool(m["late"]),
                    attempt=int(m["attachment"])))
    out = {}
    for user, files in found.items():
        files.sort(key=lambda f: f.attempt)
        newest = files[-1]
        newest.others = [f.path for f in files[:-1]]
        out[user] = newest
    return out, stray


def read_moodle(folder: Path) -> tuple[dict[str, LmsFile], list[str]]:
    """{Moodle participant number: that student's folder (or flat file)}, and the entries
    that are not file submissions (online text, feedback, anything else)."""
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
        else:                          # flat files of one participant: one folder-like group
            entry.others.append(p)
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


__all__ = ["LmsFile", "detect", "read_canvas", "read_moodle", "normal_name", "canvas_name",
           "CANVAS_FILE", "MOODLE_ENTRY"]
