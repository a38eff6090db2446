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
import threading
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from bs4 import BeautifulSoup

from tests.conftest import ROOT, build_book

HTML = ROOT / "_build" / "html"
MATHJAX = ROOT / "_vendor" / "mathjax" / "tex-mml-chtml.js"

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
               *(ROOT / "_ext").glob("*.py")]
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


class Visit:
    """One page opened offline, with everything that went wrong while it loaded."""

    def __init__(self, browser, site: str, path: str):
        self.site, self.path = site, path
        self.blocked: list[str] = []
        self.failed: list[str] = []
        self.console: list[str] = []
        self.context = browser.new_context()
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda m: m.type == "error" and self.console.append(f"{m.text} @ {m.location}"))
        self.page.on("pageerror", lambda e: self.console.append(f"uncaught: {e}"))
        self.page.on("requestfailed", lambda r: self.failed.append(f"{r.url}: {r.failure}"))
        self.page.on("response", lambda r: r.status >= 400 and self.failed.append(f"{r.url}: HTTP {r.status}"))
        self.page.goto(f"{site}/{path}", wait_until="networkidle")
        if self.page.evaluate("() => !!window.MathJax"):
            self.page.wait_for_function("() => window.MathJax.startup && window.MathJax.startup.promise")
            self.page.evaluate("() => window.MathJax.startup.promise.then(() => true)")

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

    def visit(path: str) -> Visit:
        if path not in opened:
            opened[path] = Visit(browser, site, path)
        return opened[path]

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
    rendered = v.page.evaluate("() => document.querySelectorAll('mjx-container').length")
    assert rendered >= expected, f"{path}: {expected} formulas, {rendered} typeset by MathJax"
    errors = v.page.evaluate("() => document.querySelectorAll('mjx-merror, [data-mjx-error]').length")
    assert not errors, f"{path}: {errors} formulas MathJax could not typeset"
    if path.startswith("book/0") or path.startswith("book/1"):
        assert rendered > 0, f"{path}: no formula typeset"


def _describes(alt: str) -> bool:
    """A sentence, not a file name or path (the default alt text is `../_images/<hash>.png`)."""
    return len(alt.split()) >= 4 and not re.search(r"_images/|\S+\.(png|jpe?g|svg|gif)\b", alt)


@pytest.mark.parametrize("path", PAGES)
def test_images_load_and_are_described(visits, path):
    v = visits(path)
    images = v.page.evaluate("""() => Array.from(document.images).map(i => ({
        src: i.getAttribute('src'), alt: i.getAttribute('alt') || '', loaded: i.complete && i.naturalWidth > 0}))""")
    if _chapter(path):
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


@pytest.mark.parametrize("path", [p for p in PAGES if p.startswith("book/")])
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
