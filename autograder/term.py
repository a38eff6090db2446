"""The term's settings: due dates, late policy, roster and gradebook, from the course
configuration file and the command line.

Every `autograder grade` of the term should apply the same deadline, or a partial regrade
a month later would quietly drop a penalty. So the settings can live in one file, read by
every run: `term.toml` in the workspace (`grading/term.toml`), written by the instructor
(the grader only reads it):

    roster = "roster.csv"                 # relative to this file
    late_policy = "per-day:10"            # the default for every assignment
    late_floor = 50
    db = "postgresql://grader@db.example.org/course"   # optional; else WORKSPACE/gradebook.db

    [02_similarity]
    due = "2025-03-14T23:59:00+01:00"
    late_policy = "per-hour:2"            # this assignment's own policy (and floor)

The options `--due`, `--late-policy`, `--late-floor`, `--roster` and `--db` override the
file for one run (`--late-policy` replaces the file's floor too).
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from .course import CourseError
from .deadlines import LatePolicy, parse_when
from .roster import Roster, read_roster

FILE = "term.toml"
TOP_KEYS = {"roster", "late_policy", "late_floor", "db"}
ASSIGNMENT_KEYS = {"due", "late_policy", "late_floor"}


@dataclass
class Terms:
    due: datetime | None
    policy: LatePolicy
    roster: Roster | None
    db: str | None
    origin: tuple[str, str]     # where the deadline and the policy came from, for the summary

    def out_of(self, max_score: float) -> "Terms":
        """These terms for an assignment worth `max_score` points (penalties are in points)."""
        return replace(self, policy=replace(self.policy, max_score=float(max_score)))

    def describe(self) -> str:
        if self.due is None:
            return "no deadline"
        from .deadlines import human

        return (f"due {human(self.due)} (from {self.origin[0]}); late policy: {self.policy.describe()} "
                f"(from {self.origin[1]})")


def read_file(path: Path) -> dict:
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
            roster: Path | None = None, db: str | None = None) -> Terms:
    """The settings for one run: the command line's, else the file's, else none. Read before
    the assignment is: `Terms.out_of` sets the points its penalties count in."""
    path = Path(workspace) / FILE
    data = read_file(path)
    own = data.get(assignment, {}) if isinstance(data.get(assignment), dict) else {}
    due_text = due if due is not None else own.get("due")
    due_origin = "--due" if due is not None else FILE
    when = parse_when(str(due_text), "--due" if due is not None else f"{path}: [{assignment}] due") \
        if due_text is not None else None

    if late_policy is not None:
        policy_text, floor = late_policy, late_floor
        policy_origin = "--late-policy"
    else:
        policy_origin = FILE if ("late_policy" in own or "late_policy" in data) else "the default"
        policy_text = own.get("late_policy", data.get("late_policy"))
        floor = late_floor if late_floor is not None else \
            (own.get("late_floor", data.get("late_floor")) if "late_policy" not in own else own.get("late_floor"))
    policy = LatePolicy.parse(policy_text, floor)

    roster_path = roster
    if roster_path is None and data.get("roster"):
        roster_path = path.parent / str(data["roster"])
    return Terms(due=when, policy=policy, roster=read_roster(roster_path) if roster_path else None,
                 db=db or data.get("db"), origin=(due_origin, policy_origin))


__all__ = ["Terms", "resolve", "FILE"]
