"""The book's formulas typeset when the book is built, not in the reader's browser (issue 38).

Sphinx writes each formula as TeX for MathJax to typeset in the browser: inline math as
`<span class="math">\\(...\\)</span>`, display math as `<div class="math">\\[...\\]</div>` (after
its equation number, if any). Once the HTML is written (`build-finished`), every such element
of every page is typeset by the MathJax the book vendors (_vendor/mathjax, from npm), run in
node with MathJax's own lite DOM (_ext/typeset_math.js): no browser, no network. A page then
carries its formulas as MathJax's CommonHTML output, with the MathML that screen readers read
(MathJax's assistive MathML) and a stylesheet of the characters it uses; the fonts are MathJax's
own woff files cut down to the characters the book uses (fontTools), served from
_static/mathjax-fonts. No page loads MathJax's script (0.76 MB).

A TeX error fails the build with the page and the formula: nothing ships as raw TeX. The step
prints how many formulas it typeset and how long it took. `make book` (and the single-page build
printed as the PDF) run it; it needs `node` (Debian's nodejs: `make node`).
"""
from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from sphinx.errors import ExtensionError

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "typeset_math.js"
FONTS = "_static/mathjax-fonts"   # MathJax's woff fonts, cut down to the characters the book uses
FONT_URL = "@MATHJAX_FONTS@"   # replaced, page by page, by the fonts' address relative to the page

# Sphinx's markup of a formula: the inline one, and the display one (its equation number first).
_INLINE = re.compile(r'(<span class="math notranslate nohighlight">)([^<]*)(</span>)')
_DISPLAY = re.compile(r'(<div class="math notranslate nohighlight"[^>]*>\s*(?:<span class="eqno">.*?</span>)?)'
                      r'([^<]*)(</div>)', re.S)
_ANY = re.compile(r'class="math notranslate nohighlight"')
_TYPESET = "<!-- formulas typeset when the book was built (_ext/typeset_math.py) -->"
# MathJax in the browser set every formula of the book at 127.3 % of the text around it, so that
# its x-height matched the theme's font (system-ui, measured in Debian's Chromium on every
# formula of chapter 04 at 1280 px; on a phone's 2x screen it measured 123.7 %, the x-height in
# whole pixels rounding otherwise); node cannot measure a font, so the build sets one size here,
# the desktop's: chapter 04 at 1280 px is drawn pixel for pixel as MathJax drew it.
# (`position: relative` is MathJax's own, once here rather than on every formula.)
_SIZE = 'mjx-container[jax="CHTML"] { font-size: 127.3%; position: relative; }'


class TeXError(ExtensionError):
    """A formula MathJax could not typeset, or a formula element the step cannot read."""


def _tex(raw: str, display: bool, where: str) -> str:
    """The TeX of one formula, without Sphinx's delimiters."""
    tex = html.unescape(raw).strip()
    opening, closing = (r"\[", r"\]") if display else (r"\(", r"\)")
    if tex.startswith(opening) and tex.endswith(closing):
        return tex[len(opening):-len(closing)]
    if display and tex.startswith("\\begin{"):   # amsmath's environments, written as they are
        return tex
    raise TeXError(f"{where}: a formula without its TeX delimiters: {tex[:80]!r}")


def formulas(page: str, where: str = "page") -> list[tuple[re.Match, bool, str]]:
    """Every formula of a page, in order: (its match, display?, its TeX)."""
    found = [(m, False) for m in _INLINE.finditer(page)] + [(m, True) for m in _DISPLAY.finditer(page)]
    found.sort(key=lambda pair: pair[0].start())
    if len(found) != len(_ANY.findall(page)):
        raise TeXError(f"{where}: {len(_ANY.findall(page))} formula elements, {len(found)} of them readable "
                       "(Sphinx's markup of formulas changed?)")
    return [(m, display, _tex(m.group(2), display, where)) for m, display in found]


def _node() -> str:
    node = shutil.which("node") or shutil.which("nodejs")
    if not node:
        raise TeXError("node is needed to typeset the formulas when the book is built "
                       "(Debian: apt-get install nodejs, or `make node`)")
    return node


