"""Deadlines: due dates, extensions, and the late policy, on nbgrader's model.

nbgrader keeps a due date per assignment (`Assignment.duedate`), a submission time and an
extension per student (`SubmittedAssignment.timestamp`, `.extension`), and a late penalty
per submitted notebook (`SubmittedNotebook.late_submission_penalty`), set after grading by
a `LateSubmissionPlugin`; `nbgrader export` reports max(0, score - penalty). This module
holds the course's policy (`LatePolicy`) and the parsing around it, without importing
nbgrader (every command reads a deadline; only grading opens the gradebook). The plugin
nbgrader calls, `nbgrader_plugins.LatePenalty`, applies a `LatePolicy`; `gradebook.py`
writes the results; nothing here touches a file.

A policy is written `none`, `zero`, `per-hour:P` or `per-day:P`: P percent of the maximum
score is deducted per started hour (or day) after the deadline. `--late-floor F` (percent
of the maximum score, per-hour and per-day only) is the lowest a deduction takes a score to;
a score already below it stays as it is. `zero` scores a late submission 0, as nbgrader's
own plugin does; `none` records how late it was and deducts nothing.

Times: a date and time without an offset is the grading machine's local time; everything
is kept as an aware UTC datetime, and given to nbgrader as the naive UTC datetime it stores.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone, tzinfo

from ..errors import CourseError

POLICIES = ("none", "zero", "per-hour", "per-day")
_UNIT_SECONDS = {"per-hour": 3600, "per-day": 86400}


_ZONE: tzinfo | None = None        # the term's time zone (term.toml's timezone): naive times and what people read


def set_zone(name: str | None, what: str = "timezone") -> None:
    """The zone naive times are read in and every time is shown in (None: the machine's for
    reading, UTC for showing)."""
    global _ZONE
    if name is None:
        _ZONE = None
        return
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        _ZONE = ZoneInfo(str(name))
    except (ZoneInfoNotFoundError, ValueError):
        raise CourseError(f"{what} '{name}' is not a time zone name "
                          "(e.g. Europe/Berlin, America/Toronto, UTC)") from None


def zone() -> tzinfo | None:
    """The term's time zone, or None."""
    return _ZONE


