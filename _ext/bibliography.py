"""The references page (book/references.md) as the text cites it.

- Labels: each entry is labelled as the text cites it, "Vaswani et al., 2017", not [1]-[45].
  The label is formatted by sphinxcontrib-bibtex's own person template (last names, "and" for
  two, "et al." for three or more), so it reads like the citations in the chapters.
- Links back: each entry ends with "Cited in" and a link to every numbered section that cites
  it (sphinxcontrib-bibtex, through docutils, links back only from a bibliography on the citing
  page itself). A citation keeps the id its role gave it (the role notes it as a target), so the
  link lands on the citation.
"""
from __future__ import annotations

from docutils import nodes
from pybtex.plugin import register_plugin
from pybtex.style.formatting.plain import Style as PlainStyle
from pybtex.style.labels import BaseLabelStyle
from sphinx.transforms.post_transforms import SphinxPostTransform

STYLE_NAME = "author_year_plain"    # _config.yml: bibtex_default_style


class AuthorYearLabels(BaseLabelStyle):
    """'Vaswani et al., 2017', 'Bahdanau, Cho, and Bengio'-style names cut to 'et al.' as the
    author_year reference style writes them, a comma, the year; 'a', 'b' after the year when two
    entries would share a label."""

    def format_labels(self, sorted_entries):
        from sphinxcontrib.bibtex.style.referencing import PersonStyle
        from sphinxcontrib.bibtex.style.template import join, year

        class Names:                    # what the template reads from data["style"]
            person = PersonStyle()

        template = join(sep=", ")[Names.person.author_or_editor_or_title(full=False), year]
        labels = [template.format_data({"entry": entry, "style": Names}).render_as("text")
                  for entry in sorted_entries]
        for i, label in enumerate(labels):
            if labels.count(label) > 1:
                same = [j for j, other in enumerate(labels) if other == label]
                yield label + "abcdefghijklmnopqrstuvwxyz"[same.index(i)]
            else:
                yield label


class AuthorYearPlain(PlainStyle):
    """pybtex's plain entries (sorted by author, year, title) with author-year labels."""
    default_label_style = AuthorYearLabels


register_plugin("pybtex.style.formatting", STYLE_NAME, AuthorYearPlain)


def _section_of(node: nodes.Node) -> nodes.section | None:
    """The innermost titled section around node (sphinx-exercise wraps a solution's body in
    an untitled section)."""
    node = node.parent
    while node is not None and not (isinstance(node, nodes.section) and node.children
                                    and isinstance(node[0], nodes.title)):
        node = node.parent
    return node


def _number(secnumbers: dict, section: nodes.section | None) -> str:
    """The number the menu shows for the innermost numbered section around a citation."""
    while section is not None:
        for anchor in [f"#{id_}" for id_ in section["ids"]] + ([""] if _section_of(section) is None else []):
            if anchor in secnumbers:
                return ".".join(map(str, secnumbers[anchor]))
        section = _section_of(section)
    return ""


def _title(env, docname: str, section: nodes.section | None) -> str:
    """The section's title, else the page's."""
    if section is not None:
        return section[0].astext()
    return env.titles[docname].astext() if docname in env.titles else docname


class CitedIn(SphinxPostTransform):
    """After sphinxcontrib-bibtex has filled the bibliography (priority 5), add to each entry a
    paragraph "Cited in 7.2, 11.4": one link per section that cites the work, to its first
    citation there, titled with the section's name."""
    default_priority = 6
    builders = ("html", "dirhtml")   # singlehtml (the PDF) ids are not unique across pages

    def run(self, **kwargs) -> None:
        entries = [c for c in self.document.findall(nodes.citation) if c.get("docname")]
        if not entries:
            return
        env, builder = self.env, self.app.builder
        domain = env.get_domain("cite")
        by_id = {c.citation_id: c.key for c in domain.citations}
        here = entries[0]["docname"]
        doctrees: dict[str, nodes.document] = {}
        order = list(env.found_docs)
        toc = env.toctree_includes
        flat: list[str] = []

        def walk(doc):              # the reading order of the book, as the menu lists it
            flat.append(doc)
            for child in toc.get(doc, []):
                walk(child)
        walk(env.config.root_doc)
        order = flat + [d for d in order if d not in flat]
        cited: dict[str, list[tuple[str, str, str, str]]] = {}
        for ref in sorted(domain.citation_refs, key=lambda r: (order.index(r.docname), r.line or 0)):
            if ref.docname == here:
                continue
            tree = doctrees.setdefault(ref.docname, env.get_doctree(ref.docname))
            target = next((n for n in tree.findall(nodes.Element) if ref.citation_ref_id in n.get("ids", [])),
                          None)
            if target is None:
                continue
            section = _section_of(target)
            number = _number(env.toc_secnumbers.get(ref.docname, {}), section)
            title = _title(env, ref.docname, section)
            for key in {t.key for t in ref.targets}:
                places = cited.setdefault(key, [])
                if not any(p[0] == ref.docname and p[1] == number for p in places):
                    places.append((ref.docname, number, title, ref.citation_ref_id))
        for entry in entries:
            key = by_id.get(entry["ids"][0]) if entry.get("ids") else None
            places = cited.get(key, [])
            if not places:
                continue
            para = nodes.paragraph(classes=["cited-in"])
            para += nodes.Text("Cited in ")
            for i, (docname, number, title, ref_id) in enumerate(places):
                if i:
                    para += nodes.Text(", ")
                uri = builder.get_relative_uri(here, docname) + "#" + ref_id
                para += nodes.reference("", number or title, internal=True, refuri=uri, reftitle=title)
            para += nodes.Text(".")
            entry += para


def setup(app):
    app.add_post_transform(CitedIn)
    return {"parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
