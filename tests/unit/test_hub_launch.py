"""The book's link to an exercise on an institution's JupyterHub (_ext/hub_launch.py)."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import parse_qs, urlsplit

import yaml
from docutils import nodes
from sphinx.addnodes import download_reference

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "_ext"))
import hub_launch  # noqa: E402

TARGET = "../exercises/02_similarity/02_similarity.ipynb"


def _page(conf: dict) -> nodes.paragraph:
    para = nodes.paragraph("", "", nodes.Text("The exercise: "),
                           download_reference("", "02_similarity.ipynb", reftarget=TARGET), nodes.Text("."))
    doc = nodes.document(None, None)
    doc += para
    hub_launch.add_links(SimpleNamespace(config=SimpleNamespace(course_jupyterhub=conf)), doc, "02_similarity")
    return para


def _links(para) -> list:
    return [n for n in para.findall(nodes.reference) if type(n) is nodes.reference]   # not the download


def test_an_exercise_opens_on_the_configured_hub_from_the_student_repository():
    para = _page({"url": "https://hub.example.edu/", "repository": "https://github.com/org/attention-student.git",
                  "branch": "term-2027"})
    links = _links(para)
    assert len(links) == 1 and links[0].astext() == "open it on your JupyterHub"
    url = urlsplit(links[0]["refuri"])
    assert (url.scheme, url.netloc, url.path) == ("https", "hub.example.edu", "/hub/user-redirect/git-pull")
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    assert query == {"repo": "https://github.com/org/attention-student.git", "branch": "term-2027",
                     "urlpath": "lab/tree/attention-student/exercises/02_similarity/02_similarity.ipynb"}
    # the link comes right after the download, in the same sentence
    assert para.astext() == "The exercise: 02_similarity.ipynb (or open it on your JupyterHub)."


def test_no_link_until_the_hub_is_configured():
    assert not _links(_page({"url": "", "repository": "", "branch": "main"}))
    assert not _links(_page({}))
    # as published: configured in _config.yml, empty (a book read offline links to no hub)
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["sphinx"]["local_extensions"]["hub_launch"] == "_ext"
    assert config["sphinx"]["config"]["course_jupyterhub"] == {"url": "", "repository": "", "branch": "main"}
