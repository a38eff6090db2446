"""A student's result, and their standing in the term, read through classes that own the
numbers derived from them: the score that counts, every flag, whether they were late, the
name to show. On disk and on the wire both stay JSON objects (the workspace's files, the
sandbox's protocol and the pools' messages are unchanged): `Result` and `Standing` are dicts
with properties, so a result read from a file, made by a worker or written by hand in a test
is read the same way everywhere.
"""
from __future__ import annotations


class Standing(dict):
    """`result["term"]`: the term applied to a result (term/standing.py writes it): roster
    name and e-mail, submission time and its source, due date, lateness, penalty, manual
    scores and comments, the score that counts. Empty when the term has not been applied."""

    @property
    def seconds_late(self) -> float:
        return self.get("seconds_late") or 0

    @property
    def late(self) -> bool:
        return bool(self.seconds_late)

    @property
    def name(self) -> str:
        return self.get("name") or ""

    @property
    def flags(self) -> list[dict]:
        return self.get("flags") or []

    @property
    def on_roster(self) -> bool:
        """False only when the term has a roster and the student is not on it."""
        return not any(f["code"] == "not-on-roster" for f in self.flags)


class Result(dict):
    """One student's result for one assignment: made by the grading worker (tests, points,
    flags, digest), completed by the run (resume key, provenance, standing)."""

    @classmethod
    def of(cls, data: dict) -> Result:
        return data if isinstance(data, Result) else cls(data)

    @property
    def standing(self) -> Standing:
        term = self.get("term")
        return term if isinstance(term, Standing) else Standing(term or {})

    @property
    def final_score(self) -> float:
        """The score that counts: the term's (manual scores in, late penalty out) once it has
        been applied, else the tests' total."""
        return self.standing.get("score", self["score"])

    @property
    def all_flags(self) -> list[dict]:
        """Its grading's flags, then its term's (lateness, roster)."""
        return (self.get("flags") or []) + self.standing.flags

    @property
    def name(self) -> str:
        """The student's name: the roster's, else the one the LMS's download gave."""
        return self.standing.name or (self.get("submission") or {}).get("lms_name") or ""
