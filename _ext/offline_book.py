"""The book reads offline: drop sphinx-thebe's scripts from every page; MathJax on every page;
each chapter's executed notebook in the theme's download menu; the book's stylesheet
(_ext/static/book.css: figures keep their shape in a narrow column).

Jupyter Book always loads sphinx-thebe, which points each page at thebe on a CDN (unpkg) and,
as the book's environment is read twice, declares its `const THEBE_JS_URL` twice (a console
error on every page). The book has no Binder kernel to launch, so thebe has nothing to do.
"""
from __future__ import annotations

from pathlib import Path
from shutil import copy2


def _is_thebe(asset) -> bool:
    filename = str(getattr(asset, "filename", asset) or "")
    body = str(getattr(asset, "attributes", {}).get("body", ""))
    return "thebe" in filename or "THEBE_JS_URL" in body


def _drop_thebe(app, pagename, templatename, context, doctree):
    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [asset for asset in context[key] if not _is_thebe(asset)]


def _offer_notebook(app, pagename, templatename, context, doctree):
    """The theme's download menu offers a page's executed notebook (.ipynb) only when a launch
    service (Binder, Colab...) is configured; the book has none, so copy it into _sources here,
    before the theme builds its buttons, as the theme itself would."""
    executed = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    if executed.is_file():
        target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        copy2(executed, target)
        context["ipynb_source"] = f"{pagename}.ipynb"


def _round_brackets() -> None:
    """Citations in round brackets, "Vaswani et al. (2017)" and "(Vaswani et al., 2017)":
    sphinxcontrib-bibtex's author_year style writes square ones. Registered as the reference
    style `author_year_round` (_config.yml's bibtex_reference_style)."""
    from dataclasses import dataclass, field

    from sphinxcontrib.bibtex.plugin import register_plugin
    from sphinxcontrib.bibtex.style.referencing import BracketStyle
    from sphinxcontrib.bibtex.style.referencing.author_year import AuthorYearReferenceStyle

    def round_brackets():
        return BracketStyle(left="(", right=")")

    @dataclass
    class RoundAuthorYear(AuthorYearReferenceStyle):
        bracket_parenthetical: BracketStyle = field(default_factory=round_brackets)
        bracket_textual: BracketStyle = field(default_factory=round_brackets)
        bracket_author: BracketStyle = field(default_factory=round_brackets)
        bracket_label: BracketStyle = field(default_factory=round_brackets)
        bracket_year: BracketStyle = field(default_factory=round_brackets)

    register_plugin("sphinxcontrib.bibtex.style.referencing", "author_year_round", RoundAuthorYear)


_round_brackets()


def _book_static(app):
    """The book's own stylesheet (_ext/static/book.css), served as a static file."""
    app.config.html_static_path.append(str(Path(__file__).resolve().parent / "static"))


def setup(app):
    app.connect("builder-inited", _book_static)
    app.add_css_file("book.css")
    app.connect("html-page-context", _offer_notebook, priority=400)
    # MathJax on every page, not only on pages with equations: the sidebar's chapter titles carry
    # mathematics too (chapter 06), and the search and index pages would show them as raw TeX.
    app.set_html_assets_policy("always")
    app.connect("html-page-context", _drop_thebe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
