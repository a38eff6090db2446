"""Finding each student's notebook in a folder of submissions or an LMS zip.

Layout: one sub-folder per student id, holding that student's notebook under any file
name (sub-folders inside it are searched too). A zip is unpacked first (safely: no paths
outside the target, bounded size); if it holds a single top-level folder, that folder is
the one with the student folders. Notebooks lying directly in the top folder are graded
as students named after the file (`alice.ipynb` -> alice).

Per student, the notebook graded is the only .ipynb there; with several, the one named
after the assignment; otherwise none, and the student is flagged. Only regular files
inside the student's own folder count: symlinks (to solutions/, to a classmate), folders
named *.ipynb, FIFOs and devices are never read. Any folder name is a student id (LMS
exports use names like "Doe, Jane_123_assignsubmission_file_").

The submission time, for deadlines, comes from the first of: a `timestamp.txt` beside the
notebook or at the top of the student's folder (nbgrader's `submitted/` layout has one);
the notebook's entry in the zip, when SUBMISSIONS is a zip (its UTC "UT" time when the
entry has one, else its date and time read as this machine's local time); the notebook
file's modification time. Each submission says which was used. In a zip, a timestamp.txt
never makes a submission earlier than its notebook's entry (see `submission_time`).
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import CourseError
from ..flags import Flag, flag
from .formats import RESUBMITTED
from .times import TIME_CANVAS, is_regular, same_times, submission_time
from .unzip import Unpacked, shown, unpack_zip

if TYPE_CHECKING:
    from .roster import Roster

SAFE_NAME = re.compile(r"^[^./\x00-\x1f\x7f][^/\x00-\x1f\x7f]{0,127}$")


@dataclass
class Submission:
    student: str                   # the student id: the folder's name (or the notebook's stem)
    notebook: Path | None
    problem: Flag | None = None    # why it cannot be graded (then it scores 0, flagged)
    submitted_at: datetime | None = None   # when it was submitted (aware, UTC)
    time_source: str | None = None         # TIME_TXT, TIME_ZIP or TIME_MTIME
    time_problem: Flag | None = None       # a timestamp.txt that could not be read
    source: str = ""                       # where it came from: the zip or folder, and the entry
    lms_late: bool | None = None           # the LMS's own verdict (Canvas's LATE marker), if it gave one
    lms_id: str = ""                       # the LMS's id of the student, as the download names it
    attempt: int = 0                       # Canvas's attachment id (larger: uploaded later)
    lms: str = ""                          # "canvas" or "moodle": the download it came from
    lms_name: str = ""                     # the student's name as the download wrote it
    entries: list[str] = field(default_factory=list)   # the download's top-level entries that are theirs
    remarks: list[Flag] = field(default_factory=list)  # what the instructor should know about the download

    @property
    def slug(self) -> str:
        return workspace_name(self.student)


def workspace_name(student: str) -> str:
    """The name of a student's files in the workspace: the id itself when it is a plain,
    printable name; otherwise a safe transcription plus a hash, so ids never collide."""
    if SAFE_NAME.match(student) and student.isprintable() and student == student.strip():
        return student
    safe = re.sub(r"[^A-Za-z0-9._@+ ,-]", "_", student).strip(" ._")[:60] or "student"
    return f"{safe}-{hashlib.sha256(student.encode('utf-8', 'replace')).hexdigest()[:10]}"


def student_id(name: str) -> str:
    """A folder name as a student id: printable, valid text, whole (a file system allows 255
    bytes; the gradebook's shorter column is gradebook.book_id's concern)."""
    text = name.encode("utf-8", "replace").decode("utf-8")
    text = "".join(ch if ch.isprintable() else "?" for ch in text).strip()
    return text[:255] or "?"


def _pick(student: str, folder: Path, assignment: str) -> Submission:
    """The notebook to grade in a student's folder: regular files only, found without
    following symlinks (a link to solutions/ or to a classmate's notebook is not theirs)."""
    notebooks: list[Path] = []
    refused: list[Path] = []
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != ".ipynb_checkpoints" and not d.startswith("."))
        for name in sorted(files + [d for d in os.listdir(root) if d.endswith(".ipynb")
                                    and os.path.isdir(os.path.join(root, d))]):
            if not name.endswith(".ipynb") or name.startswith("._"):
                continue
            path = Path(root) / name
            (notebooks if is_regular(path) else refused).append(path)
    notebooks = sorted(set(notebooks))
    if not notebooks:
        if refused:
            return Submission(student, None, flag("not-a-file", what=f"{refused[0].name} is a link, a folder "
                                                                     "or a special file"))
        return Submission(student, None, flag("no-notebook"))
    if len(notebooks) == 1:
        return Submission(student, notebooks[0])
    named = [p for p in notebooks if p.name == f"{assignment}.ipynb"]
    if len(named) == 1:
        return Submission(student, named[0])
    return Submission(student, None, flag("several-notebooks", count=len(notebooks), assignment=assignment))


