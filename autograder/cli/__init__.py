"""The `autograder` command line: parses arguments and calls the library."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .. import course
from ..notebook import NotebookError

EPILOG = """examples:
  autograder grade 02_similarity submissions/            grade a folder (one sub-folder per student)
  autograder grade 02_similarity export.zip --workers 2  grade a zip downloaded from an LMS
  autograder grade 02_similarity export.zip --due 2025-03-14T23:59+01:00 --late-policy per-day:10 \
      --roster roster.csv                                with a deadline, a late policy and the class list
  autograder grade 02_similarity export.zip --student alice   regrade one student, nobody else
  autograder export 02_similarity --format canvas        grades for Canvas's import (or moodle, csv)
  autograder formgrade                                   Formgrader: scores and comments by hand
  autograder release --all                               regenerate exercises/ from solutions/
  autograder check exercises/02_similarity/02_similarity.ipynb   a student checks their notebook (visible tests)
  autograder check --hidden solutions/02_similarity/02_similarity.ipynb   all tests of a trusted notebook
"""

STUDENT_EPILOG = """example:
  autograder check exercises/02_similarity/02_similarity.ipynb   check your notebook (its visible tests)
"""


def _cmd_release(args) -> int:
    names = course.assignments() if args.all else args.assignments
    if not names:
        raise course.CourseError("name an assignment, or pass --all")
    from ..release import release

    for name, out in release(names, args.to):
        print(f"released {name} -> {out.relative_to(course.ROOT) if out.is_relative_to(course.ROOT) else out}",
              flush=True)
    return 0


def _cmd_check(args) -> int:
    if args.hidden:
        return _check_hidden(args)
    if args.submission:
        raise course.CourseError("--submission goes with --hidden; a student checks their notebook directly: "
                                 "autograder check NOTEBOOK")
    from ..check import check_student, format_table

    check = check_student(args.notebook, args.assignment, no_sandbox=args.no_sandbox)
    print(format_table(check))
    return 0 if check.score == check.max_score else 1


def _check_hidden(args) -> int:
    from ..check import check_notebook

    results = check_notebook(args.notebook, args.submission)
    earned = sum(r.points for r in results)
    total = sum(r.max_points for r in results)
    for r in results:
        mark = "PASS" if r.passed else "FAIL"
        print(f"{mark} {r.grade_id} ({r.points:g}/{r.max_points:g})" + (f": {r.message}" if r.message else ""))
    print(f"score {earned:g}/{total:g}")
    return 0 if earned == total else 1


def build_parser() -> argparse.ArgumentParser:
    student = course.student_checker()      # a student repository: `check` only, no grading modules
    parser = argparse.ArgumentParser(
        prog="autograder",
        description="Trusted grading for the course 'Attention, from first principles'. "
                    "nbgrader stays the system of record: scores go to its gradebook.",
        epilog=STUDENT_EPILOG if student else EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    if not student:
        p = sub.add_parser("release", help="generate exercises/ from solutions/ (nbgrader generate_assignment)",
                           description="Regenerate the student notebooks in exercises/ from the instructor "
                                       "notebooks in solutions/ with nbgrader generate_assignment.")
        p.add_argument("assignments", nargs="*", help="assignment names such as 02_similarity")
        p.add_argument("--all", action="store_true", help="every assignment in solutions/")
        p.add_argument("--to", type=Path, metavar="FOLDER", help="write there instead of exercises/ (to compare)")
        p.set_defaults(func=_cmd_release)

    p = sub.add_parser("check", help="check your exercise notebook: its visible tests, as grading runs them",
                       description="A student's check: run the visible tests of an exercise notebook with "
                                   "the published inputs, the notebook's code in the sandbox (as grading "
                                   "runs it; a plain child process where bubblewrap is missing). Prints "
                                   "each test's points and the message naming the likely bug; exit "
                                   "status 0 only at full visible marks. With --hidden, the instructor's "
                                   "check: a trusted source notebook against all its tests, hidden ones "
                                   "too, in-process and unsandboxed.")
    p.add_argument("notebook", type=Path, help="your exercise notebook (with --hidden: the source in solutions/)")
    p.add_argument("--assignment", help="the assignment, e.g. 02_similarity (default: recognised from the cells)")
    p.add_argument("--no-sandbox", action="store_true",
                   help="run your code in a plain child process even where the sandbox works")
    p.add_argument("--hidden", action="store_true",
                   help="instructors: run a trusted source notebook's visible and hidden tests in-process")
    p.add_argument("--submission", type=Path, help="with --hidden: take the answers from this trusted notebook")
    p.set_defaults(func=_cmd_check)

    if student:
        return parser
    from .export import add_export_parser
    from .grade import add_grade_parser

    add_grade_parser(sub)

    add_export_parser(sub)

    from .formgrade import add_formgrade_parser

    add_formgrade_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except (course.CourseError, NotebookError) as exc:
        print(f"autograder: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("autograder: interrupted; run the same command again to finish", file=sys.stderr)
        return 130
