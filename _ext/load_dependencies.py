"""A code cell's `:load: FILE` (MyST-NB) makes FILE part of the page: record it as the page's
dependency, so that editing a shared helper (book/helpers/) reads, and so executes, every page
that loads it again. Sphinx rebuilds a page when the page or a noted dependency is newer than
its last build, and MyST-NB reads a loaded file into the cell's source, the execution cache's
key; without this, `make book` would keep serving pages drawn by the old helper."""
from __future__ import annotations

import re
from pathlib import Path

LOAD = re.compile(r"^:load:\s*(\S+)\s*$", re.M)


def note_loaded_files(app, docname: str, source: list[str]) -> None:
    page = Path(app.env.doc2path(docname))
    for name in LOAD.findall(source[0]):
        app.env.note_dependency(str((page.parent / name).resolve()))


def setup(app):
    app.connect("source-read", note_loaded_files)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
