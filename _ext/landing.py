"""_build/html/index.html, the address a reader types, as a page: the book's root is
book/index.html, and sphinx-external-toc writes index.html as one bare <meta> redirect (no
<html>, no title, no language, nothing to follow when redirects are off). This writes it first,
as a small HTML page with the book's title and language, the same redirect, and a visible link;
sphinx-external-toc then leaves the existing file alone."""
from __future__ import annotations

from html import escape
from pathlib import Path

PAGE = """<!DOCTYPE html>
<html lang="{lang}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<link rel="canonical" href="{url}">
<meta http-equiv="refresh" content="0; url={url}">
</head>
<body>
<main>
<h1>{title}</h1>
<p>The book starts at <a href="{url}">{title}</a>.</p>
</main>
</body>
</html>
"""


def write_landing(app, exception) -> None:
    if exception is not None or app.builder.name != "html" or app.config.root_doc == "index":
        return
    url = escape(app.builder.get_target_uri(app.config.root_doc), quote=True)
    page = PAGE.format(lang=escape(app.config.language or "en", quote=True),
                       title=escape(app.config.html_title or app.config.project), url=url)
    (Path(app.outdir) / "index.html").write_text(page, encoding="utf-8")


def setup(app):
    # Before sphinx-external-toc's own build-finished handler (priority 500), which only writes
    # index.html when there is none.
    app.connect("build-finished", write_landing, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
