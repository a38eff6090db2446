"""`autograder grade`'s command line: its arguments, and what it prints. Imports the
grading machinery only when the command runs (`autograder --help` stays instant)."""
from __future__ import annotations

import argparse
from pathlib import Path


def _names(ids: list[str], most: int = 8) -> str:
    return ", ".join(ids[:most]) + (f" and {len(ids) - most} more" if len(ids) > most else "")


def _start_fork_server(assignment: str) -> bool:
    """The fork server's imports (torch) are most of a run's fixed cost: start them before
    this process imports the grading machinery and checks the command. Nothing of this
    process's command line or environment goes to it (forkserver.py). An unknown assignment
    starts nothing here: `grade` says what is wrong."""
    from .. import course
    from ..notebook import source_imports
    from ..grade import forkserver

    try:
        source_path = course.source_notebook(assignment)
    except course.CourseError:
        return False
    forkserver.start(source_imports(source_path))
    return True


def _tls(args) -> dict:
    return {k: getattr(args, f"tls_{k}") for k in ("ca", "cert", "key") if getattr(args, f"tls_{k}")}


def _cmd_grade(args) -> int:
    started = not args.cluster and _start_fork_server(args.assignment)     # on a cluster: not needed
    try:
        from ..sandbox.host import Limits
        from ..grade.run import grade

        limits = Limits(wall_seconds=args.timeout, cpu_seconds=int(args.timeout),
                        memory_bytes=args.memory_mb << 20)
        summary = grade(args.assignment, args.submissions, workers=args.workers, workspace=args.workspace,
                        db_url=args.db, limits=limits, regrade=args.regrade, unsafe=args.unsafe_no_sandbox,
                        quiet=args.quiet, due=args.due, late_policy=args.late_policy,
                        late_floor=args.late_floor, roster=args.roster, students=args.student or (),
                        flagged=args.flagged, times=args.times, cluster=args.cluster, tls=_tls(args))
    finally:
        if started:
            from ..grade import forkserver

            forkserver.stop()            # a mistake found before the workers started: no one needs it
    if summary.partial:
        print(f"regraded {len(summary.regraded)} of {summary.students} submissions of "
              f"{summary.assignment} in {summary.seconds} s ({_names(summary.regraded) or 'none'}); "
              f"{summary.kept} other{'s' if summary.kept != 1 else ''} not graded again")
        if summary.frozen:
            print(f"changed since graded, kept as they were (regrade them with --student): "
                  f"{_names(summary.frozen)}")
        if summary.absent:
            print(f"not in this download, kept as graded before: {_names(summary.absent)}")
    else:
        print(f"graded {summary.students} submissions of {summary.assignment} in {summary.seconds} s "
              f"({summary.graded} graded now with {summary.workers} workers, {summary.reused} unchanged "
              f"since the last run)")
    print(f"mean score {summary.mean:.2f} / {summary.max_score:g}; {summary.full_marks} with full "
          f"marks; {summary.flagged} flagged")
    print(f"deadline: {summary.deadline}" + (f"; late: {_names(summary.late)}" if summary.late else ""))
    if summary.roster is not None:
        print(f"roster:   {summary.roster} students; missing: {_names(summary.missing) or 'none'}; "
              f"not on the roster: {_names(summary.not_on_roster) or 'none'}")
    if summary.ungraded:
        print(f"not graded yet (not selected): {_names(summary.ungraded)}")
    if summary.layout in ("canvas", "moodle"):
        print(f"read as a {summary.layout.capitalize()} download: {summary.students} students")
    for note in summary.notes:
        print(f"warning:  {note}")
    print(f"grades:   {summary.grades_csv}")
    print(f"report:   {summary.report}")
    print(f"feedback: {summary.feedback_dir}/STUDENT/{summary.assignment}/feedback.html")
    print(f"gradebook: {summary.db_url} (nbgrader export works on it)")
    return 0


