"""A grading run in numbers, for the command line's summary (cli/grade.py prints it): what
the run did, where it wrote, and the class's numbers, derived here from the graded results."""
from __future__ import annotations

from dataclasses import dataclass, field

from ..records import Result


@dataclass
class Summary:
    assignment: str
    students: int                   # submissions found in the download
    graded: int                     # graded in this run
    reused: int                     # unchanged since an earlier run: their result reused
    frozen: list[str]               # left exactly as they were (partial run; an accepted submission)
    absent: list[str]               # partial run: graded before, not in this download
    partial: bool                   # --student or --flagged
    kept: int                       # not graded again
    seconds: float
    workers: int
    max_score: float
    missing: list[str]              # on the roster, no submission
    ungraded: list[str]             # partial run: never graded, not chosen
    regraded: list[str]             # partial run: graded now
    notes: list[str]
    deadline: str
    roster: int | None              # students on the roster (None: no roster)
    grades_csv: str = ""
    report: str = ""
    feedback_dir: str = ""
    db_url: str = ""
    layout: str | None = None       # "canvas", "moodle" or None: how the download was read
    results: list[Result] = field(default_factory=list, repr=False)     # every graded row, by student

    @property
    def mean(self) -> float:
        scores = [r.final_score for r in self.results]
        return sum(scores) / len(scores) if scores else 0.0

    @property
    def full_marks(self) -> int:
        return sum(1 for r in self.results if r.final_score == self.max_score)

    @property
    def flagged(self) -> int:
        return sum(1 for r in self.results if r.all_flags)

    @property
    def late(self) -> list[str]:
        return sorted(r["student"] for r in self.results if r.standing.late)

    @property
    def not_on_roster(self) -> list[str]:
        return sorted(r["student"] for r in self.results if not r.standing.on_roster)
