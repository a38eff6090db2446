"""The whole-book PDF (`make pdf`, _ext/book_pdf.py) read back with Debian's poppler-utils, as a
reader gets it: numbered pages, a contents list with the page of each chapter, each chapter on
a new page, links that stay inside the PDF, solutions after their chapter's self-checks (not
under each question), no blank page and no figure sliced across two, display formulas whole,
bookmarks named as the headings, and no dead web controls.

What each printed page should hold is taken from the single-page HTML the PDF is printed from
(_build/singlehtml), never from the print code. Without poppler the module skips with one line,
except under CI, where that is a failure."""
from __future__ import annotations

import fcntl
import html
import os
import re
import shutil
import subprocess
import sys
import unicodedata
from functools import cache

import pytest
from bs4 import BeautifulSoup

from tests.conftest import ROOT

PDF = ROOT / "_build" / "pdf" / "book.pdf"
SINGLE = ROOT / "_build" / "singlehtml" / "book" / "index.html"
CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")

# One build of the book at a time on this worker (test_browser.py prints the PDF too).
pytestmark = [pytest.mark.xdist_group("book")]

for tool in ("pdftotext", "pdfinfo", "pdftohtml", "pdfimages"):
    if not shutil.which(tool):
        if CI:
            pytest.fail(f"{tool} is missing under CI (make poppler)", pytrace=False)
        pytest.skip(f"PDF tests skipped: {tool} is not installed (make test installs poppler-utils)",
                    allow_module_level=True)
if not shutil.which("chromium"):
    if CI:
        pytest.fail("chromium is missing under CI (make browser)", pytrace=False)
    pytest.skip("PDF tests skipped: chromium is not installed (make browser)", allow_module_level=True)


def _sources():
    return [ROOT / "_config.yml", ROOT / "_toc.yml", *(ROOT / "book").glob("*.md"),
            *(ROOT / "_ext").glob("book_pdf.*")]


