"""Reading nbgrader notebooks: which cells are setup, answers, tests; which names are graded.

Everything here reads notebooks as data and never runs them.
"""
from __future__ import annotations

import ast
import json
import os
import re
import stat
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from . import startup

if TYPE_CHECKING:
    import nbformat

HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"
HIDDEN_END = "### END HIDDEN TESTS"
SOLUTION_BEGIN = "### BEGIN SOLUTION"
SOLUTION_END = "### END SOLUTION"


class NotebookError(Exception):
    """A notebook that cannot be used, with a message that says why."""


@dataclass
class TestCell:
    grade_id: str
    source: str          # the full source, hidden parts included (from the instructor's notebook)
    points: float
    description: str     # the first comment line, for feedback
    has_hidden: bool

    @property
    def visible_source(self) -> str:
        return strip_hidden(self.source)


@dataclass
class SourceNotebook:
    """An instructor's (solutions/) notebook, the only place tests are taken from."""

    path: Path
    nb: "nbformat.NotebookNode"
    tests: list[TestCell] = field(default_factory=list)
    graded_names: list[str] = field(default_factory=list)   # defined at top level in answer cells
    answer_ids: list[str] = field(default_factory=list)
    locked_ids: set[str] = field(default_factory=set)
    imports: tuple[str, ...] = ()       # modules its code cells import (warmed before grading)

    @property
    def max_score(self) -> float:
        return float(sum(t.points for t in self.tests))


def nbgrader_meta(cell) -> dict:
    """A cell's nbgrader metadata; a grade_id that is not a string counts as none."""
    metadata = cell.get("metadata", {}) if isinstance(cell, dict) else {}
    meta = metadata.get("nbgrader", {}) if isinstance(metadata, dict) else {}
    if not isinstance(meta, dict):
        return {}
    if "grade_id" in meta and not isinstance(meta["grade_id"], str):
        meta = {k: v for k, v in meta.items() if k != "grade_id"}
    return meta


def is_test_cell(cell) -> bool:
    m = nbgrader_meta(cell)
    return cell.get("cell_type") == "code" and bool(m.get("grade")) and not m.get("solution")


def is_answer_cell(cell) -> bool:
    m = nbgrader_meta(cell)
    return cell.get("cell_type") == "code" and bool(m.get("solution"))


def strip_hidden(source: str) -> str:
    """The source with ### BEGIN/END HIDDEN TESTS regions removed (as nbgrader releases
    it), in one pass over the lines, whatever a submitted cell holds."""
    kept, inside = [], False
    for line in source.splitlines(keepends=True):
        if not inside and line.strip().startswith(HIDDEN_BEGIN):
            inside = True
        if not inside:
            kept.append(line)
        elif HIDDEN_END in line:
            inside = False
    return "".join(kept)


def hidden_line_numbers(source: str) -> set[int]:
    """Line numbers (from 1) of the hidden regions, their markers included."""
    lines, inside = set(), False
    for number, line in enumerate(source.splitlines(), start=1):
        if line.strip().startswith(HIDDEN_BEGIN):
            inside = True
        if inside:
            lines.add(number)
        if line.strip().startswith(HIDDEN_END):
            inside = False
    return lines


def hidden_parts(source: str) -> list[str]:
    return re.findall(re.escape(HIDDEN_BEGIN) + r"(.*?)" + re.escape(HIDDEN_END), source, flags=re.S)


def solution_parts(source: str) -> list[str]:
    return re.findall(re.escape(SOLUTION_BEGIN) + r"(.*?)" + re.escape(SOLUTION_END), source, flags=re.S)


def top_level_names(source: str) -> list[str]:
    """Functions, classes and variables a cell defines at top level (by parsing, not running)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    names: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return names


def imported_modules(source: str) -> list[str]:
    """Modules a cell imports (`import a.b`, `from a.b import c`; relative imports and lines
    IPython would transform left out), by parsing, never running."""
    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
    return names


MAX_NOTEBOOK_BYTES = 32 << 20
MAX_JSON_DEPTH = 64


@contextmanager
def _open_regular(path: Path):
    """An open regular file and its status, opened without following a symlink at the last
    step and without blocking on a FIFO or device."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise NotebookError(f"cannot read {path.name}: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise NotebookError(f"{path.name} is not a regular file")
        yield f, info


def read_regular_file(path: str | Path, limit: int = MAX_NOTEBOOK_BYTES) -> bytes:
    """The bytes of a regular file (`_open_regular`); larger than `limit` is an error."""
    path = Path(path)
    with _open_regular(path) as (f, info):
        if info.st_size > limit:
            raise NotebookError(f"{path.name} is larger than {limit >> 20} MiB")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise NotebookError(f"{path.name} is larger than {limit >> 20} MiB")
    return data


