"""Formgrader opened on hostile submissions: nothing a student wrote runs in the instructor's
browser, changes a score, or reaches the course repository.

A class is graded with `autograder grade` (the autograded notebooks the course writes, the
gradebook): one student's notebook carries every attack we know on the submission page (markup
and script in markdown and raw cells, outputs, a javascript: link, a grade_id that breaks out of
its attribute, metadata, an exception message), one has a roster name that is markup, one a
folder name (the student id) that is markup. Each attack, if it ran, would record itself
(window.pwned, a request to /pwned/... that the browser test watches) and use the page's own API
with the `_xsrf` cookie to set every score of its submission to full marks, as measured on the
code before this file. `autograder formgrade` serves it; Debian's Chromium visits every
Formgrader page an instructor would open, with every non-local request blocked; then an honest
manual score is typed into the same page and must be saved.
"""
from __future__ import annotations

import base64
import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import nbformat
import pytest

from autograder.store.gradebook import open_gradebook
from tests.conftest import ROOT, needs_sandbox
from tests.builders import A, autograder, base_notebook, ok, with_answer
from tests.e2e.test_lms import Formgrader, _chromium
from tests.unit.test_formgrade_security import SAFE_TAGS, _Tags

pytestmark = [pytest.mark.xdist_group("formgrade_security")]


def attack(tag: str) -> str:
    """The script every attack runs: it marks itself, then sets every score to full marks
    through Formgrader's API (the `_xsrf` cookie as its token) and asks for the course's files."""
    return ("window.pwned=(window.pwned||[]).concat(['%s']);fetch('/pwned/%s');" % (tag, tag)
            + "var m=document.cookie.match(/_xsrf=([^;]*)/),x=m?m[1]:'';"
            + "var sid=location.pathname.split('/')[3];"
            + "fetch('/formgrader/api/grades?submission_id='+sid).then(function(r){return r.json()})"
            + ".then(function(gs){gs.forEach(function(g){fetch('/formgrader/api/grade/'+g.id,{method:'PUT',"
            + "headers:{'X-CSRFToken':x,'X-XSRFToken':x},"
            + "body:JSON.stringify({manual_score:g.max_score,extra_credit:0})})})});"
            + "fetch('/api/contents/solutions').then(function(r){fetch('/pwned/contents-'+r.status)});")


def handler(tag: str) -> str:
    """`attack(tag)` as one attribute value: no double quote, no comma, no space."""
    return "eval(atob('%s'))" % base64.b64encode(attack(tag).encode()).decode()


SVG = ('<svg xmlns="http://www.w3.org/2000/svg" onload="%s"><script>%s</script>'
       '<rect width="10" height="10"/></svg>')


def hostile_notebook() -> nbformat.NotebookNode:
    nb = with_answer('def softmax(x, axis=-1):\n    raise ValueError("<img src=x onerror=%s>")\n' % handler("message"))
    v4 = nbformat.v4
    hostile_id = 'zz" autofocus onfocus="%s" x="' % handler("grade-id")
    nb.cells[1:1] = [
        v4.new_markdown_cell('My answer: <img src=x onerror="%s"> and <b>bold</b>' % handler("md-img")),
        v4.new_markdown_cell("<script>%s</script>\n\nA < B and `a<b`" % attack("md-script")),
        v4.new_markdown_cell("[grade me](javascript:%s) and <a href=\"javascript:%s\">me</a>"
                             % (handler("md-link"), handler("html-link"))),
        v4.new_markdown_cell('<svg><script>%s</script></svg><iframe srcdoc="<script>parent.%s</script>"></iframe>'
                             '<form action="javascript:%s"><button>ok</button></form>'
                             '<style>body{background:url(http://example.org/seen)}</style>'
                             % (attack("md-svg"), attack("md-iframe"), handler("md-form"))),
        v4.new_raw_cell("<script>%s</script><img src=x onerror=\"%s\">" % (attack("raw-script"), handler("raw-img"))),
        v4.new_code_cell("print('hi')", outputs=[
            v4.new_output("display_data", data={
                "text/html": '<img src=x onerror="%s">' % handler("out-html"),
                "image/svg+xml": SVG % (handler("out-svg"), attack("out-svg-script")),
                "application/javascript": attack("out-js"),
                "text/plain": "hi"}),
            v4.new_output("stream", name="stdout", text="<script>%s</script>" % attack("out-stream"))]),
        v4.new_code_cell("x = 1", metadata={
            "nbgrader": {"grade": True, "grade_id": hostile_id, "points": 5, "solution": False,
                         "locked": False, "schema_version": 3},
            "tags": ['x"><img src=x onerror=%s>' % handler("tags")]}),
    ]
    # a test cell of the instructor's, claimed by the student as a manually graded answer worth more
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "test_softmax_torch":
            cell.metadata.nbgrader.update(points=50, solution=True)
    nb.metadata["title"] = "</title><script>%s</script>" % attack("title")
    return nb


