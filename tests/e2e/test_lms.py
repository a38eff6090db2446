"""A term with Canvas or Moodle, from their downloads to their imports, through the real
command line: the zips named as Canvas's content zipper and Moodle's "Download all
submissions" name them, the rosters as their exports look, and every way the path from the
LMS to the gradebook could put a wrong grade in front of a student."""
from __future__ import annotations

import csv
import io
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.store.gradebook import open_gradebook
from tests.conftest import needs_sandbox, read_results
from tests.builders import (A, CANVAS_ROSTER, MAX, WRONG, ZIPPED_AT, autograder, base_notebook, canvas_zip, moodle_workspace,
                            ok, rows_of, text, with_answer)
from tests.unit.test_lms import ORIGINAL, OTHER, RENAMED

pytestmark = [pytest.mark.xdist_group("lms")]


@pytest.fixture(scope="module")
def canvas_term(tmp_path_factory):
    root = tmp_path_factory.mktemp("canvas")
    ws = root / "ws"
    ws.mkdir()
    (ws / "canvas_roster.csv").write_text(CANVAS_ROSTER)
    (ws / "term.toml").write_text('roster = "canvas_roster.csv"\nlate_policy = "per-day:10"\n'
                                  f'[{A}]\ndue = "2025-03-14T23:59:00+00:00"\n')
    right, wrong = text(base_notebook()), text(with_answer(WRONG))
    download = canvas_zip(root / "submissions.zip", {
        f"usmanzainab_LATE_31022_6789160_{A}.ipynb": right,          # late by Canvas's verdict
        f"liddellalice_31023_6789161_{A}.ipynb": wrong,
        f"builderbob_31024_6789170_{A}.ipynb": wrong,                # bob's first upload ...
        f"builderbob_31024_6789199_{A}-1.ipynb": right,              # ... and his resubmission
        f"strangerxavier_40001_6789200_{A}.ipynb": right,            # not in this course
    })
    return {"root": root, "ws": ws, "zip": download, "right": right, "wrong": wrong}


@needs_sandbox
def test_a_canvas_download_is_graded_by_the_canvas_roster(canvas_term):
    ws = canvas_term["ws"]
    proc = ok(autograder("grade", A, canvas_term["zip"], "--workspace", ws, "--quiet"))
    out = proc.stdout
    assert "read as a Canvas download: 3 students" in out, out
    assert "strangerxavier_40001_6789200" in out and "match nobody on the roster" in out, out
    assert "Canvas marked 1 submission late" in out and "1 h late" in out, out
    assert "1 older upload" in out, out
    rows = rows_of(ws / "reports" / A / "grades.csv")
    # ids are the roster's (Canvas's SIS User ID); Canvas's test student is not a student
    assert set(rows) == {"s2401016", "s2401017", "s2401018", "s2401019"}, rows
    assert rows["s2401016"]["status"] == "late" and float(rows["s2401016"]["score"]) == pytest.approx(MAX - 1.1)
    assert rows["s2401016"]["time_source"] == "Canvas (LATE marker)"
    assert float(rows["s2401017"]["score"]) < MAX and rows["s2401017"]["status"] == "graded"
    assert float(rows["s2401018"]["score"]) == MAX, "the resubmission (the larger attachment id) is graded"
    assert rows["s2401019"]["status"] == "missing"
    # the zip's entry times (all equal, when the zip was made) made nobody late
    assert rows["s2401017"]["hours_late"] == "" and rows["s2401018"]["hours_late"] == ""
    # the report names the students and lists the file that matched nobody
    report = (ws / "reports" / A / "report.html").read_text()
    assert "<tr><td>s2401019</td><td>Danvers, Carol</td></tr>" in report and "(Usman, Zainab)" in report
    assert f"strangerxavier_40001_6789200_{A}.ipynb" in report.split("match nobody on the roster")[1], report
    # two right answers that are the instructor's own notebook copied nobody
    assert "Possible copying (0)" in report
    # nothing bogus in the gradebook
    with open_gradebook(f"sqlite:///{ws / 'gradebook.db'}") as gb:
        ids = {s.id for s in gb.students}
    assert ids == {"s2401016", "s2401017", "s2401018", "s2401019"}, ids

    ok(autograder("export", A, "--format", "canvas", "--column", "Similarity (4821)", "--workspace", ws))
    lines = (ws / "reports" / A / "canvas.csv").read_text().splitlines()
    exported = list(csv.DictReader(io.StringIO("\n".join([lines[0]] + lines[2:]))))
    points = {r["ID"]: float(r["Similarity (4821)"]) for r in exported}
    assert points == {"31022": pytest.approx(MAX - 1.1), "31023": float(rows["s2401017"]["score"]),
                      "31024": MAX, "31025": 0.0}, points
    by_id = {r["ID"]: r for r in exported}
    assert by_id["31022"]["SIS User ID"] == "s2401016" and by_id["31022"]["SIS Login ID"] == "zusman"
    # feedback back to Canvas: "Re-Upload Submissions" reads the first two all-digit parts of each
    # name (split on "_") as the user id and the attachment id of the submission
    proc = ok(autograder("export", A, "--feedback", "canvas", "--workspace", ws))
    assert "Re-Upload Submissions" in proc.stdout
    with zipfile.ZipFile(ws / "reports" / A / "canvas-feedback.zip") as z:
        names = z.namelist()
        pages = {tuple(p for p in Path(n).stem.split("_") if p.isdigit())[:2]: z.read(n) for n in names}
    assert set(pages) == {("31022", "6789160"), ("31023", "6789161"), ("31024", "6789199")}, names
    assert pages[("31024", "6789199")] == (ws / "feedback" / "s2401018" / A / "feedback.html").read_bytes()
    # no unpacked copy of the zip is left in the workspace
    assert not list(ws.glob("unzipped-*")) and not list(ws.glob(".scratch-*"))


