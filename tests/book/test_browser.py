"""The built book in a real browser with no network: Debian's Chromium, driven by Playwright,
reads _build/html from a localhost server while every other request is blocked (and counted
as a failure). Every page of _toc.yml, the landing page and the search page: no console error,
no failed request, the mathematics typeset, every image loaded and described, every internal
link and anchor resolving; the search finds "softmax"; the interactive figures respond.

The browser is Debian's `chromium` (`make browser`), launched through `executable_path`; never
`playwright install`. Where it is missing the tests skip with one line, except under CI, where
that is a failure."""
from __future__ import annotations

import functools
import http.server
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from bs4 import BeautifulSoup
from fontTools.ttLib import TTFont

from tests.conftest import ROOT, build_book

HTML = ROOT / "_build" / "html"
PDF = ROOT / "_build" / "pdf" / "book.pdf"
MATHJAX = ROOT / "_vendor" / "mathjax" / "startup.js"

# Under `make test` this file runs on the worker that runs test_book.py: one build, not two.
pytestmark = [pytest.mark.xdist_group("book")]

CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]


def _unavailable(reason: str):
    """A missing browser skips the module with one line; under CI it fails it."""
    if CI:
        pytest.fail(f"browser tests cannot run under CI: {reason}", pytrace=False)
    pytest.skip(f"browser tests skipped: {reason} (make test installs it)", allow_module_level=True)


CHROMIUM = shutil.which("chromium")
if not CHROMIUM:
    _unavailable("Debian's chromium is not installed")
try:
    from playwright.sync_api import sync_playwright
except ImportError:
    _unavailable("the playwright package is not installed")


def pages() -> list[str]:
    chapters = re.findall(r"file: (book/\w+)", (ROOT / "_toc.yml").read_text())
    root = re.search(r"^root: (\S+)", (ROOT / "_toc.yml").read_text(), re.M).group(1)
    return ["index.html", f"{root}.html", *(f"{c}.html" for c in chapters), "search.html"]


PAGES = pages()


def _chapter(path: str) -> bool:
    return re.match(r"book/\d\d_", path) is not None


def _fresh() -> bool:
    """The built book is newer than everything it is built from."""
    index = HTML / "index.html"
    if not index.exists() or not MATHJAX.exists():
        return False
    sources = [ROOT / "_config.yml", ROOT / "_toc.yml", *(ROOT / "book").glob("*.md"),
               *(ROOT / "_ext").glob("*.py"), ROOT / "_ext" / "typeset_math.js", *(ROOT / "_ext" / "static").glob("*"),
               *(ROOT / "_ext" / "templates").rglob("*.html")]
    built = min(p.stat().st_mtime for p in [index, *(HTML / "book").glob("*.html")])
    return all(s.stat().st_mtime < built for s in sources)


@pytest.fixture(scope="module")
def site():
    """The built book, served from localhost. Builds it as `make book` does unless fresh."""
    if not MATHJAX.exists():
        proc = subprocess.run(["make", "-s", "mathjax"], cwd=ROOT, capture_output=True, text=True)
        assert proc.returncode == 0, f"could not fetch MathJax (make mathjax):\n{proc.stdout}{proc.stderr}"
    if not _fresh():
        proc = build_book()
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    # Every page's download menu links the whole-book PDF: printed once for the HTML build.
    newest_page = max(page.stat().st_mtime for page in (HTML / "book").glob("*.html"))
    if not (PDF.is_file() and PDF.stat().st_mtime >= newest_page):
        proc = subprocess.run([sys.executable, str(ROOT / "_ext" / "book_pdf.py")], cwd=ROOT, capture_output=True,
                              text=True, timeout=1800)
        assert proc.returncode == 0, f"make pdf failed:\n{(proc.stdout + proc.stderr)[-4000:]}"
    if not (HTML / PDF.name).is_file():
        shutil.copy2(PDF, HTML / PDF.name)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(HTML)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def browser():
    with sync_playwright() as p:
        try:
            chromium = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        except Exception as error:  # noqa: BLE001 - any launch failure means no browser here
            _unavailable(f"chromium does not start ({str(error).splitlines()[0]})")
        yield chromium
        chromium.close()


# How long a page may take to load before a test gives up on it: a guard against a hang, far
# beyond what a page takes on a loaded machine (the tests wait for events, not for a time).
LOAD_DEADLINE_MS = 180_000


class Visit:
    """One page opened offline, with everything that went wrong while it loaded."""

    def __init__(self, browser, site: str, path: str, width: int | None = None, typeset: bool = True):
        self.site, self.path = site, path
        self.blocked: list[str] = []
        self.failed: list[str] = []
        self.console: list[str] = []
        self.finished: list = []
        # A phone (390 px) is a touch screen; without a width, Playwright's default desktop.
        options = {} if width is None else {"viewport": {"width": width, "height": 844 if width < 992 else 900}}
        if width is not None and width < 992:
            options.update(has_touch=True, is_mobile=True, device_scale_factor=2)
        self.pending: set = set()
        self.context = browser.new_context(**options)
        # Playwright's deadline only guards against a hang: a loaded machine is slow, not wrong.
        self.context.set_default_timeout(LOAD_DEADLINE_MS)
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.console.append(f"{m.text} @ {m.location}"))
        self.page.on("pageerror", lambda e: self.console.append(f"uncaught: {e}"))
        self.page.on("request", lambda r: self.pending.add(r))
        self.page.on("requestfailed", self._failed)
        self.page.on("response", lambda r: r.status >= 400 and self.failed.append(f"{r.url}: HTTP {r.status}"))
        self.page.on("requestfinished", self._finished)
        self.page.goto(f"{site}/{path}", wait_until="load")
        self.settle()
        if not typeset:
            return
        # The formulas come typeset in the page (_ext/typeset_math.py): the fonts they use.
        self.page.evaluate("() => document.fonts.ready.then(() => true)")

    def mathjax_scripts(self) -> list[str]:
        """MathJax's scripts the page asked for (its fonts, under the same folder, are no script)."""
        return [r.url for r in self.finished if "/mathjax/" in r.url and urlsplit(r.url).path.endswith(".js")]

    def _finished(self, request) -> None:
        self.pending.discard(request)
        self.finished.append(request)

    def _failed(self, request) -> None:
        self.pending.discard(request)
        self.failed.append(f"{request.url}: {request.failure}")

    def settle(self) -> None:
        """Wait until every request the page has made has finished or failed (counted from the
        browser's events, not a quiet half-second as Playwright's "networkidle" is), its fonts
        are ready, and no request has started meanwhile."""
        deadline = time.monotonic() + LOAD_DEADLINE_MS / 1000
        # A redirecting page (the site's index.html) is settled once the page it names has loaded.
        target = self._evaluate("""() => { const m = document.querySelector('meta[http-equiv="refresh"]');
                                              return m ? new URL(m.content.split('url=')[1], location.href).href : null; }""")
        if target:
            self.page.wait_for_url(target, wait_until="load")
        while True:
            while self.pending:
                assert time.monotonic() < deadline, f"{self.path}: requests never finished: " + \
                    ", ".join(sorted(r.url for r in self.pending))[:500]
                self.page.wait_for_timeout(20)       # lets Playwright deliver the browser's events
            self._evaluate("() => document.fonts.ready.then(() => true)")
            if not self.pending:
                return

    def _evaluate(self, script: str):
        """page.evaluate, again in the next document when the page navigates meanwhile."""
        from playwright.sync_api import Error

        while True:
            try:
                return self.page.evaluate(script)
            except Error as exc:
                if "Execution context was destroyed" not in str(exc):
                    raise
                self.page.wait_for_load_state("load")

    def _route(self, route):
        host = urlsplit(route.request.url).hostname
        if route.request.url.startswith(("data:", "blob:")) or host in ("127.0.0.1", "localhost"):
            route.continue_()
        else:
            self.blocked.append(route.request.url)
            route.abort()

    def close(self):
        self.context.close()