# A submission larger than MAX_NOTEBOOK_BYTES (long printed outputs, large embedded figures)
# is read up to this size with its outputs left out: they are never graded.
MAX_SUBMISSION_BYTES = 1 << 30
_SKIPPED_KEYS = {b"outputs": b"[]", b"attachments": b"{}"}
_STRUCTURE = re.compile(rb'["\[\]{}:]')
_STRING_REST = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*"', re.S)   # from after an opening quote to the closing one
# inside a skipped value: everything up to the next bracket outside a string, in one match
_SKIP_RUN = re.compile(rb'(?:[^"\[\]{}]+|"[^"\\]*(?:\\.[^"\\]*)*")*', re.S)


def without_outputs(data) -> bytes:
    """A notebook's JSON bytes (any bytes-like object: a memory map of a large file) with every
    cell's "outputs" replaced by [] and "attachments" by {}, in one pass, in memory bounded by
    what is kept: the cells' sources and metadata. Inside a skipped value, everything between
    two brackets (strings included) is passed in one regular expression match. Malformed JSON
    is returned as far as it could be followed, for the parser to refuse."""
    kept: list[bytes] = []
    size, depth, pos = 0, 0, 0
    copy_from: int | None = 0             # where the bytes being kept began (None inside a skipped value)
    skip_depth: int | None = None         # the depth of the value being skipped
    last_string: bytes | None = None      # the last short string: a key, when a colon follows
    while True:
        m = _STRUCTURE.search(data, pos)
        if m is None:
            break
        token, pos = m.group(), m.end()
        if token == b'"':
            end = _STRING_REST.match(data, pos)
            if end is None:
                break                                   # an unterminated string: malformed
            last_string = bytes(data[pos:end.end() - 1]) if end.end() - pos <= 32 else None
            pos = end.end()
            continue
        if skip_depth is not None:
            if token in (b"[", b"{"):
                depth += 1
            elif token in (b"]", b"}"):
                depth -= 1
                if depth == skip_depth:
                    skip_depth, copy_from = None, pos
                    continue
            run = _SKIP_RUN.match(data, pos)          # strings and text up to the next bracket
            assert run is not None                    # (the pattern matches the empty string too)
            pos = run.end()
            continue
        if token == b":":
            if depth == 3 and last_string in _SKIPPED_KEYS:
                # a cell's "outputs" or "attachments": keep up to the colon, then the empty value
                piece = bytes(data[copy_from:pos]) + _SKIPPED_KEYS[last_string]
                kept.append(piece)
                size += len(piece)
                if size > MAX_NOTEBOOK_BYTES:
                    raise NotebookError(f"its code and text alone are larger than {MAX_NOTEBOOK_BYTES >> 20} MiB")
                skip_depth, copy_from = depth, None
            continue
        depth += 1 if token in (b"[", b"{") else -1
        last_string = None
    if copy_from is not None:
        kept.append(bytes(data[copy_from:]))
    return b"".join(kept)


def read_submission(path: str | Path) -> tuple[bytes, int]:
    """A student's notebook: its bytes, or, when it is larger than MAX_NOTEBOOK_BYTES (and at
    most MAX_SUBMISSION_BYTES), its bytes without outputs, read through a memory map; and its
    size on disk. A FIFO, a device or a symlink is never read."""
    import mmap

    path = Path(path)
    try:
        return (data := read_regular_file(path)), len(data)
    except NotebookError:
        pass
    with _open_regular(path) as (f, info):
        if info.st_size > MAX_SUBMISSION_BYTES:
            raise TooLarge(f"{path.name} is {info.st_size / (1 << 20):.0f} MiB, more than the "
                           f"{MAX_SUBMISSION_BYTES >> 20} MiB a notebook may be")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as view:
            try:
                return without_outputs(view), info.st_size
            except NotebookError as exc:
                raise TooLarge(f"{path.name}: {exc}") from None


class TooLarge(NotebookError):
    """A notebook too large to grade even without its outputs."""


def read_notebook(path: str | Path):
    """Read and validate a notebook; any problem becomes one NotebookError line."""
    path = Path(path)
    return parse_notebook(read_regular_file(path), path.name)