@needs_sandbox
def test_partial_regrades_keep_the_class_and_an_accepted_resubmission(canvas_term):
    ws, root = canvas_term["ws"], canvas_term["root"]
    # Alice's resubmission, accepted by the instructor, downloaded alone from Canvas
    resub = canvas_zip(root / "resub.zip", {f"liddellalice_31023_6790001_{A}.ipynb": canvas_term["right"]})
    proc = ok(autograder("grade", A, resub, "--workspace", ws, "--quiet", "--student", "s2401017"))
    assert "regraded 1 of" in proc.stdout, proc.stdout
    rows = rows_of(ws / "reports" / A / "grades.csv")
    assert set(rows) == {"s2401016", "s2401017", "s2401018", "s2401019"}
    assert float(rows["s2401017"]["score"]) == MAX
    assert rows["s2401016"]["status"] == "late" and float(rows["s2401018"]["score"]) == MAX, rows
    assert rows["s2401019"]["status"] == "missing"
    report = (ws / "reports" / A / "report.html").read_text()
    assert "3 submissions; mean score" in report and "No submission (1)" in report, report[-1500:]

    # the term's first download again: Alice's older upload does not replace the accepted one
    proc = ok(autograder("grade", A, canvas_term["zip"], "--workspace", ws, "--quiet"))
    assert "kept the submission accepted earlier with --student" in proc.stdout and "s2401017" in proc.stdout
    rows = rows_of(ws / "reports" / A / "grades.csv")
    assert set(rows) == {"s2401016", "s2401017", "s2401018", "s2401019"}
    assert float(rows["s2401017"]["score"]) == MAX, rows["s2401017"]
    assert "3 submissions; mean score" in (ws / "reports" / A / "report.html").read_text()
    assert read_results(ws, A)["s2401017"]["submission"]["attempt"] == 6790001


@needs_sandbox
def test_a_canvas_download_against_another_courses_roster_is_refused(canvas_term, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "roster.csv").write_text(CANVAS_ROSTER.replace("3102", "5102"))
    proc = autograder("grade", A, canvas_term["zip"], "--workspace", ws, "--roster", ws / "roster.csv", "--quiet")
    assert proc.returncode != 0
    lines = [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]
    assert len(lines) == 1 and "match nobody on the roster" in lines[0] and "Canvas user id" in lines[0], lines
    assert not (ws / "results").exists() and not (ws / "gradebook.db").exists()