@pytest.fixture(scope="module")
def visits(browser, site):
    opened: dict[str, Visit] = {}

    def visit(path: str, width: int | None = None) -> Visit:
        if (path, width) not in opened:
            opened[path, width] = Visit(browser, site, path, width)
        return opened[path, width]

    yield visit
    for v in opened.values():
        v.close()


@pytest.mark.parametrize("path", PAGES)
def test_page_loads_offline_without_errors(visits, path):
    v = visits(path)
    assert not v.blocked, f"{path} asks the network for: {v.blocked}"
    assert not v.failed, f"{path}: failed requests: {v.failed}"
    assert not v.console, f"{path}: console errors: {v.console}"


# The page's text outside code, as the reader sees it.
VISIBLE_TEXT = """() => {
  const skip = new Set(['PRE', 'CODE', 'SCRIPT', 'STYLE', 'TEXTAREA', 'MJX-CONTAINER', 'NOSCRIPT']);
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const out = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    let e = n.parentElement, hidden = false;
    for (; e; e = e.parentElement) if (skip.has(e.tagName)) { hidden = true; break; }
    if (!hidden) out.push(n.textContent);
  }
  return out.join(' ');
}"""


@pytest.mark.parametrize("path", PAGES)
def test_math_is_typeset(visits, path):
    v = visits(path)
    text = v.page.evaluate(VISIBLE_TEXT)
    for raw in ("\\(", "\\[", "$$", "\\frac"):
        at = text.find(raw)
        assert at < 0, f"{path}: raw TeX {raw!r} left in the page: ...{text[max(0, at - 60):at + 60]}..."
    expected = v.page.evaluate("() => document.querySelectorAll('span.math, div.math').length")
    rendered = v.page.evaluate(
        "() => document.querySelectorAll('span.math > mjx-container, div.math > mjx-container').length")
    assert rendered >= expected, f"{path}: {expected} formulas, {rendered} typeset by MathJax"
    errors = v.page.evaluate("() => document.querySelectorAll('mjx-merror, [data-mjx-error]').length")
    assert not errors, f"{path}: {errors} formulas MathJax could not typeset"
    if path.startswith("book/0") or path.startswith("book/1"):
        assert rendered > 0, f"{path}: no formula typeset"
    # Typeset when the book was built (issue 38): no page loads MathJax's script (0.76 MB).
    assert not v.mathjax_scripts(), f"{path} loads MathJax: {v.mathjax_scripts()}"
    assert not v.page.evaluate("() => !!window.MathJax"), f"{path} has MathJax running"


SCROLL_TO_EVERY_IMAGE = """async () => {
  for (const img of Array.from(document.images)) {
    if (!img.getClientRects().length) continue;  // not shown (a closed solution)
    img.scrollIntoView({block: 'center'});
    if (!img.complete) await new Promise(done => { img.addEventListener('load', done, {once: true});
                                                   img.addEventListener('error', done, {once: true}); });
  }
  window.scrollTo(0, 0);
}"""


def _describes(alt: str) -> bool:
    """A sentence, not a file name or path (the default alt text is `../_images/<hash>.png`)."""
    return len(alt.split()) >= 4 and not re.search(r"_images/|\S+\.(png|jpe?g|svg|gif)\b", alt)


@pytest.mark.parametrize("path", PAGES)
def test_images_load_and_are_described(visits, path):
    v = visits(path)
    v.page.evaluate(SCROLL_TO_EVERY_IMAGE)  # a figure loads when it is scrolled near (loading="lazy")
    images = v.page.evaluate("""() => Array.from(document.images).map(i => ({
        src: i.getAttribute('src'), alt: i.getAttribute('alt') || '', loaded: i.complete && i.naturalWidth > 0}))""")
    if _chapter(path):                 # a chapter (not the landing page, not the references)
        assert len(images) >= 2, f"{path}: fewer than two figures"
    for img in images:
        assert img["loaded"], f"{path}: image did not load: {img['src'][:120]}"
        assert _describes(img["alt"]), f"{path}: image {img['src'][:80]} has no describing alt text: {img['alt']!r}"


@functools.lru_cache(maxsize=None)
def _anchors(file: Path) -> frozenset[str]:
    soup = BeautifulSoup(file.read_text(), "html.parser")
    return frozenset(e["id"] for e in soup.select("[id]")) | frozenset(e["name"] for e in soup.select("a[name]"))


