"""Golden outputs: what three classes' grading writes, compared with stored references.

Three scenarios are graded through the real command line (`python -m autograder grade`, then
every `autograder export` that scenario's LMS offers), once each (module-scoped fixtures):

- `adversarial`: every submission of tests/test_adversarial.py (attacks, broken files,
  honest controls) in folders, without a roster or a due date; exports: csv, canvas, moodle
  (no roster: every student in the gradebook, hostile names included);
- `canvas`: a Canvas download zip (LATE markers, a resubmission, a stranger), a roster with
  Canvas's user ids and an extension, term.toml with a due date, a late policy and floor, a
  file of submission times for some students; a score and a comment set by hand in the
  gradebook (as Formgrader sets them), then the same grade command again (nothing regraded,
  the standing brought up to date); exports: canvas (with --column, and again with Canvas's
  own gradebook export as the roster), csv, the feedback zip for Canvas;
- `moodle`: a Moodle download, its grading worksheet as roster and as the file of
  submission times, a time zone, a late policy; a comment set by hand, graded again;
  exports: moodle, moodle-worksheet, csv, the feedback zip for Moodle.

What is compared, per scenario (under tests/golden/SCENARIO/, paths as in the workspace):
grades.csv, report.html, every export (a zip as a listing: each entry's name and the page it
holds, by its path), every student's feedback.html. Each file is compared whole, byte for
byte, after `normalise`, which replaces only what changes from run to run or from commit to
commit without changing a grade: the course version (a digest of the grader's code, on every
feedback page) and the run's temporary folder. Nothing else is touched: scores, flags,
messages, lateness, penalties, column order and the pages' HTML are compared as written.
Inputs are fixed instead of normalised: the workspace's secret.key (it seeds the tests'
inputs, and failure messages give numbers measured on them), every submission's file time,
the zips' entry times. HTML pages are stored with a line break before each opening tag (so
a difference shows as a readable diff); that change is undone exactly by removing those
breaks, so the comparison is still byte for byte.

When the references were made, each scenario was graded 2 to 5 times, once with two busy
loops and another scenario running beside it: the files were the same every time, and the
adversarial class graded by a user without root gave the same files as root. The adversarial
class is graded with 2 workers here (tests/test_adversarial.py uses 1, for its own reasons).

Regenerate the references deliberately, after a change that is meant to change the outputs:

    GOLDEN_UPDATE=1 .venv/bin/python -m pytest tests/test_golden.py -q

then read `git diff tests/golden/` before committing it. A difference fails with the file's
name and the first lines of a unified diff (stored reference first, this run second).
"""
from __future__ import annotations

import difflib
import os
import re
import time
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from tests.builders import A, WRONG, autograder, base_notebook, ok, with_answer
from tests.conftest import SANDBOX, run_grade
from tests.test_lms import CANVAS_ROSTER, MOODLE_WORKSHEET, canvas_zip, text

pytestmark = [pytest.mark.xdist_group("golden")]

GOLDEN = Path(__file__).resolve().parent / "golden"
UPDATE = bool(os.environ.get("GOLDEN_UPDATE"))
# the tests' inputs are seeded from the workspace's secret: a fixed one gives the same inputs,
# hence the same numbers in failure messages, on every run
SECRET = "5ec7e7" * 10 + "0123"
# when every submission in a folder "was made": a fixed time, so file times decide nothing by chance
FILE_TIME = datetime(2025, 3, 13, 12, 0, tzinfo=timezone.utc).timestamp()
DIFF_LINES = 60


# ------------------------------------------------------------------------ normalisation
VERSION = re.compile(r"Course version [0-9a-f]{12}\.")


def normalise(text: str, tmp: Path) -> str:
    """What differs between two runs of the same class, or between commits of the grader that
    grade alike, replaced by fixed placeholders; nothing else:
    - the course version on every feedback page: a digest of the grader's own code, so any
      refactor changes it (`course.version`);
    - the run's temporary folder (pytest's tmp path), wherever a file or message names it."""
    text = VERSION.sub("Course version {VERSION}.", text)
    for form in {str(tmp), os.path.realpath(tmp)}:
        text = text.replace(form, "{TMP}")
    return text


OPENING = re.compile(r"<(?!/)")


def readable(name: str, text: str) -> str:
    """An HTML page with a line break before each opening tag (injective: removing one line
    break before each gives the page back, `unreadable`), so that a diff names the element
    that changed; other files as they are."""
    return OPENING.sub("\n<", text) if name.endswith(".html") else text


def unreadable(text: str) -> str:
    return re.sub(r"\n<(?!/)", "<", text)


