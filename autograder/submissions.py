"""Finding each student's notebook in a folder of submissions or an LMS zip.

Layout: one sub-folder per student id, holding that student's notebook under any file
name (sub-folders inside it are searched too). A zip is unpacked first (safely: no paths
outside the target, bounded size); if it holds a single top-level folder, that folder is
the one with the student folders. Notebooks lying directly in the top folder are graded
as students named after the file (`alice.ipynb` -> alice).

Per student, the notebook graded is the only .ipynb there; with several, the one named
after the assignment; otherwise none, and the student is flagged.
"""
from __future__ import annotations

import re
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from .course import CourseError

MAX_UNZIPPED = 2 << 30
STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$")


@dataclass
class Submission:
    student: str
    notebook: Path | None
    problem: str | None = None     # why it cannot be graded (then it scores 0, flagged)


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
    entries = [p for p in into.iterdir() if not p.name.startswith((".", "__MACOSX"))]
    if len(entries) == 1 and entries[0].is_dir() and not any(entries[0].glob("*.ipynb")):
        return entries[0]
    return into


def _pick(student: str, folder: Path, assignment: str) -> Submission:
    notebooks = sorted(p for p in folder.rglob("*.ipynb")
                       if ".ipynb_checkpoints" not in p.parts and not p.name.startswith("._"))
    if not notebooks:
        return Submission(student, None, "no notebook in the submission folder")
    if len(notebooks) == 1:
        return Submission(student, notebooks[0])
    named = [p for p in notebooks if p.name == f"{assignment}.ipynb"]
    if len(named) == 1:
        return Submission(student, named[0])
    names = ", ".join(p.name for p in notebooks[:5])
    return Submission(student, None, f"{len(notebooks)} notebooks ({names}) and none is the only "
                                     f"{assignment}.ipynb: submit exactly one notebook")


def collect(path: Path, assignment: str, scratch: Path | None = None) -> list[Submission]:
    """Every student's submission under `path` (a folder or a .zip), sorted by student id."""
    path = Path(path)
    if not path.exists():
        raise CourseError(f"{path} does not exist (give a folder of student folders, or a zip)")
    if path.is_file():
        if path.suffix.lower() != ".zip":
            raise CourseError(f"{path} is a file but not a .zip (give a folder of student folders, or a zip)")
        scratch = Path(tempfile.mkdtemp(prefix="unzipped-", dir=scratch))
        path = unpack_zip(path, scratch)
    found: dict[str, Submission] = {}
    for entry in sorted(path.iterdir()):
        if entry.name.startswith(".") or entry.name == "__MACOSX":
            continue
        if entry.is_dir():
            student = entry.name
            sub = _pick(student, entry, assignment)
        elif entry.suffix == ".ipynb":
            student = entry.stem
            sub = Submission(student, entry)
        else:
            continue
        if not STUDENT_ID.match(student):
            raise CourseError(f"'{student}' in {path} is not a usable student id "
                              "(letters, digits and . _ @ + - only)")
        if student in found:
            raise CourseError(f"student '{student}' appears twice in {path}")
        found[student] = sub
    if not found:
        raise CourseError(f"{path} holds no student folders and no notebooks")
    return [found[k] for k in sorted(found)]
