"""Planning a grading run (autograder/grade/plan.py), without a process, file or gradebook:
each rule of the README's "Grading again" as a case of its own, in milliseconds."""
from __future__ import annotations

import pytest

from autograder.grade.plan import Seen, plan

KEY = "key-of-this-run"


def seen(student: str, notebook: bytes | None = b"v1", old: dict | None = None, newer: bool = False) -> Seen:
    digest = None if notebook is None else "digest-" + notebook.decode()
    return Seen(student, notebook, None, f"{student}.ipynb" if notebook is not None else None, digest, old, newer)


def stored(student: str, notebook: bytes = b"v1", key: str = KEY, **more) -> dict:
    """A result stored by an earlier run, of `notebook`."""
    return {"student": student, "digest": "digest-" + notebook.decode(), "notebook": f"{student}.ipynb",
            "key": key, "flags": [], **more}


def outcome(p) -> dict[str, str]:
    """Each student's fate in the plan."""
    out = {s.student: "graded" for s in p.grade}
    out.update({s: "reused" for s in p.reused})
    out.update({s: "frozen" for s in p.frozen})
    out.update({s: "not graded" for s in p.ungraded})
    return out


def test_a_first_run_grades_everyone_in_the_downloads_order():
    p = plan([seen("b"), seen("a"), seen("c", None)], KEY)
    assert [s.student for s in p.grade] == ["b", "a", "c"]
    assert not (p.reused or p.frozen or p.ungraded or p.kept_accepted or p.earlier)


def test_a_result_is_reused_while_notebook_and_key_are_unchanged():
    p = plan([seen("same", old=stored("same")),
              seen("edited", b"v2", old=stored("edited")),
              seen("new_grader", old=stored("new_grader", key="an older key")),
              seen("renamed", old={**stored("renamed"), "notebook": "other.ipynb"})], KEY)
    assert outcome(p) == {"same": "reused", "edited": "graded", "new_grader": "graded", "renamed": "graded"}
    assert p.earlier == {s: "digest-v1" for s in ("same", "edited", "new_grader", "renamed")}


def test_regrade_grades_even_an_unchanged_notebook():
    assert outcome(plan([seen("same", old=stored("same"))], KEY, regrade=True)) == {"same": "graded"}


def test_a_partial_run_grades_only_the_chosen_and_leaves_the_rest_as_they_were():
    class_ = [seen("chosen", old=stored("chosen")),            # unchanged, but named: graded again
              seen("fits", old=stored("fits")),                # not named, result fits: reused
              seen("changed", b"v2", old=stored("changed")),   # not named, changed since: frozen
              seen("never")]                                   # not named, never graded: not graded
    p = plan(class_, KEY, students=["chosen"])
    assert outcome(p) == {"chosen": "graded", "fits": "reused", "changed": "frozen", "never": "not graded"}
    assert p.frozen["changed"]["digest"] == "digest-v1"        # exactly as it was


def test_flagged_chooses_the_students_whose_stored_result_has_a_flag():
    late = {"term": {"flags": [{"code": "late", "message": "late"}]}}
    class_ = [seen("flagged", old=stored("flagged", flags=[{"code": "cell-error", "message": "x"}])),
              seen("late", old=stored("late", **late)),
              seen("clean", old=stored("clean")),
              seen("new")]
    assert outcome(plan(class_, KEY, flagged=True)) == {"flagged": "graded", "late": "graded", "clean": "reused",
                                                        "new": "not graded"}


@pytest.mark.parametrize("newer, fate", [(False, "frozen"), (True, "graded")])
def test_an_accepted_submission_is_kept_until_a_newer_one_arrives(newer, fate):
    accepted = stored("s1", accepted=True)
    p = plan([seen("s1", b"v2", old=accepted, newer=newer)], KEY)
    assert outcome(p) == {"s1": fate}
    assert p.kept_accepted == (["s1"] if fate == "frozen" else [])


def test_an_accepted_submission_that_is_the_same_notebook_follows_the_usual_rule():
    accepted = stored("s1", accepted=True)
    assert outcome(plan([seen("s1", old=accepted)], KEY)) == {"s1": "reused"}
    assert outcome(plan([seen("s1", old={**accepted, "key": "older"})], KEY)) == {"s1": "graded"}
