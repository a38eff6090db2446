"""For institutions: beside every exercise download, a link that opens that exercise on the
institution's own JupyterHub, from the student repository (nbgitpuller's git-pull link).

Configured in one place, `_config.yml`:

    sphinx:
      config:
        course_jupyterhub:
          url: https://hub.example.edu                          # the hub (no link while empty)
          repository: https://github.com/ORG/attention-student  # the student repository (make student-repo)
          branch: main

The hub needs nbgitpuller installed (`pip install nbgitpuller` in its user image): the link
clones the student repository into the student's home on first use, pulls it afterwards
without touching their edits, and opens the exercise in JupyterLab. Nothing is added while
`url` or `repository` is empty, so the published book (read offline) has no such link.
"""
from __future__ import annotations

from urllib.parse import urlencode

from docutils import nodes


def hub_link(conf: dict, notebook: str) -> str | None:
    """The nbgitpuller link that opens `notebook` (a path such as
    exercises/02_similarity/02_similarity.ipynb, inside the student repository) on the hub."""
    url, repository = (conf or {}).get("url", "").rstrip("/"), (conf or {}).get("repository", "").rstrip("/")
    if not url or not repository:
        return None
    folder = repository.rsplit("/", 1)[-1].removesuffix(".git")
    query = urlencode({"repo": repository, "branch": (conf or {}).get("branch") or "main",
                       "urlpath": f"lab/tree/{folder}/{notebook}"})
    return f"{url}/hub/user-redirect/git-pull?{query}"


def add_links(app, doctree, docname: str) -> None:
    from sphinx.addnodes import download_reference

    conf = app.config.course_jupyterhub
    for node in list(doctree.findall(download_reference)):
        target = node.get("reftarget", "")
        if not target.endswith(".ipynb") or "exercises/" not in target:
            continue
        link = hub_link(conf, target[target.index("exercises/"):])
        if link is None:
            return
        parent = node.parent
        at = parent.index(node) + 1
        parent.insert(at, [nodes.Text(" (or "),
                           nodes.reference("", "open it on your JupyterHub", refuri=link, internal=False),
                           nodes.Text(")")])


def setup(app):
    app.add_config_value("course_jupyterhub", {}, "html")
    app.connect("doctree-resolved", add_links)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
