"""The versions a grade depends on: the grader's code, and with it the instructor's notebook.
Low in the package's layers (course.py and workspace.py need them; grading re-exports them)."""
import hashlib
from pathlib import Path


def grader_version() -> str:
    """A digest of the grader's code (every module of the autograder package)."""
    package = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for module in sorted(package.rglob("*.py")):
        h.update(module.relative_to(package).as_posix().encode())
        h.update(module.read_bytes())
    return h.hexdigest()


def course_version(source_path) -> str:
    """The version of what decides a grade besides the limits and the secret: the instructor's
    notebook (visible and hidden tests, points, solution) and the grader's code. A Dask worker
    whose course gives another version refuses the work (pool_dask.py); resume keys build on it."""
    h = hashlib.sha256()
    h.update(Path(source_path).read_bytes())
    h.update(grader_version().encode())
    return h.hexdigest()