def _pick_among(student: str, files: list[Path], assignment: str) -> Submission:
    """The notebook to grade among one student's files (an LMS's flat download)."""
    notebooks = sorted(p for p in files if p.suffix == ".ipynb")
    regular = [p for p in notebooks if is_regular(p)]
    if not regular:
        what = f"{notebooks[0].name} is a link or a special file" if notebooks else ""
        return Submission(student, None, flag("not-a-file", what=what) if notebooks else flag("no-notebook"))
    if len(regular) == 1:
        return Submission(student, regular[0])
    named = [p for p in regular if RESUBMITTED.sub("", p.name).endswith(f"{assignment}.ipynb")]
    if len(named) == 1:
        return Submission(student, named[0])
    return Submission(student, None, flag("several-notebooks", count=len(regular), assignment=assignment))


class Collected(list[Submission]):
    """The class's submissions (a list, sorted by student id), with what the instructor
    should read about them: the layout recognised, entries that match no student, and
    warnings (`notes`), each one line."""

    layout: str = "folders"
    notes: list[str]
    unmatched: list[str]
    same_times: str | None = None    # the note that the zip's entry times were dropped (in notes)

    def __init__(self, subs: Iterable[Submission] = (), layout: str = "folders") -> None:
        super().__init__(subs)
        self.layout, self.notes, self.unmatched = layout, [], []


def collect(path: Path, assignment: str, scratch: Path | None = None, roster: Roster | None = None) -> Collected:
    """Every student's submission under `path` (a folder or a .zip), sorted by student id.
    Whatever one student's folder holds, it becomes that student's result: never an error
    for the class. A Canvas or Moodle download is recognised by its names (formats.py) and
    mapped to the roster's students; a download whose entries mostly match nobody on the
    roster is refused before anything is graded."""
    from . import formats as lms

    path = Path(path)
    from_zip = False
    if not path.exists():
        raise CourseError(f"{path} does not exist (give a folder of student folders, or a zip)")
    origin = path.name
    if path.is_file():
        if path.suffix.lower() != ".zip":
            raise CourseError(f"{path} is a file but not a .zip (give a folder of student folders, or a zip)")
        scratch = Path(tempfile.mkdtemp(prefix=".unzipped-", dir=scratch))
        unpacked = unpack_zip(path, scratch)
        path = unpacked.top
        from_zip = True
    layout = lms.detect(path)
    if layout == "canvas":
        found = _from_lms(lms.read_canvas(path, assignment), "canvas", origin, assignment, roster)
    elif layout == "moodle":
        found = _from_lms(lms.read_moodle(path), "moodle", origin, assignment, roster)
    else:
        found = _from_folders(path, origin, assignment)
    if from_zip:
        _charge(found, unpacked, origin)
    if not found and not found.unmatched:
        raise CourseError(f"{origin} holds no student folders and no notebooks")
    for sub in found:
        if sub.lms_late is None:
            submission_time(sub, _folder_of(sub, path), from_zip)
    if from_zip and layout != "canvas":
        same_times(found, origin)
    return found


