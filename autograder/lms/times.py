"""When each submission was made, for deadlines: a `timestamp.txt` beside the notebook, the
notebook's entry in the zip, the file's modification time, or the LMS's own word (a file of
submission times from it; Canvas's LATE marker). See lms/submissions.py for the order.
"""
from __future__ import annotations

import os
import stat
import struct
import time
import zipfile
from datetime import datetime, timedelta, timezone
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from ..flags import Flag, flag

if TYPE_CHECKING:
    from ..term.deadlines import LatePolicy
    from .roster import Roster


TIME_TXT, TIME_ZIP, TIME_MTIME = "timestamp.txt", "zip entry", "file mtime"


TIME_CANVAS = "Canvas (LATE marker)"


TIME_SAME = "none (the zip's times are all the same)"


class Timed(Protocol):
    """A submission as this module reads and sets it (lms.submissions.Submission, which imports
    this module)."""

    student: str
    notebook: Path | None
    submitted_at: datetime | None
    time_source: str | None
    time_problem: Flag | None
    lms_late: bool | None


class TimedAll(Protocol):
    """The class's submissions (lms.submissions.Collected) with the notes of their download."""

    same_times: str | None
    notes: list[str]

    def __iter__(self) -> Iterator[Timed]: ...


class Dated(Protocol):
    """What `lms_times` reads of the run's terms (term.settings.Terms, a layer above)."""

    due: datetime | None
    policy: LatePolicy
    roster: Roster | None
    times: Path | None
    late_marker_hours: float

    def due_for(self, student: str) -> datetime | None: ...


SAME_TIMES_SECONDS = 2


def zip_entry_time(info: zipfile.ZipInfo) -> float | None:
    """A zip entry's modification time (seconds since the epoch): the extended timestamp
    ("UT", 0x5455, UTC) when the entry has one, else its DOS date and time, which carry no
    zone, read in the term's time zone (term.toml), else as this machine's local time."""
    extra = info.extra or b""
    i = 0
    while i + 4 <= len(extra):
        tag, size = struct.unpack_from("<HH", extra, i)
        body = extra[i + 4:i + 4 + size]
        if tag == 0x5455 and len(body) >= 5 and body[0] & 1:
            return float(struct.unpack_from("<i", body, 1)[0])
        i += 4 + size
    from ..term import deadlines

    try:
        if deadlines.zone() is not None:          # the term's time zone, where term.toml gives one
            return datetime(*info.date_time, tzinfo=deadlines.zone()).timestamp()
        return time.mktime((*info.date_time, 0, 0, -1))
    except (OverflowError, ValueError):
        return None


def timestamp_txt(folders: list[Path]) -> tuple[datetime | None, Flag | None]:
    """The time in nbgrader's timestamp.txt, from the first folder that has one as a regular
    file (opened without following links or blocking, read up to 256 bytes)."""
    from ..term.deadlines import parse_timestamp

    for folder in folders:
        path = folder / "timestamp.txt"
        if not is_regular(path):
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


def submission_time(sub: Timed, folder: Path | None, from_zip: bool) -> None:
    """Set when `sub` was submitted, and from what (see the module's docstring).

    In a zip, what a student uploaded sits beside what the LMS wrote: a timestamp.txt of
    their own could claim any time. So there the later of timestamp.txt and the notebook's
    zip entry counts, and a timestamp.txt that claims an earlier time is flagged for the
    instructor. In a folder (nbgrader's `submitted/`, where file times are those of copies),
    timestamp.txt is believed, as nbgrader believes it."""
    from ..term.deadlines import human

    folders = ([sub.notebook.parent] if sub.notebook else []) + ([folder] if folder else [])
    claimed, problem = timestamp_txt(list(dict.fromkeys(folders)))
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


def same_times(found: TimedAll, origin: str) -> None:
    """Entry times that are all the same are when the zip was made, not when anyone
    submitted: they are dropped, and the run says so."""
    timed = [s for s in found if s.time_source == TIME_ZIP and s.submitted_at is not None]
    times = [s.submitted_at for s in timed if s.submitted_at is not None]    # the same, as datetimes
    if len(times) < 2:
        return
    first, last = min(times), max(times)
    if (last - first).total_seconds() <= SAME_TIMES_SECONDS:
        from ..term.deadlines import human

        for s in timed:
            s.submitted_at, s.time_source = None, TIME_SAME
        found.same_times = (f"all {len(timed)} submission times in {origin} are the same ({human(first)}): "
                            "that is when the zip was made, not when students submitted, so they are not "
                            "used for lateness (give the submitted folder or the times from the LMS)")
        found.notes.append(found.same_times)


def is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def lms_times(subs: Sequence[Timed], terms: Dated) -> list[str]:
    """Submission times from the LMS's file of them (term.toml's times, --times), where given;
    else Canvas's LATE marker as a submission time the gradebook can hold: the due date (with
    the student's extension) plus `late_marker_hours`, so that nbgrader's lateness is that
    many hours and a per-hour or per-day policy deducts its first period. Canvas has already
    applied its due dates, overrides and extensions; it does not say by how much."""
    notes = []
    if terms.times is not None:
        from .formats import read_times

        times = read_times(terms.times, terms.roster)
        given = [sub for sub in subs if sub.student in times]
        for sub in given:
            sub.submitted_at, sub.time_source, sub.lms_late = times[sub.student], f"{terms.times.name}", None
        notes.append(f"submission times from {terms.times.name} for {len(given)} of {len(subs)} submissions"
                     + ("" if len(given) == len(subs) else
                        f" (without one: {', '.join(sorted(s.student for s in subs if s not in given)[:5])})"))
    marked = [s for s in subs if s.lms_late]
    for sub in subs:
        if sub.lms_late is None:
            continue
        sub.submitted_at = None
        due = terms.due_for(sub.student)
        if sub.lms_late and due is not None:
            sub.submitted_at = due + timedelta(hours=terms.late_marker_hours)
    if marked and terms.due is None:
        notes.append(f"Canvas marked {len(marked)} submission{'s' if len(marked) != 1 else ''} late, but this "
                     "assignment has no due date here: no penalty applied (set due in term.toml)")
    elif marked:
        notes.append(f"Canvas marked {len(marked)} submission{'s' if len(marked) != 1 else ''} late without "
                     f"saying by how much: each counts as {terms.late_marker_hours:g} h late "
                     f"({terms.policy.describe()}; late_marker_hours in term.toml)")
    return notes