# a roster name that is markup (short: the gradebook keeps 128 characters of a name)
ROSTER = ('id,name,email\n'
          'mallory,"Mallory, Mal",mal@example.org\n'
          'rosie,"<img src=x onerror=fetch(\'\\x2fpwned\\x2froster\')>, Student",rosie@example.org\n'
          'alice,"Liddell, Alice",alice@example.org\n')
# a student id (the submission's folder name) that is markup: no "/" in a folder name
HOSTILE_ID = "s9<img src=x onerror=fetch('\\x2fpwned\\x2fstudent-id')>"
STUDENTS = ["mallory", "rosie", "alice", HOSTILE_ID]


def _write(folder: Path, nb) -> None:
    folder.mkdir(parents=True)
    (folder / f"{A}.ipynb").write_text(nbformat.writes(nb))


@pytest.fixture(scope="module")
def hostile_class(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    subs, ws = base / "subs", base / "ws"
    _write(subs / "mallory", hostile_notebook())
    _write(subs / "rosie", with_answer('def softmax(x, axis=-1):\n    return x\n'))
    _write(subs / "alice", base_notebook())
    _write(subs / HOSTILE_ID, base_notebook())
    ws.mkdir()
    (ws / "roster.csv").write_text(ROSTER)
    (ws / "term.toml").write_text('roster = "roster.csv"\n')
    ok(autograder("grade", A, subs, "--workspace", ws, "--quiet"))
    return ws


def _gradebook(ws: Path) -> dict:
    """{(student, test): manual score} and {student: submission notebook id}."""
    scores, ids = {}, {}
    with open_gradebook(f"sqlite:///{ws / 'gradebook.db'}") as gb:
        for student in STUDENTS:
            nb = gb.find_submission_notebook(A, A, student)
            ids[student] = nb.id
            for grade in nb.grades:
                scores[(student, grade.name)] = grade.manual_score
    return {"scores": scores, "ids": ids}


class Browser:
    """Chromium with every non-local request blocked and every request to /pwned recorded."""

    def __init__(self, p, server: Formgrader):
        self.server, self.blocked, self.pwned, self.console = server, [], [], []
        self.browser = p.chromium.launch(executable_path=_chromium(), headless=True,
                                         args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                               "--disable-component-update", "--disable-sync", "--no-first-run"])
        self.context = self.browser.new_context()
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))

    def _route(self, r):
        url = r.request.url
        if "/pwned" in urlsplit(url).path:
            self.pwned.append(urlsplit(url).path)
            r.fulfill(status=204, body="")
        elif urlsplit(url).hostname in ("127.0.0.1", "localhost") or url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            self.blocked.append(url)
            r.abort()

    def login(self, path: str) -> None:
        """As an instructor logs in: Jupyter's login page, the token pasted."""
        self.page.goto(f"{self.server.url}/login?next={path}", wait_until="networkidle")
        self.page.fill("input[name=password]", self.server.token)
        self.page.click("#login_submit, button[type=submit], input[type=submit]")
        self.page.wait_for_url(f"**{path}**", wait_until="networkidle")

    def visit(self, path: str):
        response = self.page.goto(f"{self.server.url}{path}", wait_until="networkidle")
        return response

    def scores_loaded(self, test: str = "test_softmax_torch") -> None:
        """Formgrader loads the grades through its API, then shows each test's score."""
        self.page.wait_for_function(
            "t => { const b = document.getElementById(t); return b !== null && b.placeholder !== ''; }",
            arg=test, timeout=60000)

    def close(self):
        self.browser.close()


def _honest_score(b: Browser, ws: Path, student: str, test: str, score: float) -> None:
    """An instructor types a score into the page's box; the gradebook must have it."""
    box = b.page.locator(f"input.score#{test}")
    box.fill(f"{score:g}")
    box.press("Tab")                                       # Formgrader saves on change
    deadline = time.monotonic() + 60
    while True:
        with open_gradebook(f"sqlite:///{ws / 'gradebook.db'}") as gb:
            got = gb.find_grade(test, A, A, student).manual_score
        if got == score:
            return
        assert time.monotonic() < deadline, f"the honest score was not saved: {got} {b.console}"
        time.sleep(0.25)