def _charge(found: Collected, unpacked: Unpacked, origin: str) -> None:
    """Each entry the zip could not give is its student's flagged result, and the summary
    lists them all, in one line. The empty file left in its place took part in choosing the
    student's notebook, by name, as the entry would have: when it is the one chosen (or a
    notebook could not be chosen, or a folder holds its name), the student is not graded;
    otherwise the entry was not the one graded, and the student's result says so."""
    found.notes.extend(unpacked.notes)
    if not unpacked.bad:
        return
    owners = {entry: sub for sub in found for entry in sub.entries}
    for bad in unpacked.bad:
        sub = owners.get(bad.path.parts[0])
        if sub is None:
            continue
        placeholder = unpacked.top / bad.path
        if bad.notebook and (sub.notebook is None or sub.notebook == placeholder or not is_regular(placeholder)):
            if sub.problem is None or sub.problem.code not in ("bad-entry", "entry-twice"):
                sub.problem, sub.notebook = (flag("entry-twice", count=bad.twice, entry=bad.entry) if bad.twice else
                                             flag("bad-entry", entry=bad.entry, reason=bad.reason)), None
        else:
            sub.remarks.append(flag("bad-file", entry=bad.entry, reason=bad.reason))
    count = len(unpacked.bad)
    found.notes.append(f"{count} entr{'ies' if count != 1 else 'y'} of {origin} could not be unpacked "
                       "(their students are flagged): " + "; ".join(f"{b.entry} ({b.reason})"
                                                                  for b in unpacked.bad[:3])
                       + (f"; and {count - 3} more" if count > 3 else ""))


def _folder_of(sub: Submission, top: Path) -> Path | None:
    """The student's own folder (for a timestamp.txt at its top), if the notebook is in one."""
    if sub.notebook is None:
        return None
    try:
        first = sub.notebook.relative_to(top).parts[0]
    except ValueError:
        return None
    folder = top / first
    return folder if folder.is_dir() and not folder.is_symlink() else None


def _from_folders(path: Path, origin: str, assignment: str) -> Collected:
    """Student folders (and notebooks) at the top of `path`. Where several entries read as
    one id (`alice` and ` alice`, or `alice/` and `alice.ipynb`), the one named exactly
    so keeps it; every one of them is flagged."""
    def exact(entry: Path) -> bool:
        raw = entry.stem if entry.suffix == ".ipynb" and not entry.is_dir() else entry.name
        return student_id(raw) == raw

    found: dict[str, Submission] = {}
    for entry in sorted(path.iterdir(), key=lambda e: (not exact(e), e.name)):
        if entry.name.startswith(".") or entry.name == "__MACOSX":
            continue
        if entry.is_symlink():
            student = student_id(entry.stem if entry.suffix == ".ipynb" else entry.name)
            sub = Submission(student, None, flag("not-a-file", what=f"{entry.name} is a link"))
        elif entry.is_dir():
            student = student_id(entry.name)
            sub = _pick(student, entry, assignment)
        elif entry.suffix == ".ipynb":
            student = student_id(entry.stem)
            sub = Submission(student, entry) if is_regular(entry) else \
                Submission(student, None, flag("not-a-file", what=f"{entry.name} is a special file"))
        else:
            continue
        sub.source = f"{origin}: {entry.name}"
        sub.entries = [entry.name]
        _add(found, sub)
    return Collected([found[k] for k in sorted(found)])


def _add(found: dict, sub: Submission) -> None:
    """Add a submission; one whose id is taken is flagged under a new id ("alice (2)"), and
    the one that has it is told."""
    student = sub.student
    if student in found:
        first = found[student]
        sub.problem, sub.notebook = flag("duplicate-id", entry=_entry_name(sub), student=student,
                                         other=_entry_name(first)), None
        n = 2
        while f"{student} ({n})" in found:
            n += 1
        sub.student = f"{student} ({n})"
        taken = [r for r in first.remarks if r.code == "id-shared"]
        others = [_entry_name(s) for s in found.values() if s.student.startswith(f"{student} (")] + [_entry_name(sub)]
        first.remarks = [r for r in first.remarks if r not in taken] + [
            flag("id-shared", others=", ".join(others), s="s" if len(others) == 1 else "",
                 was="was" if len(others) == 1 else "were")]
    found[sub.student] = sub


def _entry_name(sub: Submission) -> str:
    return shown(sub.entries[0]) if sub.entries else repr(sub.student)


