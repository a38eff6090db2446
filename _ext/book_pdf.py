"""The whole book as one PDF, built offline (`make pdf`): Sphinx's single-page HTML build of
the book (the same execution cache as the HTML build: nothing re-executes), printed by
Debian's Chromium through Playwright once MathJax has typeset every formula, with the
chapters as PDF bookmarks. Writes _build/pdf/book.pdf, and copies it into _build/html (the
download menu of every page links it; the HTML build copies it too when it exists)."""
from __future__ import annotations

import functools
import http.server
import os
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

# The printed book: no sidebars, headers or buttons; code and figures within the page.
PRINT_CSS = """
.bd-header, .bd-header-article, .bd-sidebar-primary, .bd-sidebar-secondary, .bd-footer,
.bd-footer-article, .bd-footer-content, .prev-next-area, .header-article-items, #pst-back-to-top,
.headerlink, .copybtn, .search-button-field { display: none !important; }
.bd-main .bd-content .bd-article-container { max-width: 100% !important; }
.bd-article div.cell_input pre, .bd-article div.cell_output pre { white-space: pre-wrap !important; }
img { max-width: 100% !important; break-inside: avoid; }
figure, .admonition { break-inside: avoid; }
"""


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
            page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                                   timeout=120_000)
            page.evaluate("() => MathJax.startup.promise.then(() => true)")
            page.add_style_tag(content=PRINT_CSS)
            page.emulate_media(media="print")
            target.parent.mkdir(parents=True, exist_ok=True)
            page.pdf(path=str(target), format="A4", print_background=True, outline=True, tagged=True,
                     margin={"top": "16mm", "bottom": "16mm", "left": "14mm", "right": "14mm"})
            browser.close()
    finally:
        server.shutdown()
        server.server_close()


def main() -> int:
    started = time.monotonic()
    site = build_singlehtml()
    built = time.monotonic()
    print_pdf(site, PDF)
    if (BUILD / "html").is_dir():
        shutil.copy2(PDF, BUILD / "html" / PDF.name)
    print(f"{PDF.relative_to(ROOT)}: {PDF.stat().st_size / 1e6:.1f} MB; single-page build "
          f"{built - started:.0f} s, printing {time.monotonic() - built:.0f} s")
    return 0


if __name__ == "__main__":
    os.chdir(ROOT)
    raise SystemExit(main())