@needs_sandbox
def test_no_student_markup_runs_in_formgrader_and_no_score_changes(hostile_class):
    from playwright.sync_api import sync_playwright

    ws = hostile_class
    before = _gradebook(ws)
    ids = before["ids"]
    server = Formgrader(ws)
    pages = [f"/formgrader/submissions/{ids[s]}/" for s in STUDENTS]
    lists = [f"/formgrader/gradebook/{A}/{A}", "/formgrader/manage_students", f"/formgrader/gradebook/{A}",
             *[f"/formgrader/manage_students/{urllib.request.quote(s, safe='')}" for s in STUDENTS],
             *[f"/formgrader/manage_students/{urllib.request.quote(s, safe='')}/{A}" for s in STUDENTS]]
    ran, links, policies = {}, {}, {}
    try:
        with sync_playwright() as p:
            b = Browser(p, server)
            try:
                b.login(pages[0])
                b.console.clear()                      # (Jupyter's login page has inline script of its own)
                for path in pages + lists:
                    response = b.visit(path)
                    policies[path] = response.headers.get("content-security-policy", "")
                    if path in pages:
                        b.scores_loaded()
                    b.page.wait_for_load_state("networkidle")
                    ran[path] = b.page.evaluate("window.pwned || null")
                    links[path] = b.page.evaluate(
                        "Array.from(document.querySelectorAll('a[href],form[action],iframe'))"
                        ".map(e => e.getAttribute('href') || e.getAttribute('action') || e.getAttribute('srcdoc') || '')"
                        ".filter(h => /^\\s*javascript:|<script/i.test(h))")
                # the list's own button (an onclick of nbgrader's) still shows the names
                b.visit(f"/formgrader/gradebook/{A}/{A}")
                b.page.click("#toggle_names")
                b.page.wait_for_function("() => document.getElementById('toggle_names').innerHTML !== 'Show All Names'")
                assert b.page.locator("a.name-shown", has_text="Liddell, Alice").is_visible()
                # an honest score, typed into the hostile submission's own page, is saved
                b.visit(pages[0])
                b.scores_loaded()
                _honest_score(b, ws, "mallory", "test_softmax_torch", 0.5)
                console, pwned, blocked = b.console, b.pwned, b.blocked
            finally:
                b.close()
    finally:
        server.stop()
    after = _gradebook(ws)["scores"]
    changed = {k: v for k, v in after.items() if v != before["scores"][k] and k != ("mallory", "test_softmax_torch")}
    assert changed == {}, f"scores changed by the page: {changed}"
    assert pwned == [], f"student markup ran: {pwned}"
    assert {k: v for k, v in ran.items() if v} == {}
    assert {k: v for k, v in links.items() if v} == {}, "javascript: links reached the page"
    assert after[("mallory", "test_softmax_torch")] == 0.5
    for path, policy in policies.items():       # and a sanitiser gap could not run code either
        directives = {d.split()[0]: d.split()[1:] for d in policy.split(";") if d.strip()}
        assert "'unsafe-inline'" not in directives.get("script-src", ["'unsafe-inline'"]), (path, policy)
        assert directives.get("script-src") == ["'self'"], (path, policy)
    assert not blocked, f"a page asked for something outside this machine: {blocked}"
    # Formgrader's own pages need nothing the policy refuses (no student markup is left to refuse)
    assert not [c for c in console if "Content Security Policy" in c or c.startswith("pageerror")], console