def _from_lms(read, kind: str, origin: str, assignment: str, roster) -> Collected:
    """Submissions of a Canvas or Moodle download, named by the roster's ids."""
    files, stray = read
    label = {"canvas": "Canvas", "moodle": "Moodle"}[kind]
    match = _matcher(kind, roster)
    found: dict[str, Submission] = {}
    unmatched = []
    for lms_id, f in sorted(files.items()):
        student = match(f)
        if student is None:
            unmatched.append(f.path.name)
            continue
        if f.shared:
            entries, what = [f.path.name, *f.shared], "user id" if kind == "canvas" else "participant number"
            sub = Submission(student, None, flag("lms-id-shared", count=len(entries), lms=label, lms_id=lms_id,
                                                 what=what))
            sub.remarks.append(flag("lms-id-entries", what=what, lms_id=lms_id,
                                    entries=", ".join(shown(e, 80) for e in entries)))
        elif f.path.is_dir():
            sub = _pick(student, f.path, assignment)
        else:
            sub = _pick_among(student, [f.path, *f.others] if kind == "moodle" else [f.path], assignment)
        sub.source = f"{origin}: {f.path.name}"
        sub.entries = [f.path.name, *(p.name for p in f.others), *f.shared]
        sub.lms_id, sub.lms_late, sub.attempt = lms_id, f.late, f.attempt
        sub.lms, sub.lms_name = kind, f.name
        if kind == "canvas":
            sub.time_source = TIME_CANVAS
        _add(found, sub)
    out = Collected([found[k] for k in sorted(found)], layout=kind)
    out.unmatched = unmatched
    total = len(files)
    if roster is not None and total and len(unmatched) * 2 > total:
        how = ("the Canvas user id in each file name (e.g. " + _example(files) + ") against the roster's "
               "lms_id (Canvas's ID column)") if kind == "canvas" else \
              ("the participant number in each folder name (e.g. " + _example(files) + ") against the roster's "
               "lms_id, then the full name against the roster's name")
        raise CourseError(f"{origin} is a {label} download, but {len(unmatched)} of its {total} submissions match "
                          f"nobody on the roster (matched {how}): is {getattr(roster, 'path', 'the roster')} "
                          f"this course's {label} export? Nothing was graded")
    if unmatched:
        out.notes.append(f"{len(unmatched)} {label} submission{'s' if len(unmatched) != 1 else ''} in {origin} "
                         f"match nobody on the roster, not graded: " + ", ".join(map(shown, unmatched[:5]))
                         + (f" and {len(unmatched) - 5} more" if len(unmatched) > 5 else ""))
    uploads = [p for f in files.values() for p in (f.path, *f.others)] if kind == "canvas" else []
    older = sum(1 for f in files.values() for p in f.others if p.suffix == ".ipynb") if kind == "canvas" else 0
    if older:
        out.notes.append(f"{older} older upload{'s' if older != 1 else ''} in {origin} left aside: each student's "
                         "last upload is graded")
    other = sum(1 for p in uploads if p.suffix != ".ipynb")
    if other:
        out.notes.append(f"{other} uploaded file{'s' if other != 1 else ''} in {origin} "
                         f"{'are' if other != 1 else 'is'} not a notebook, not graded")
    if roster is None:
        out.notes.append(f"no roster: students are named by their {label} "
                         + ("user id" if kind == "canvas" else "name and participant number")
                         + f"; give the {label} export as --roster (or roster in term.toml) for names and ids")
    if stray:
        out.notes.append(f"{len(stray)} entr{'ies' if len(stray) != 1 else 'y'} in {origin} "
                         f"{'are' if len(stray) != 1 else 'is'} not a {label} notebook submission, ignored: "
                         + ", ".join(map(shown, stray[:3])) + (" ..." if len(stray) > 3 else ""))
    return out


def _example(files: dict) -> str:
    lms_id, f = next(iter(sorted(files.items())))
    return f"{lms_id} in {shown(f.path.name)}"


def _matcher(kind: str, roster):
    """A function from an LMS file to the student id it belongs to (None: nobody)."""
    from . import formats as lms

    if roster is None:
        if kind == "canvas":
            return lambda f: f.lms_id
        return lambda f: student_id(f"{f.name}_{f.lms_id}")
    by_lms = {s.lms_id: sid for sid, s in roster.items() if s.lms_id}
    names: dict[str, list[str]] = {}
    for sid, s in roster.items():
        if s.name:
            key = lms.canvas_name(s.name) if kind == "canvas" else lms.normal_name(s.name)
            names.setdefault(key, []).append(sid)

    def match(f):
        if f.lms_id in by_lms:
            return by_lms[f.lms_id]
        if by_lms and kind == "canvas":
            return None                 # the roster has Canvas ids, and this one is not among them
        key = f.name if kind == "canvas" else lms.normal_name(f.name)
        hits = names.get(key, [])
        return hits[0] if len(hits) == 1 else None

    return match