@pytest.mark.parametrize("path", PAGES)
def test_internal_links_and_anchors_resolve(visits, site, path):
    v = visits(path)
    hrefs = v.page.evaluate("() => Array.from(document.querySelectorAll('a[href]')).map(a => a.href)")
    checked = 0
    for href in hrefs:
        if not href.startswith(site + "/"):
            continue  # a link out of the book (a paper, a repository) is not loaded by reading it
        parts = urlsplit(href)
        target = HTML / unquote(parts.path).lstrip("/")
        if target.is_dir():
            target = target / "index.html"
        assert target.is_file(), f"{path}: link to a missing file: {href}"
        if parts.fragment and target.suffix == ".html":
            assert unquote(parts.fragment) in _anchors(target), f"{path}: link to a missing anchor: {href}"
        checked += 1
    assert checked > 0, f"{path}: no internal link found"


def test_search_finds_softmax(browser, site):
    v = Visit(browser, site, "search.html?q=softmax")
    try:
        v.page.wait_for_selector("#search-results ul.search li", timeout=30_000)
        hits = v.page.locator("#search-results ul.search li").count()
        assert hits >= 3, f"the search for softmax found {hits} pages"
        assert not v.blocked and not v.failed and not v.console, (v.blocked, v.failed, v.console)
    finally:
        v.close()


def test_causal_mask_animation_steps(visits):
    """Chapter 08's matplotlib animation: the next-frame button changes the frame."""
    v = visits("book/08_masking.html")
    frame = v.page.locator("img[id^='_anim_img']")
    before = frame.get_attribute("src")
    v.page.locator("button[title='Next frame']").first.click()
    v.page.wait_for_function("(s) => document.querySelector(\"img[id^='_anim_img']\").src !== s", arg=before)
    assert frame.get_attribute("src") != before


def _move_slider(v: Visit, figure: str, value: int) -> None:
    slider = v.page.locator(f"#{figure} input[type=range]")
    slider.evaluate("(s, value) => { s.value = value; s.dispatchEvent(new Event('input', {bubbles: true})); }", value)


def _bars(v: Visit, figure: str, attribute: str) -> list[float]:
    return [float(x) for x in v.page.locator(f"#{figure} svg rect").evaluate_all(
        f"rects => rects.map(r => r.getAttribute('{attribute}')).filter(x => x !== null)")]


def test_softmax_saturation_slider(visits):
    """Chapter 06: widening d_k sharpens the unscaled softmax; the scaled one stays spread."""
    v = visits("book/06_scaling.html")
    _move_slider(v, "softmax-saturation", 0)
    narrow = _bars(v, "softmax-saturation", "data-weight")
    assert len(narrow) == 16 and v.page.locator("#softmax-saturation output").inner_text() == "1"
    _move_slider(v, "softmax-saturation", 10)
    wide = _bars(v, "softmax-saturation", "data-weight")
    assert v.page.locator("#softmax-saturation output").inner_text() == "1024"
    assert wide != narrow
    assert max(wide[:8]) > 0.95 > max(narrow[:8]), "the unscaled softmax saturates at d_k = 1024"
    assert max(wide[8:]) < 0.9, "the scaled softmax stays spread out"


def test_query_row_slider(visits):
    """Chapter 03: choosing another query shows its weights and its new vector."""
    v = visits("book/03_self_attention_basics.html")
    _move_slider(v, "query-row", 0)
    first = (v.page.locator("#query-row output").inner_text(), _bars(v, "query-row", "data-weight"),
             _bars(v, "query-row", "data-value"))
    _move_slider(v, "query-row", 4)
    second = (v.page.locator("#query-row output").inner_text(), _bars(v, "query-row", "data-weight"),
              _bars(v, "query-row", "data-value"))
    assert first[0].startswith("money") and second[0].startswith("bank (in 'river")
    assert len(second[1]) == 3 and abs(sum(second[1]) - 1) < 1e-2, "a row of weights sums to 1"
    assert first[1] != second[1] and first[2] != second[2], "the figure did not change with the query"


@pytest.mark.parametrize("path", [p for p in PAGES if p.startswith("book/") and p != "book/references.html"])
def test_page_header_title_what_you_will_learn_and_download(visits, path):
    """Each page: the book's title, a "What you will learn" box before its first section, and
    the notebook download; each chapter also links its exercise notebook."""
    v = visits(path)
    title = re.search(r"^title: \"?([^\"\n]+)", (ROOT / "_config.yml").read_text(), re.M).group(1)
    assert v.page.locator(".navbar-brand .logo__title").first.inner_text().strip() == title
    assert title in v.page.title()
    if not (_chapter(path) or path == "book/index.html"):
        return                          # back matter (the references): no lesson, no notebook
    learn = v.page.locator("article .admonition", has_text="What you will learn").first
    assert learn.count() and learn.locator("li").count() >= 3, f"{path}: no 'What you will learn' box"
    assert learn.evaluate("""box => { const h2 = document.querySelector('article section section h2');
        return !h2 || !!(box.compareDocumentPosition(h2) & Node.DOCUMENT_POSITION_FOLLOWING); }"""), \
        f"{path}: 'What you will learn' is not at the top"
    if path != "book/index.html":
        stem = Path(path).stem
        download = v.page.locator(f".dropdown-download-buttons a[href$='_sources/book/{stem}.ipynb']")
        assert download.count(), f"{path}: the download menu does not offer the notebook"
        assert (HTML / "_sources" / "book" / f"{stem}.ipynb").is_file()
        assert v.page.locator(f"article a[href$='{stem}.ipynb']").count(), f"{path}: no link to its exercise notebook"


def test_landing_page_says_who_what_and_how_to_start(visits):
    text = visits("book/index.html").page.locator("article").inner_text()
    for needed in ("Who it is for", "assumes", "How to start", "As a reader", "As a student", "As an instructor"):
        assert needed in text, f"the landing page does not say {needed!r}"


# ---- The book on every screen (issue 28): a phone (390 px) and a desktop (1280 px) ----------

PHONE = 390
CHAPTERS = [p for p in PAGES if re.match(r"book/\d\d_", p)]


def _shown(v: Visit, selector: str) -> bool:
    return v.page.evaluate("""(sel) => { const e = document.querySelector(sel); if (!e) return false;
        const s = getComputedStyle(e), r = e.getBoundingClientRect();
        return s.visibility !== 'hidden' && s.display !== 'none' && +s.opacity > 0.05 && r.width > 0 && r.right > 0; }""",
                           selector)


