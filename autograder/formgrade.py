"""`autograder formgrade`: nbgrader's Formgrader on the term's workspace, for scores and
comments by hand.

`nbgrader formgrade` no longer exists in nbgrader 0.9 (Formgrader is a Jupyter server
extension, opened from JupyterLab's Nbgrader menu). This command starts a Jupyter server with the
course's nbgrader configuration and the workspace given here (`--workspace`, else
$AUTOGRADER_WORKSPACE, else grading/), so Formgrader reads that workspace's autograded
notebooks and gradebook (term.toml's `db` included) with no variable to set by hand, and
opens Formgrader itself. What an instructor sets there (a test's score, a comment on any
cell) is in the gradebook at once; the next `autograder grade` (nothing is regraded) puts
it into feedback.html, grades.csv and every export.

What a student wrote reaches this page only as inert text (sanitise.py, in the autograded
notebooks the course writes), and the server is a Jupyter server cut down to Formgrader, run
as `python -m autograder.formgrade` (`serve`):

- its root is the workspace, and nbgrader's course directory is the workspace too: the course
  repository (solutions/, the source notebooks) is out of its reach;
- no contents, files, kernels, sessions, terminals, nbconvert, view or config service, and no
  server extension but Formgrader (not JupyterLab, not nbgrader's student extensions, one of
  which runs notebooks); of nbgrader's API, none of the commands that run nbgrader's converters
  (autograde would run a student's notebook outside the sandbox) or release anything, and
  Formgrader's `?path=` (which loads an nbgrader_config.py from any folder) is ignored;
- every page has a Content-Security-Policy that allows scripts only from the server itself
  (`script-src 'self'`: no inline script, no event handler attribute, no javascript: URL,
  nothing from elsewhere). Formgrader's own inline scripts become JSON data that a static script
  reads (`_inline_free`; jupyter_data/ holds the submission page's macros and the scripts), and
  its pages are rendered with HTML escaping on (a student id in a URL is text).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from . import course


FORMGRADER = "nbgrader.server_extensions.formgrader"
DATA = Path(__file__).resolve().parent / "jupyter_data"
MATHJAX2 = course.ROOT / "_vendor_formgrader" / "mathjax2"
# what the pages may load: scripts, data and fonts from this server only; inline styles (MathJax
# and nbconvert write them) are allowed, inline scripts are not
POLICY = "; ".join([
    "default-src 'none'", "script-src 'self'", "style-src 'self' 'unsafe-inline'", "img-src 'self' data:",
    "font-src 'self' data:", "connect-src 'self'", "form-action 'self'", "frame-ancestors 'none'",
    "base-uri 'none'", "object-src 'none'"])
# the services Formgrader needs: /api/status and the login page
SERVICES = ("api", "auth")
# nbgrader's API commands that run its converters (a student's notebook outside the sandbox) or
# release anything: not in this course (`autograder grade` grades; `autograder export` exports)
# the functions nbgrader's templates call from onclick attributes (vars.js calls them instead)
CLICKS = {"toggleAllNames", "createAssignmentModal", "createStudentModal"}
COMMANDS = ("/assign", "/unrelease", "/release", "/collect", "/autograde", "/generate_feedback", "/release_feedback")


def environment(workspace: Path) -> dict[str, str]:
    """The environment Formgrader runs in: the course's configuration, this workspace."""
    env = dict(os.environ)
    env["JUPYTER_CONFIG_PATH"] = str(course.ROOT / "autograder")
    env["AUTOGRADER_WORKSPACE"] = str(Path(workspace).resolve())
    env["AUTOGRADER_FORMGRADE"] = "1"          # nbgrader_config.py: the course directory is the workspace
    # Formgrader's pages take MathJax from the server, not a CDN (jupyter_data's mathjax macro)
    env["JUPYTER_PATH"] = os.pathsep.join(p for p in [str(course.ROOT / "autograder" / "jupyter_data"),
                                                      env.get("JUPYTER_PATH", "")] if p)
    bin_dir = str(Path(sys.executable).parent)          # nbgrader shells out to alembic
    env["PATH"] = os.pathsep.join([bin_dir, env.get("PATH", "")])
    return env


def command(ws: Path, port: int, ip: str, browser: bool) -> list[str]:
    root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []   # a container, CI
    return [sys.executable, "-m", "autograder.formgrade", f"--ServerApp.root_dir={ws}",
            f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--ServerApp.ip={ip}",
            "--ServerApp.default_url=/formgrader", f"--ServerApp.open_browser={browser}", *root]


def run(workspace: Path | None, port: int, ip: str, browser: bool) -> int:
    ws = Path(workspace or course.workspace()).resolve()
    from .store.workspace import GRADEBOOK

    if not (ws / GRADEBOOK).exists() and not _term_db(ws):
        raise course.CourseError(f"{ws} has no gradebook yet: grade an assignment first "
                                 "(autograder grade ASSIGNMENT SUBMISSIONS --workspace ...)")
    if not (MATHJAX2 / "MathJax.js").is_file():
        # without it Formgrader's page stops before it loads any score (its script calls MathJax)
        raise course.CourseError(f"Formgrader needs MathJax 2 on this machine ({MATHJAX2} is missing): "
                                 "run `make mathjax2` once in the course (npm fetches it), then try again")
    print(f"Formgrader on {ws}: http://{ip}:{port}/formgrader (the link with the token is in the log below); "
          "stop with Ctrl-C. After adjusting, run `autograder grade` again to update feedback and exports.",
          flush=True)
    # the server takes this process's place: Ctrl-C, or a signal to this command, reaches it
    # (a child of this process would outlive a terminated parent)
    sys.stdout.flush()
    os.chdir(course.ROOT)
    args = command(ws, port, ip, browser)
    os.execve(args[0], args, environment(ws))


