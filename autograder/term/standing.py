"""The term applied to a result: who the student is on the roster, their due date with any
extension, when they submitted and by what clock, lateness and penalty, manual scores and
comments as the gradebook has them. A function of the result, the submission, the term and
the gradebook's standing: nothing is read or written here.
"""
from __future__ import annotations

from ..flags import flag


def due_of(terms, student: str):
    """The student's roster entry (None: not on it), their extension, and their due date."""
    return terms.entry(student), terms.extension(student), terms.due_for(student)


def term_block(result: dict, sub, terms, late: dict, standing: dict | None) -> dict:
    """A student's standing in the term, after grading: when they submitted and how that is
    known, the deadline that applied (with their extension), the late penalty, the points an
    instructor set by hand, and the score that counts (what `nbgrader export` reports):
    `result["term"]`. `sub` is their Submission."""
    from .deadlines import human, iso

    student = result["student"]
    entry, extension, due = due_of(terms, student)
    flags = []
    if terms.roster is not None and entry is None:
        flags.append(flag("not-on-roster", student=student).to_dict())
    if sub is not None and sub.time_problem is not None:
        flags.append(sub.time_problem.to_dict())
    flags += [remark.to_dict() for remark in (sub.remarks if sub is not None else [])]
    raw = standing["raw_score"] if standing else result["score"]
    penalty = late["penalty"]
    return {
        "status": "late" if late["seconds_late"] > 0 else "graded",
        "name": entry.name if entry else "", "email": entry.email if entry else "",
        "submitted_at": iso(sub.submitted_at) if sub else "",
        "submitted_at_text": human(sub.submitted_at) if sub else "",
        "time_source": (sub.time_source or "") if sub else "",
        # Canvas's LATE marker, no time: submitted_at is the time the penalty is computed from
        "marked_late_by": "Canvas" if sub is not None and sub.lms_late and sub.submitted_at is not None else "",
        "due": iso(due), "due_text": human(due),
        "extension_hours": round(extension.total_seconds() / 3600, 4) if extension else 0,
        "seconds_late": round(late["seconds_late"], 3),
        "late_policy": terms.policy.describe() if late["seconds_late"] > 0 else "",
        "late_penalty": penalty,
        "raw_score": round(raw, 6),
        "score": round(standing["score"] if standing else max(0.0, raw - penalty), 6),
        "manual": {k: v for k, v in sorted((standing or {}).get("manual", {}).items())},
        "comments": {k: v for k, v in sorted((standing or {}).get("comments", {}).items())},
        "flags": flags,
    }


def absent_row(student: str, assignment: str, max_score: float, terms, status: str) -> dict:
    """A row for a rostered student with no submission (`missing`), or a submission a
    partial regrade did not reach and that was never graded (`not graded`)."""
    from .deadlines import iso

    entry, _, due = due_of(terms, student)
    return {"student": student, "assignment": assignment, "score": 0.0, "max_score": max_score,
            "tests": [], "flags": [],
            "term": {"status": status, "name": entry.name if entry else "", "email": entry.email if entry else "",
                     "due": iso(due), "score": 0.0, "raw_score": 0.0, "late_penalty": 0.0, "flags": []}}
