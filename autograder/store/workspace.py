"""The grading workspace: the one module that knows its layout and writes its files.

    WORKSPACE/                          grading/ by default, or --workspace
      .grading.lock                     one grading run at a time
      secret.key                        seeds the tests' inputs; keep it private
      term.toml                         the instructor's: due dates, late policy, roster (read by term/settings.py)
      gradebook.db                      nbgrader's gradebook (or --db URL; see gradebook.py)
      results/A/STUDENT.json            each student's full result, with its resume key and its
                                        standing in the term (lateness, penalty, manual scores)
      results/A/graded.log              one line per grading actually done
      feedback/STUDENT/A/feedback.html  what the student gets back
      autograded/STUDENT/A/NB.ipynb     the submission with the tests and their outcomes (formgrader)
      reports/A/grades.csv, report.html the class's scores, and the instructor's report
      reports/A/canvas.csv, moodle.csv  `autograder export`: files an LMS's grade import takes

STUDENT in a path is the student's workspace name (`submissions.workspace_name`): the id
itself when it is a plain printable name. Every file is written atomically (a temporary
file, then a rename), so a run that is killed leaves either the old file or the new one;
a file whose content is unchanged is not written at all, so a partial regrade leaves every
other student's files as they were, byte for byte and with their times.
"""
from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from .. import course
from . import spreadsheet
from ..flags import messages
from ..records import Result

if TYPE_CHECKING:
    from ..sandbox.host import Limits

PACKAGE_DIR = Path(__file__).resolve().parent


def write_atomic(path: Path, data: bytes | str, durable: bool = False) -> bool:
    """Write `data` to `path` atomically (a reader sees the old file or the new one, never
    half of one), unless the file already holds exactly that. `durable`: on disk before the
    call returns (fsync), for the results a resumed run relies on; pages and notebooks
    rebuilt from those results on every run are not worth a disk flush each. Returns
    whether it wrote."""
    data = data.encode("utf-8") if isinstance(data, str) else data
    try:
        if path.is_file() and not path.is_symlink() and path.stat().st_size == len(data) \
                and path.read_bytes() == data:
            return False
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    tmp.replace(path)
    return True


GRADEBOOK = "gradebook.db"          # the default gradebook's file in a workspace