@pytest.mark.parametrize("path", [p for p in PAGES if p.startswith("book/")])
def test_phone_menus_open_and_close(visits, path):
    """Below 992 px the chapter menu and "On this page" open as dialogs from the buttons a
    reader sees (the themes bound their handlers to hidden copies: pydata-sphinx-theme #2451,
    sphinx-book-theme #988), and close again (Escape, or a tap beside the dialog)."""
    v = visits(path, PHONE)
    page = v.page
    menus = [(".primary-toggle", "#pst-primary-sidebar-modal", "nav.bd-docs-nav a", PHONE - 8)]
    if page.locator("#pst-secondary-sidebar nav.page-toc a").count():
        menus.append((".secondary-toggle", "#pst-secondary-sidebar-modal", "nav.page-toc a", 8))
    for toggle, dialog, links, beside in menus:
        buttons = [b for b in page.locator(toggle).all() if b.is_visible()]
        assert len(buttons) == 1, f"{path}: {len(buttons)} visible {toggle} buttons at {PHONE} px"
        for close in ("escape", "tap beside"):
            buttons[0].tap()
            page.wait_for_function("(d) => document.querySelector(d).open", arg=dialog, timeout=5_000)
            shown = page.locator(f"{dialog} {links}")
            assert shown.count() >= 3 and shown.first.is_visible(), f"{path}: {dialog} opened empty"
            if close == "escape":
                page.keyboard.press("Escape")
            else:
                page.mouse.click(beside, 400)
            page.wait_for_function("(d) => !document.querySelector(d).open", arg=dialog, timeout=5_000)


@pytest.mark.parametrize("path", [p for p in PAGES if p.startswith("book/")])
def test_desktop_menu_button_hides_and_shows_the_sidebar(visits, path):
    v = visits(path)
    assert v.page.viewport_size["width"] >= 1200
    button = [b for b in v.page.locator(".primary-toggle").all() if b.is_visible()]
    assert len(button) == 1, f"{path}: {len(button)} visible chapter-menu buttons at 1280 px"
    assert _shown(v, "#pst-primary-sidebar"), f"{path}: the sidebar is not shown at first"
    button[0].click()
    v.page.wait_for_timeout(600)  # the theme's transition
    assert not _shown(v, "#pst-primary-sidebar"), f"{path}: the menu button did not hide the sidebar"
    button[0].click()
    v.page.wait_for_timeout(600)
    assert _shown(v, "#pst-primary-sidebar"), f"{path}: the menu button did not show the sidebar again"
    assert not v.page.locator("#pst-header").is_visible(), f"{path}: the empty top bar is back"


@pytest.mark.parametrize("path", [p for p in PAGES if p.startswith("book/")])
def test_no_page_is_wider_than_a_phone(visits, path):
    v = visits(path, PHONE)
    width = v.page.evaluate("() => [document.scrollingElement.scrollWidth, innerWidth]")
    if width[0] > width[1]:
        culprits = v.page.evaluate("""() => Array.from(document.querySelectorAll('article *'))
            .filter(e => e.getBoundingClientRect().right > innerWidth + 1 && !e.closest('.cell_output, table, .math'))
            .slice(0, 3).map(e => e.tagName + ': ' + (e.textContent || '').trim().slice(0, 60))""")
        pytest.fail(f"{path} is {width[0]} px wide on a {width[1]} px screen: {culprits}")


# Every pre of the page: code cells, their outputs, and the Markdown/bash code blocks of the prose.
CODE_BLOCKS = """() => Array.from(document.querySelectorAll('pre'))
    .map((p, i) => ({kind: p.closest('div.cell_output') ? 'output' : p.closest('div.cell_input') ? 'code cell'
                           : 'code block', overflow: p.scrollWidth - p.clientWidth,
                     line: p.textContent.split('\\n').reduce((a, b) => b.length > a.length ? b : a, '').slice(0, 100)}))"""


def test_79_characters_fit_the_code_column(visits):
    """The house rule is 79 characters a line: the code font leaves room for them at 1280 px."""
    v = visits("book/03_self_attention_basics.html")
    spare = v.page.evaluate("""() => { const pre = document.querySelector('div.cell_input pre');
        const probe = pre.cloneNode(false); probe.textContent = 'x'.repeat(79);
        pre.parentElement.appendChild(probe); const spare = probe.clientWidth - probe.scrollWidth;
        probe.remove(); return spare; }""")
    assert spare >= 0, "a 79-character line scrolls in a code cell at 1280 px"


@pytest.mark.parametrize("path", PAGES)
def test_no_code_scrolls_sideways(visits, path):
    """At 1280 px no pre scrolls sideways: code cells, outputs, and the prose's code blocks (the
    `autograder check` commands) alike. (At 390 px a pre may scroll inside its own box; the
    page may not get wider: test_no_page_is_wider_than_a_phone.)"""
    blocks = visits(path).page.evaluate(CODE_BLOCKS)
    wide = [b for b in blocks if b["overflow"] > 1]
    assert not wide, (f"{path}: {len(wide)} of {len(blocks)} code blocks scroll sideways at 1280 px, "
                      + "; ".join(f"{b['kind']}: {b['line']!r}" for b in wide[:3]))


@pytest.mark.parametrize("path", CHAPTERS)
def test_every_figure_opens_full_size(visits, path):
    images = visits(path).page.evaluate("""() => Array.from(document.querySelectorAll('div.cell_output img'))
        .filter(i => !(i.id || '').startsWith('_anim_img'))
        .map(i => ({src: i.src, link: i.closest('a') ? i.closest('a').href : null}))""")
    assert images, f"{path}: no figure"
    for img in images:
        assert img["link"] == img["src"], f"{path}: {img['src'][-70:]} is not a link to its image file"


@pytest.mark.parametrize("path", [p for p in PAGES if p.startswith("book/")])
def test_formulas_are_not_tab_stops_but_are_read_aloud(visits, path):
    v = visits(path)
    stops = v.page.evaluate("""() => Array.from(document.querySelectorAll('mjx-container'))
        .filter(m => m.tabIndex >= 0 || m.querySelector('[tabindex]:not([tabindex="-1"])')).length""")
    assert stops == 0, f"{path}: {stops} formulas are Tab stops"
    unread = v.page.evaluate("""() => Array.from(document.querySelectorAll('mjx-container'))
        .filter(m => !m.querySelector('mjx-assistive-mml math')).length""")
    assert unread == 0, f"{path}: {unread} formulas have no MathML for screen readers"