@pytest.fixture(scope="module")
def pdf():
    """The PDF, printed again (as `make pdf` does) unless newer than everything it comes from."""
    lock_path = ROOT / "_build" / ".build.lock"
    lock_path.parent.mkdir(exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (PDF.is_file() and SINGLE.is_file()
                and all(s.stat().st_mtime < PDF.stat().st_mtime for s in _sources())):
            proc = subprocess.run([sys.executable, str(ROOT / "_ext" / "book_pdf.py")], cwd=ROOT,
                                  capture_output=True, text=True, timeout=3600)
            assert proc.returncode == 0, f"make pdf failed:\n{(proc.stdout + proc.stderr)[-4000:]}"
    return PDF


@cache
def _pages(path) -> list[str]:
    """The text of each page (pdftotext -layout: lines as printed)."""
    out = subprocess.run(["pdftotext", "-enc", "UTF-8", "-layout", str(path), "-"], capture_output=True,
                         text=True, check=True).stdout
    return out.split("\f")[:-1]


def _lines(page: str) -> list[str]:
    return [line.strip() for line in page.splitlines() if line.strip()]


def _squeeze(text: str) -> str:
    """Text without spaces, its ligatures spelled out (pdftohtml keeps "ﬁ" as one letter)."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


@cache
def _xml(path) -> str:
    return subprocess.run(["pdftohtml", "-xml", "-i", "-stdout", "-q", str(path)], capture_output=True, text=True,
                          check=True).stdout


@cache
def _soup() -> BeautifulSoup:
    return BeautifulSoup(SINGLE.read_text(), "html.parser")


def _chapters() -> list[str]:
    """The chapter titles of the single-page book's contents (numbered, as printed)."""
    return [re.sub(r"\s+", " ", a.get_text()).strip() for a in _soup().select("#jb-print-toc a")]


def _body_lines(page: str, number: int) -> list[str]:
    """A page's lines without its page number (the last line, when it is the number)."""
    lines = _lines(page)
    return lines[:-1] if lines and lines[-1] == str(number) else lines


def test_every_page_but_the_title_is_numbered(pdf):
    """The foot of each page (its bottom 52 points, under the text) holds its number."""
    pages = _pages(pdf)
    assert len(pages) > 100
    width, height = map(float, re.search(r"Page size:\s+([\d.]+) x ([\d.]+)", subprocess.run(
        ["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout).groups())
    feet = subprocess.run(["pdftotext", "-enc", "UTF-8", "-x", "0", "-y", str(int(height) - 52), "-W", str(int(width)),
                           "-H", "52", str(pdf), "-"], capture_output=True, text=True, check=True).stdout.split("\f")
    # the foot's digits are the page's number (pdftotext may also find a stray piece of a tall
    # MathJax brace there, drawn by a transform from higher up: no digit)
    unnumbered = [i for i, foot in enumerate(feet[:len(pages)], 1) if i > 1 and re.sub(r"\D", "", foot) != str(i)]
    assert not unnumbered, f"{len(unnumbered)} of {len(pages)} pages carry no page number at the foot " \
                           f"(first: {unnumbered[:8]})"


def _chapter_starts(pages: list[str], chapters: list[str]) -> dict[str, int]:
    """The page each chapter's heading opens (its title, wrapped or not, first on the page)."""
    starts = {}
    for title in chapters:
        for i, page in enumerate(pages, 1):
            lines = _lines(page)
            if lines and _squeeze(" ".join(lines[:3])).startswith(_squeeze(title)) and "Contents" not in lines[0]:
                starts[title] = i
                break
    return starts


def test_each_chapter_starts_a_page(pdf):
    pages = _pages(pdf)
    chapters = _chapters()
    assert len(chapters) == 13, chapters
    starts = _chapter_starts(pages, chapters)
    missing = [title for title in chapters if title not in starts]
    assert not missing, f"{len(missing)} chapters do not start a page: {missing}"


def test_contents_give_the_page_each_chapter_starts_on(pdf):
    pages = _pages(pdf)
    chapters = _chapters()
    starts = _chapter_starts(pages, chapters)
    contents = next(i for i, page in enumerate(pages) if "Contents" in _lines(page))
    # Each line squeezed of spaces; a title may wrap onto the next line.
    listed = "\n".join(_squeeze(line) for line in _lines(pages[contents]))
    wrong = []
    for title in chapters:
        found = re.search("\n?".join(map(re.escape, _squeeze(title))) + r"\.*(\d+)$", listed, re.M)
        if not found:
            wrong.append(f"{title!r}: no page number in the contents")
        elif starts.get(title) != int(found.group(1)):
            wrong.append(f"{title!r}: contents say page {found.group(1)}, it starts on {starts.get(title)}")
    # Each entry is a link to the page its chapter starts on.
    xml = _xml(pdf)
    page_xml = xml[xml.find(f'<page number="{contents + 1}"'):xml.find(f'<page number="{contents + 2}"')]
    links = {}
    for page, text in re.findall(r'<a href="[^"#]*#(\d+)">(.*?)</a>', page_xml):
        text = html.unescape(re.sub(r"<[^>]+>", "", text))
        if len(_squeeze(text)) >= 3:
            links.setdefault(text, int(page))
    for title in chapters:
        target = next((page for text, page in links.items() if _squeeze(title).startswith(_squeeze(text))), None)
        if target != starts.get(title):
            wrong.append(f"{title!r}: its contents entry links to page {target}, it starts on {starts.get(title)}")
    assert not wrong, "\n".join(wrong)


def test_links_stay_inside_the_pdf(pdf):
    """No link points at the print server; the cross-references, citations and contents are
    links to pages of the PDF itself, and each goes to a page that exists."""
    hrefs = re.findall(r'<a href="([^"]*)"', _xml(pdf))
    local = [h for h in hrefs if re.match(r"https?://(127\.|localhost|\[::1\]|0\.0\.0\.0)", h)]
    assert not local, f"{len(local)} links point at the temporary print server, e.g. {local[:3]}"
    internal = [int(m.group(1)) for h in hrefs if (m := re.fullmatch(re.escape(PDF.stem) + r"\.html#(\d+)", h))]
    citations = len(_soup().select(".bibtex-citation a, a.reference.internal"))
    assert len(internal) >= citations * 0.9, f"{len(internal)} links within the PDF for {citations} " \
                                             "cross-references and citations in the book"
    pages = len(_pages(pdf))
    assert all(1 <= page <= pages for page in internal)


def test_solutions_come_after_their_chapters_self_checks(pdf):
    """A reader tries a self-check before seeing its answer: every solution is printed after
    the last self-check of its chapter, not under its question."""
    pages = _pages(pdf)
    expected = len(_soup().select("div.solution"))
    questions: dict[str, int] = {}
    solutions: dict[str, int] = {}
    for i, page in enumerate(pages, 1):
        for line in _lines(page):
            if found := re.match(r"Solution to\s*Self-check (\d+\.\d+)\b", line):
                solutions.setdefault(found.group(1), i)
            elif found := re.match(r"\W*Self-check (\d+\.\d+)\b", line):
                questions.setdefault(found.group(1), i)
    assert len(solutions) == expected == 76, f"{len(solutions)} solutions printed of {expected}"
    early = []
    for number, page in solutions.items():
        chapter = number.split(".")[0]
        last_question = max(p for n, p in questions.items() if n.split(".")[0] == chapter)
        if page <= last_question:
            early.append(f"{number} (page {page}, the chapter's last self-check on page {last_question})")
    assert not early, f"{len(early)} solutions printed among their chapter's questions: {early[:6]}"


def test_no_blank_page_and_no_figure_sliced_across_two(pdf):
    pages = _pages(pdf)
    listing = subprocess.run(["pdfimages", "-list", str(pdf)], capture_output=True, text=True,
                             check=True).stdout.splitlines()[2:]
    images: dict[int, list[str]] = {}
    for row in listing:
        cells = row.split()
        images.setdefault(int(cells[0]), []).append(cells[10])
    blank = [i for i, page in enumerate(pages, 1) if not _body_lines(page, i) and i not in images]
    assert not blank, f"{len(blank)} blank pages: {blank}"
    sliced = sorted({(i, obj) for i, objs in images.items() for obj in objs if obj in images.get(i + 1, [])})
    assert not sliced, f"{len(sliced)} figures cut across two pages (page, image object): {sliced}"


def test_display_formulas_are_whole(pdf):
    """Every number written in a numbered display formula is printed beside the formula's
    number (within the lines around it): a formula cut at the margin loses its right end (eq.
    10.2 ended at "ω_i = 1/100(")."""
    lines = [line for page in _pages(pdf) for line in page.splitlines()]
    cut = []
    formulas = _soup().select("div.math[id^=equation-]")
    assert len(formulas) > 50
    for block in formulas:
        eqno = block.select_one(".eqno")
        label = re.sub(r"\s+|#", "", eqno.get_text())
        # The formula as typeset when the book was built (_ext/typeset_math.py): the numbers of
        # its MathML (what a screen reader reads), each token on its own.
        assert block.select_one("mjx-assistive-mml math"), f"{label} is not typeset"
        tokens = " ".join(t.get_text() for t in block.select("mjx-assistive-mml mn, mjx-assistive-mml mtext"))
        numbers = re.findall(r"\d+", tokens)
        windows = [_squeeze(" ".join(lines[max(0, i - 6):i + 7])) for i, line in enumerate(lines)
                   if re.search(r"(^|\s)" + re.escape(label) + r"(\s|$)", line)]
        if not any(all(n in window for n in numbers) for window in windows):
            cut.append(f"{label}: {' '.join(numbers)}")
    assert not cut, f"{len(cut)} display formulas not printed whole: {cut}"
    pe = next(p for p in _pages(pdf) if "(10.2)" in p)
    assert all(part in _squeeze(pe) for part in ("ωi=", "10000", "2i", "−1.")), "eq. 10.2 is not whole"


def _bookmarks(pdf) -> list[str]:
    outline = _xml(pdf)[_xml(pdf).find("<outline"):]
    return [html.unescape(re.sub(r"<[^>]+>", "", t)) for t in re.findall(r"<item[^>]*>(.*?)</item>", outline)]


def test_bookmarks_are_named_as_the_headings(pdf):
    """Each heading without mathematics or code has a bookmark named exactly as it is printed:
    no section number twice, no line repeated, no words run together at a line break."""
    marks = _bookmarks(pdf)
    headings = []
    for h in _soup().select("h1, h2, h3, h4, h5, h6"):
        if h.find_parent(class_="bd-sidebar-primary") or h.select(".math, code") or h.find_parent("nav"):
            continue
        for link in h.select(".headerlink"):
            link.decompose()
        headings.append(re.sub(r"\s+", " ", h.get_text()).strip())
    assert len(marks) > 150 and len(headings) > 150
    doubled = [m for m in marks if re.match(r"((\d+\.)+) \1", m) or re.search(r"(\w{4,}.{0,40})\1", m)]
    missing = [h for h in headings if h not in marks]
    assert not doubled and not missing, (f"{len(doubled)} garbled bookmarks, e.g. {doubled[:4]}; "
                                         f"{len(missing)} headings without their bookmark, e.g. {missing[:4]}")


def test_no_dead_web_controls(pdf):
    text = "\n".join(_pages(pdf))
    for control in ("Show code cell source", "Hide code cell source", "Click to show", "Copy to clipboard"):
        assert control not in text, f"the PDF prints the web control {control!r}"