def _term_db(ws: Path) -> str | None:
    from .term.settings import FILE, read_file

    return read_file(ws / FILE).get("db")


# ------------------------------------------------------------------ the server (its own process)
def _inline_free(text: str, name: str) -> str:
    """One of Formgrader's page templates without inline script: each `<script>var x = "{{ x }}";
    </script>` block becomes the same values as JSON (jinja's tojson: no markup survives in it)
    read by a static script, and each `onclick="f()"` a `data-onclick` that script binds. What
    is left inline would be refused by the page's policy: it is refused here, loudly, instead."""
    import re

    def block(m):
        names = re.findall(r'var (\w+) = "\{\{ (\w+) \}\}";', m.group(1))
        if not names or re.sub(r'var \w+ = "\{\{ \w+ \}\}";', "", m.group(1)).strip():
            return m.group(0)
        data = "{" + ", ".join(f'"{var}": {expr}' for var, expr in names) + "}"
        return ('<script type="application/json" class="formgrader-vars">{{ %s | tojson }}</script>'
                '<script src="{{ base_url }}/static/autograder/vars.js"></script>' % data)

    text = re.sub(r"<script>(.*?)</script>", block, text, flags=re.S)
    text = re.sub(r'onclick="(\w+)\(\);?"', r'data-onclick="\1"', text, flags=re.I)
    inline_script = re.search(r"<script(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>", text)
    handlers = re.search(r"\son\w+=", text, re.I)
    if not set(re.findall(r'data-onclick="(\w+)"', text)) <= CLICKS or inline_script or handlers:
        raise RuntimeError(f"Formgrader's template {name} has an inline script this course cannot serve")
    return text


def _harden(app) -> None:
    """Formgrader's pages, after nbgrader has set them up: templates without inline script and
    with HTML escaping on; the submission page's macros and MathJax from jupyter_data/."""
    from jinja2 import BaseLoader, Environment, FileSystemLoader
    from nbgrader.server_extensions.formgrader import handlers

    stock = FileSystemLoader([handlers.template_path])

    class Loader(BaseLoader):
        def get_source(self, environment, template):
            text, filename, uptodate = stock.get_source(environment, template)
            return _inline_free(text, template), filename, uptodate

    settings = app.web_app.settings
    settings["nbgrader_jinja2_env"] = Environment(loader=Loader(), autoescape=True)
    exporter = settings["nbgrader_exporter"]
    # the course's formgrade macros before nbgrader's (template_paths is computed once, already)
    exporter.template_paths = [str(DATA / "nbconvert" / "templates" / "formgrade"), *exporter.template_paths]


def _trim_nbgrader() -> None:
    """Before Formgrader loads: none of nbgrader's commands in its API, no `?path=`, no files."""
    from nbgrader.server_extensions.formgrader import apihandlers, handlers
    from nbgrader.server_extensions.formgrader.base import BaseHandler
    from tornado import web

    class Home(BaseHandler):
        @web.authenticated
        def get(self):
            self.redirect(f"{self.base_url}/formgrader/manage_assignments")

    apihandlers.default_handlers[:] = [h for h in apihandlers.default_handlers if not h[0].endswith(COMMANDS)]
    # nor its files beside a submission: served from the course directory with `..` allowed up to
    # it, they reached secret.key and gradebook.db; the course's autograded notebooks refer to none
    handlers.default_handlers[:] = [(h[0], Home) if h[1] is handlers.FormgraderHandler else h
                                    for h in handlers.default_handlers if h[1] is not handlers.SubmissionFilesHandler]


def serve(argv: list[str] | None = None) -> None:
    """The Jupyter server `autograder formgrade` starts: Formgrader and nothing else."""
    from jupyter_server.serverapp import ServerApp

    class FormgradeServer(ServerApp):
        # jupyter_server's own tuple is typed as exactly its 13 names; this is a shorter one
        default_services = SERVICES  # type: ignore[assignment]

        def init_server_extensions(self) -> None:
            self.jpserver_extensions = {name: False for name in self.jpserver_extensions} | {FORMGRADER: True}
            _trim_nbgrader()
            super().init_server_extensions()

        def init_webapp(self) -> None:
            self.terminals_enabled = False
            # no extra handler: the contents manager's /files/ handler (an instance's method, replaced)
            self.contents_manager.get_extra_handlers = lambda: []  # type: ignore[method-assign]
            # nbgrader's handlers give the login cookie no path (their base_url is "", not "/"):
            # a page opened with ?token= kept the cookie to its own folder, and the page's calls
            # to /formgrader/api/ went to the login page, so no score loaded
            self.identity_provider.cookie_options = {"path": self.base_url, "samesite": "Strict",
                                                     **self.identity_provider.cookie_options}
            headers = dict(self.tornado_settings.get("headers", {}))
            headers["Content-Security-Policy"] = POLICY
            self.tornado_settings = {**self.tornado_settings, "headers": headers}
            super().init_webapp()

        def initialize(self, argv: list[str] | None = None, *args: Any, **kwargs: Any) -> None:
            super().initialize(argv, *args, **kwargs)
            _harden(self)

    FormgradeServer.launch_instance(argv)


if __name__ == "__main__":
    serve()
