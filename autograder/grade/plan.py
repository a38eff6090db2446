"""Planning a grading run: which students are graded now, whose earlier result is reused,
and whose is left exactly as it is. A function of what each submission is against what was
stored for it (`Seen`): no file, process or gradebook is touched here.

The rules (the README's "Grading again"):
- a result is reused while the notebook (its digest and name) and everything that decides its
  grade (the run's `key`: tests, grader, limits, secret) are unchanged; `regrade` grades all;
- with `students` or `flagged` (a partial run) only those chosen are graded: a chosen student
  is one named, or, with `flagged`, one whose stored result has a flag. Everyone else keeps
  their result: reused while it fits the submission, frozen as it was when the submission has
  changed since, and "not graded" when there is none;
- a submission the instructor accepted with --student is kept until a newer one arrives (a
  later Canvas upload or submission time) or the instructor takes another with --student.
"""
from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from ..flags import Flag
from ..records import Result


@dataclass
class Seen:
    """One submission, read, against the result stored for its student (None: none, or one of
    another student's)."""

    student: str
    data: bytes | None              # the notebook's bytes (None: unreadable or absent)
    problem: Flag | None            # why it could not be read
    notebook: str | None            # the notebook's file name
    digest: str | None              # of `data`
    old: dict | None = None         # the stored result
    newer: bool = False             # known to be newer than the one `old` was graded from

    @property
    def same(self) -> bool:
        """The stored result was graded from this very notebook."""
        return self.old is not None and self.old.get("digest") == self.digest and \
            self.old.get("notebook") == self.notebook


@dataclass
class Plan:
    grade: list[Seen] = field(default_factory=list)        # graded now, in the download's order
    reused: dict[str, dict] = field(default_factory=dict)  # their result reused (standing refreshed)
    frozen: dict[str, dict] = field(default_factory=dict)  # left exactly as they are
    ungraded: list[str] = field(default_factory=list)      # not chosen, never graded
    kept_accepted: list[str] = field(default_factory=list)  # frozen: an accepted submission kept
    earlier: dict[str, str | None] = field(default_factory=dict)  # digest graded before, per student


def plan(seen: list[Seen], key: str, *, regrade: bool = False, students: Collection[str] = (),
         flagged: bool = False) -> Plan:
    """Who is graded, reused, frozen or left ungraded in this run (the module's rules)."""
    partial = bool(students) or flagged
    out = Plan()
    for s in seen:
        old = s.old
        if old is not None:
            out.earlier[s.student] = old.get("digest")
        chosen = s.student in students or (flagged and old is not None and bool(Result.of(old).all_flags))
        if partial and not chosen:
            if old is None:
                out.ungraded.append(s.student)
            elif s.same:
                out.reused[s.student] = old
            else:
                out.frozen[s.student] = old
        elif old is not None and not (regrade or partial) and s.same and old.get("key") == key:
            out.reused[s.student] = old
        elif old is not None and old.get("accepted") and not s.same and not s.newer:
            out.frozen[s.student] = old
            out.kept_accepted.append(s.student)
        else:
            out.grade.append(s)
    return out
