"""`make student-repo`: the repository students clone, written to `_build/student-repo/`.

It holds what a student needs and nothing a student must not have:

* `exercises/`: the released notebooks (`make exercises`), hidden tests already stripped;
* `autograder/`: the student's checker (`autograder check`), the modules `CHECKER` lists and
  nothing else of the grader, with a pristine copy of each released notebook
  (`autograder/released/`: where the check takes the visible tests from, beside the copy the
  student edits) and the course's version (`autograder/COURSE_VERSION`);
* `README.md`, `install.py`, `Makefile`, `.gitignore`, `pyproject.toml`: from `student/`;
* `requirements.txt`: the packages an exercise and the check need (`STUDENT_PACKAGES` and what
  they require), each pinned at the version of the course's own requirements.txt;
* `LICENSE`, when the course's repository has one.

No solution, no hidden test, no wrong-on-purpose implementation (tests/mutants), no grading
secret: none of those folders is read here, and `tests/book/test_student_repo.py` searches every
file written for every solution and hidden-test line of `solutions/`.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from . import course

# The modules `autograder check` imports, here or in its sandbox (the worker module is what the
# check's zygote template warms up, as grading's does), and the command line.
CHECKER = ("__init__.py", "__main__.py", "cli/__init__.py", "check.py", "course.py", "errors.py", "flags.py",
           "jsontext.py", "modified.py", "notebook.py", "probes.py", "report/__init__.py", "report/review.py",
           "startup.py", "testing.py", "versions.py",
           "grade/__init__.py", "grade/submission.py", "grade/testcells.py", "grade/worker.py",
           "sandbox/__init__.py", "sandbox/bwrap.py", "sandbox/cgroups.py", "sandbox/child.py", "sandbox/confine.py",
           "sandbox/errors.py", "sandbox/host.py", "sandbox/meter.py", "sandbox/protocol.py", "sandbox/processes.py",
           "sandbox/server.py", "sandbox/session.py", "sandbox/template.py")

# What a student's environment needs: the exercises' imports (NumPy, PyTorch), JupyterLab to
# work in, and what the checker imports (nbformat and its validator, IPython's cell transformer).
# No book builder, browser, database, cluster or grading package.
STUDENT_PACKAGES = ("numpy", "torch", "jupyterlab", "ipykernel", "ipython", "nbformat", "fastjsonschema")

STUDENT_FILES = {"README.md": "README.md", "install.py": "install.py", "Makefile": "Makefile",
                 "gitignore": ".gitignore", "pyproject.toml": "pyproject.toml"}


def pins(requirements: Path) -> dict[str, str]:
    """The course's requirements.txt as {canonical name: its `name==version` line}."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    out: dict[str, str] = {}
    for line in requirements.read_text(encoding="utf-8").splitlines():
        line = line.split("#")[0].strip()
        if line and not line.startswith("-"):
            out[canonicalize_name(Requirement(line).name)] = line
    return out


def closure(roots: tuple[str, ...]) -> set[str]:
    """The canonical names of `roots` and of every package they require on this machine (the
    installed metadata; requirements behind an extra only where that extra is asked for)."""
    from importlib.metadata import PackageNotFoundError, distribution

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[tuple[str, frozenset[str]]] = set()
    todo: list[tuple[str, frozenset[str]]] = [(name, frozenset()) for name in roots]
    while todo:
        name, extras = todo.pop()
        key = canonicalize_name(name)
        if (key, extras) in seen:
            continue
        seen.add((key, extras))
        try:
            requires = distribution(key).requires or []
        except PackageNotFoundError:
            continue                      # a requirement for another platform
        for text in requires:
            req = Requirement(text)
            if req.marker and not any(req.marker.evaluate({"extra": e}) for e in (extras or {""})):
                continue
            todo.append((req.name, frozenset(req.extras)))
    return {key for key, _ in seen}


def requirements_text(root: Path = course.ROOT) -> str:
    course_pins = pins(root / "requirements.txt")
    names = sorted(closure(STUDENT_PACKAGES) & set(course_pins))
    missing = [n for n in STUDENT_PACKAGES if n not in names]
    if missing:
        raise course.CourseError(f"requirements.txt pins no version of {', '.join(missing)}")
    head = [
        "# What the exercises and `autograder check` need, pinned as the course's own environment.",
        "# Set up with `python3 install.py`, which installs PyTorch's CPU build first. By hand, on Linux:",
        "#   pip install --no-deps torch==VERSION --index-url https://download.pytorch.org/whl/cpu",
        "# before `pip install -r requirements.txt` (PyPI's Linux wheel is the CUDA build: several GB of",
        "# NVIDIA libraries that no exercise uses). On macOS and Windows, PyPI's wheel is the CPU build.",
    ]
    torch = course_pins["torch"].split("==")[-1]
    head = [line.replace("VERSION", torch) for line in head]
    return "\n".join(head + [course_pins[n] for n in names]) + "\n"


def build(out: Path, root: Path = course.ROOT) -> Path:
    """Write the student repository to `out` (replacing what was there); returns `out`."""
    package = root / "autograder"
    exercises = sorted(p for p in (root / "exercises").iterdir() if (p / f"{p.name}.ipynb").is_file())
    if not exercises:
        raise course.CourseError("no released exercises: run `make exercises` first")
    version = course.version()
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    for name in CHECKER:
        (out / "autograder" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(package / name, out / "autograder" / name)
    (out / "autograder" / "released").mkdir()
    for folder in exercises:
        notebook = folder / f"{folder.name}.ipynb"
        (out / "exercises" / folder.name).mkdir(parents=True)
        shutil.copyfile(notebook, out / "exercises" / folder.name / notebook.name)
        shutil.copyfile(notebook, out / "autograder" / "released" / notebook.name)
    (out / "autograder" / "COURSE_VERSION").write_text(version + "\n", encoding="utf-8")
    for source, target in STUDENT_FILES.items():
        shutil.copyfile(root / "student" / source, out / target)
    (out / "requirements.txt").write_text(requirements_text(root), encoding="utf-8")
    for licence in ("LICENSE", "LICENSE.md", "LICENSE.txt", "COPYING"):
        if (root / licence).is_file():
            shutil.copyfile(root / licence, out / licence)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.student_repo",
                                     description="Write the student repository (exercises, checker, set-up).")
    parser.add_argument("--to", type=Path, default=course.ROOT / "_build" / "student-repo", metavar="FOLDER")
    args = parser.parse_args(argv)
    try:
        out = build(args.to)
    except course.CourseError as exc:
        print(f"student-repo: error: {exc}", file=sys.stderr)
        return 2
    files = sum(1 for p in out.rglob("*") if p.is_file())
    print(f"wrote {out} ({files} files), course version {course.version()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