def typeset(texts: list[list[tuple[str, bool]]], mathjax: Path, macros: dict | None = None) -> dict:
    """Typeset each page's formulas (TeX, display?) with node: {pages: [{html, css}], errors}."""
    job = {"mathjax": str(mathjax.resolve()), "fontURL": FONT_URL, "macros": macros or {},
           "pages": [[{"tex": tex, "display": display} for tex, display in page] for page in texts]}
    proc = subprocess.run([_node(), str(SCRIPT)], input=json.dumps(job), capture_output=True, text=True,
                          encoding="utf-8")
    if proc.returncode != 0:
        raise TeXError(f"MathJax in node failed: {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout)


def _relative(page: Path, root: Path, target: str) -> str:
    return Path(os.path.relpath(root / target, page.parent)).as_posix()


# What MathJax writes for a browser that the page does without: Internet Explorer's
# `unselectable`, the MathML namespace (HTML's parser gives <math> its own), MathJax's own TeX
# classes in the MathML, the default display of the MathML, and each formula's
# `position: relative` (one rule in the page's stylesheet instead, _SIZE). 20-30 kB a chapter.
_SPARE = [(re.compile(r' unselectable="on"| xmlns="http://www\.w3\.org/1998/Math/MathML"'
                      r'| data-mjx-texclass="[A-Z]+"'), ""),
          (re.compile(r'<mjx-assistive-mml display="inline">'), "<mjx-assistive-mml>"),
          (re.compile(r'(jax="CHTML"(?: display="true")?) style="position: relative;"'), r"\1")]


def _spare(rendered: str) -> str:
    for pattern, replacement in _SPARE:
        rendered = pattern.sub(replacement, rendered)
    return rendered


def _minify(css: str) -> str:
    """MathJax's stylesheet without its line breaks and indentation."""
    return re.sub(r"\s*\n\s*", " ", css).strip()


_STYLE = re.compile(r'(<style id="mathjax-styles">)(.*?)(</style>)', re.S)
_CONTENT = re.compile(r'content: ?"((?:\\.|[^"\\])*)"')
_FONT = re.compile(r'url\("([^"]*?)([^/"]+\.woff)"\)')


def characters(css: str) -> set[str]:
    """The characters a MathJax stylesheet draws (each from its `content`, in MathJax's fonts)."""
    found = set()
    for text in _CONTENT.findall(css):
        text = re.sub(r"\\([0-9A-Fa-f]{1,6}) ?", lambda m: chr(int(m.group(1), 16)), text)
        found.update(re.sub(r"\\(.)", r"\1", text))
    return found


def _subset_fonts(root: Path, mathjax: Path, flat: bool) -> int:
    """MathJax's fonts cut down to the characters the site's formulas use, in a folder named
    after them (a reader's browser never keeps a font of an earlier edition that lacks one);
    every page's stylesheet points at that folder. Returns how many pages point elsewhere now."""
    from fontTools import subset
    from fontTools.ttLib import TTFont

    styled = {}
    for path in sorted(root.rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        found = _STYLE.search(text)
        if found:
            styled[path] = text
    if not styled:
        return 0
    sheets = [_STYLE.search(text).group(2) for text in styled.values()]
    chars = set().union(*map(characters, sheets))
    fonts = {name for css in sheets for _, name in _FONT.findall(css)}
    key = hashlib.sha256("".join(sorted(chars)).encode()).hexdigest()[:10]
    folder = root / FONTS / key
    folder.mkdir(parents=True, exist_ok=True)
    for name in sorted(fonts):
        full = mathjax / "output" / "chtml" / "fonts" / "woff-v2" / name
        if (folder / name).is_file():
            continue
        if name == "MathJax_Zero.woff":   # 1.4 kB: MathJax's one zero-width character (U+EFFC), kept
            shutil.copy2(full, folder / name)
            continue
        font = TTFont(full)
        options = subset.Options()
        options.flavor, options.notdef_outline, options.name_IDs, options.hinting = "woff", True, ["*"], True
        options.drop_tables = [*options.drop_tables, "FFTM"]
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=[ord(c) for c in chars])
        subsetter.subset(font)
        font.save(folder / name)
    moved = 0
    for path, text in styled.items():
        where = f"{FONTS}/{key}/" if flat else _relative(path, root, f"{FONTS}/{key}") + "/"
        page = _STYLE.sub(lambda m: m.group(1) + _FONT.sub(lambda f: f'url("{where}{f.group(2)}")', m.group(2))
                          + m.group(3), text, count=1)
        if page != text:
            path.write_text(page, encoding="utf-8")
            moved += 1
    for old in (root / FONTS).iterdir():
        if old.is_dir() and old.name != key:
            shutil.rmtree(old)
    return moved


def typeset_site(root: Path, mathjax: Path, macros: dict | None = None, flat: bool = False) -> tuple[int, int]:
    """Typeset every page under `root` in place; return (pages changed, formulas typeset).
    `flat`: the pages' links are relative to `root` wherever they are (Sphinx's single-page
    build writes its page one folder down, read from the root: _ext/book_pdf.py)."""
    pages, found = [], []
    for path in sorted(root.rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        if _TYPESET in text:
            continue   # written by an earlier build and not since (Sphinx writes changed pages only)
        items = formulas(text, str(path.relative_to(root)))
        if items:
            pages.append((path, text, items))
            found.append([(tex, display) for _, display, tex in items])
    count = 0
    if pages:
        result = typeset(found, mathjax, macros)
        if result["errors"]:
            lines = [f"{pages[e['page']][0].relative_to(root)}: {e['message']} in {e['tex'].strip()[:120]!r}"
                     for e in result["errors"]]
            raise TeXError(f"{len(lines)} formulas MathJax could not typeset:\n  " + "\n  ".join(lines))
        for (path, text, items), done in zip(pages, result["pages"]):
            out, at = [], 0
            for (match, _display, _tex), rendered in zip(items, done["html"]):
                out += [text[at:match.start()], match.group(1), _spare(rendered), match.group(3)]
                at = match.end()
                count += 1
            out.append(text[at:])
            head = f'{_TYPESET}\n<style id="mathjax-styles">{_minify(done["css"])} {_SIZE}</style>\n'
            path.write_text("".join(out).replace("</head>", head + "</head>", 1), encoding="utf-8")
    _subset_fonts(root, mathjax, flat)
    return len(pages), count


def _drop_mathjax(app, pagename, templatename, context, doctree):
    """No page loads MathJax: neither its script nor its configuration."""
    if "script_files" not in context:
        return
    mathjax = (app.config.mathjax_path, "_static/" + app.config.mathjax_path)
    context["script_files"] = [
        s for s in context["script_files"]
        if str(getattr(s, "filename", s) or "") not in mathjax
        and "window.MathJax" not in str(getattr(s, "attributes", {}).get("body", ""))]


def _typeset(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    mathjax = Path(app.srcdir) / "_vendor" / "mathjax"   # `make mathjax`
    if not (mathjax / "startup.js").is_file():
        raise TeXError(f"MathJax is missing from {mathjax} (make mathjax)")
    # The site serves none of MathJax's scripts (an earlier build copied all of it, 24 MB).
    shutil.rmtree(Path(app.outdir) / "_static" / "mathjax", ignore_errors=True)
    macros = ((app.config.mathjax3_config or {}).get("tex") or {}).get("macros") or {}
    start = time.monotonic()
    pages, count = typeset_site(Path(app.outdir), mathjax, macros, flat=app.builder.name == "singlehtml")
    earlier = sum(_TYPESET in p.read_text(encoding="utf-8") for p in Path(app.outdir).rglob("*.html")) - pages
    print(f"typeset_math: {count} formulas on {pages} pages typeset in {time.monotonic() - start:.1f} s "
          f"(MathJax CommonHTML in node); {earlier} pages as an earlier build typeset them (unchanged since)")


def setup(app):
    app.connect("html-page-context", _drop_mathjax, priority=990)
    app.connect("build-finished", _typeset, priority=400)
    # env_version: a new version re-writes every page (a page typeset by an earlier build is
    # left as it is): raise it when this file changes what a typeset page contains.
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 2}