@pytest.mark.parametrize("path", CHAPTERS)
def test_self_checks_are_named_apart_from_the_exercise(visits, path):
    """sphinx-exercise blocks read "Self-check N.M" (titles, solutions and every reference); the
    graded exercise keeps the name "Exercise"."""
    v = visits(path)
    number = int(Path(path).stem[:2])
    titles = v.page.locator("article div.exercise > p.admonition-title").all_inner_texts()
    assert titles, f"{path}: no self-check"
    for title in titles:
        assert re.match(rf"Self-check {number}\.\d+\b", title.strip()), f"{path}: a self-check titled {title!r}"
    prose = v.page.locator("article p:not(.admonition-title), article li").all_inner_texts()
    text = re.sub(r"\s+", " ", " ".join(prose))
    for bad in (rf"Exercise {number}\.\d+", r"\b[Ee]xercises? Self-check", r"\b[Ss]elf-checks? Self-check"):
        found = re.search(bad, text)
        assert not found, f"{path}: reads {text[max(0, found.start() - 40):found.end() + 20]!r}"


@pytest.mark.parametrize("path", CHAPTERS)
def test_download_menu_offers_exercise_notebook_and_book_pdf(visits, path):
    v = visits(path)
    stem = Path(path).stem
    menu = v.page.locator(".dropdown-download-buttons")
    exercise = menu.locator("a", has_text=f"{stem}.ipynb (exercise)")
    assert exercise.count() == 1, f"{path}: the download menu does not offer {stem}.ipynb (exercise)"
    href = urlsplit(exercise.first.evaluate("a => a.href")).path
    assert (HTML / unquote(href).lstrip("/")).is_file() and href.endswith(f"/{stem}.ipynb")
    pdf = menu.locator("a", has_text="book.pdf")
    assert pdf.count() == 1 and pdf.first.evaluate("a => a.href").endswith("/book.pdf")
    assert not menu.locator("button[onclick*='print']").count(), f"{path}: '.pdf' still only prints"


FIGURES = """() => Array.from(document.querySelectorAll('article figure, article div.cell_output img'))
    .map(e => e.tagName === 'FIGURE' ? e : (e.closest('figure') || e))
    .filter((e, i, all) => all.indexOf(e) === i)
    .map(f => ({id: f.id || (f.querySelector('[id]') || {}).id || '', tag: f.tagName,
                caption: f.tagName === 'FIGURE' && f.querySelector('figcaption') ? f.querySelector('figcaption').innerText : '',
                refs: f.id ? Array.from(document.querySelectorAll('article a.reference.internal'))
                  .filter(a => !f.contains(a) && a.hash === '#' + f.id).length : 0,
                src: (f.querySelector('img') || f).getAttribute('src') || ''}))"""


@pytest.mark.parametrize("path", CHAPTERS)
def test_every_figure_has_a_numbered_caption_and_a_reference(visits, path):
    """Every figure (each image a cell draws, each captioned interactive output) is a numbered
    figure, "Fig. N.M" with N the chapter, and the text refers to it at least once ({numref})."""
    number = int(Path(path).stem[:2])
    figures = visits(path).page.evaluate(FIGURES)
    assert figures, f"{path}: no figure"
    for f in figures:
        what = f["id"] or f["src"][-60:]
        assert f["tag"] == "FIGURE", f"{path}: a figure with no caption ({what})"
        assert re.match(rf"Fig\. {number}\.\d+\b", f["caption"].strip()), \
            f"{path}: figure {what} is captioned {f['caption'][:60]!r}, not 'Fig. {number}.M ...'"
        assert f["refs"] >= 1, f"{path}: nothing in the text refers to {f['caption'][:12]!r} ({what})"


# "Vaswani et al. (2017)", "(Bahdanau et al., 2015)", "Luong and Manning 2015": an author-year
# citation written as text. Linked citations (sphinxcontrib-bibtex) are links and are removed
# from the text first.
AUTHOR_YEAR = re.compile(r"\b[A-Z][\w'’-]+(?:\s+et\s+al\.?|\s+(?:and|&)\s+[A-Z][\w'’-]+),?\s*\(?(?:19|20)\d\d[a-z]?\b"
                         r"|\b[A-Z][\w'’-]+(?:,\s*|\s+\()(?:19|20)\d\d[a-z]?\b")
UNLINKED_TEXT = """() => { const article = document.querySelector('article').cloneNode(true);
    article.querySelectorAll('a, pre, code, mjx-container, .cell_output, script, style').forEach(e => e.remove());
    return article.textContent.replace(/\\s+/g, ' '); }"""


@pytest.mark.parametrize("path", CHAPTERS)
def test_every_citation_links_to_the_bibliography(visits, path):
    v = visits(path)
    text = v.page.evaluate(UNLINKED_TEXT)
    found = AUTHOR_YEAR.search(text)
    assert not found, (f"{path}: an author-year citation without a link: "
                       f"...{text[max(0, found.start() - 50):found.end() + 10]}...")
    cites = v.page.evaluate("""() => Array.from(document.querySelectorAll('article .bibtex-citation a'))
        .map(a => a.href)""")
    for href in cites:
        parts = urlsplit(href)
        target = HTML / unquote(parts.path).lstrip("/")
        assert target.name == "references.html" and parts.fragment in _anchors(target), \
            f"{path}: a citation links to {href}, not to an entry of the bibliography"


def _pdftotext() -> str:
    if not shutil.which("pdftotext"):
        if CI:
            pytest.fail("pdftotext is missing under CI (make poppler)", pytrace=False)
        pytest.skip("pdftotext is not installed (make test installs poppler-utils)")
    return subprocess.run(["pdftotext", "-enc", "UTF-8", str(PDF), "-"], capture_output=True, text=True,
                          check=True).stdout


