"""The autograded notebook an instructor opens in Formgrader, made inert.

nbgrader's Formgrader renders the autograded notebook into a page of the instructor's logged-in
server: it inserts markdown's HTML, raw cells, outputs, grade ids and metadata as they are. So
the course never gives it anything a student wrote as markup. `notebook()` rewrites the
notebook the course writes for Formgrader (grade/run.py `_autograded`):

- a markdown cell that is not, character for character, one of the instructor's is rendered
  here (mistune, with math kept for MathJax) and cleaned with bleach: a short list of text
  tags, links only to http, https and mailto addresses; any other tag is shown as its text.
  The result is one line of HTML in a `<div>`, which Formgrader's markdown renderer passes on
  as it is;
- a raw cell becomes a markdown cell showing its text, escaped, in a `<pre>`;
- a code cell keeps its source (Formgrader highlights it, escaped) and no output but the
  course's own test failures;
- nbgrader metadata comes from the instructor's notebook, by grade id: a grade id the
  instructor did not write, one seen before in the notebook or on a cell of another type
  loses its nbgrader metadata (it is then a plain cell); points and roles are the instructor's;
- no other metadata, no attachments; the notebook's metadata is the instructor's kernel and
  language; a cell id that is not nbformat's pattern is replaced.

Formgrader's server sends a Content-Security-Policy as well (autograder/formgrade.py), so a
gap here still runs no script.
"""
from __future__ import annotations

import html
import re

TAGS = frozenset({"a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "div", "dl", "dt", "em",
                  "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "kbd", "li", "ol", "p", "pre", "s",
                  "span", "strong", "sub", "sup", "table", "tbody", "td", "th", "thead", "tr", "ul"})
_CELL_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_ABSOLUTE = re.compile(r"^(https?://|mailto:)", re.IGNORECASE)


def _attribute(tag: str, name: str, value: str) -> bool:
    if tag == "a" and name == "href":
        return bool(_ABSOLUTE.match(value))          # bleach has checked the protocol too
    if name == "class":
        return tag in ("span", "div") and value == "math"        # mistune's math, for MathJax
    if name == "align":
        return tag in ("td", "th") and value in ("left", "right", "center")
    return (tag, name) in {("a", "title"), ("abbr", "title"), ("ol", "start")}


_renderer = None


def markdown(text: str) -> str:
    """A student's markdown as inert HTML: one line, in a div (see the module's docstring)."""
    global _renderer
    import bleach
    import mistune

    if _renderer is None:
        _renderer = mistune.create_markdown(escape=False, plugins=["strikethrough", "table", "math"])
    clean = bleach.clean(_renderer(text), tags=TAGS, attributes=_attribute,
                         protocols=["http", "https", "mailto"], strip=False, strip_comments=True)
    return '<div class="student-markdown">' + _one_line(clean) + "</div>"


def preformatted(text: str) -> str:
    """Text shown as it is, escaped, in a <pre> (a raw cell's)."""
    return '<div class="student-raw"><pre>' + _one_line(html.escape(text)) + "</pre></div>"


def _one_line(markup: str) -> str:
    """Formgrader's markdown renderer passes an HTML block on untouched up to a blank line: so
    there is none; a newline (inside <pre> it matters) stays one as a character reference."""
    return markup.replace("\r", "").replace("\n", "&#10;")


def _text(source) -> str:
    if isinstance(source, list):
        return "".join(s for s in source if isinstance(s, str))
    return source if isinstance(source, str) else ""


def notebook(nb: dict, source_nb) -> dict:
    """`nb` (notebook JSON, version 4, its test cells already the instructor's) with nothing a
    student wrote left as markup; `source_nb` is the instructor's notebook."""
    from ..notebook import nbgrader_meta

    theirs: dict[str, tuple[object, dict]] = {}
    trusted_markdown: set[str] = set()
    for cell in source_nb["cells"]:
        meta = nbgrader_meta(cell)
        if meta.get("grade_id"):
            theirs.setdefault(meta["grade_id"], (cell.get("cell_type"), dict(meta)))
        if cell.get("cell_type") == "markdown":
            trusted_markdown.add(_text(cell.get("source")))
    seen: set[str] = set()
    cells = []
    for i, cell in enumerate(nb.get("cells", [])):
        if not isinstance(cell, dict):
            continue
        kind, text = cell.get("cell_type"), _text(cell.get("source"))
        gid: str | None = nbgrader_meta(cell).get("grade_id")    # a string or None
        metadata = {}
        if gid is not None and gid in theirs and gid not in seen and theirs[gid][0] == kind:
            seen.add(gid)
            metadata["nbgrader"] = dict(theirs[gid][1])
        cell_id = cell.get("id")
        out: dict[str, object] = {
            "id": cell_id if isinstance(cell_id, str) and _CELL_ID.match(cell_id) else f"cell-{i}",
            "metadata": metadata}
        if kind == "code":
            outputs = [o for o in cell.get("outputs", []) if isinstance(o, dict) and o.get("ename") == "TestFailure"]
            out.update(cell_type="code", source=text, outputs=[_failure(o) for o in outputs], execution_count=None)
        elif kind == "markdown":
            out.update(cell_type="markdown", source=text if text in trusted_markdown else markdown(text))
        else:
            out.update(cell_type="markdown", source=preformatted(text))
        cells.append(out)
    meta = source_nb.get("metadata", {})
    return {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
            "metadata": {k: meta[k] for k in ("kernelspec", "language_info") if k in meta}}


def _failure(output: dict) -> dict:
    """The course's own test failure output, its text plain strings (Formgrader escapes them)."""
    message = output.get("evalue") if isinstance(output.get("evalue"), str) else ""
    return {"output_type": "error", "ename": "TestFailure", "evalue": message, "traceback": [message]}
