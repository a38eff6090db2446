"""The book reads offline: drop sphinx-thebe's scripts from every page (and MathJax's:
_ext/typeset_math.py typesets the formulas when the book is built); the theme's icons from its
icon font, not its 1.5 MB script; each chapter's executed notebook in the theme's download
menu. The book on every screen: the theme's sidebar buttons work on phones and desktops, nothing
is wider than a phone, code fits the column, every figure opens full size, the download menu
offers the exercise notebook and the whole-book PDF, and every figure's smallest text is
measured when a chapter executes.

Jupyter Book always loads sphinx-thebe, which points each page at thebe on a CDN (unpkg) and,
as the book's environment is read twice, declares its `const THEBE_JS_URL` twice (a console
error on every page). The book has no Binder kernel to launch, so thebe has nothing to do.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from shutil import copy2

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

HERE = Path(__file__).resolve().parent


def _is_thebe(asset) -> bool:
    filename = str(getattr(asset, "filename", asset) or "")
    body = str(getattr(asset, "attributes", {}).get("body", ""))
    return "thebe" in filename or "THEBE_JS_URL" in body


def _is_design(asset) -> bool:
    filename = str(getattr(asset, "filename", asset) or "")
    return "sphinx-design" in filename or "design-tabs" in filename


def _drop_thebe(app, pagename, templatename, context, doctree):
    """No thebe; and sphinx-design's stylesheet and script (62 kB) only on a page that uses
    its components (Jupyter Book loads sphinx-design on every page; the book uses none)."""
    design = 'class="sd-' in context.get("body", "") or " sd-" in context.get("body", "")
    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [asset for asset in context[key]
                            if not _is_thebe(asset) and (design or not _is_design(asset))]


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


# A cell's figure (an image under _images/ not already in a link) becomes a link to the image
# file itself: a reader opens it full size. A figure whose text a phone's 358 px column would
# shrink under 9 px carries a phone version (_ext/figure_text.py draws it into the output's
# metadata; _phone_versions renders it as a second image): the two become one <picture>, which
# serves the phone version below PHONE_MAX_PX and the figure as drawn above it. The browser
# loads only the one it shows, and only when it is scrolled near (loading="lazy").
PHONE_MAX_PX = 640
_IMAGE = re.compile(r'(<a\b[^>]*>\s*)?(<img\b[^>]*\bsrc="([^"]*_images/[^"]+)"[^>]*>)')
_LINKED = re.compile(r'(<a\b[^>]*>)\s*(<img\b[^>]*>)\s*</a>')
_PAIR = re.compile(_LINKED.pattern.replace("<img\\b", "<img\\b(?=[^>]*\\bfigure-desktop\\b)", 1)
                   + r"\s*" + _LINKED.pattern.replace("<img\\b", "<img\\b(?=[^>]*\\bfigure-phone\\b)", 1))
_ATTRIBUTE = r'\b{}="([^"]*)"'


def _lazy(img: str, builder: str = "html") -> str:
    """A figure loads when it is scrolled near; not in the single page printed as the PDF."""
    if builder != "html" or "loading=" in img:
        return img
    return img.replace("<img ", '<img loading="lazy" decoding="async" ', 1)


def _picture(match) -> str:
    """A desktop figure and its phone version (each already a link to its file): one link, to
    the figure as drawn, around a <picture> of both."""
    link, desktop, phone = match.group(1), match.group(2), match.group(4)
    src = re.search(_ATTRIBUTE.format("src"), phone).group(1)
    size = re.search(r"width:\s*(\d+)px;\s*height:\s*(\d+)px", phone)
    dims = f' width="{size.group(1)}" height="{size.group(2)}"' if size else ""
    return (f'{link}<picture class="figure-by-width"><source media="(max-width: {PHONE_MAX_PX}px)" '
            f'srcset="{src} 2x"{dims}>{desktop}</picture></a>')


def _link_images(app, pagename, templatename, context, doctree):
    if "body" not in context:
        return

    def wrap(match):
        img = _lazy(match.group(2), app.builder.name)
        if match.group(1):          # already a link (Sphinx links a scaled figure to its file)
            return match.group(1).replace('class="', 'class="figure-full-size ', 1) + img
        return (f'<a class="figure-full-size" href="{match.group(3)}" '
                f'title="Open the figure full size">{img}</a>')

    body = _IMAGE.sub(wrap, context["body"])
    context["body"] = _TEX_IN_REF.sub(_typeset_ref, _PAIR.sub(_picture, body))


def _phone_versions() -> None:
    """MyST-NB renders an image output as one image node; an output whose metadata carries a
    phone version (figure_text.py) renders as two, the figure (class figure-desktop) then its
    phone version (figure-phone), both written to _images by MyST-NB itself."""
    from dataclasses import replace

    from myst_nb.core.render import NbElementRenderer

    render_image = NbElementRenderer.render_image
    if getattr(render_image, "_phone_versions", False):
        return

    def with_phone_version(self, data):
        rendered = render_image(self, data)
        phone = data.output_metadata.get(data.mime_type, {}).get("phone") if data.mime_type == "image/png" else None
        if not phone or len(rendered) != 1:
            return rendered
        size = {key: str(phone[key]) for key in ("width", "height") if phone.get(key)}
        phone_nodes = render_image(self, replace(data, content=phone["png"], output_metadata={data.mime_type: size}))
        rendered[0]["classes"].append("figure-desktop")
        phone_nodes[0]["classes"].append("figure-phone")
        return rendered + phone_nodes

    with_phone_version._phone_versions = True
    NbElementRenderer.render_image = with_phone_version


# A {ref} to a section whose title has mathematics ("Scaling: why attention divides by
# $\sqrt{d_k}$") gets the title as plain text, raw TeX and all: the TeX is handed to MathJax.
_TEX_IN_REF = re.compile(r'(<span class="std std-ref">)([^<]*\\[^<]*)(</span>)')
_TEX_RUN = re.compile(r"\\[A-Za-z]+(?:\{[^{}]*\})*")


def _typeset_ref(match):
    text = _TEX_RUN.sub(lambda m: f'<span class="math notranslate nohighlight">\\({m.group(0)}\\)</span>',
                        match.group(2))
    return match.group(1) + text + match.group(3)


# The chapter's exercise notebook: the page links it with {download} (to _downloads/<hash>/).
_EXERCISE = re.compile(r'href="([^"]*_downloads/[0-9a-f]+/(\d\d_\w+)\.ipynb)"')
PDF_NAME = "book.pdf"


def _download_menu(app, pagename, templatename, context, doctree):
    """The theme's download menu: the chapter's exercise notebook by name beside the executed
    page's .ipynb, and the whole-book PDF instead of ".pdf" (which only opened the print
    dialog). Runs after the theme has built its buttons (priority 500)."""
    for group in context.get("header_buttons", []):
        if group.get("label") != "download-buttons":
            continue
        buttons = []
        for button in group["buttons"]:
            if button.get("label") == "download-pdf-button":
                button = {"type": "link", "url": context["pathto"](PDF_NAME, 1),
                          "text": "book.pdf (whole book)", "tooltip": "Download the whole book as a PDF",
                          "icon": "fas fa-file-pdf", "label": "download-book-pdf-button"}
            buttons.append(button)
            if button.get("label") == "download-notebook-button":
                button["text"] = f"{Path(pagename).name}.ipynb (executed page)"
                found = _EXERCISE.search(context.get("body", ""))
                if found:
                    buttons.append({"type": "link", "url": found.group(1).replace("&amp;", "&"),
                                    "text": f"{found.group(2)}.ipynb (exercise)",
                                    "tooltip": "Download the chapter's exercise notebook",
                                    "icon": "fas fa-pencil", "label": "download-exercise-button"})
        group["buttons"] = buttons


class SelfCheckSolutions(SphinxPostTransform):
    """sphinx-exercise titles a solution "Solution to Exercise 5.1" from the directive's default
    title, whatever numfig_format says; the self-checks are "Self-check 5.1" (_config.yml)."""
    default_priority = 22  # after sphinx-exercise's ResolveTitlesInSolutions (21)

    def run(self):
        from sphinx_exercise.nodes import solution_node

        for node in self.document.findall(solution_node):
            for text in list(node.children[0].findall(nodes.Text)):
                if text.astext().startswith(" Exercise "):
                    text.parent.replace(text, nodes.Text(" Self-check " + text.astext()[len(" Exercise "):]))


def _static(app):
    app.config.html_static_path.append(str(HERE / "static"))


def _templates(app, config):
    """templates/static/webpack-macros.html: the theme's assets without fontawesome.js."""
    config.templates_path = [*config.templates_path, str(HERE / "templates")]