def _zip_listing(path: Path, pages: dict[bytes, str]) -> str:
    """A feedback zip as text: each entry's name and what it holds (the student's page it is,
    byte for byte, or its own text). The entries' times are when the zip was written."""
    lines = []
    with zipfile.ZipFile(path) as z:
        for info in z.infolist():
            data = z.read(info)
            held = pages.get(data) or "not a feedback page: " + data.decode("utf-8", "replace")
            lines.append(f"{info.filename}\t{info.compress_type}\t{held}\n")
    return "".join(lines)


def outputs(ws: Path, tmp: Path) -> dict[str, str]:
    """{path under the workspace: normalised text} for everything the golden test compares."""
    reports = ws / "reports" / A
    pages = {p: p.relative_to(ws).as_posix() for p in sorted((ws / "feedback").glob(f"*/{A}/feedback.html"))}
    out = {rel: p.read_bytes().decode("utf-8") for p, rel in pages.items()}      # no newline translation
    by_bytes = {p.read_bytes(): rel for p, rel in pages.items()}
    for path in sorted(reports.iterdir()):
        rel = path.relative_to(ws).as_posix()
        if path.suffix == ".zip":
            out[rel + ".txt"] = _zip_listing(path, by_bytes)
        else:
            out[rel] = path.read_bytes().decode("utf-8")
    return {rel: readable(rel, normalise(text, tmp)) for rel, text in out.items()}


# ------------------------------------------------------------------------ the scenarios
def _workspace(root: Path) -> Path:
    ws = root / "ws"
    ws.mkdir()
    (ws / "secret.key").write_text(SECRET + "\n")
    return ws