@needs_sandbox
def test_a_moodle_download_is_graded_by_the_moodle_worksheet(tmp_path):
    ws = moodle_workspace(tmp_path)
    download = tmp_path / "moodle.zip"
    with zipfile.ZipFile(download, "w") as z:
        # Moodle keeps each file's own time: when the student uploaded it
        z.writestr(zipfile.ZipInfo(f"Zainab Usman_2101_assignsubmission_file_/{A}.ipynb",
                                   date_time=(2025, 3, 14, 22, 0, 0)), text(base_notebook()))
        z.writestr(zipfile.ZipInfo("Alice Liddell_2102_assignsubmission_file_/my work.ipynb",
                                   date_time=(2025, 3, 16, 1, 0, 0)), text(base_notebook()))
        z.writestr(zipfile.ZipInfo("Alice Liddell_2102_assignsubmission_onlinetext_/onlinetext.html",
                                   date_time=(2025, 3, 16, 1, 0, 0)), b"<p>see the notebook</p>")
    proc = ok(autograder("grade", A, download, "--workspace", ws, "--quiet"))
    assert "read as a Moodle download: 2 students" in proc.stdout, proc.stdout
    rows = rows_of(ws / "reports" / A / "grades.csv")
    assert set(rows) == {"zusman@example.org", "aliddell@example.org", "bbuilder@example.org"}
    assert rows["zusman@example.org"]["status"] == "graded" and float(rows["zusman@example.org"]["score"]) == MAX
    # due the end of 14 March in Paris; 16 March 01:00 there (zip times read in the term's zone) is late
    assert rows["aliddell@example.org"]["status"] == "late"
    assert rows["bbuilder@example.org"]["status"] == "missing"
    assert "CET" in (ws / "feedback" / "aliddell@example.org" / A / "feedback.html").read_text()

    # grades back through Moodle's "Upload grading worksheet"
    ok(autograder("export", A, "--format", "moodle-worksheet", "--workspace", ws))
    sheet = list(csv.DictReader(open(ws / "reports" / A / "moodle-worksheet.csv", newline="")))
    grades = {r["Identifier"]: r for r in sheet}
    assert set(grades) == {"Participant 2101", "Participant 2102", "Participant 2103"}
    assert float(grades["Participant 2101"]["Grade"]) == MAX and grades["Participant 2103"]["Grade"] == "0"
    assert float(grades["Participant 2102"]["Grade"]) == float(rows["aliddell@example.org"]["score"])
    assert grades["Participant 2101"]["Feedback comments"].startswith("Score 11 / 11")
    # feedback back through "Upload multiple feedback files in a zip": Moodle splits each name on
    # "_" into at most five parts: full name, participant, plugin type and name, file name
    ok(autograder("export", A, "--feedback", "moodle", "--workspace", ws))
    with zipfile.ZipFile(ws / "reports" / A / "moodle-feedback.zip") as z:
        parts = {tuple(n.split("_", 4)[1:4]): n.split("_", 4)[4] for n in z.namelist()}
    assert parts == {("2101", "assignsubmission", "file"): "feedback.html",
                     ("2102", "assignsubmission", "file"): "feedback.html"}, parts


# ------------------------------------------------------------------ the whole term, replayed
def _chromium():
    import os
    import shutil

    chromium = shutil.which("chromium")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        chromium = None
    if chromium is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("the Formgrader test needs Debian's chromium and playwright under CI", pytrace=False)
        pytest.skip("Debian's chromium (make browser) or playwright is missing")
    return chromium


class Formgrader:
    """`autograder formgrade` as an instructor starts it, on a free localhost port."""

    def __init__(self, ws: Path):
        import os
        import socket
        import subprocess
        import sys
        import time
        import urllib.request

        from tests.conftest import ROOT

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.token = "formgrader-test-token"
        env = {k: v for k, v in os.environ.items() if k not in ("JUPYTER_CONFIG_PATH", "AUTOGRADER_WORKSPACE")}
        env["JUPYTER_TOKEN"] = self.token
        self.proc = subprocess.Popen([sys.executable, "-m", "autograder", "formgrade", "--workspace", str(ws),
                                      "--port", str(self.port), "--no-browser"], cwd=ROOT, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=5)
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise AssertionError(f"autograder formgrade did not start:\n{self.proc.stdout.read()}")
                time.sleep(0.5)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except Exception:  # noqa: BLE001
            self.proc.kill()


