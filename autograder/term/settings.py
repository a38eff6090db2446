"""The term's settings: due dates, late policy, roster and gradebook, from the course
configuration file and the command line.

Every `autograder grade` of the term should apply the same deadline, or a partial regrade
a month later would quietly drop a penalty. So the settings can live in one file, read by
every run: `term.toml` in the workspace (`grading/term.toml`), written by the instructor
(the grader only reads it). Its settings, with a line on each, are written once: in
README.md's "A Canvas term", step 2 (`tests/e2e/test_readme.py` runs that block;
`tests/unit/test_term.py` checks that it names every key of TOP_KEYS and ASSIGNMENT_KEYS below).

A table whose name is not an assignment of the course is refused, with the nearest name:
a misspelt [02_simlarity] would otherwise leave the run without a deadline.

The options `--due`, `--late-policy`, `--late-floor`, `--roster`, `--times`, `--db` and `--cluster` override the
file for one run (`--late-policy` replaces the file's floor too).
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from pathlib import Path

from ..errors import CourseError
from .deadlines import LatePolicy, extension_for, parse_when
from ..lms.roster import Roster, Student, read_roster

FILE = "term.toml"
TOP_KEYS = {"roster", "late_policy", "late_floor", "db", "timezone", "late_marker_hours",
            "cluster", "cluster_tls_ca", "cluster_tls_cert", "cluster_tls_key"}
ASSIGNMENT_KEYS = {"due", "late_policy", "late_floor", "times"}


@dataclass
class Terms:
    due: datetime | None
    policy: LatePolicy
    roster: Roster | None
    db: str | None
    origin: tuple[str, str]     # where the deadline and the policy came from, for the summary
    late_marker_hours: float = 1.0   # how late a submission Canvas marked LATE counts as
    times: Path | None = None        # a file of submission times from the LMS (lms.read_times)
    cluster: str | None = None       # a Dask scheduler's address or scheduler file (pool_dask.py)
    cluster_tls: dict | None = None  # {"ca", "cert", "key"}: TLS files for the cluster

    def out_of(self, max_score: float) -> "Terms":
        """These terms for an assignment worth `max_score` points (penalties are in points)."""
        return replace(self, policy=replace(self.policy, max_score=float(max_score)))

    def entry(self, student: str) -> Student | None:
        """The student's roster entry; None without a roster or when the student is not on it."""
        return self.roster.get(student) if self.roster is not None else None

    def extension(self, student: str) -> timedelta | None:
        """The student's extension as the gradebook stores it (None: none, or no due date)."""
        entry = self.entry(student)
        return extension_for(entry.extension if entry else None, self.due)

    def due_for(self, student: str) -> datetime | None:
        """The student's due date: the assignment's, moved by their extension."""
        extension = self.extension(student)
        return self.due + extension if self.due is not None and extension else self.due

    def describe(self) -> str:
        if self.due is None:
            return "no deadline"
        from .deadlines import human

        return (f"due {human(self.due)} (from {self.origin[0]}); late policy: {self.policy.describe()} "
                f"(from {self.origin[1]})")


def read_file(path: Path, assignments: list[str] | None = None) -> dict:
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise CourseError(f"{path} cannot be read ({exc.strerror})") from None
    except tomllib.TOMLDecodeError as exc:
        raise CourseError(f"{path} is not valid TOML ({exc})") from None
    for key, value in data.items():
        if isinstance(value, dict):
            if assignments is not None and key not in assignments:
                import difflib

                near = difflib.get_close_matches(key, assignments, n=1, cutoff=0.5)
                raise CourseError(f"{path}: [{key}] is not an assignment of this course"
                                  + (f" (did you mean [{near[0]}]?)" if near else
                                     f" (known: {', '.join(assignments)})"))
            unknown = set(value) - ASSIGNMENT_KEYS
            if unknown:
                raise CourseError(f"{path}: unknown setting '{sorted(unknown)[0]}' for [{key}] "
                                  f"(known: {', '.join(sorted(ASSIGNMENT_KEYS))})")
        elif key not in TOP_KEYS:
            raise CourseError(f"{path}: unknown setting '{key}' (known: {', '.join(sorted(TOP_KEYS))}, "
                              "and one [ASSIGNMENT] table per assignment)")
    return data


def resolve(workspace: Path, assignment: str, *, due: str | None = None,
            late_policy: str | None = None, late_floor: str | float | None = None,
            roster: Path | None = None, db: str | None = None, times: Path | None = None) -> Terms:
    """The settings for one run: the command line's, else the file's, else none. Read before
    the assignment is: `Terms.out_of` sets the points its penalties count in."""
    from .. import course
    from .deadlines import set_zone

    path = Path(workspace) / FILE
    data = read_file(path, course.assignments())
    set_zone(data.get("timezone"), f"{path}: timezone")
    try:
        marker = float(data.get("late_marker_hours", 1))
        if marker < 0:
            raise ValueError
    except (TypeError, ValueError):
        raise CourseError(f"{path}: late_marker_hours must be a number of hours, 0 or more") from None
    own = data.get(assignment, {}) if isinstance(data.get(assignment), dict) else {}
    due_text = due if due is not None else own.get("due")
    due_origin = "--due" if due is not None else FILE
    when = parse_when(str(due_text), "--due" if due is not None else f"{path}: [{assignment}] due") \
        if due_text is not None else None

    policy_text: str | None
    if late_policy is not None:
        policy_text, floor = late_policy, late_floor
        policy_origin = "--late-policy"
    else:
        policy_origin = FILE if ("late_policy" in own or "late_policy" in data) else "the default"
        policy_text = own.get("late_policy", data.get("late_policy"))
        if policy_text is not None and not isinstance(policy_text, str):
            raise CourseError(f"{path}: late_policy must be text, such as \"per-day:10\" (not {policy_text!r})")
        floor = late_floor if late_floor is not None else \
            (own.get("late_floor", data.get("late_floor")) if "late_policy" not in own else own.get("late_floor"))
    policy = LatePolicy.parse(policy_text, floor)

    roster_path = roster
    if roster_path is None and data.get("roster"):
        roster_path = path.parent / str(data["roster"])
    times_path = Path(times) if times else (path.parent / str(own["times"]) if own.get("times") else None)
    if times_path is not None and not times_path.is_file():
        raise CourseError(f"submission times {times_path} does not exist")
    return Terms(due=when, policy=policy, roster=read_roster(roster_path) if roster_path else None,
                 db=db or data.get("db"), origin=(due_origin, policy_origin), late_marker_hours=marker,
                 times=times_path, cluster=_relative(path.parent, data.get("cluster")),
                 cluster_tls={k: _relative(path.parent, data.get(f"cluster_tls_{k}")) for k in ("ca", "cert", "key")})


def _relative(folder: Path, value) -> str | None:
    """A scheduler file or TLS file named in term.toml is relative to the file's folder; an
    address (tcp://, tls://, ...) is kept as written."""
    if not value:
        return None
    text = str(value)
    return text if "://" in text or Path(text).is_absolute() else str(folder / text)


__all__ = ["Terms", "resolve", "FILE"]
