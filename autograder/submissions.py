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
import struct
import re
import shutil
import stat
import tempfile
import time
import zipfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from .course import CourseError
from .flags import Flag, flag

MAX_UNZIPPED = 2 << 30
TIME_TXT, TIME_ZIP, TIME_MTIME = "timestamp.txt", "zip entry", "file mtime"
SAFE_NAME = re.compile(r"^[^./\x00-\x1f\x7f][^/\x00-\x1f\x7f]{0,127}$")


@dataclass
class Submission:
    student: str                   # the student id: the folder's name (or the notebook's stem)
    notebook: Path | None
    problem: Flag | None = None    # why it cannot be graded (then it scores 0, flagged)
    submitted_at: datetime | None = None   # when it was submitted (aware, UTC)
    time_source: str | None = None         # TIME_TXT, TIME_ZIP or TIME_MTIME
    time_problem: Flag | None = None       # a timestamp.txt that could not be read

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
    """A folder name as a student id: printable, valid text, at most 128 characters."""
    text = name.encode("utf-8", "replace").decode("utf-8")
    text = "".join(ch if ch.isprintable() else "?" for ch in text).strip()
    return text[:128] or "?"


def unpack_zip(path: Path, into: Path) -> Path:
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise CourseError(f"{path} is not a readable zip file ({exc})") from None
    with archive:
        total = 0
        for info in archive.infolist():
            target = (into / info.filename).resolve()
            if not str(target).startswith(str(into.resolve()) + "/") and target != into.resolve():
                raise CourseError(f"{path}: refusing the entry '{info.filename}' (it points outside the folder)")
            total += info.file_size
            if total > MAX_UNZIPPED:
                raise CourseError(f"{path}: more than {MAX_UNZIPPED >> 30} GiB unpacked; refusing")
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
            elif not info.filename.startswith("__MACOSX/"):
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as src, open(target, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                when = zip_entry_time(info)
                if when is not None:
                    os.utime(target, (when, when))      # the entry's time becomes the file's
    entries = [p for p in into.iterdir() if not p.name.startswith((".", "__MACOSX"))]
    if len(entries) == 1 and entries[0].is_dir() and not any(entries[0].glob("*.ipynb")):
        return entries[0]
    return into


def zip_entry_time(info: zipfile.ZipInfo) -> float | None:
    """A zip entry's modification time (seconds since the epoch): the extended timestamp
    ("UT", 0x5455, UTC) when the entry has one, else its DOS date and time, which carry no
    zone, read as this machine's local time."""
    extra = info.extra or b""
    i = 0
    while i + 4 <= len(extra):
        tag, size = struct.unpack_from("<HH", extra, i)
        body = extra[i + 4:i + 4 + size]
        if tag == 0x5455 and len(body) >= 5 and body[0] & 1:
            return float(struct.unpack_from("<i", body, 1)[0])
        i += 4 + size
    try:
        return time.mktime(tuple(info.date_time) + (0, 0, -1))
    except (OverflowError, ValueError):
        return None


def _timestamp_txt(folders: list[Path]) -> tuple[datetime | None, Flag | None]:
    """The time in nbgrader's timestamp.txt, from the first folder that has one as a regular
    file (opened without following links or blocking, read up to 256 bytes)."""
    from .deadlines import parse_timestamp

    for folder in folders:
        path = folder / "timestamp.txt"
        if not _is_regular(path):
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise OSError("not a regular file")
                text = os.read(fd, 256).decode("utf-8")
            finally:
                os.close(fd)
            return parse_timestamp(text), None
        except (OSError, UnicodeDecodeError, ValueError):
            return None, flag("bad-timestamp")
    return None, None


TOLERANCE_SECONDS = 60


def submission_time(sub: "Submission", folder: Path | None, from_zip: bool) -> None:
    """Set when `sub` was submitted, and from what (see the module's docstring).

    In a zip, what a student uploaded sits beside what the LMS wrote: a timestamp.txt of
    their own could claim any time. So there the later of timestamp.txt and the notebook's
    zip entry counts, and a timestamp.txt that claims an earlier time is flagged for the
    instructor. In a folder (nbgrader's `submitted/`, where file times are those of copies),
    timestamp.txt is believed, as nbgrader believes it."""
    from .deadlines import human

    folders = ([sub.notebook.parent] if sub.notebook else []) + ([folder] if folder else [])
    claimed, problem = _timestamp_txt(list(dict.fromkeys(folders)))
    sub.time_problem = problem
    file_time = None
    if sub.notebook is not None:
        try:
            file_time = datetime.fromtimestamp(sub.notebook.lstat().st_mtime, timezone.utc)
        except (OSError, OverflowError, ValueError):
            file_time = None
    if claimed is not None and from_zip and file_time is not None \
            and (file_time - claimed).total_seconds() > TOLERANCE_SECONDS:
        sub.time_problem = flag("timestamp-earlier", claimed=human(claimed), entry=human(file_time))
        claimed = None
    if claimed is not None:
        sub.submitted_at, sub.time_source = claimed, TIME_TXT
    elif file_time is not None:
        sub.submitted_at, sub.time_source = file_time, TIME_ZIP if from_zip else TIME_MTIME


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def _pick(student: str, folder: Path, assignment: str) -> Submission:
    """The notebook to grade in a student's folder: regular files only, found without
    following symlinks (a link to solutions/ or to a classmate's notebook is not theirs)."""
    notebooks, refused = [], []
    for root, dirs, files in os.walk(folder, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d != ".ipynb_checkpoints" and not d.startswith("."))
        for name in sorted(files + [d for d in os.listdir(root) if d.endswith(".ipynb")
                                    and os.path.isdir(os.path.join(root, d))]):
            if not name.endswith(".ipynb") or name.startswith("._"):
                continue
            path = Path(root) / name
            (notebooks if _is_regular(path) else refused).append(path)
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


def collect(path: Path, assignment: str, scratch: Path | None = None) -> list[Submission]:
    """Every student's submission under `path` (a folder or a .zip), sorted by student id.
    Whatever one student's folder holds, it becomes that student's result: never an error
    for the class."""
    path = Path(path)
    from_zip = False
    if not path.exists():
        raise CourseError(f"{path} does not exist (give a folder of student folders, or a zip)")
    if path.is_file():
        if path.suffix.lower() != ".zip":
            raise CourseError(f"{path} is a file but not a .zip (give a folder of student folders, or a zip)")
        scratch = Path(tempfile.mkdtemp(prefix="unzipped-", dir=scratch))
        path = unpack_zip(path, scratch)
        from_zip = True
    found: dict[str, Submission] = {}
    for entry in sorted(path.iterdir()):
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
            sub = Submission(student, entry) if _is_regular(entry) else \
                Submission(student, None, flag("not-a-file", what=f"{entry.name} is a special file"))
        else:
            continue
        submission_time(sub, entry if entry.is_dir() and not entry.is_symlink() else None, from_zip)
        if student in found:
            sub.problem, sub.notebook = flag("duplicate-id", student=student), None
            n = 2
            while f"{student} ({n})" in found:
                n += 1
            sub.student = f"{student} ({n})"
        found[sub.student] = sub
    if not found:
        raise CourseError(f"{path} holds no student folders and no notebooks")
    return [found[k] for k in sorted(found)]