def load_json_notebook(raw: bytes, name: str = "notebook") -> dict:
    """Notebook bytes as plain JSON with a list of cells, in bounded time and memory, not
    validated; any problem becomes one NotebookError line (never a RecursionError)."""
    if len(raw) > MAX_NOTEBOOK_BYTES:
        raise NotebookError(f"{name} is larger than {MAX_NOTEBOOK_BYTES >> 20} MiB")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise NotebookError(f"{name} is not a notebook (not UTF-8 text)") from None
    from .jsontext import json_nesting

    if json_nesting(raw) > MAX_JSON_DEPTH:
        raise NotebookError(f"{name} is not a notebook (its JSON nests more than {MAX_JSON_DEPTH} deep)")
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, ValueError, RecursionError) as exc:   # ValueError: 5,000-digit numbers
        reason = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise NotebookError(f"{name} is not a notebook (invalid JSON: {reason})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise NotebookError(f"{Path(name).name} is not a notebook (no list of cells)")
    return data


def parse_notebook(raw: bytes, name: str = "notebook"):
    """Parse and validate notebook bytes, in bounded time and memory; any problem becomes
    one NotebookError line (never a RecursionError or a crash of the caller)."""
    data = load_json_notebook(raw, name)
    path = Path(name)
    try:
        nb = startup.fast_nbformat().reads(json.dumps(data), as_version=4)
    except Exception as exc:  # nbformat raises several types for broken notebooks
        first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise NotebookError(f"{path.name} is not a valid notebook: {first}") from None
    for cell in nb.cells:
        if not isinstance(cell.get("source", ""), str):
            raise NotebookError(f"{path.name} has a cell whose source is not text")
    return nb


def load_source(path: str | Path) -> SourceNotebook:
    path = Path(path)
    nb = read_notebook(path)
    src = SourceNotebook(path=path, nb=nb)
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if meta.get("locked"):
            src.locked_ids.add(meta.get("grade_id", ""))
        if is_answer_cell(cell):
            src.answer_ids.append(meta["grade_id"])
            for name in top_level_names(cell.source):
                if name not in src.graded_names:
                    src.graded_names.append(name)
        elif is_test_cell(cell):
            first = next((ln.strip("# ").strip() for ln in cell.source.splitlines()
                          if ln.strip().startswith("#") and not ln.strip().startswith("###")), "")
            src.tests.append(TestCell(grade_id=meta["grade_id"], source=cell.source,
                                      points=float(meta.get("points", 0)),
                                      description=first or meta["grade_id"],
                                      has_hidden=HIDDEN_BEGIN in cell.source))
    if not src.tests:
        raise NotebookError(f"{path} has no test cells: is it an nbgrader source notebook?")
    src.imports = _cells_imports(nb.cells)
    return src


def _cells_imports(cells) -> tuple[str, ...]:
    modules = [m for cell in cells if isinstance(cell, dict) and cell.get("cell_type") == "code"
               and isinstance(cell.get("source"), (str, list))
               for m in imported_modules("".join(cell["source"]))]
    return tuple(dict.fromkeys(modules))


def source_imports(path: str | Path) -> tuple[str, ...]:
    """What an instructor's notebook imports, read as plain JSON (no nbformat, no validation):
    known before anything else is loaded, so the workers can start warming up at once."""
    try:
        cells = json.loads(Path(path).read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError, AttributeError):
        return ()
    return _cells_imports(cells if isinstance(cells, list) else [])


def cells_to_run(source: SourceNotebook, submission) -> list[str]:
    """The code the sandbox runs for a submission, in notebook order.

    Locked instructor cells (setup) come from the instructor's notebook, whatever the student
    did to them; answer cells and the student's own cells come from the submission; test
    cells are never run there (tests run in the grader's process, from the instructor's copy).
    Cells whose metadata was stripped run as student code. The course's own demonstrations
    (code cells of the instructor's notebook without nbgrader metadata, such as a chapter's
    closing timing demo), left as the course wrote them, are not run: no test depends on them
    (the solution earns full marks without them: tests/e2e/test_pipeline.py), and a student must
    never lose points or get a flag for a cell the course wrote. Edited, they are the student's
    code and run.
    """
    test_ids = {t.grade_id for t in source.tests}
    demonstrations = {c.source.strip() for c in source.nb.cells
                      if c.cell_type == "code" and not nbgrader_meta(c).get("grade_id")}
    originals = {nbgrader_meta(c).get("grade_id"): c.source for c in source.nb.cells
                 if c.cell_type == "code" and nbgrader_meta(c).get("grade_id")}
    setup_ids = [gid for gid in originals if gid in source.locked_ids and gid not in test_ids]
    present = {nbgrader_meta(c).get("grade_id") for c in submission.cells}
    # A locked setup cell the student deleted is still run, first.
    code: list[str] = [originals[gid] for gid in setup_ids if gid not in present]
    for cell in submission.cells:
        if cell.get("cell_type") != "code":
            continue
        gid = nbgrader_meta(cell).get("grade_id")
        if gid in test_ids or is_test_cell(cell):
            continue
        if not gid and not is_answer_cell(cell) and str(cell.get("source", "")).strip() in demonstrations:
            continue
        if gid in setup_ids and not is_answer_cell(cell):
            code.append(originals[gid])
        else:
            code.append(cell.source)
    return code


def assignment_ids(submission) -> set[str]:
    return {gid for c in submission.cells if (gid := nbgrader_meta(c).get("grade_id"))}
