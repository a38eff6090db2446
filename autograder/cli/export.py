"""`autograder export`'s arguments, and what it prints."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import CourseError
from ..lms.export import FEEDBACK


def _cmd_export(args) -> int:
    from ..lms.export import export, export_feedback

    if args.feedback:
        summary = export_feedback(args.assignment, args.feedback, workspace=args.workspace, to=args.to)
        where = {"canvas": "Canvas: the assignment's page > Re-Upload Submissions",
                 "moodle": "Moodle: View all submissions > Grading action > Upload multiple feedback files in a zip"}
        print(f"feedback for {summary['lms'].capitalize()}: {summary['path']} ({summary['pages']} pages; "
              f"upload it in {where[summary['lms']]})")
        if summary["without"]:
            print(f"not graded from a {summary['lms'].capitalize()} download, so not in the zip: "
                  f"{', '.join(summary['without'][:8])}" + (" ..." if len(summary["without"]) > 8 else ""))
        return 0
    if not args.format:
        raise CourseError("give --format canvas|moodle|moodle-worksheet|csv (grades) "
                                 "or --feedback canvas|moodle")
    summary = export(args.assignment, args.format, workspace=args.workspace, db_url=args.db,
                     roster=args.roster, to=args.to, column=args.column)
    print(f"{summary['format']}: {summary['path']} ({summary['students']} students, "
          f"{summary['missing']} without a submission scored 0; grade column '{summary['column']}')")
    if summary["left_out"]:
        print(f"left out, not on the roster: {', '.join(summary['left_out'])}")
    return 0


def add_export_parser(sub) -> None:
    p = sub.add_parser(
        "export", help="write the gradebook's grades for an LMS import (Canvas, Moodle) or as CSV",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Write ASSIGNMENT's grades from the gradebook (manual adjustments and late "
                    "penalties included, as nbgrader export computes them) in a layout an LMS imports.",
        epilog="formats:\n"
               "  canvas  Student, ID, SIS User ID, SIS Login ID, Section, then the assignment column\n"
               "          (Canvas: Grades > Import); --column 'Homework 2 (4821)' targets an existing\n"
               "          Canvas assignment by the title Canvas exports for it\n"
               "  moodle  First name, Last name, ID number, Email address, then the grade column\n"
               "          (Moodle: Grades > Import > CSV file; map Email address to useremail)\n"
               "  moodle-worksheet  Moodle's grading worksheet (Identifier, Grade, Feedback comments): its\n"
               "          Upload grading worksheet takes it; the roster must be Moodle's worksheet\n"
               "  csv     every column: id, names, e-mail, status, time, each test, penalty, score\n\n"
               "feedback (--feedback canvas|moodle): the feedback pages, zipped with the names the LMS's\n"
               "bulk upload matches to each student\n\n"
               "example:\n  autograder export 02_similarity --format canvas --column 'Similarity (4821)'")
    p.add_argument("assignment", help="the assignment name, e.g. 02_similarity")
    p.add_argument("--format", metavar="FORMAT", help="canvas, moodle, moodle-worksheet or csv")
    p.add_argument("--feedback", metavar="LMS", choices=sorted(FEEDBACK),
                   help="instead of grades: the feedback pages as a zip for canvas's Re-Upload Submissions "
                        "or moodle's Upload multiple feedback files in a zip")
    p.add_argument("--to", type=Path, default=None, metavar="FILE",
                   help="where to write (default: WORKSPACE/reports/ASSIGNMENT/canvas.csv, moodle.csv or export.csv)")
    p.add_argument("--column", default=None, metavar="TITLE",
                   help="the grade column's title (default: the assignment name)")
    p.add_argument("--roster", type=Path, default=None, metavar="FILE",
                   help="the class roster (default: the one in WORKSPACE/term.toml, if any)")
    p.add_argument("--workspace", type=Path, default=None,
                   help="the grading workspace (default: grading/ in the course, or $AUTOGRADER_WORKSPACE)")
    p.add_argument("--db", default=None, metavar="URL",
                   help="gradebook database URL (default: WORKSPACE/term.toml's, else sqlite:///WORKSPACE/gradebook.db)")
    p.set_defaults(func=_cmd_export)
