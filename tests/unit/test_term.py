"""The term without grading: the late policies' arithmetic, the extensions' syntax, term.toml's
settings as README.md writes them down and as a cluster is named, and how the PostgreSQL tests
stop where no server runs. The term graded through the command line is tests/e2e/test_term.py."""
from __future__ import annotations

import re
from datetime import timedelta

import pytest

from tests.conftest import ROOT
from tests.builders import A, readme_blocks


def test_late_policies_compute_what_they_promise():
    from nbgrader.plugins import LateSubmissionPlugin

    from autograder.term.deadlines import parse_extension, parse_when
    from autograder.nbgrader_plugins import LatePenalty

    assert issubclass(LatePenalty, LateSubmissionPlugin)       # what nbgrader's AssignLatePenalties calls
    hour, day = 3600, 86400
    per_hour = LatePenalty.parse("per-hour:5", None, 20)
    assert per_hour.late_submission_penalty("s", 20, 1) == 1.0                # one second is a started hour
    assert per_hour.late_submission_penalty("s", 20, hour) == 1.0
    assert per_hour.late_submission_penalty("s", 20, hour + 1) == 2.0
    assert per_hour.late_submission_penalty("s", 3, 10 * hour) == 3.0         # never more than the score
    assert per_hour.late_submission_penalty("s", 20, 0) is None
    per_day = LatePenalty.parse("per-day:10%", "40", 20)
    assert per_day.late_submission_penalty("s", 20, 2 * day + 1) == 6.0        # 3 days x 10% x 20
    assert per_day.late_submission_penalty("s", 20, 30 * day) == 12.0         # floor: 40% of 20 = 8 left
    assert per_day.late_submission_penalty("s", 5, 30 * day) == 0.0           # already below the floor
    assert LatePenalty.parse("zero").late_submission_penalty("s", 7.5, 1) == 7.5
    assert LatePenalty.parse("none").late_submission_penalty("s", 7.5, 1e6) is None
    assert LatePenalty.parse(None).penalty_method == "none"
    assert parse_extension("1d12h") == timedelta(days=1, hours=12) and parse_extension("36") == timedelta(hours=36)
    assert parse_extension("90m") == timedelta(minutes=90) and parse_extension("") is None
    assert parse_extension("2025-03-20T12:00Z") == parse_when("2025-03-20T12:00+00:00")


def test_postgres_tests_skip_with_one_line_but_fail_under_ci(monkeypatch):
    from tests.postgres import unavailable

    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="PostgreSQL unavailable"):
        unavailable("no server")
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="required under CI"):
        unavailable("no server")


def test_term_toml_names_the_cluster_and_its_tls_files(tmp_path):
    from autograder.term.settings import resolve

    (tmp_path / "term.toml").write_text('cluster = "scheduler.json"\ncluster_tls_ca = "ca.pem"\n'
                                        'cluster_tls_cert = "/etc/grading/me.pem"\n')
    terms = resolve(tmp_path, A)
    assert terms.cluster == str(tmp_path / "scheduler.json")
    assert terms.cluster_tls == {"ca": str(tmp_path / "ca.pem"), "cert": "/etc/grading/me.pem", "key": None}
    (tmp_path / "term.toml").write_text('cluster = "tls://grading.example.org:8786"\n')
    assert resolve(tmp_path, A).cluster == "tls://grading.example.org:8786"


def test_the_readmes_term_block_is_the_one_reference_and_names_every_setting():
    """term.toml is written down once: in "A Canvas term", step 2, a block the Canvas test runs.
    Uncommented, its optional lines make a file with exactly the settings term.py accepts; no
    other document keeps a copy of its own."""
    import tomllib

    from autograder.term.settings import ASSIGNMENT_KEYS, TOP_KEYS

    block = next(b for b in readme_blocks("### A Canvas term") if "term.toml" in b)
    toml = re.search(r"<<'TOML'\n(.*?\n)TOML\n", block, re.S).group(1)
    every = tomllib.loads(re.sub(r"^# (\w+ = )", r"\1", toml, flags=re.M))
    tables = {name for name, value in every.items() if isinstance(value, dict)}
    assert set(every) - tables == TOP_KEYS, "the README's term.toml and term.py's settings differ"
    assert tables == {A} and set(every[A]) == ASSIGNMENT_KEYS, "the README's assignment settings differ"
    for copy in ["autograder/README.md", "autograder/term/settings.py", "CONTRIBUTING.md", *sorted(
            str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))]:
        assert not re.search(r"^\s*late_marker_hours\s*=", (ROOT / copy).read_text(), re.M), \
            f"{copy} keeps its own copy of term.toml's settings: link to the README's instead"