def parse_when(text: str, what: str = "the date") -> datetime:
    """An ISO 8601 date and time (`2025-03-14T23:59`, `... 23:59:30+01:00`, `...Z`) as an aware
    UTC datetime. A date alone (`2025-03-14`) is the end of that day (23:59:59). Without a
    zone, the term's time zone, else the grading machine's."""
    value = str(text).strip()
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            value += "T23:59:59"
        when = datetime.fromisoformat(value)
    except ValueError:
        raise CourseError(f"{what} '{text}' is not an ISO date and time "
                          "(e.g. 2025-03-14, 2025-03-14T23:59 or 2025-03-14T23:59+01:00)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_ZONE) if _ZONE is not None else when.astimezone()
    return when.astimezone(timezone.utc)


def parse_timestamp(text: str) -> datetime:
    """A submission time as nbgrader writes it in timestamp.txt ("2025-03-14 22:59:00.000000 UTC")
    or in ISO form; without a zone it is UTC, as nbgrader reads it. Raises ValueError."""
    from .. import startup

    startup.defer_nbgrader_init()       # nbgrader.utils without the package's __init__
    from nbgrader.utils import parse_utc

    value = text.strip()
    if not value or len(value) > 64:
        raise ValueError("empty or too long")
    try:
        naive_utc = parse_utc(value)
    except (ValueError, OverflowError, TypeError, AttributeError) as exc:
        raise ValueError(str(exc)) from None
    return naive_utc.replace(tzinfo=timezone.utc)


_DURATION = re.compile(r"(?:(\d+(?:\.\d+)?)d)?(?:(\d+(?:\.\d+)?)h)?(?:(\d+(?:\.\d+)?)m)?")


def parse_extension(text: str, what: str = "extension") -> timedelta | datetime | None:
    """A roster's extension: empty (none), a duration (`2d`, `36h`, `1d12h`, `90m`; a plain number
    is hours), or a personal due date and time (ISO). Returns a timedelta, or an aware datetime
    for a personal due date (turned into a timedelta once the assignment's due date is known)."""
    value = (text or "").strip().lower().replace(" ", "")
    if not value:
        return None
    if re.fullmatch(r"\d+(?:\.\d+)?", value):
        return timedelta(hours=float(value))
    m = _DURATION.fullmatch(value)
    if m and any(m.groups()):
        d, h, mins = (float(g) if g else 0.0 for g in m.groups())
        return timedelta(days=d, hours=h, minutes=mins)
    try:
        return parse_when(text, what)
    except CourseError:
        raise CourseError(f"{what} '{text}' is neither a duration (2d, 36h, 1d12h, 90m) nor an ISO "
                          "date and time") from None


def extension_for(value: timedelta | datetime | None, due: datetime | None) -> timedelta | None:
    """A roster extension as the timedelta nbgrader stores (a personal due date becomes its
    distance from the assignment's due date; never negative)."""
    if value is None or due is None:
        return None
    if isinstance(value, datetime):
        value = value - due
    return max(value, timedelta(0))


@dataclass(frozen=True)
class LatePolicy:
    """The course's late policies: none, zero, or P percent of the maximum score per started
    hour or day, never below a floor (percent of the maximum score)."""

    method: str = "none"
    percent: float = 0.0
    floor: float = 0.0
    max_score: float = 0.0

    @classmethod
    def parse(cls, policy: str | None, floor: float | str | None = None, max_score: float = 0.0) -> "LatePolicy":
        """`none`, `zero`, `per-hour:P` or `per-day:P` (P in percent, `%` optional), and a floor in percent."""
        text = (policy or "none").strip().lower()
        method, _, amount = text.partition(":")
        if method not in POLICIES or (method in ("none", "zero")) != (amount == ""):
            raise CourseError(f"late policy '{policy}' is not one of none, zero, per-hour:P, per-day:P "
                              "(P: percent of the maximum score, e.g. per-day:10)")
        percent = 0.0
        if amount:
            percent = _percent(amount, f"late policy '{policy}'")
        floor_value = 0.0
        if floor not in (None, ""):
            if method not in _UNIT_SECONDS:
                raise CourseError(f"a late floor applies to per-hour and per-day policies, not to '{method}'")
            floor_value = _percent(floor, f"late floor '{floor}'")
        return cls(method=method, percent=percent, floor=floor_value, max_score=float(max_score))

    def describe(self) -> str:
        if self.method in _UNIT_SECONDS:
            unit = "hour" if self.method == "per-hour" else "day"
            floor = f", not below {self.floor:g}% of the maximum" if self.floor else ""
            return f"{self.percent:g}% of the maximum score per started {unit} late{floor}"
        return {"none": "no penalty", "zero": "a late submission scores 0"}[self.method]

    @property
    def spec(self) -> str:
        if self.method in _UNIT_SECONDS:
            return f"{self.method}:{self.percent:g}" + (f" floor {self.floor:g}" if self.floor else "")
        return self.method

    def units_late(self, total_seconds_late: float) -> int:
        unit = _UNIT_SECONDS.get(self.method)
        return math.ceil(total_seconds_late / unit) if unit and total_seconds_late > 0 else 0

    def penalty(self, score: float, total_seconds_late: float) -> float | None:
        """The penalty in points (None: no penalty), as nbgrader's plugins return it. Like nbgrader's
        AssignLatePenalties, it is kept between 0 and the score."""
        if total_seconds_late <= 0 or self.method == "none":
            return None
        if self.method == "zero":
            return max(0.0, score)
        deduction = self.units_late(total_seconds_late) * self.percent / 100.0 * self.max_score
        floor = min(score, self.floor / 100.0 * self.max_score)
        final = max(score - deduction, floor)
        return round(max(0.0, min(score, score - final)), 6)


def _percent(text, what: str) -> float:
    try:
        value = float(str(text).strip().rstrip("%"))
    except ValueError:
        raise CourseError(f"{what}: expected a percentage between 0 and 100") from None
    if not 0 <= value <= 100 or math.isnan(value):
        raise CourseError(f"{what}: expected a percentage between 0 and 100")
    return value


def seconds_late(submitted: datetime | None, due: datetime | None, extension: timedelta | None) -> float:
    """nbgrader's SubmittedAssignment.total_seconds_late: how long after the (extended) due date."""
    if submitted is None or due is None:
        return 0.0
    return max(0.0, (submitted - (due + (extension or timedelta(0)))).total_seconds())


def naive_utc(when: datetime | None) -> datetime | None:
    """What nbgrader's DateTime columns hold: UTC without a zone."""
    return None if when is None else when.astimezone(timezone.utc).replace(tzinfo=None)


def iso(when: datetime | None) -> str:
    """An aware datetime as ISO 8601 UTC with a Z, to the second ('' for None)."""
    if when is None:
        return ""
    return when.astimezone(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def human(when: datetime | None) -> str:
    """A time for people, in the term's time zone (UTC unless term.toml sets one)."""
    if when is None:
        return ""
    if _ZONE is None:
        return when.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return when.astimezone(_ZONE).strftime("%Y-%m-%d %H:%M %Z")


def duration(seconds: float) -> str:
    """A lateness for people: '3 min', '2 h 5 min', '1 d 4 h'."""
    minutes_total = max(1, math.ceil(seconds / 60))
    days, rest = divmod(minutes_total, 1440)
    hours, minutes = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{minutes} min"


__all__ = ["LatePolicy", "set_zone", "parse_when", "parse_timestamp", "parse_extension", "extension_for",
           "seconds_late", "naive_utc", "iso", "human", "duration"]
