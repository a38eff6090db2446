"""Where things are: the course root, its assignments, the grading workspace, the version.

Two kinds of checkout use this package. The course's own repository has `solutions/` (the
instructor's notebooks: solutions and hidden tests), from which everything is graded. A student
repository (`make student-repo`, autograder/student_repo.py) has no `solutions/`: its checker
takes an assignment's visible tests from the released notebooks kept inside the package
(`autograder/released/`, written there by the generator), a pristine copy beside the one the
student works in, and its course version from `autograder/COURSE_VERSION`.
"""
from __future__ import annotations

import functools
import hashlib
import os
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
ROOT = PACKAGE.parent
RELEASED = PACKAGE / "released"            # only in a student repository's package
VERSION_FILE = PACKAGE / "COURSE_VERSION"  # only in a student repository's package


from .errors import CourseError  # noqa: E402, F401  (where callers have always found it)


def workspace() -> Path:
    return Path(os.environ.get("AUTOGRADER_WORKSPACE", ROOT / "grading")).resolve()


def student_checker() -> bool:
    """This package is a student repository's checker (it has the released notebooks and no
    course repository around it)."""
    return RELEASED.is_dir() and not (ROOT / "solutions").is_dir()


def assignments(root: Path = ROOT) -> list[str]:
    """The course's assignments, from `solutions/` (none where there is no such folder)."""
    folder = root / "solutions"
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and (p / f"{p.name}.ipynb").exists())


def source_notebook(assignment: str, root: Path = ROOT) -> Path:
    """The instructor's notebook of an assignment: what grading reads."""
    path = root / "solutions" / assignment / f"{assignment}.ipynb"
    if not path.exists():
        if not (root / "solutions").is_dir():
            raise CourseError(f"there is no solutions/ folder in {root}: grading needs the course's own "
                              f"repository (a student repository only checks exercises)")
        known = ", ".join(assignments(root)) or "none"
        raise CourseError(f"no assignment named '{assignment}' (known: {known})")
    return path


def checked_assignments() -> list[str]:
    """The assignments `autograder check` knows: the released ones in a student repository."""
    if student_checker():
        return sorted(p.stem for p in RELEASED.glob("*.ipynb"))
    return assignments()


def tests_notebook(assignment: str) -> Path:
    """Where `autograder check` takes an assignment's tests from: the instructor's notebook in
    the course's repository (the check strips its hidden parts), the released notebook in a
    student repository (nbgrader stripped them when it was released)."""
    if not student_checker():
        return source_notebook(assignment)
    path = RELEASED / f"{assignment}.ipynb"
    if not path.is_file():
        known = ", ".join(checked_assignments()) or "none"
        raise CourseError(f"no assignment named '{assignment}' (known: {known})")
    return path


@functools.cache
def version() -> str:
    """The course's version, 12 hex digits: a digest of what decides every grade, each
    instructor's notebook and the grader's code (`grade.course_version`'s inputs, for every
    assignment at once). A student repository has neither: it carries the version it was made
    from (COURSE_VERSION). Computed once per process (a grading run shows it on every page)."""
    if student_checker():
        if not VERSION_FILE.is_file():
            raise CourseError(f"{VERSION_FILE} is missing: this student repository was not made by "
                              f"`make student-repo`")
        return VERSION_FILE.read_text(encoding="utf-8").strip()
    from .versions import grader_version

    h = hashlib.sha256(grader_version().encode())
    for name in assignments():
        h.update(f"\n{name} ".encode() + hashlib.sha256(source_notebook(name).read_bytes()).digest())
    return h.hexdigest()[:12]


def nbgrader_env(extra: dict | None = None) -> dict:
    """Environment for running nbgrader on this course: our config, and the venv's bin/
    (nbgrader shells out to alembic) on PATH."""
    env = dict(os.environ)
    env["JUPYTER_CONFIG_PATH"] = str(ROOT / "autograder")
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.update(extra or {})
    return env
