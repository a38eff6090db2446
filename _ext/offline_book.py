"""The book reads offline: drop sphinx-thebe's scripts from every page; MathJax on every page.

Jupyter Book always loads sphinx-thebe, which points each page at thebe on a CDN (unpkg) and,
as the book's environment is read twice, declares its `const THEBE_JS_URL` twice (a console
error on every page). The book has no Binder kernel to launch, so thebe has nothing to do.
"""
from __future__ import annotations


def _is_thebe(asset) -> bool:
    filename = str(getattr(asset, "filename", asset) or "")
    body = str(getattr(asset, "attributes", {}).get("body", ""))
    return "thebe" in filename or "THEBE_JS_URL" in body


def _drop_thebe(app, pagename, templatename, context, doctree):
    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [asset for asset in context[key] if not _is_thebe(asset)]


def setup(app):
    # MathJax on every page, not only on pages with equations: the sidebar's chapter titles carry
    # mathematics too (chapter 06), and the search and index pages would show them as raw TeX.
    app.set_html_assets_policy("always")
    app.connect("html-page-context", _drop_thebe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
