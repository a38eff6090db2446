"""What a sandbox's session raises to its caller: the student's code raised (StudentError), or
the sandbox itself can answer no more (SubmissionBroken). The sandbox's own, so that it
imports nothing from the layers above it (grade/testcells.py, which runs test cells against a
session, reads them from here)."""


class StudentError(Exception):
    """The student's code raised; carries the exception's type names and message, and
    `timed_out`: whether the call ran out of its time (set by the host, which timed the call:
    a student's own class may be named TimeLimitExceeded too)."""

    def __init__(self, type_names: list[str], message: str, timed_out: bool = False):
        super().__init__(message)
        self.remote_type_names = type_names
        self.message = message
        self.timed_out = timed_out


class SubmissionBroken(Exception):
    """The sandbox died, timed out or misbehaved: no further call can be answered."""
