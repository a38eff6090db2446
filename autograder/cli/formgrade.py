"""`autograder formgrade`'s arguments."""
from __future__ import annotations

from pathlib import Path


def _cmd_formgrade(args) -> int:
    from ..formgrade import run

    return run(args.workspace, args.port, args.ip, not args.no_browser)


def add_formgrade_parser(sub) -> None:
    p = sub.add_parser("formgrade", help="open nbgrader's Formgrader on the workspace (scores and comments by hand)",
                       description="Start nbgrader's Formgrader (a Jupyter server with nothing else) on the "
                                   "grading workspace: adjust a test's score, or comment on any cell; then run "
                                   "`autograder grade` again "
                                   "(nothing is regraded) to carry them into feedback.html, grades.csv and the "
                                   "exports.")
    p.add_argument("--workspace", type=Path, default=None,
                   help="the grading workspace (default: grading/ in the course, or $AUTOGRADER_WORKSPACE)")
    p.add_argument("--port", type=int, default=8890, help="the port to serve on (default: 8890)")
    p.add_argument("--ip", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1, this machine)")
    p.add_argument("--no-browser", action="store_true", help="do not open a browser")
    p.set_defaults(func=_cmd_formgrade)