def _kernel_probe(app):
    """Every chapter's kernel starts with figure_text.py (IPYTHONDIR under _build, inherited by
    the kernels the build starts): each displayed figure's smallest text is measured."""
    ipython_dir = Path(app.outdir).parent / "ipython"
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    copy2(HERE / "figure_text.py", startup / "50-figure-text.py")
    os.environ["IPYTHONDIR"] = str(ipython_dir)


def _copy_pdf(app, exception):
    """The whole-book PDF (`make pdf` writes _build/pdf/book.pdf) is served with the HTML."""
    pdf = Path(app.outdir).parent / "pdf" / PDF_NAME
    if exception is None and app.builder.name == "html" and pdf.is_file():
        copy2(pdf, Path(app.outdir) / PDF_NAME)


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


def setup(app):
    _kernel_probe(app)
    _phone_versions()
    app.connect("builder-inited", _static)
    app.add_post_transform(SelfCheckSolutions)
    # The whole-book PDF prints the single-page build (book_pdf.py): MyST-NB's hidden cells
    # have an HTML visitor only.
    from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput, visit_HideCellInput

    app.add_node(HideCodeCellNode, override=True, html=(visit_HideCellInput, depart_HideCellInput),
                 singlehtml=(visit_HideCellInput, depart_HideCellInput))
    app.add_css_file("book-screens.css")
    app.add_js_file("book-screens.js")
    app.connect("html-page-context", _offer_notebook, priority=400)
    app.connect("html-page-context", _download_menu, priority=600)
    app.connect("html-page-context", _link_images, priority=600)
    app.connect("build-finished", _copy_pdf)
    # MathJax only on the pages with mathematics (Sphinx's default): the menu's chapter titles
    # are plain text (Unicode, not TeX), so the search page and the references need none.
    app.connect("config-inited", _templates)
    app.connect("html-page-context", _drop_thebe, priority=900)
    # env_version: a new version re-reads and re-writes every page (not re-executes): raise it
    # when this file changes what the pages contain.
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 13}