def _adjust_in_formgrader(ws: Path, student: str, test: str, score: float, answer: str, comment: str) -> None:
    """An instructor's hand: Formgrader's page of `student`'s notebook, in Chromium with every
    non-local request blocked, a new score for `test` and a comment on the answer cell
    `answer` (Formgrader takes comments on answer cells)."""
    import time
    from urllib.parse import urlsplit

    from playwright.sync_api import sync_playwright

    chromium = _chromium()
    with open_gradebook(f"sqlite:///{ws / 'gradebook.db'}") as gb:
        notebook_id = gb.find_submission_notebook(A, A, student).id
    server = Formgrader(ws)
    blocked = []

    def route(r):
        if urlsplit(r.request.url).hostname in ("127.0.0.1", "localhost") or r.request.url.startswith("data:"):
            r.continue_()
        else:
            blocked.append(r.request.url)
            r.abort()

    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True,
                                        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                              "--disable-component-update", "--disable-sync", "--no-first-run"])
            page = browser.new_context().new_page()
            page.route("**/*", route)
            console = []
            page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
            page.on("response", lambda r: r.status >= 400 and console.append(f"HTTP {r.status} {r.url}"))
            # as an instructor logs in: Jupyter's login page, the token pasted
            page.goto(f"{server.url}/login?next=/formgrader/submissions/{notebook_id}/", wait_until="networkidle")
            page.fill("input[name=password]", server.token)
            page.click("#login_submit, button[type=submit], input[type=submit]")
            page.wait_for_url(f"**/formgrader/submissions/{notebook_id}/**", wait_until="networkidle")
            box = page.locator(f"input.score#{test}")
            # the page loads the grades through nbgrader's API, then shows the test's score: wait for it
            page.wait_for_function(f"() => document.querySelector('input.score#{test}').placeholder !== ''")
            box.fill(f"{score:g}")
            box.press("Tab")                                   # formgrader saves on change
            note = page.locator(f"textarea#{answer}-comment")
            note.fill(comment)
            note.press("Tab")
            deadline = time.monotonic() + 30
            while True:                                        # until the gradebook has both
                with open_gradebook(f"sqlite:///{ws / 'gradebook.db'}") as gb:
                    nb = gb.find_submission_notebook(A, A, student)
                    grade = gb.find_grade(test, A, A, student)
                    said = gb.find_comment(answer, A, A, student)
                    saved = grade.manual_score == score and said.manual_comment == comment
                    got = (grade.manual_score, said.manual_comment)
                if saved:
                    break
                assert time.monotonic() < deadline, f"Formgrader did not save the score and the comment: {got} {console} {blocked}"
                time.sleep(0.5)
            browser.close()
    finally:
        server.stop()
    assert not blocked, blocked
    assert nb is not None


def _whole_class(ws: Path) -> dict[str, dict]:
    rows = rows_of(ws / "reports" / A / "grades.csv")
    assert set(rows) == {"s2401016", "s2401017", "s2401018", "s2401019"}, rows
    assert "3 submissions; mean score" in (ws / "reports" / A / "report.html").read_text()
    return rows