@needs_sandbox
def test_the_autograded_notebook_keeps_no_student_markup(hostile_class):
    """The notebook Formgrader renders, as the course wrote it: student cells' markup is
    inert text, the instructor's cells are the instructor's, metadata is the course's."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    ws = hostile_class
    nb = json.loads((ws / "autograded" / "mallory" / A / f"{A}.ipynb").read_text())
    for cell in nb["cells"]:
        assert cell["cell_type"] in ("markdown", "code")
        assert cell.get("outputs", []) == [] or cell["outputs"][0]["ename"] == "TestFailure"
        if cell["cell_type"] == "markdown":              # as Formgrader renders it, read as a browser would
            tags = _Tags()
            tags.feed(markdown2html_mistune(cell["source"]))
            assert tags.found <= SAFE_TAGS, tags.found
            assert not [a for a in tags.attributes if a[0].startswith("on") or a[0] in ("style", "srcdoc")
                        or "javascript" in a[1].lower().replace(" ", "")], tags.attributes
    source = nbformat.read(str(ROOT / "solutions" / A / f"{A}.ipynb"), 4)
    theirs = {c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"] for c in source.cells
              if "nbgrader" in c.metadata}
    ours = [c["metadata"]["nbgrader"] for c in nb["cells"] if "nbgrader" in c.get("metadata", {})]
    assert {m["grade_id"] for m in ours} == set(theirs)            # no grade id of the student's
    for meta in ours:
        assert meta == theirs[meta["grade_id"]]                     # points and roles are the instructor's
    assert set(nb["metadata"]) <= {"kernelspec", "language_info"}
    # what the student wrote is still there for the grader to read, as text
    assert any("bold" in "".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")


@needs_sandbox
def test_formgrader_serves_the_workspace_without_files_kernels_or_terminals(hostile_class):
    """With the instructor's own token: no contents, files, kernels, sessions, terminals or
    nbconvert API, no nbgrader command that runs student code, no ?path= config loading."""
    ws = hostile_class
    server = Formgrader(ws)
    try:
        def status(path: str, method: str = "GET") -> int:
            req = urllib.request.Request(f"{server.url}{path}", method=method,
                                         headers={"Authorization": f"token {server.token}"},
                                         data=b"{}" if method != "GET" else None)
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    return r.status
            except urllib.error.HTTPError as exc:
                return exc.code

        assert status("/formgrader/api/grades?submission_id=" + _gradebook(ws)["ids"]["alice"]) == 200
        # Formgrader's ?path= loads the nbgrader_config.py of any folder (code, run as the instructor)
        planted = ws.parent / "planted"
        planted.mkdir(exist_ok=True)
        marker = ws.parent / "config-ran"
        (planted / "nbgrader_config.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
        status(f"/formgrader?path={urllib.request.quote(str(planted))}")
        assert not marker.exists(), "a folder's nbgrader_config.py ran in the Formgrader server"
        for path in ["/api/contents", "/api/contents/solutions", f"/files/solutions/{A}/{A}.ipynb",
                     f"/files/autograded/alice/{A}/{A}.ipynb", "/api/kernels", "/api/kernelspecs", "/api/sessions",
                     "/api/terminals", "/terminals/1", f"/nbconvert/html/solutions/{A}/{A}.ipynb",
                     f"/view/solutions/{A}/{A}.ipynb", "/api/config/notebook", "/lab", "/tree"]:
            assert status(path) in (403, 404), path
        assert status("/api/kernels", "POST") in (403, 404, 405)
        # nor the workspace's secret or gradebook through nbgrader's files beside a submission
        submission = _gradebook(ws)["ids"]["alice"]
        for path in [f"{A}.ipynb", "%2e%2e/%2e%2e/%2e%2e/secret.key", "%2e%2e/%2e%2e/%2e%2e/gradebook.db"]:
            assert status(f"/formgrader/submissions/{submission}/{path}") in (403, 404), path
        for path in [f"/formgrader/api/submission/{A}/alice/autograde", f"/formgrader/api/assignment/{A}/assign",
                     f"/formgrader/api/assignment/{A}/generate_feedback", f"/formgrader/api/assignment/{A}/collect",
                     f"/formgrader/api/assignment/{A}/release", f"/formgrader/api/assignment/{A}/alice/generate_feedback"]:
            assert status(path, "POST") in (403, 404, 405), path
    finally:
        server.stop()


@needs_sandbox
def test_a_submission_link_with_its_token_loads_the_scores(hostile_class):
    """The link an instructor is given (`...?token=...`), opened in a browser that has never
    logged in: the page loads its scores and saves a new one (the login cookie reaches the API)."""
    from playwright.sync_api import sync_playwright

    ws = hostile_class
    submission = _gradebook(ws)["ids"]["alice"]
    server = Formgrader(ws)
    try:
        with sync_playwright() as p:
            b = Browser(p, server)
            try:
                b.visit(f"/formgrader/submissions/{submission}/?token={server.token}")
                b.scores_loaded()
                _honest_score(b, ws, "alice", "test_softmax_torch", 0.25)
            finally:
                b.close()
    finally:
        server.stop()
