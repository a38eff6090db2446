"""CSV that a spreadsheet opens as data: the one writer of every CSV the course writes.

A student controls text that reaches the course's CSV files: a name on the roster, an id,
a folder or file name that ends up in a flag's message. Excel, LibreOffice and Google
Sheets read a cell that begins with `=`, `+`, `-` or `@` (or a tab or carriage return
before one) as a formula, so `=HYPERLINK("http://...")` in a name would become a live link
or a command in the instructor's spreadsheet (OWASP's "CSV injection"). Every text cell
that could start a formula gets a leading apostrophe, which spreadsheets read as "this is
text" and do not show; a number stays a number (`-0.5` is a score, not a formula), so the
LMS imports read the scores as before. Imports nothing of the package.
"""
from __future__ import annotations

import csv
import re

# what makes a spreadsheet start a formula; fullwidth forms too (Excel reads them in CJK locales)
TRIGGERS = frozenset("=+-@\t\r\n\uff1d\uff0b\uff0d\uff20")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def safe_cell(value):
    """`value` as a spreadsheet should read it: numbers (and text that is a plain number)
    as they are, any other text that a spreadsheet would take for a formula behind an
    apostrophe."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = str(value)
    stripped = text.lstrip(" \u00a0")
    if stripped and stripped[0] in TRIGGERS and not _NUMBER.fullmatch(stripped):
        return "'" + text
    return text


class writer:
    """csv.writer whose every row goes through `safe_cell`."""

    def __init__(self, out, **kwargs):
        self._w = csv.writer(out, **kwargs)

    def writerow(self, row) -> None:
        self._w.writerow([safe_cell(v) for v in row])