@needs_sandbox
def test_a_canvas_term_replayed_from_download_to_import(canvas_term, tmp_path):
    """Full run; a score and a comment set in Formgrader (a real browser); a one-student
    regrade from a resubmission download; the full download again; the export. After each
    step grades.csv and the report have the whole class; at the end every score and the
    comment are what the instructor decided."""
    from autograder.notebook import load_source
    from tests.conftest import source_path

    points = {t.grade_id: t.points for t in load_source(source_path(A)).tests}
    test = "test_softmax_torch"
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "canvas_roster.csv").write_text(CANVAS_ROSTER)
    (ws / "term.toml").write_text('roster = "canvas_roster.csv"\nlate_policy = "per-day:10"\n'
                                  f'[{A}]\ndue = "2025-03-14T23:59:00+00:00"\n')
    grade = ("grade", A, canvas_term["zip"], "--workspace", ws, "--quiet")
    ok(autograder(*grade))
    rows = _whole_class(ws)
    assert float(rows["s2401018"]["score"]) == MAX

    comment = "Softmax is right; the docstring promised a check of the axis argument.\nSee the notes."
    _adjust_in_formgrader(ws, "s2401018", test, points[test] - 1, "softmax", comment)
    ok(autograder(*grade))                                   # nothing regraded: the standing is brought up to date
    rows = _whole_class(ws)
    assert float(rows["s2401018"]["score"]) == MAX - 1 and "Softmax is right" in rows["s2401018"]["comments"]
    page = (ws / "feedback" / "s2401018" / A / "feedback.html").read_text()
    assert "Comments from your instructor" in page and "the docstring promised a check" in page
    assert "set by your instructor" in page

    resub = canvas_zip(tmp_path / "resub.zip", {f"liddellalice_31023_6790001_{A}.ipynb": canvas_term["right"]})
    ok(autograder("grade", A, resub, "--workspace", ws, "--quiet", "--student", "s2401017"))
    rows = _whole_class(ws)
    assert float(rows["s2401017"]["score"]) == MAX and float(rows["s2401018"]["score"]) == MAX - 1

    proc = ok(autograder(*grade))
    assert "kept the submission accepted earlier" in proc.stdout
    rows = _whole_class(ws)
    final = {"s2401016": MAX - 1.1, "s2401017": MAX, "s2401018": MAX - 1, "s2401019": 0.0}
    assert {s: float(r["score"]) for s, r in rows.items()} == pytest.approx(final)

    ok(autograder("export", A, "--format", "canvas", "--column", "Similarity (4821)", "--workspace", ws))
    lines = (ws / "reports" / A / "canvas.csv").read_text().splitlines()
    exported = {r["SIS User ID"]: float(r["Similarity (4821)"])
                for r in csv.DictReader(io.StringIO("\n".join([lines[0]] + lines[2:])))}
    assert exported == pytest.approx(final)
    assert "the docstring promised a check" in (ws / "feedback" / "s2401018" / A / "feedback.html").read_text()


# ------------------------------------------------------------------ possible copying
@needs_sandbox
def test_the_report_lists_possible_copying_and_changes_no_score(tmp_path):
    from tests.builders import write

    subs = tmp_path / "subs"
    for student, code in {"ann": ORIGINAL, "ben": RENAMED, "cy": OTHER}.items():
        write(subs / student, with_answer(code))
    (subs / "dee").mkdir()
    (subs / "dee" / f"{A}.ipynb").write_bytes((subs / "cy" / f"{A}.ipynb").read_bytes())
    ws = tmp_path / "ws"
    ok(autograder("grade", A, subs, "--workspace", ws, "--quiet"))
    report = (ws / "reports" / A / "report.html").read_text()
    assert "Possible copying (2 groups, 4 students)" in report, report[-2000:]
    assert "<td>cy</td><td>dee</td><td>identical notebook files, <code>dot_similarity</code> 100%</td>" in report
    assert "<td>ann</td><td>ben</td><td><code>dot_similarity</code> 100%</td>" in report
    rows = rows_of(ws / "reports" / A / "grades.csv")
    assert rows["cy"]["score"] == rows["dee"]["score"] and rows["cy"]["flags"] == rows["dee"]["flags"]


