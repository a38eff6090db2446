"""The term applied to a result (autograder/term/standing.py) and the records that read it
(autograder/records.py, grade/summary.py): pure functions, checked without a process, a
sandbox or a gradebook. The numbers are worked out here by hand from the term's rules."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

from autograder.grade.summary import Summary
from autograder.lms.roster import Roster, Student
from autograder.lms.submissions import Submission
from autograder.records import Result
from autograder.term.deadlines import LatePolicy
from autograder.term.settings import Terms
from autograder.term.standing import absent_row, term_block

DUE = datetime(2026, 3, 14, 23, 59, tzinfo=timezone.utc)


def terms(roster: bool = True, policy: str = "per-day:10") -> Terms:
    students = Roster({"ada": Student("ada", "Ada Lovelace", "ada@example.org", timedelta(days=2)),
                       "bob": Student("bob", "Bob Byte", "bob@example.org")}) if roster else None
    return Terms(DUE, LatePolicy.parse(policy, max_score=10), students, None, ("term.toml", "term.toml"))


def result(student: str, score: float, **extra) -> dict:
    return {"student": student, "assignment": "02_similarity", "score": score, "max_score": 10.0,
            "tests": [], "flags": [], **extra}


def test_an_extension_moves_the_due_date_and_an_on_time_submission_keeps_its_score():
    sub = Submission("ada", None, submitted_at=DUE + timedelta(days=1), time_source="zip entry")
    term = term_block(result("ada", 7.0), sub, terms(), {"seconds_late": 0.0, "penalty": 0.0},
                      {"raw_score": 7.0, "score": 7.0})
    assert term["due"] == "2026-03-16T23:59:00Z"          # two days' extension
    assert term["extension_hours"] == 48
    assert (term["status"], term["score"], term["late_penalty"], term["late_policy"]) == ("graded", 7.0, 0.0, "")
    assert (term["name"], term["email"], term["flags"]) == ("Ada Lovelace", "ada@example.org", [])


def test_a_late_submission_takes_the_gradebooks_penalty_and_says_which_policy():
    sub = Submission("bob", None, submitted_at=DUE + timedelta(hours=30), time_source="zip entry")
    late = {"seconds_late": 30 * 3600.0, "penalty": 2.0}        # two started days at 10% of 10 points
    term = term_block(result("bob", 9.0), sub, terms(), late, {"raw_score": 9.0, "score": 7.0})
    assert (term["status"], term["seconds_late"], term["late_penalty"], term["score"]) == ("late", 108000.0, 2.0, 7.0)
    assert term["late_policy"] == terms().policy.describe()
    r = Result(result("bob", 9.0), term=term)
    assert (r.final_score, r.standing.late, r.standing.on_roster) == (7.0, True, True)


def test_without_a_standing_the_score_is_the_raw_score_less_the_penalty_never_below_zero():
    late = {"seconds_late": 3600.0, "penalty": 5.0}
    assert term_block(result("bob", 3.0), None, terms(), late, None)["score"] == 0.0
    assert term_block(result("bob", 8.0), None, terms(), late, None)["score"] == 3.0


def test_a_student_off_the_roster_is_flagged_and_counted_so():
    term = term_block(result("eve", 5.0), None, terms(), {"seconds_late": 0.0, "penalty": 0.0}, None)
    assert [f["code"] for f in term["flags"]] == ["not-on-roster"]
    r = Result(result("eve", 5.0), term=term)
    assert not r.standing.on_roster and [f["code"] for f in r.all_flags] == ["not-on-roster"]
    # without a roster nobody is off it
    term = term_block(result("eve", 5.0), None, terms(roster=False), {"seconds_late": 0.0, "penalty": 0.0}, None)
    assert term["flags"] == [] and term["name"] == ""


def test_a_missing_student_gets_a_zero_row_with_their_own_due_date():
    row = absent_row("ada", "02_similarity", 10.0, terms(), "missing")
    assert (row["score"], row["term"]["status"], row["term"]["due"]) == (0.0, "missing", "2026-03-16T23:59:00Z")
    assert Result(row).final_score == 0.0 and Result(row).name == "Ada Lovelace"


def test_a_result_reads_the_same_before_and_after_the_term_is_applied():
    bare = Result(result("cy", 6.0, flags=[{"code": "timeout"}], submission={"lms_name": "Cy Canvas"}))
    assert (bare.final_score, bare.standing, bare.name, bare.standing.late) == (6.0, {}, "Cy Canvas", False)
    assert [f["code"] for f in bare.all_flags] == ["timeout"]
    assert Result.of(bare) is bare and isinstance(Result.of({"score": 1.0}), Result)


def test_a_summary_derives_the_class_numbers_from_its_results():
    rows = [Result(result("a", 10.0), term={"score": 10.0}),
            Result(result("b", 9.0), term={"score": 6.0, "seconds_late": 7200, "flags": []}),
            Result(result("c", 4.0, flags=[{"code": "timeout"}]),
                   term={"score": 4.0, "flags": [{"code": "not-on-roster"}]})]
    s = Summary("02_similarity", 3, 3, 0, [], [], False, 0, 1.0, 2, 10.0, [], [], [], [], "no deadline", None,
                results=rows)
    assert (s.mean, s.full_marks, s.flagged, s.late, s.not_on_roster) == (20 / 3, 1, 1, ["b"], ["c"])
