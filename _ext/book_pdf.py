"""The whole book as one PDF, built offline (`make pdf`): Sphinx's single-page HTML build of
the book (the same execution cache as the HTML build: nothing re-executes), printed by
Debian's Chromium through Playwright (every formula typeset by the build), with the
chapters as PDF bookmarks. Writes _build/pdf/book.pdf, and copies it into _build/html (the
download menu of every page links it; the HTML build copies it too when it exists)."""
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
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "_build"
PDF = BUILD / "pdf" / "book.pdf"

# The printed book's page (_ext/book_pdf.css sets the same A4 page and margins) and its
# text area in CSS pixels (96 per inch): the page is laid out at that width before printing.
MM = 96 / 25.4
TEXT_WIDTH_PX = int((210 - 18 - 18) * MM)
TEXT_HEIGHT_PX = int((297 - 18 - 20) * MM)
PRINT_CSS = Path(__file__).with_name("book_pdf.css")
PRINT_JS = Path(__file__).with_name("book_pdf.js")
# Printing again when the page numbers filled in moved a destination (they never should: the
# placeholders are as wide as the numbers).
MAX_PRINTS = 3


def destinations(pdf: Path) -> dict[str, int]:
    """The PDF's named destinations (Chromium writes one for each target of an internal link)
    and the page each is on, read back with poppler's pdfinfo."""
    out = subprocess.run(["pdfinfo", "-dests", str(pdf)], capture_output=True, text=True, check=True).stdout
    pages = {}
    for line in out.splitlines():
        found = re.match(r'\s*(\d+)\s+\[.*\]\s+"(.*)"\s*$', line)
        if found:
            pages[found.group(2)] = int(found.group(1))
    return pages


_STRING = rb"\((?:\\.|[^\\)])*\)|<[0-9A-Fa-f]*>"


def retitle_bookmarks(pdf: Path, titles: list[str]) -> int:
    """Chromium names each bookmark after the glyphs it painted in its heading: a heading
    pushed to the top of a page gets its first line twice ("1.7. 1.7. SummarySummary") and a
    wrapped one loses the space at the wrap. Give each bookmark, in document order, the text of
    its heading as the page has it (`titles`), by an incremental update of the PDF (new
    versions of the outline items, a new cross-reference section pointing back to the old).
    Returns how many titles changed; refuses if the bookmarks and headings do not pair up."""
    data = pdf.read_bytes()
    trailer = data[data.rindex(b"trailer"):]
    previous = int(re.search(rb"startxref\s+(\d+)", trailer).group(1))
    # Chromium's PDF has one cross-reference table (no update yet): where each object starts.
    table = re.match(rb"xref\s+0 (\d+)\s+", data[previous:])
    if table is None or b"/Prev" in trailer:
        raise SystemExit("the PDF's cross-reference table is not the one section Chromium writes")
    rows = previous + table.end()
    offsets = [int(data[rows + 20 * i:rows + 20 * i + 10]) for i in range(int(table.group(1)))]

    class Objects(dict):
        def __missing__(self, number: int) -> bytes:
            start = data.index(b"obj", offsets[number]) + 3
            self[number] = data[start:data.index(b"endobj", start)].strip()
            return self[number]

    objects = Objects()
    catalog = objects[int(re.search(rb"/Root (\d+) 0 R", trailer).group(1))]
    root = objects[int(re.search(rb"/Outlines (\d+) 0 R", catalog).group(1))]

    def ref(body: bytes, key: bytes) -> int | None:
        found = re.search(rb"/" + key + rb" (\d+) 0 R", body)
        return int(found.group(1)) if found else None

    order: list[int] = []

    def walk(first: int | None) -> None:
        while first is not None:
            order.append(first)
            walk(ref(objects[first], b"First"))
            first = ref(objects[first], b"Next")

    walk(ref(root, b"First"))
    if len(order) != len(titles):
        raise SystemExit(f"{len(order)} bookmarks for {len(titles)} headings: cannot name them")
    updates, changed = [], 0
    for number, title in zip(order, titles):
        body = objects[number]
        old = re.match(rb"<</Title (" + _STRING + rb")", body)
        painted = _pdf_string(old.group(1))
        if not _same_words(painted, title):
            raise SystemExit(f"bookmark {painted!r} does not belong to heading {title!r}")
        if painted != title:
            changed += 1
        new = b"<</Title <" + ("\ufeff" + title).encode("utf-16-be").hex().upper().encode() + b">" \
            + body[old.end():]
        updates.append((number, new))
    size = int(re.search(rb"/Size (\d+)", trailer).group(1))
    root_ref = re.search(rb"/Root (\d+ \d+ R)", trailer).group(1)
    info = re.search(rb"/Info (\d+ \d+ R)", trailer)
    out = bytearray(data if data.endswith(b"\n") else data + b"\n")
    xref = []
    for number, body in updates:
        xref.append((number, len(out)))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    start = len(out)
    out += b"xref\n"
    for number, offset in sorted(xref):
        out += b"%d 1\n%010d 00000 n \n" % (number, offset)
    out += b"trailer\n<</Size %d\n/Root %s%s\n/Prev %d>>\nstartxref\n%d\n%%%%EOF\n" % (
        size, root_ref, b"\n/Info " + info.group(1) if info else b"", previous, start)
    pdf.write_bytes(bytes(out))
    return changed