class Workspace:
    def __init__(self, root: Path, assignment: str) -> None:
        self.root, self.assignment = Path(root).resolve(), assignment
        self.root.mkdir(parents=True, exist_ok=True)
        self.results = self.root / "results" / assignment
        self.reports = self.root / "reports" / assignment

    # ------------------------------------------------------------------ the run
    @contextmanager
    def lock(self) -> Iterator[None]:
        """One grading run per workspace at a time; released however the run ends."""
        with open(self.root / ".grading.lock", "w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise course.CourseError(f"another grading run is using {self.root}; wait for it to finish") from None
            yield

    @contextmanager
    def scratch(self) -> Iterator[Path]:
        """A folder for this run's unpacked zip, removed when the run ends (however it ends)."""
        import shutil
        import tempfile

        for stale in [*self.root.glob(".scratch-*"), *self.root.glob("unzipped-*")]:
            shutil.rmtree(stale, ignore_errors=True)     # left by a killed run (or an older grader)
        folder = Path(tempfile.mkdtemp(prefix=".scratch-", dir=self.root))
        try:
            yield folder
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def stored_results(self) -> Iterator[tuple[str, dict]]:
        """(student id, result) for every result stored for this assignment."""
        if not self.results.is_dir():
            return
        for path in sorted(self.results.glob("*.json")):
            result = self.load_result(path.stem)
            if result and isinstance(result.get("student"), str):
                yield result["student"], result

    def secret(self) -> str:
        path = self.root / "secret.key"
        if not path.exists():
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(secrets.token_hex(32))
        return path.read_text().strip()

    def term_version(self, version: str) -> str | None:
        """The course version the term's first run graded under, written then (`course-version`
        in the workspace); for a later run under another version, the line that says so."""
        path = self.root / "course-version"
        if not path.exists():
            write_atomic(path, version + "\n", durable=True)
            return None
        first = path.read_text(encoding="utf-8").strip()
        if first == version:
            return None
        return (f"this run grades under course version {version}, but the term's first run graded under {first} "
                f"({path.name} in the workspace): the instructor's notebooks or the grader changed since")

    @property
    def gradebook_file(self) -> Path:
        """The default gradebook: SQLite, in the workspace (term.toml's `db` may name another)."""
        return self.root / GRADEBOOK

    def default_db_url(self) -> str:
        return f"sqlite:///{self.gradebook_file}"

    # ------------------------------------------------------------------ resume
    @staticmethod
    def resume_key(source_path: Path, limits: Limits, secret: str) -> str:
        """What decides a grade besides the submission itself: the instructor's notebook (tests,
        points), the grader's code, the limits and the secret. A result is reused only while
        all of these are unchanged."""
        from ..versions import course_version

        h = hashlib.sha256()
        h.update(course_version(source_path).encode())
        h.update(json.dumps(asdict(limits), sort_keys=True).encode())
        h.update(hashlib.sha256(secret.encode()).digest())
        return h.hexdigest()

    def load_result(self, slug: str) -> dict | None:
        try:
            return json.loads((self.results / f"{slug}.json").read_text())
        except (OSError, ValueError):
            return None

    def save_result(self, slug: str, result: dict, *, graded: bool = True) -> None:
        """Store a result; `graded` (a grading was actually done) adds a line to graded.log.
        Only a graded result is flushed to disk: a resumed run relies on it. The same result
        saved again with its standing (late penalty, manual scores) after the run is not: if
        a crash loses it, the next run grades that student again (a flush each took a class
        of 200 about half a second)."""
        write_atomic(self.results / f"{slug}.json", json.dumps(result, indent=1, sort_keys=True), durable=graded)
        if not graded:
            return
        with open(self.results / "graded.log", "a", encoding="utf-8") as f:
            f.write(f"{result['student']}\t{result['digest']}\t{result['score']}\n")
            f.flush()
            os.fsync(f.fileno())

    # ------------------------------------------------------------------ what people read
    def feedback_page(self, slug: str) -> Path:
        return self.feedback_dir / slug / self.assignment / "feedback.html"

    def autograded_notebook(self, slug: str, notebook_name: str) -> Path:
        """The graded copy Formgrader opens (nbgrader's autograded/ layout)."""
        return self.root / "autograded" / slug / self.assignment / f"{notebook_name}.ipynb"

    def write_feedback(self, slug: str, page: str) -> None:
        write_atomic(self.feedback_page(slug), page)

    def write_autograded(self, slug: str, notebook_name: str, text: str) -> None:
        write_atomic(self.autograded_notebook(slug, notebook_name), text)

    def write_csv(self, results: list[dict], tests: list[str]) -> Path:
        """grades.csv: one row per student (rostered students who submitted nothing included),
        the score after any late penalty, then one column per test (its points, manual
        adjustments included), then how the score came about."""
        out = io.StringIO()
        w = spreadsheet.writer(out)
        w.writerow(["student", "name", "email", "assignment", "status", "score", "max_score", *tests,
                    "raw_score", "late_penalty", "submitted_at", "time_source", "due", "hours_late", "flags",
                    "comments"])
        for r in results:
            res = Result.of(r)
            term = res.standing
            points = {t["grade_id"]: t["points"] for t in r["tests"]}
            points.update(term.get("manual") or {})
            late = term.seconds_late
            w.writerow([r["student"], term.get("name", ""), term.get("email", ""), self.assignment,
                        term.get("status", "graded"), f"{res.final_score:g}", f"{r['max_score']:g}",
                        *[f"{points[t]:g}" if t in points else "" for t in tests],
                        f"{term.get('raw_score', r['score']):g}", f"{term.get('late_penalty', 0):g}",
                        term.get("submitted_at", ""), term.get("time_source", ""), term.get("due", ""),
                        f"{late / 3600:.2f}" if late else "",
                        "; ".join(messages(res.all_flags)),
                        " | ".join(f"{cell}: {text}" for cell, text in (term.get("comments") or {}).items())])
        path = self.reports / "grades.csv"
        write_atomic(path, out.getvalue())
        return path

    def write_export(self, name: str, data: bytes | str, to: Path | None = None) -> Path:
        """An export for an LMS: reports/A/NAME, or `to`."""
        path = Path(to) if to else self.reports / name
        write_atomic(path, data)
        return path

    def write_report(self, page: str) -> Path:
        path = self.reports / "report.html"
        write_atomic(path, page)
        return path

    @property
    def feedback_dir(self) -> Path:
        return self.root / "feedback"
