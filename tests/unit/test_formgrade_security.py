"""Formgrader's own pages without a server: every page template served without inline script, a
student's markdown through Formgrader's renderer inert, and `autograder formgrade` without
MathJax 2 in one line. A class graded and served is tests/e2e/test_formgrade_security.py."""
from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.conftest import ROOT


SAFE_TAGS = {"a", "b", "blockquote", "code", "div", "em", "h1", "h2", "h3", "h4", "li", "ol", "p", "pre", "span",
             "strong", "table", "tbody", "td", "th", "thead", "tr", "ul", "br", "hr"}


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.found, self.attributes = set(), []

    def handle_starttag(self, tag, attrs):
        self.found.add(tag)
        self.attributes += [(k, v or "") for k, v in attrs]


def test_formgrade_without_mathjax2_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    """Without MathJax 2 Formgrader's page stops before it loads a score: the command refuses,
    in one line that says what to run, instead of serving empty score boxes."""
    from autograder import cli, formgrade

    (tmp_path / "gradebook.db").write_bytes(b"")
    monkeypatch.setattr(formgrade, "MATHJAX2", tmp_path / "no-mathjax2", raising=False)
    monkeypatch.setattr(formgrade.os, "execve", lambda *a: pytest.fail("the server was started"))
    assert cli.main(["formgrade", "--workspace", str(tmp_path), "--no-browser"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "make mathjax2" in err, err


def test_every_formgrader_page_template_is_served_without_inline_script():
    """Each of nbgrader's page templates, as the course's server loads it: its variables are
    JSON data, its onclick handlers named data (vars.js calls them), nothing inline is left;
    and a template with an inline script it cannot convert is refused, not served."""
    import importlib.util

    from jinja2 import Environment

    from autograder.formgrade import _inline_free

    nbgrader = Path(importlib.util.find_spec("nbgrader").submodule_search_locations[0])

    script = ROOT / "autograder/jupyter_data/formgrade_static/autograder/vars.js"
    templates = sorted((nbgrader / "server_extensions" / "formgrader" / "templates").glob("*.tpl"))
    assert len(templates) > 10
    for path in templates:
        text = _inline_free(path.read_text(), path.name)
        found = _Tags()
        found.feed(text)
        assert not [a for a in found.attributes if a[0].lower().startswith("on")], path.name
        for name in set(v for k, v in found.attributes if k == "data-onclick"):
            assert f"{name}: function () {{ return {name}(); }}" in script.read_text(), name
        Environment().parse(text)                                 # still a template
    with pytest.raises(RuntimeError, match="inline script"):
        _inline_free('<script>alert(document.cookie)</script>', "x.tpl")
    with pytest.raises(RuntimeError, match="inline script"):
        _inline_free('<a onclick="steal()">x</a>', "x.tpl")


TRICKS = [
    "[a](java&#115;cript:alert(1)) [b](JaVaScRiPt:alert(1)) [c]( javascript:alert(1)) ![i](javascript:alert(1))",
    "<javascript:alert(1)> <a href=\"&#106;avascript:alert(1)\">e</a> <a href=\"java\tscript:alert(1)\">t</a>",
    "[d](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==) [v](vbscript:msgbox)",
    "<svg><a xlink:href=\"javascript:alert(1)\"><text>x</text></a></svg> <math><mi href=\"javascript:alert(1)\">m</mi></math>",
    "<details open ontoggle=alert(1)>d</details> <video><source onerror=alert(1)></video> <body onload=alert(1)>",
    "<div style=\"background:url(javascript:alert(1))\">s</div> <p class=\"navbar-fixed-top\">covers the page</p>",
    "<!-- <script>alert(1)</script> --> <noscript><p title=\"</noscript><img src=x onerror=alert(1)>\"></noscript>",
    "```html\n<script>alert(1)</script>\n```\n\n    <script>indented</script>\n\n> <img src=x onerror=alert(1)>",
    "$x$ <b>ok</b>\n\n<table><tr><td align=center onclick=alert(1)>cell</td></tr></table>\n\n- [l](https://example.org)",
]


@pytest.mark.parametrize("markdown", TRICKS)
def test_a_students_markdown_reaches_formgraders_renderer_inert(markdown):
    """sanitise.notebook on a cell of each trick, rendered as Formgrader renders markdown and
    read as a browser would: only text tags, no handler, style or script-bearing URL; links
    to https stay links, math stays math."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    from autograder.report import sanitise

    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
          "cells": [{"cell_type": "markdown", "id": "x", "metadata": {}, "source": markdown},
                    {"cell_type": "raw", "id": "y", "metadata": {}, "source": markdown}]}
    out = sanitise.notebook(nb, {"cells": [], "metadata": {}})
    assert [c["cell_type"] for c in out["cells"]] == ["markdown", "markdown"]
    for cell in out["cells"]:
        tags = _Tags()
        tags.feed(markdown2html_mistune(cell["source"]))
        assert tags.found <= SAFE_TAGS, tags.found
        for name, value in tags.attributes:
            assert name in ("href", "class", "align", "title", "start"), (name, value)
            if name == "href":
                assert value.startswith(("https://", "http://", "mailto:")), value
            if name == "class":
                assert value in ("student-markdown", "student-raw", "math"), value
    if "https://example.org" in markdown:
        html = markdown2html_mistune(out["cells"][0]["source"])
        assert '<a href="https://example.org">' in html and "math" in html
