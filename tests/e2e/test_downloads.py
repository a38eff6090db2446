"""Whole classes graded from hostile downloads through the command line: every malformed entry in
one zip, a Canvas download of other files, two Moodle folders with one participant number, a zip
that cannot be listed. What each entry becomes, without grading, is tests/unit/test_downloads.py."""
from __future__ import annotations

import pytest

from tests.conftest import needs_sandbox
from tests.builders import A, CANVAS_ROSTER, MAX, WRONG, autograder, moodle_workspace, ok, rows_of, text, with_answer
from tests.unit.test_downloads import (LONG, MALFORMED, NB, RIGHT, _canvas_with_text_files, _malformed, _moodle_shared,
                                       build_zip)

pytestmark = [pytest.mark.xdist_group("downloads")]


def test_a_zip_that_cannot_be_listed_is_one_line(tmp_path):
    download = build_zip(tmp_path / "class.zip", [(f"alice/{NB}", RIGHT)])
    download.write_bytes(download.read_bytes()[:-30])          # its central directory cut short
    proc = autograder("grade", A, download, "--workspace", tmp_path / "ws")
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "not a readable zip file" in lines[0], proc.stderr


# ------------------------------------------------------------------ whole runs: the class is graded
@needs_sandbox
def test_a_class_with_every_malformed_entry_is_graded(tmp_path):
    """One zip: alice and carol honest, ivan with a 300-byte upload name, and each malformed
    entry in another student's folder, plus ` alice`. The run ends 0; the honest get 11 of
    11; each bad one gets 0, flagged, naming the entry; the summary lists them."""
    entries, patches, owners = [(f"alice/{NB}", RIGHT), (f"carol/{NB}", RIGHT), (f"ivan/{LONG}", RIGHT),
                                (f" alice/{NB}", text(with_answer(WRONG)))], [], {}
    for i, case in enumerate(MALFORMED):
        bad, patch, says = _malformed(case, f"x{i}")
        entries, patches = entries + bad, patches + patch
        if says is not None:
            owners[f"x{i}"] = says
    download = build_zip(tmp_path / "class.zip", entries, *patches)
    ws = tmp_path / "ws"
    proc = ok(autograder("grade", A, download, "--workspace", ws, "--quiet"))
    rows = rows_of(ws / "reports" / A / "grades.csv")
    assert {s: float(rows[s]["score"]) for s in ("alice", "carol", "ivan")} == {"alice": MAX, "carol": MAX,
                                                                                "ivan": MAX}, rows
    assert "' alice' also reads as this student id" in rows["alice"]["flags"]
    assert float(rows["alice (2)"]["score"]) == 0 and "' alice' reads as the student id" in rows["alice (2)"]["flags"]
    for student, says in owners.items():
        assert float(rows[student]["score"]) == 0 and says in rows[student]["flags"], (student, rows[student])
        assert f"{student}/" in rows[student]["flags"]
    assert "could not be unpacked" in proc.stdout and "longer than 255 bytes" in proc.stdout, proc.stdout


@needs_sandbox
def test_a_canvas_class_with_text_files_is_graded(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "roster.csv").write_text(CANVAS_ROSTER)
    download = _canvas_with_text_files(tmp_path / "canvas.zip")
    proc = ok(autograder("grade", A, download, "--workspace", ws, "--roster", ws / "roster.csv", "--quiet"))
    assert "read as a Canvas download: 4 students" in proc.stdout, proc.stdout
    assert "8 uploaded files in canvas.zip are not a notebook, not graded" in proc.stdout, proc.stdout
    rows = rows_of(ws / "reports" / A / "grades.csv")
    assert set(rows) == {"s2401016", "s2401017", "s2401018", "s2401019"}, rows
    assert {s: float(rows[s]["score"]) for s in ("s2401017", "s2401018", "s2401019")} == dict.fromkeys(
        ("s2401017", "s2401018", "s2401019"), MAX)
    assert float(rows["s2401016"]["score"]) == 0 and "no notebook" in rows["s2401016"]["flags"], rows["s2401016"]
    # another course's roster: one line, nothing graded
    (tmp_path / "other.csv").write_text(CANVAS_ROSTER.replace("3102", "5102"))
    proc = autograder("grade", A, download, "--workspace", tmp_path / "ws2", "--roster", tmp_path / "other.csv")
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "match nobody on the roster" in lines[0], lines


@needs_sandbox
def test_a_moodle_class_with_a_shared_participant_number_is_graded(tmp_path):
    ws = moodle_workspace(tmp_path)
    proc = ok(autograder("grade", A, _moodle_shared(tmp_path / "m.zip"), "--workspace", ws, "--quiet"))
    rows = rows_of(ws / "reports" / A / "grades.csv")
    assert float(rows["zusman@example.org"]["score"]) == MAX, rows
    alice = rows["aliddell@example.org"]
    assert float(alice["score"]) == 0 and "Mallory Mimic_2102" in alice["flags"] and "Alice Liddell_2102" in \
        alice["flags"], alice
    assert rows["bbuilder@example.org"]["status"] == "missing", proc.stdout
    page = (ws / "feedback" / "aliddell@example.org" / A / "feedback.html").read_text()
    assert "participant number 2102" in page and "Mallory" not in page