def test_whole_book_pdf(site):
    """make pdf: one PDF with every chapter's title, its contents and no raw TeX, served with
    the HTML book (every page's download menu links it)."""
    assert (HTML / PDF.name).is_file() and (HTML / PDF.name).stat().st_size == PDF.stat().st_size
    text = re.sub(r"\s+", " ", _pdftotext())
    for raw in ("\\frac", "\\sqrt", "$$", "\\(", "\\["):
        at = text.find(raw)
        assert at < 0, f"raw TeX {raw!r} in the PDF: ...{text[max(0, at - 60):at + 60]}..."
    contents = text.find("Contents")
    assert contents >= 0, "the PDF has no table of contents"
    for chapter in CHAPTERS:
        soup = BeautifulSoup((HTML / chapter).read_text(), "html.parser")
        h1 = soup.select_one("article h1")
        for math in h1.select(".math, .headerlink"):
            math.decompose()
        title = re.sub(r"\s+", " ", h1.get_text()).strip()
        assert text.count(title) >= 2, f"the PDF lacks chapter {title!r} (in its contents and as a heading)"


@pytest.mark.parametrize("path", CHAPTERS)
def test_sliders_are_slim_with_a_touch_sized_hit_area(visits, path):
    """Every slider (chapters 03 and 06) keeps the browser's slim track and is at least 24 px
    tall on a phone, where a finger taps it."""
    sliders = visits(path, PHONE).page.evaluate("""() => Array.from(document.querySelectorAll(
        'article input[type=range]')).map(s => ({id: s.id, height: s.getBoundingClientRect().height,
        appearance: getComputedStyle(s).appearance}))""")
    for s in sliders:
        assert s["height"] >= 24, f"{path}: slider #{s['id']} is {s['height']:.0f} px tall (at least 24 px)"
        assert s["appearance"] == "auto", f"{path}: slider #{s['id']} is restyled ({s['appearance']})"


# Each figure on a phone, scrolled into view and loaded: what the reader gets without swiping.
PHONE_FIGURES = """async () => {
  const column = document.querySelector('article.bd-article') || document.querySelector('article');
  const box = column.getBoundingClientRect();
  const out = [];
  for (const img of Array.from(column.querySelectorAll('img'))) {
    if (!img.getClientRects().length) continue;  // not shown (a closed solution)
    img.scrollIntoView({block: 'center'});
    if (!img.complete) await new Promise(done => { img.addEventListener('load', done, {once: true});
                                                   img.addEventListener('error', done, {once: true}); });
    const r = img.getBoundingClientRect();
    let scroller = null;
    for (let e = img.parentElement; e && e !== column; e = e.parentElement)
      if (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible') { scroller = e; break; }
    const source = img.parentElement.tagName === 'PICTURE' ? img.parentElement.querySelector('source') : null;
    out.push({src: (img.getAttribute('src') || '').slice(-40), current: img.currentSrc, loaded: img.naturalWidth > 0,
              left: r.left - box.left, right: box.right - r.right, width: r.width, column: box.width,
              scroller: scroller ? scroller.tagName + '.' + scroller.className : null,
              phone: source ? new URL(source.srcset.split(' ')[0], location.href).href : null});
  }
  return out;
}"""


@pytest.mark.parametrize("path", CHAPTERS)
def test_every_figure_is_whole_on_a_phone(visits, path):
    """At 390 px every figure is shown whole: its image no wider than the text column and
    inside it, in no box that scrolls sideways, and, where it has a phone version (a
    <picture>), that version is the one loaded (tests/book/test_book.py checks its labels)."""
    figures = visits(path, PHONE).page.evaluate(PHONE_FIGURES)
    assert figures, f"{path}: no figure"
    for f in figures:
        assert f["loaded"], f"{path}: {f['src']} did not load"
        assert f["scroller"] is None, f"{path}: {f['src']} is in a box that scrolls sideways ({f['scroller']})"
        assert f["width"] <= f["column"] + 0.5 and f["left"] >= -0.5 and f["right"] >= -0.5, \
            f"{path}: {f['src']} is {f['width']:.0f} px wide in a {f['column']:.0f} px column (left {f['left']:.0f})"
        if f["phone"]:
            assert f["current"] == f["phone"], f"{path}: a phone loads {f['current'][-40:]}, not the phone version"
    width = visits(path, PHONE).page.evaluate("() => [document.scrollingElement.scrollWidth, innerWidth]")
    assert width[0] <= width[1], f"{path} is {width[0]} px wide on a {width[1]} px screen"


# Every self-check solution opened, as a reader opens them: sphinx-togglebutton hides each one
# behind its title until clicked. What a closed solution holds is never looked at otherwise.
OPEN_SOLUTIONS = """() => {
  for (const b of document.querySelectorAll('div.solution button.toggle-button'))
    if (b.getAttribute('aria-expanded') !== 'true') b.click();
  return Array.from(document.querySelectorAll('div.solution')).map(s => {
    const body = Array.from(s.children).filter(c => !c.classList.contains('admonition-title'));
    return body.length > 0 && body.every(c => c.checkVisibility());
  });
}"""


@pytest.fixture(scope="module")
def solutions_open(browser, site):
    """A page with every solution clicked open (its own browser context, so the other tests
    still see the page as it loads); each solution must then be visible."""
    opened: dict[tuple[str, int | None], Visit] = {}

    def visit(path: str, width: int | None = None) -> Visit:
        if (path, width) not in opened:
            v = opened[path, width] = Visit(browser, site, path, width)
            shown = v.page.evaluate(OPEN_SOLUTIONS)
            assert all(shown), f"{path}: {shown.count(False)} of {len(shown)} solutions stay closed after a click"
            v.solutions = len(shown)
        return opened[path, width]

    yield visit
    for v in opened.values():
        v.close()


# TeX a reader should never see as text: a command (\log, \le, \sum), a sub- or superscript
# group, a dollar sign; the text of formulas MathJax typeset (mjx-container) and of code is not
# read.
RAW_TEX = re.compile(r"\\[A-Za-z]{2,}|\\[()\[\]]|[_^]\{|\$")


@pytest.mark.parametrize("path", CHAPTERS)
def test_no_raw_tex_with_every_solution_open(solutions_open, path):
    v = solutions_open(path)
    assert v.solutions > 0, f"{path}: no self-check solution"
    text = v.page.evaluate(VISIBLE_TEXT)
    found = [m for m in RAW_TEX.finditer(text)]
    assert not found, (f"{path}: raw TeX with the solutions open, {len(found)} times, first "
                       f"{found[0].group()!r}: ...{text[max(0, found[0].start() - 80):found[0].end() + 60]}...")
    errors = v.page.evaluate("() => document.querySelectorAll('mjx-merror, [data-mjx-error]').length")
    assert not errors, f"{path}: {errors} formulas MathJax could not typeset"