def _fix_times(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        os.utime(path, (FILE_TIME, FILE_TIME), follow_symlinks=False)


def adversarial_class(root: Path) -> Path:
    """tests/test_adversarial.py's cases, graded in one run (as the current user)."""
    from tests.test_adversarial import CASES, _Listener

    subs = root / "submissions"
    subs.mkdir()
    ws = _workspace(root)
    listener = _Listener()
    ctx = {"submissions": subs, "workspace": ws, "port": listener.port, "env_secret": "pg-password-golden"}
    try:
        for case in CASES:
            case.build(subs / case.name, ctx)
        _fix_times(subs)
        run_grade(A, subs, ws, "--workers", "2", "--timeout", "15", env={"PGPASSWORD": ctx["env_secret"]})
    finally:
        listener.stop = True
    for fmt in ("csv", "canvas", "moodle"):
        ok(autograder("export", A, "--format", fmt, "--workspace", ws))
    return ws


# Canvas's gradebook export as downloaded: test_lms.py's class and three more students
CANVAS_GRADEBOOK = CANVAS_ROSTER + """"Okafor, Emeka",31026,s2401020,eokafor,Section A,,
"Rossi, Gina",31027,s2401021,grossi,Section B,,
"Jordan, Hal",31028,s2401022,hjordan,Section A,,
"""
# the term's roster: Canvas's ids, and an extension Canvas's export has no column for
TERM_ROSTER = """id,name,email,extension,lms_id,login,section
s2401016,"Usman, Zainab",zusman@example.org,,31022,zusman,Section A
s2401017,"Liddell, Alice",aliddell@example.org,,31023,aliddell,Section A
s2401018,"Builder, Bob",bbuilder@example.org,,31024,bbuilder,Section B
s2401019,"Danvers, Carol",cdanvers@example.org,,31025,cdanvers,Section B
s2401020,"Okafor, Emeka",eokafor@example.org,1d,31026,eokafor,Section A
s2401021,"Rossi, Gina",grossi@example.org,,31027,grossi,Section B
s2401022,"Jordan, Hal",hjordan@example.org,,31028,hjordan,Section A
"""
CANVAS_DUE = datetime(2025, 3, 14, 22, 59, tzinfo=timezone.utc)


def canvas_term(root: Path) -> Path:
    ws = _workspace(root)
    (ws / "roster.csv").write_text(TERM_ROSTER)
    (root / "canvas-gradebook.csv").write_text(CANVAS_GRADEBOOK)
    times = [("s2401020", CANVAS_DUE + timedelta(hours=20)),             # within Emeka's 1-day extension
             ("s2401021", CANVAS_DUE + timedelta(days=6, hours=1)),      # 7 started days: the floor
             ("s2401022", CANVAS_DUE + timedelta(hours=5))]              # late and wrong
    (ws / "times.csv").write_text("id,submitted_at\n" + "".join(f"{s},{t.isoformat()}\n" for s, t in times))
    (ws / "term.toml").write_text('roster = "roster.csv"\ntimezone = "Europe/Berlin"\nlate_policy = "per-day:10"\n'
                                  'late_floor = 50\nlate_marker_hours = 1\n'
                                  f'[{A}]\ndue = "{CANVAS_DUE.isoformat()}"\ntimes = "times.csv"\n')
    right, wrong = text(base_notebook()), text(with_answer(WRONG))
    download = canvas_zip(root / "canvas-submissions.zip", {
        f"usmanzainab_LATE_31022_6789160_{A}.ipynb": right,          # late by Canvas's verdict
        f"liddellalice_31023_6789161_{A}.ipynb": wrong,
        f"builderbob_31024_6789170_{A}.ipynb": wrong,                # Bob's first upload ...
        f"builderbob_31024_6789199_{A}-1.ipynb": right,              # ... and his resubmission
        f"okaforemeka_LATE_31026_6789201_{A}.ipynb": right,
        f"rossigina_LATE_31027_6789202_{A}.ipynb": right,
        f"jordanhal_LATE_31028_6789203_{A}.ipynb": wrong,
        "jordanhal_31028_6789204_notes.txt": b"my notes",
        f"strangerxavier_40001_6789300_{A}.ipynb": right,            # not in this course
    })
    run_grade(A, download, ws, "--workers", "2")
    # what an instructor sets in Formgrader: a test's score (a late student's too) and a comment
    _set_by_hand(ws, "s2401018", {"test_softmax_axis": 0.5}, {"softmax": "Softmax is right; the docstring promised "
                                                                          "a check of the axis argument.\nSee the notes."})
    _set_by_hand(ws, "s2401016", {"test_cosine_similarity_torch": 0.0}, {})
    run_grade(A, download, ws, "--workers", "2")                  # nothing regraded: the standing is brought up to date
    ok(autograder("export", A, "--format", "canvas", "--column", "Similarity (4821)", "--workspace", ws))
    ok(autograder("export", A, "--format", "canvas", "--column", "Similarity (4821)", "--workspace", ws,
                  "--roster", root / "canvas-gradebook.csv", "--to", ws / "reports" / A / "canvas-by-canvas-roster.csv"))
    ok(autograder("export", A, "--format", "csv", "--workspace", ws))
    ok(autograder("export", A, "--feedback", "canvas", "--workspace", ws))
    return ws


def _set_by_hand(ws: Path, student: str, scores: dict[str, float], comments: dict[str, str]) -> None:
    """Scores on test cells and comments on answer cells, set as Formgrader sets them."""
    from autograder.store.gradebook import open_gradebook

    with open_gradebook(f"sqlite:///{ws / 'gradebook.db'}") as gb:
        for test, score in scores.items():
            gb.find_grade(test, A, A, student).manual_score = score
        for cell, text in comments.items():
            gb.find_comment(cell, A, A, student).manual_comment = text
        gb.db.commit()


# Moodle's grading worksheet as downloaded: test_lms.py's class and a student with accents
WORKSHEET = MOODLE_WORKSHEET + """Participant 2104,José Álvarez,jalvarez@example.org,Submitted for grading,,11.00,Yes,\
"Friday, 14 March 2025, 9:30 PM",-,
"""


def moodle_term(root: Path) -> Path:
    ws = _workspace(root)
    (ws / "worksheet.csv").write_text(WORKSHEET)
    (ws / "term.toml").write_text('roster = "worksheet.csv"\nlate_policy = "per-day:10"\ntimezone = "Europe/Paris"\n'
                                  f'[{A}]\ndue = "2025-03-14"\ntimes = "worksheet.csv"\n')
    download = root / "moodle-submissions.zip"
    with zipfile.ZipFile(download, "w") as z:
        for name, data, when in [
                (f"Zainab Usman_2101_assignsubmission_file_/{A}.ipynb", text(base_notebook()), (2025, 3, 14, 22, 0, 0)),
                ("Alice Liddell_2102_assignsubmission_file_/my work.ipynb", text(base_notebook()), (2025, 3, 16, 1, 0, 0)),
                ("Alice Liddell_2102_assignsubmission_onlinetext_/onlinetext.html", b"<p>see the notebook</p>",
                 (2025, 3, 16, 1, 0, 0)),
                (f"José Álvarez_2104_assignsubmission_file_/{A}.ipynb", text(with_answer(WRONG)),
                 (2025, 3, 14, 21, 30, 0))]:
            z.writestr(zipfile.ZipInfo(name, date_time=when), data)
    run_grade(A, download, ws)
    _set_by_hand(ws, "jalvarez@example.org", {}, {"dot_similarity": "Compare with the lecture's einsum."})
    run_grade(A, download, ws)
    for fmt in ("moodle", "moodle-worksheet", "csv"):
        ok(autograder("export", A, "--format", fmt, "--workspace", ws))
    ok(autograder("export", A, "--feedback", "moodle", "--workspace", ws))
    return ws


SCENARIOS = {"adversarial": adversarial_class, "canvas": canvas_term, "moodle": moodle_term}


# ------------------------------------------------------------------------ the comparison
def _shown(line: str) -> str:
    return line.replace("\r", "\\r")


def differences(expected: dict[str, str], got: dict[str, str]) -> list[tuple[str, str]]:
    """(file, message) for each file that differs, is missing or is new: the message names it
    and gives the first lines of a unified diff."""
    out = []
    for rel in sorted(set(expected) | set(got)):
        if rel not in got:
            out.append((rel, f"{rel}: in the references, not written by this run"))
        elif rel not in expected:
            out.append((rel, f"{rel}: written by this run, not in the references"))
        elif expected[rel] != got[rel]:
            diff = list(difflib.unified_diff([_shown(x) for x in expected[rel].split("\n")],
                                             [_shown(x) for x in got[rel].split("\n")],
                                             f"golden/{rel}", f"this run/{rel}", lineterm=""))
            more = f"\n... ({len(diff) - DIFF_LINES} more lines)" if len(diff) > DIFF_LINES else ""
            out.append((rel, f"{rel} differs:\n" + "\n".join(diff[:DIFF_LINES]) + more))
    return out


def stored(scenario: str) -> dict[str, str]:
    folder = GOLDEN / scenario
    return {p.relative_to(folder).as_posix(): p.read_bytes().decode("utf-8")
            for p in sorted(folder.rglob("*")) if p.is_file()}


def store(scenario: str, files: dict[str, str]) -> None:
    import shutil

    folder = GOLDEN / scenario
    shutil.rmtree(folder, ignore_errors=True)
    for rel, content in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(content.encode("utf-8"))


@pytest.fixture(scope="module", params=list(SCENARIOS))
def graded(request, tmp_path_factory):
    if not SANDBOX:
        pytest.skip("bubblewrap cannot run here (make test installs it)")
    root = tmp_path_factory.mktemp(f"golden-{request.param}")
    started = time.monotonic()
    ws = SCENARIOS[request.param](root)
    print(f"\n{request.param}: graded and exported in {time.monotonic() - started:.1f} s")
    return request.param, outputs(ws, root)


def test_outputs_are_the_references(graded):
    scenario, got = graded
    if UPDATE:
        store(scenario, got)
        print(f"GOLDEN_UPDATE: wrote {len(got)} files to {GOLDEN / scenario}")
        return
    assert (GOLDEN / scenario).is_dir(), f"no references in {GOLDEN / scenario}: run GOLDEN_UPDATE=1 pytest {__file__}"
    found = differences(stored(scenario), got)
    if found:
        pytest.fail(f"{len(found)} of {len(got)} files of the {scenario} scenario differ from tests/golden/{scenario} "
                    "(GOLDEN_UPDATE=1 rewrites them, if the change is meant):\n\n" + "\n\n".join(m for _, m in found[:5])
                    + ("\n\n... and: " + ", ".join(rel for rel, _ in found[5:]) if len(found) > 5 else ""),
                    pytrace=False)


def test_normalisation_replaces_only_what_changes_between_runs(tmp_path):
    page = f"<p>Submitted at 2025-03-14 22:00 UTC</p><p class='muted'>Course version 0123456789ab.</p>{tmp_path}/x"
    assert normalise(page, tmp_path) == \
        "<p>Submitted at 2025-03-14 22:00 UTC</p><p class='muted'>Course version {VERSION}.</p>{TMP}/x"
    for page in ("<p>a\n<b>c</b></p>", "<p>a<b>c</b></p>", "\n\n<p>"):
        assert unreadable(readable("a.html", page)) == page
    assert readable("a.csv", "a,<b>\r\n") == "a,<b>\r\n"


def test_a_difference_names_the_file_and_shows_a_diff():
    found = differences({"a.csv": "x,1\r\ny,2\r\n", "gone.html": "<p>"}, {"a.csv": "x,1\r\ny,3\r\n", "new.csv": ""})
    assert [rel for rel, _ in found] == ["a.csv", "gone.html", "new.csv"]
    assert found[0][1].splitlines()[:3] == ["a.csv differs:", "--- golden/a.csv", "+++ this run/a.csv"]
    assert "-y,2\\r" in found[0][1] and "+y,3\\r" in found[0][1]
    assert "not written by this run" in found[1][1] and "not in the references" in found[2][1]