# ------------------------------------------------------------------ JupyterHub: nbgrader's exchange
@needs_sandbox
def test_a_jupyterhub_course_through_nbgraders_exchange(tmp_path):
    """The third way in: nbgrader's own exchange (release_assignment, fetch_assignment, submit,
    collect), then `autograder grade A WORKSPACE/submitted`, with each submission's time from
    the timestamp.txt nbgrader writes."""
    import os
    import pwd
    import subprocess
    import sys

    from tests.conftest import ROOT, STUDENT_UID, run_unprivileged, student_folder

    exchange, ws = tmp_path / "exchange", tmp_path / "ws"
    exchange.mkdir()
    os.chmod(exchange, 0o777)
    course = [f"--Exchange.root={exchange}", "--CourseDirectory.course_id=attention"]
    env = {**os.environ, "JUPYTER_CONFIG_PATH": str(ROOT / "autograder"), "AUTOGRADER_WORKSPACE": str(ws)}

    def nbgrader(*args, cwd=ROOT):
        proc = subprocess.run([sys.executable, "-m", "nbgrader", *args, *course], cwd=cwd, capture_output=True,
                              text=True, env=env, timeout=300)
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr[-3000:])
        return proc

    nbgrader("release_assignment", A)                                   # the instructor
    # two students, two accounts (nbgrader knows a student by the account): this one, and a
    # user without root (nobody) when the tests run as root
    students = {"me": base_notebook()}
    if os.geteuid() == 0:
        students["nobody"] = with_answer(WRONG)
    for who, nb in students.items():
        home = student_folder(tmp_path / f"home-{who}")
        args = [sys.executable, "-m", "nbgrader", "fetch_assignment", A, *course, f"--CourseDirectory.root={home}"]
        for step in ("fetch_assignment", "submit"):
            args[3] = step
            if who == "nobody":
                proc = run_unprivileged(args, home=home, env={"AUTOGRADER_WORKSPACE": str(ws)}, reach=[exchange])
            else:
                proc = subprocess.run(args, cwd=home, env=env, capture_output=True, text=True, timeout=300)
            assert proc.returncode == 0, (who, step, proc.stdout, proc.stderr[-3000:])
            if step == "fetch_assignment":
                nbformat.write(nb, str(home / A / f"{A}.ipynb"))
                if who == "nobody":
                    os.chown(home / A / f"{A}.ipynb", STUDENT_UID, STUDENT_UID)
    nbgrader("collect", A)                                              # the instructor again
    me = pwd.getpwuid(os.getuid()).pw_name
    expected = sorted([me] + (["nobody"] if "nobody" in students else []))
    assert sorted(p.name for p in (ws / "submitted").iterdir()) == expected

    proc = ok(autograder("grade", A, ws / "submitted", "--workspace", ws, "--quiet"))
    assert f"graded {len(expected)} submissions" in proc.stdout, proc.stdout
    rows = rows_of(ws / "reports" / A / "grades.csv")
    assert float(rows[me]["score"]) == MAX and rows[me]["time_source"] == "timestamp.txt"
    if "nobody" in rows:
        assert float(rows["nobody"]["score"]) < MAX and rows["nobody"]["time_source"] == "timestamp.txt"


@needs_sandbox
def test_submission_times_from_the_lms_replace_a_zips_identical_times(tmp_path):
    ws = moodle_workspace(tmp_path)
    download = tmp_path / "moodle.zip"
    with zipfile.ZipFile(download, "w") as z:      # a zip whose every entry has the time it was made
        for folder in ("Zainab Usman_2101_assignsubmission_file_", "Alice Liddell_2102_assignsubmission_file_"):
            z.writestr(zipfile.ZipInfo(f"{folder}/{A}.ipynb", date_time=ZIPPED_AT), text(base_notebook()))
    proc = ok(autograder("grade", A, download, "--workspace", ws, "--quiet"))
    assert "all 2 submission times in moodle.zip are the same" in proc.stdout, proc.stdout
    rows = rows_of(ws / "reports" / A / "grades.csv")
    assert rows["zusman@example.org"]["status"] == rows["aliddell@example.org"]["status"] == "graded"
    assert rows["aliddell@example.org"]["submitted_at"] == ""

    # the worksheet's "Last modified (submission)" column, given as the times
    proc = ok(autograder("grade", A, download, "--workspace", ws, "--quiet", "--times", ws / "worksheet.csv"))
    assert "submission times from worksheet.csv for 2 of 2 submissions" in proc.stdout, proc.stdout
    assert "are the same" not in proc.stdout, "the LMS's times replaced every one of them: no warning"
    rows = rows_of(ws / "reports" / A / "grades.csv")
    assert rows["zusman@example.org"]["status"] == "graded"          # 22:00 in Paris, before the day ended
    assert rows["zusman@example.org"]["submitted_at"] == "2025-03-14T21:00:00Z"
    assert rows["aliddell@example.org"]["status"] == "late"
    assert float(rows["aliddell@example.org"]["score"]) == pytest.approx(MAX - 2 * 1.1)   # 1 d 1 h late: two started days
