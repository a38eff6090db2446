"""Flags: why a submission's outcome is unusual, as data, built here and nowhere else.

A flag has a stable `code` (for tools and tests), a one-line `message` (for people) and
`student_visible`: whether the student's feedback shows it (the instructor's report and
grades.csv show every flag). The messages are the grader's own words. Text that came from
a student's code never enters a flag, except where noted (a cell's exception class name,
taken before any test ran, reduced to an identifier), so flags cannot carry hidden inputs.
A flag raised once the student's code has received a hidden input (`after_hidden`) is the
instructor's only, whatever its code: whether it is raised is the code's choice, one more
bit a program that kept a hidden input could send to the student's page.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

_MESSAGES = {
    # the submission as a file
    "no-notebook": ("no notebook in the submission folder", True),
    "several-notebooks": ("{count} notebooks and none is the only {assignment}.ipynb: "
                          "submit exactly one notebook", True),
    "not-a-file": ("{what}: only regular files inside the student's own folder are graded", True),
    "corrupt": ("corrupt notebook: {detail}", True),
    "too-large": ("{detail}: clear its outputs (Kernel > Restart Kernel and Clear Outputs), save and submit "
                  "again", True),
    "other-assignment": ("not a {assignment} notebook (none of its cells belong to this assignment)", True),
    "duplicate-id": ("{entry} reads as the student id {student!r}, which {other} has: not graded (rename it "
                     "to its student's id and grade it with --student)", True),
    # the download itself (a zip's entries, an LMS's names): each names the entry
    "bad-entry": ("{entry} could not be unpacked from the download ({reason}), so it was not graded: a new "
                  "download, or the file itself, is needed", True),
    "bad-file": ("{entry} could not be unpacked from the download ({reason}) and was left out: it is not the "
                 "file graded", True),
    "entry-twice": ("the download holds {count} different files named {entry}: none was graded (which one "
                    "was submitted cannot be told)", True),
    "id-shared": ("{others} also read{s} as this student id and {was} not graded: check which is this "
                  "student's", False),
    "lms-id-shared": ("{count} entries of the {lms} download have this student's {what} {lms_id}: none was "
                      "graded (which one is the student's cannot be told)", True),
    "lms-id-entries": ("the entries with {what} {lms_id}: {entries}", False),
    # what the student changed
    "test-edited": ("test cell {grade_id} edited (the original was used)", True),
    "test-deleted": ("test cell {grade_id} deleted or its metadata removed (the original was used)", True),
    "answer-missing": ("answer cell {grade_id} missing or its metadata removed", True),
    # running it
    "cell-error": ("a code cell raised {error} when run", True),
    "probes-changed": ("changed the grader's probes (autograder.probes) before {name} was measured: the "
                       "measurement ran on the original probe, and its tests earn nothing", True),
    "cell-output-limit": ("a code cell printed more than a notebook may print (1 MiB of output), so its output "
                          "was cut off and the cell stopped there: print less (shapes, or a few values)", True),
    "cell-time-limit": ("time limit reached in a code cell: it was interrupted", True),
    "broken": ("{detail}", True),
    "not-defined": ("{name} is not defined", True),
    "call-time-limit": ("time limit reached in a call of {name}: an infinite loop?", True),
    "unresponsive": ("grading this submission stopped responding after {seconds:g} s and was abandoned: "
                     "graded 0 (an infinite loop that blocks signals?)", True),
    "internal": ("internal grading error, graded 0: {detail}; please report it", True),
    # results
    "not-data": ("{name} returned an object that is not data (NumPy arrays, numbers, strings, and "
                 "lists, tuples and dicts of those)", True),
    "ndarray-subclass": ("{name} returned an ndarray subclass, not a plain numpy.ndarray", True),
    "torch-result": ("{name} returned a torch.Tensor where NumPy is expected", True),
    "float32": ("{name} returned float32 for float64 inputs", True),
    "inputs-modified": ("{name} modified its input in place", True),
    # the term: roster and deadlines (set after grading, from the roster and the submission's time)
    "not-on-roster": ("{student!r} is not on the roster: graded, but check the id (a typo, or a late enrolment?)",
                      False),
    "bad-timestamp": ("timestamp.txt could not be read: the submission time was taken from the file instead", True),
    "timestamp-earlier": ("timestamp.txt says {claimed}, earlier than the notebook's zip entry ({entry}): "
                          "the later time was used", False),
    # for the instructor
    "hardcoded": ("passes visible tests only with their published inputs: answers hard-coded?", False),
    "review": ("{detail}", False),
}


@dataclass(frozen=True)
class Flag:
    code: str
    message: str
    student_visible: bool
    after_hidden: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


def flag(code: str, **fields: object) -> Flag:
    template, visible = _MESSAGES[code]
    return Flag(code, template.format(**fields), visible)


def exception_name(text: str | None) -> str:
    """An exception's class name as a cell reported it ("ValueError: ..."), if it is one of
    Python's own (a class the student made could be named after anything)."""
    import builtins

    name = (text or "").split(":")[0].strip()
    known = isinstance(getattr(builtins, name, None), type) and issubclass(getattr(builtins, name), BaseException)
    return name if known or name in ("TimeLimitExceeded",) else "an exception of its own class"


AFTER_HIDDEN_NOTE = " (raised after a hidden input: not shown to the student)"


def after_hidden(new: Flag) -> Flag:
    """`new` as raised once the student's code has received a hidden input: for the
    instructor only, and saying so."""
    if new.after_hidden:
        return new
    return replace(new, student_visible=False, after_hidden=True, message=new.message + AFTER_HIDDEN_NOTE)


def add(flags: list[Flag], new: Flag) -> None:
    """Append unless the same flag is already there (raised before or after a hidden input:
    the first one stays)."""
    if not any(f.code == new.code and f.message.removesuffix(AFTER_HIDDEN_NOTE) == new.message.removesuffix(
            AFTER_HIDDEN_NOTE) for f in flags):
        flags.append(new)


def shown_to_student(stored: dict) -> bool:
    """Whether the student's page shows a stored flag (a dict): never one raised after a
    hidden input."""
    return bool(stored.get("student_visible")) and not stored.get("after_hidden")


def messages(flags: list[dict], *, student: bool = False) -> list[str]:
    """The messages of stored flags (dicts), all or only those the student may see."""
    return [f["message"] for f in flags if not student or shown_to_student(f)]


__all__ = ["Flag", "flag", "add", "after_hidden", "exception_name", "messages", "shown_to_student"]
