"""`autograder formgrade`: nbgrader's Formgrader on the term's workspace, for scores and
comments by hand.

`nbgrader formgrade` no longer exists in nbgrader 0.9 (Formgrader is a Jupyter server
extension, opened from JupyterLab's Nbgrader menu). This command starts JupyterLab with the
course's nbgrader configuration and the workspace given here (`--workspace`, else
$AUTOGRADER_WORKSPACE, else grading/), so Formgrader reads that workspace's autograded
notebooks and gradebook (term.toml's `db` included) with no variable to set by hand, and
opens Formgrader itself. What an instructor sets there (a test's score, a comment on any
cell) is in the gradebook at once; the next `autograder grade` (nothing is regraded) puts
it into feedback.html, grades.csv and every export.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from . import course


def environment(workspace: Path) -> dict[str, str]:
    """The environment Formgrader runs in: the course's configuration, this workspace."""
    env = dict(os.environ)
    env["JUPYTER_CONFIG_PATH"] = str(course.ROOT / "autograder")
    env["AUTOGRADER_WORKSPACE"] = str(Path(workspace).resolve())
    # Formgrader's pages take MathJax from the server, not a CDN (jupyter_data's mathjax macro)
    env["JUPYTER_PATH"] = os.pathsep.join(p for p in [str(course.ROOT / "autograder" / "jupyter_data"),
                                                      env.get("JUPYTER_PATH", "")] if p)
    bin_dir = str(Path(sys.executable).parent)          # nbgrader shells out to alembic
    env["PATH"] = os.pathsep.join([bin_dir, env.get("PATH", "")])
    return env


def command(port: int, ip: str, browser: bool) -> list[str]:
    root = ["--allow-root"] if hasattr(os, "geteuid") and os.geteuid() == 0 else []   # a container, CI
    return [sys.executable, "-m", "jupyter", "lab", f"--ServerApp.root_dir={course.ROOT}",
            f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--ServerApp.ip={ip}",
            "--ServerApp.default_url=/formgrader", f"--ServerApp.open_browser={browser}", *root]


def run(workspace: Path | None, port: int, ip: str, browser: bool) -> int:
    ws = Path(workspace or course.workspace()).resolve()
    if not (ws / "gradebook.db").exists() and not _term_db(ws):
        raise course.CourseError(f"{ws} has no gradebook yet: grade an assignment first "
                                 "(autograder grade ASSIGNMENT SUBMISSIONS --workspace ...)")
    print(f"Formgrader on {ws}: http://{ip}:{port}/formgrader (the token is in Jupyter's log below); "
          "stop with Ctrl-C. After adjusting, run `autograder grade` again to update feedback and exports.",
          flush=True)
    # JupyterLab takes this process's place: Ctrl-C, or a signal to this command, reaches it
    # (a child of this process would outlive a terminated parent)
    sys.stdout.flush()
    os.chdir(course.ROOT)
    args = command(port, ip, browser)
    os.execve(args[0], args, environment(ws))


def _term_db(ws: Path) -> str | None:
    from .term import FILE, read_file

    return read_file(ws / FILE).get("db")


def add_formgrade_parser(sub) -> None:
    p = sub.add_parser("formgrade", help="open nbgrader's Formgrader on the workspace (scores and comments by hand)",
                       description="Start JupyterLab with nbgrader's Formgrader on the grading workspace: adjust "
                                   "a test's score, or comment on any cell; then run `autograder grade` again "
                                   "(nothing is regraded) to carry them into feedback.html, grades.csv and the "
                                   "exports.")
    p.add_argument("--workspace", type=Path, default=None,
                   help="the grading workspace (default: grading/ in the course, or $AUTOGRADER_WORKSPACE)")
    p.add_argument("--port", type=int, default=8890, help="the port to serve on (default: 8890)")
    p.add_argument("--ip", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1, this machine)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.set_defaults(func=lambda args: run(args.workspace, args.port, args.ip, not args.no_browser))
