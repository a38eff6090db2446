"""nbgrader configuration for the course (loaded through JUPYTER_CONFIG_PATH=autograder).

The repository root is the course directory: solutions/ holds the nbgrader *source*
notebooks and exercises/ the *release* notebooks students take. Everything grading
creates (gradebook, submitted/, autograded/, feedback/) goes to one git-ignored
workspace, grading/ by default or $AUTOGRADER_WORKSPACE.
"""
import os
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:      # the type of what traitlets provides
    from traitlets.config import Config

    get_config: Callable[[], Config]

c = get_config()  # noqa: F821 (provided by traitlets when nbgrader loads this file)

_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_workspace = os.path.abspath(os.environ.get("AUTOGRADER_WORKSPACE", os.path.join(_root, "grading")))
try:
    os.makedirs(_workspace, exist_ok=True)
except OSError:
    pass    # read by someone who may not write there (a student's nbgrader submit): not needed then

# `autograder formgrade` serves the workspace alone: there the course directory is the workspace,
# and the repository (solutions/, the source notebooks) is out of the server's reach
c.CourseDirectory.root = _workspace if os.environ.get("AUTOGRADER_FORMGRADE") == "1" else _root
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
c.CourseDirectory.submitted_directory = os.path.join(_workspace, "submitted")
c.CourseDirectory.autograded_directory = os.path.join(_workspace, "autograded")
c.CourseDirectory.feedback_directory = os.path.join(_workspace, "feedback")
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(_workspace, "gradebook.db")
# A shared gradebook named in the workspace's term.toml (db = "postgresql://...") is the one
# formgrader and `nbgrader export` use too.
try:
    import tomllib

    with open(os.path.join(_workspace, "term.toml"), "rb") as _f:
        _db = tomllib.load(_f).get("db")
    if isinstance(_db, str) and _db:
        c.CourseDirectory.db_url = _db
except (OSError, ValueError):
    pass
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", ".DS_Store"]

# Released notebooks carry no outputs, and generating them never executes anything.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Plain `nbgrader autograde` grades on results, not on stderr: PyTorch warns on stderr,
# and stock nbgrader would score a passing test cell 0 for it.
from autograder.nbgrader_plugins import autograde_preprocessors  # noqa: E402

c.Autograde.autograde_preprocessors = autograde_preprocessors()
c.Execute.timeout = 120