def add_grade_parser(sub) -> None:
    p = sub.add_parser(
        "grade", help="grade every student's notebook for an assignment (sandboxed, in parallel)",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Grade every submission of ASSIGNMENT found in SUBMISSIONS: run each student's "
                    "notebook in its own sandbox (no network, no view of solutions, hidden tests, the "
                    "gradebook or other students), run the instructor's visible and hidden tests in "
                    "this process against the results, and write scores to the nbgrader gradebook, "
                    "grades.csv, one feedback page per student and an instructor report.",
        epilog="SUBMISSIONS is Canvas's \"Download Submissions\" zip, Moodle's \"Download all submissions\" "
               "zip (matched to the roster: Canvas's or Moodle's own export works as --roster), or a folder "
               "(or zip) with one sub-folder per student id holding that student's notebook (nbgrader's "
               "submitted/ folder too).\n"
               "A run that is interrupted can simply be started again: students already graded are "
               "not graded twice.\n\nexamples:\n  autograder grade 02_similarity submissions/ --workers 2\n"
               "  autograder grade 02_similarity lms.zip --due 2025-03-14T23:59+01:00 --late-policy per-day:10 "
               "--roster roster.csv\n  autograder grade 02_similarity lms.zip --student alice   "
               "# regrade one student")
    p.add_argument("assignment", help="the assignment name, e.g. 02_similarity (a folder of solutions/)")
    p.add_argument("submissions", type=Path, help="Canvas's or Moodle's submissions zip, or a folder (or zip) "
                                                  "of student folders")
    p.add_argument("--workers", type=int, default=None, help="parallel workers (default: one per core)")
    p.add_argument("--workspace", type=Path, default=None,
                   help="where results, feedback, reports and the default gradebook go "
                        "(default: grading/ in the course, or $AUTOGRADER_WORKSPACE)")
    p.add_argument("--db", default=None, metavar="URL",
                   help="gradebook database URL, any that nbgrader accepts "
                        "(default: sqlite:///WORKSPACE/gradebook.db)")
    p.add_argument("--timeout", type=float, default=60.0,
                   help="seconds one notebook may take, its cells and all its tests (default: 60)")
    p.add_argument("--memory-mb", type=int, default=3072, help="memory limit per notebook in MiB (default: 3072)")
    p.add_argument("--regrade", action="store_true", help="grade every student again, even if unchanged")
    p.add_argument("--student", action="append", metavar="ID",
                   help="regrade only this student (repeatable); everyone else's results stay as they are")
    p.add_argument("--flagged", action="store_true",
                   help="regrade only the students whose result is flagged; everyone else's stay as they are")
    t = p.add_argument_group("the term (defaults from WORKSPACE/term.toml, see autograder/README.md)")
    t.add_argument("--due", metavar="ISO-DATETIME",
                   help="the deadline, e.g. 2025-03-14 (the end of that day), 2025-03-14T23:59 (in term.toml's "
                        "timezone, else this machine's) or 2025-03-14T23:59+01:00")
    t.add_argument("--late-policy", metavar="POLICY",
                   help="none (default), zero, per-hour:P or per-day:P: P percent of the maximum score "
                        "deducted per started hour or day late")
    t.add_argument("--late-floor", metavar="PERCENT",
                   help="per-hour and per-day: a deduction never takes a score below this percent of the maximum")
    t.add_argument("--roster", type=Path, metavar="FILE",
                   help="Canvas's gradebook export, Moodle's grading worksheet or gradebook export, or a CSV "
                        "with a header id,name,email,extension: every student on it gets a row (missing when "
                        "nothing was submitted); ids not on it are graded and flagged")
    t.add_argument("--times", type=Path, metavar="FILE",
                   help="submission times from the LMS: Moodle's grading worksheet as downloaded, or a CSV with "
                        "the student (id, SIS User ID, ID, Identifier, e-mail) and submitted_at; they take the "
                        "place of zip times and of Canvas's LATE marker")
    p.add_argument("--unsafe-no-sandbox", action="store_true",
                   help="run student code without bubblewrap isolation (trusted notebooks only)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    _cluster_arguments(p)
    p.set_defaults(func=_cmd_grade)

    c = sub.add_parser("cluster-check", help="which workers of a Dask cluster can grade, and with what versions",
                       description="Ask every worker of a Dask cluster whether it can grade: its host, whether "
                                   "it can sandbox (bubblewrap, user namespaces), whether its course (tests, "
                                   "solutions, grader) is this one's, and its torch and grader versions. Exit "
                                   "status 0 only when every worker can grade.")
    c.add_argument("--assignment", action="append", metavar="NAME",
                   help="compare this assignment's course version (repeatable; default: every assignment)")
    _cluster_arguments(c, required=True)
    c.set_defaults(func=_cmd_cluster_check)


def _cluster_arguments(p, required: bool = False) -> None:
    g = p.add_argument_group("a Dask cluster (see autograder/README.md, 'Grading on a Dask cluster')")
    g.add_argument("--cluster", metavar="ADDRESS", required=required,
                   help="grade on this Dask cluster's workers: a scheduler address (tcp://host:8786, "
                        "tls://host:8786) or a scheduler file (JSON); default: term.toml's cluster, else this "
                        "machine")
    g.add_argument("--tls-ca", metavar="FILE", help="TLS to the scheduler: the CA certificate")
    g.add_argument("--tls-cert", metavar="FILE", help="TLS to the scheduler: this client's certificate")
    g.add_argument("--tls-key", metavar="FILE", help="TLS to the scheduler: this client's private key")


def _cmd_cluster_check(args) -> int:
    from .. import course
    from ..versions import course_version, grader_version
    from ..grade.pool_dask import connect, survey

    versions = {a: course_version(course.source_notebook(a)) for a in (args.assignment or course.assignments())}
    client = connect({"address": args.cluster, "tls": _tls(args)})
    try:
        reports = survey(client, versions)
    finally:
        client.close(timeout=5)
    able = 0
    for address, found in sorted(reports.items()):
        ok = found["sandbox"] is None and not found["differs"]
        able += ok
        course_text = "same" if not found["differs"] else f"DIFFERS ({_names(found['differs'], 3)})"
        sandbox = "yes" if found["sandbox"] is None else "NO: " + found["sandbox"]
        print(f"{address}  host {found['host']}  sandbox {sandbox}"
              f"  course {course_text}  torch {found['torch']}  grader {found['grader']}"
              f"{'' if found['grader'] == grader_version()[:12] else ' (this one: ' + grader_version()[:12] + ')'}"
              f"  {'can grade' if ok else 'REFUSES'}")
    print(f"{able} of {len(reports)} workers can grade")
    return 0 if reports and able == len(reports) else 1


__all__ = ["add_grade_parser"]