# A formula cut on a phone: some of it lies outside a box that clips it (overflow hidden or
# clip) or outside the screen, and no box between the formula and that edge scrolls.
FORMULAS_CUT = """() => {
  const cut = [];
  const width = document.documentElement.clientWidth;
  for (const m of document.querySelectorAll('article mjx-container')) {
    const r = m.getBoundingClientRect();
    if (!m.checkVisibility() || r.width === 0) continue;
    let reachable = false, clippedBy = null, edge = {left: 0, right: width};
    for (let e = m.parentElement; e && e !== document.body; e = e.parentElement) {
      const s = getComputedStyle(e), b = e.getBoundingClientRect();
      if (['auto', 'scroll'].includes(s.overflowX) && e.scrollWidth > e.clientWidth - 1) { reachable = true; break; }
      if (['hidden', 'clip'].includes(s.overflowX) && (r.right > b.right + 1 || r.left < b.left - 1)) {
        clippedBy = e.tagName.toLowerCase() + '.' + Array.from(e.classList).join('.'); edge = b; break; }
    }
    if (!reachable && (clippedBy || r.right > width + 1 || r.left < -1))
      cut.push({text: (m.querySelector('mjx-assistive-mml') || m).textContent.slice(0, 60),
                over: Math.round(Math.max(r.right - edge.right, edge.left - r.left)), box: clippedBy || 'the screen',
                solution: !!m.closest('div.solution')});
  }
  return cut;
}"""


@pytest.mark.parametrize("path", CHAPTERS)
def test_no_formula_is_cut_on_a_phone_with_every_solution_open(solutions_open, path):
    """At 390 px, every formula, in the text and in every opened solution, is either whole on
    the screen or inside a box the reader can scroll sideways."""
    cut = solutions_open(path, PHONE).page.evaluate(FORMULAS_CUT)
    assert not cut, f"{path}: {len(cut)} formulas cut at {PHONE} px: " + "; ".join(
        f"{c['text']!r} ({'solution' if c['solution'] else 'text'}, {c['over']} px past {c['box']})" for c in cut[:4])


# ---- Light pages (issue 38): what a page costs to open ------------------------------------

# Bytes a page may transfer, once loaded, before the reader scrolls (issue 38; each page loaded
# 3.5-5.3 MB before it): 1.5 MB at most on any page. The formulas come typeset in the page
# (_ext/typeset_math.py) with the MathJax fonts they use; no page loads MathJax's script (a page
# with a formula in view loaded 0.76 MB of it, and weighed 1.85-2.17 MB).
PAGE_BUDGET = 1_500_000


def _transferred(v: Visit) -> list[tuple[int, str]]:
    """Every request the page made, as (bytes on the wire: headers and encoded body, path)."""
    rows = []
    for request in v.finished:
        sizes = request.sizes()
        rows.append((sizes["responseBodySize"] + sizes["responseHeadersSize"], urlsplit(request.url).path))
    return sorted(rows, reverse=True)


@pytest.fixture(scope="module")
def page_weights(browser, site) -> dict[str, list[tuple[int, str]]]:
    """Each page opened once at 1280 px with an empty cache and left to load: the scripts and
    styles it asks for, the fonts its text and formulas need, the figures in view (the rest
    load as they are scrolled near). The table goes to _build/page_weights.txt."""
    weights = {}
    for path in PAGES:
        v = Visit(browser, site, path, width=1280, typeset=False)
        try:
            v.settle()
            assert not v.blocked and not v.failed, (path, v.blocked, v.failed)
            weights[path] = _transferred(v)
        finally:
            v.close()
    kinds = {"script": (".js",), "style": (".css",), "font": (".woff", ".woff2", ".ttf"), "image": (".png", ".svg")}
    lines = [f"{'page':<34} {'total':>9} " + " ".join(f"{k:>8}" for k in kinds) + "  largest request"]
    for path, rows in weights.items():
        per_kind = [sum(b for b, url in rows if url.endswith(ends)) for ends in kinds.values()]
        lines.append(f"{path:<34} {sum(b for b, _ in rows) / 1e6:8.2f}M "
                     + " ".join(f"{b / 1e6:7.2f}M" for b in per_kind) + f"  {rows[0][1]} {rows[0][0] / 1e6:.2f}M")
    (ROOT / "_build" / "page_weights.txt").write_text("\n".join(lines) + "\n")
    print("\n" + "\n".join(lines))
    return weights


@pytest.mark.parametrize("path", PAGES)
def test_page_is_light(page_weights, path):
    rows = page_weights[path]
    total = sum(b for b, _ in rows)
    budget = PAGE_BUDGET
    assert not any(url.endswith("fontawesome.js") for _, url in rows), f"{path} still loads fontawesome.js"
    assert not any("/mathjax/" in url and url.endswith(".js") for _, url in rows), f"{path} loads MathJax"
    assert total <= budget, (f"{path} transfers {total / 1e6:.2f} MB once loaded (at most {budget / 1e6:.2f} "
                             "MB); largest: " + "; ".join(f"{url} {b / 1e6:.2f} MB" for b, url in rows[:4]))


ICONS = """async () => {
  await document.fonts.ready;
  return Array.from(document.querySelectorAll('[class*="fa-"]'))
    .filter(e => e.getClientRects().length && !e.closest('.cell_output'))
    .map(e => { const before = getComputedStyle(e, '::before');
                return {classes: e.className, glyph: before.content, font: before.fontFamily,
                        width: e.getBoundingClientRect().width}; });
}"""