def _pdf_string(raw: bytes) -> str:
    if raw.startswith(b"<"):
        return bytes.fromhex(raw[1:-1].decode()).decode("utf-16-be").lstrip("\ufeff")
    return re.sub(rb"\\(.)", rb"\1", raw[1:-1]).decode("latin-1")


def _same_words(painted: str, title: str) -> bool:
    """The painted name is that of the heading: the same section number, and most of its words
    (a formula's glyphs are not in it; a word may be there twice, or run into the next)."""
    number = re.match(r"[\d.]+ ", title)
    if number and not painted.startswith(number.group(0)):
        return False
    squeezed = re.sub(r"\s+", "", painted)
    words = re.findall(r"[A-Za-z]{3,}", title)
    return sum(word in squeezed for word in words) * 2 >= len(words)


def build_singlehtml() -> Path:
    bin_dir = Path(sys.executable).parent
    proc = subprocess.run([str(bin_dir / "jupyter-book"), "build", ".", "--builder", "custom",
                           "--custom-builder", "singlehtml", "--warningiserror", "--keep-going"],
                          cwd=ROOT, capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise SystemExit(f"the single-page build failed:\n{(proc.stdout + proc.stderr)[-4000:]}")
    return BUILD / "singlehtml"


def print_pdf(site_dir: Path, target: Path) -> None:
    from playwright.sync_api import sync_playwright

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    # Sphinx's single-page builder writes the root document (book/index) one folder down but
    # with links relative to the build's root: the page is read from there.
    page_file = site_dir / "whole-book.html"
    shutil.copy2(site_dir / "book" / "index.html", page_file)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(site_dir)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), headless=True,
                                        args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1000, "height": 1400})
            page.route("**/*", lambda r: r.continue_() if urlsplit(r.request.url).hostname == "127.0.0.1"
                       or r.request.url.startswith("data:") else r.abort())
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/{page_file.name}", wait_until="networkidle",
                      timeout=300_000)
            # The formulas were typeset when the page was built (_ext/typeset_math.py): their fonts.
            page.evaluate("() => document.fonts.ready.then(() => true)")
            page.add_style_tag(content=PRINT_CSS.read_text())
            page.emulate_media(media="print")
            page.set_viewport_size({"width": TEXT_WIDTH_PX, "height": TEXT_HEIGHT_PX})
            page.add_script_tag(content=PRINT_JS.read_text())
            done = page.evaluate("h => bookPdf.prepare(h)", TEXT_HEIGHT_PX)
            report(done)
            target.parent.mkdir(parents=True, exist_ok=True)
            wanted = page.evaluate("() => bookPdf.targets()")
            # Print, read where each chapter and solution landed, fill in the numbers, print
            # again, until the numbers printed are the pages the PDF says.
            printed: dict[str, int] = {}
            for attempt in range(1, MAX_PRINTS + 1):
                page.pdf(path=str(target), prefer_css_page_size=True, print_background=True, outline=True,
                         tagged=True)
                found = destinations(target)
                missing = [name for name in wanted if name not in found]
                if missing:
                    raise SystemExit(f"the PDF has no destination for {missing[:5]} ({len(missing)} missing)")
                now = {name: found[name] for name in wanted}
                if now == printed:
                    break
                if attempt == MAX_PRINTS:
                    raise SystemExit(f"the page numbers did not settle after {MAX_PRINTS} prints")
                unnumbered = page.evaluate("pages => bookPdf.number(pages)", now)
                assert not unnumbered, unnumbered
                printed = now
            renamed = retitle_bookmarks(target, page.evaluate("() => bookPdf.headings()"))
            print(f"printed {attempt} times (the last with the page numbers the one before gave); "
                  f"{renamed} bookmarks named after their headings")
            browser.close()
    finally:
        server.shutdown()
        server.server_close()


def report(done: dict) -> None:
    links = done["links"]
    fitted = ", ".join(f"{f['id'] or 'unlabelled'} at {f['scale']} %" for f in done["formulas"])
    print(f"print preparation: {links['internal']} internal links, {links['external']} external, "
          f"{links['unwrapped']} links to build files unlinked; {done['chapters']} chapters; "
          f"{done['controls']} hidden-code toggles dropped; {done['solutions']} solutions moved to their "
          f"chapter's end; {done['entries']} contents entries; {len(done['formulas'])} formulas set smaller "
          f"to fit ({fitted}); "
          f"{len(done['figures'])} figures scaled to fit a page")
    if links["unresolved"]:
        raise SystemExit(f"links to no anchor of the book: {links['unresolved'][:5]}")


def main(argv: list[str]) -> int:
    """`--print-only` prints the single-page build already in _build/singlehtml again."""
    started = time.monotonic()
    site = BUILD / "singlehtml" if "--print-only" in argv else build_singlehtml()
    built = time.monotonic()
    print_pdf(site, PDF)
    if (BUILD / "html").is_dir():
        shutil.copy2(PDF, BUILD / "html" / PDF.name)
    print(f"{PDF.relative_to(ROOT)}: {PDF.stat().st_size / 1e6:.1f} MB; single-page build "
          f"{built - started:.0f} s, printing {time.monotonic() - built:.0f} s")
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    raise SystemExit(main(sys.argv[1:]))
