"""The one exception the grader shows its user as a line of text: the bottom of the package's
layers (every module may import it; it imports nothing of the package)."""


class CourseError(Exception):
    """A problem the user can fix (wrong name, missing folder); one line, no traceback."""