@pytest.mark.parametrize("width", [PHONE, 1280])
@pytest.mark.parametrize("path", ["book/index.html", "book/03_self_attention_basics.html", "search.html"])
def test_every_icon_has_a_glyph(visits, path, width):
    """The theme's icons come from its icon font (no fontawesome.js): every icon a reader sees
    (menu, contents, download, full screen, search, light/dark) has a glyph of that font."""
    v = visits(path, None if width == 1280 else width)
    icons = v.page.evaluate(ICONS)
    assert len(icons) >= 3, f"{path}: {len(icons)} icons shown"
    for icon in icons:
        assert icon["glyph"] not in ("none", "normal", '""') and "Font Awesome" in icon["font"] and icon["width"] > 4, \
            f"{path} at {width} px: an icon without a glyph: {icon}"
    assert v.page.evaluate("""() => document.fonts.check('900 16px "Font Awesome 6 Free"')""")
    assert not v.page.evaluate("() => Array.from(document.scripts).filter(s => /fontawesome/.test(s.src)).length")


def test_formulas_are_typeset_in_the_page_as_built(site):
    """Every formula of every page is typeset in the HTML file itself (_ext/typeset_math.py):
    MathJax's output and its MathML inside each of Sphinx's formula elements, no TeX left for
    a browser to typeset, no MathJax script or configuration, and the page's own stylesheet
    of MathJax's characters (its fonts served from the site)."""
    total = 0
    for path in PAGES:
        soup = BeautifulSoup((HTML / path).read_text(encoding="utf-8"), "html.parser")
        assert not soup.select('script[src*="mathjax"]'), f"{path} loads MathJax's script"
        assert not any("MathJax" in (s.string or "") for s in soup.find_all("script")), f"{path} configures MathJax"
        formulas = soup.select("span.math, div.math")
        for formula in formulas:
            container = formula.find("mjx-container", recursive=False)
            assert container is not None and container.find("mjx-assistive-mml").find("math"), \
                f"{path}: a formula not typeset: {formula.get_text()[:80]!r}"
            for spoken in container.find_all("mjx-assistive-mml") + formula.select(".eqno"):
                spoken.extract()
            shown = formula.get_text()
            assert not RAW_TEX.search(shown), f"{path}: TeX left in a formula: {shown[:80]!r}"
        if formulas:
            style = soup.find("style", id="mathjax-styles")
            assert style and "@font-face" in style.string and "mjx-c" in style.string, f"{path}: no MathJax stylesheet"
            # Each font it names is there, with every character the page draws that MathJax's
            # own font of that name has.
            contents = re.findall(r'content: ?"\\([0-9A-Fa-f]{1,6}) ?"|content: ?"(.)"', style.string)
            drawn = {chr(int(code, 16)) if code else char for code, char in contents}
            for font in re.findall(r'url\("([^"]+\.woff)"\)', style.string):
                served = (HTML / path).parent.joinpath(font).resolve()
                assert served.is_file(), f"{path}: font {font} missing"
                full = TTFont(ROOT / "_vendor" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2" / served.name)
                lacking = {c for c in drawn if ord(c) in full.getBestCmap()} - set(map(chr, TTFont(served).getBestCmap() or {}))
                assert not lacking, f"{path}: {served.name} lacks {sorted(lacking)}"
        total += len(formulas)
    assert total > 1000, f"{total} formulas in the whole book"
    scripts = [p.relative_to(HTML) for p in (HTML / "_static").rglob("*.js") if "mathjax" in str(p).lower()]
    assert not scripts, f"the site serves MathJax's scripts: {scripts[:3]}"


def test_a_tex_error_fails_the_build(tmp_path):
    """A formula MathJax cannot typeset stops the build with the page and the formula (never a
    page shipped with raw TeX or MathJax's red error box); a sound one is typeset in place."""
    sys.path.insert(0, str(ROOT / "_ext"))
    import typeset_math

    page = ('<html><head></head><body><p>Fine <span class="math notranslate nohighlight">\\(a^2\\)</span>, '
            'broken <span class="math notranslate nohighlight">\\(\\frac{1}{\\)</span></p></body></html>')
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "bad.html").write_text(page)
    with pytest.raises(typeset_math.TeXError, match=r"book/bad\.html: Missing close brace in '\\\\frac\{1\}\{'"):
        typeset_math.typeset_site(tmp_path, MATHJAX.parent)
    (tmp_path / "book" / "bad.html").write_text(page.replace("\\frac{1}{", "\\frac{1}{2}"))
    assert typeset_math.typeset_site(tmp_path, MATHJAX.parent) == (1, 2)
    typeset = (tmp_path / "book" / "bad.html").read_text()
    assert typeset.count("<mjx-container") == 2 and "\\(" not in typeset and "<msup><mi>a</mi><mn>2</mn></msup>" in typeset
    assert '<span class="math notranslate nohighlight"><mjx-container' in typeset
    # The fonts, cut down to the characters used: "a" and "2" drawn, "Z" not.
    fonts = re.findall(r'url\("(\.\./_static/mathjax-fonts/[0-9a-f]{10}/MathJax_[\w-]+\.woff)"\)', typeset)
    assert any(f.endswith("/MathJax_Main-Regular.woff") for f in fonts), fonts
    cmaps = {f: TTFont(tmp_path / "book" / f).getBestCmap() or {} for f in fonts}
    assert any(ord("a") in c for c in cmaps.values()) and all(ord("Z") not in c for c in cmaps.values()), cmaps
    assert ord("2") in cmaps[next(f for f in fonts if f.endswith("/MathJax_Main-Regular.woff"))]


FORMULA_COLOURS = """() => {
  const m = document.querySelector('article p span.math mjx-c');
  const p = m.closest('p');
  return {formula: getComputedStyle(m, '::before').color, text: getComputedStyle(p).color};
}"""


def test_formulas_follow_light_and_dark_mode(browser, site):
    """A formula is drawn in the colour of the text around it, in light and in dark mode."""
    seen = {}
    for mode in ("light", "dark"):
        v = Visit(browser, site, "book/04_seq2seq_attention.html", width=1280, typeset=False)
        try:
            # The theme's own light/dark switch keeps the reader's choice in localStorage.
            v.page.evaluate("m => localStorage.setItem('mode', m)", mode)
            v.page.reload(wait_until="networkidle")
            assert v.page.evaluate("() => document.documentElement.dataset.theme") == mode
            seen[mode] = v.page.evaluate(FORMULA_COLOURS)
        finally:
            v.close()
        assert seen[mode]["formula"] == seen[mode]["text"], (mode, seen[mode])
    assert seen["light"]["text"] != seen["dark"]["text"], seen
