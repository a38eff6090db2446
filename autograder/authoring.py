"""Write nbgrader source notebooks from Python: one call per cell.

    from autograder.authoring import notebook, md, setup, solution, test
    nb = notebook([md("# Title"), setup("import numpy as np"),
                   solution("softmax", "def softmax(x, axis=-1):\n    ### BEGIN SOLUTION\n..."),
                   test("test_softmax_rows", "...", points=1)])
    nb.write("solutions/02_similarity/02_similarity.ipynb")

Cell ids are the grade ids (or md-N / code-N), so a rewrite diffs cleanly.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat

from .notebook import hidden_line_numbers


def _nbgrader(grade_id: str, *, grade=False, solution=False, locked=False, points=None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked,
            "schema_version": 3, "solution": solution, "task": False}
    if points is not None:
        meta["points"] = points
    return {"nbgrader": meta}


def md(text: str, grade_id: str | None = None):
    cell = nbformat.v4.new_markdown_cell(text.strip("\n"))
    if grade_id:
        cell.metadata.update(_nbgrader(grade_id, locked=True))
    return cell


def code(source: str):
    """A plain code cell students may edit (scratch, demonstrations)."""
    return nbformat.v4.new_code_cell(source.strip("\n"))


def setup(source: str, grade_id: str = "setup"):
    """A read-only instructor cell (imports, helpers), restored from the source when grading."""
    cell = nbformat.v4.new_code_cell(source.strip("\n"))
    cell.metadata.update(_nbgrader(grade_id, locked=True))
    return cell


def solution(grade_id: str, source: str):
    """An autograded answer cell: the region between ### BEGIN/END SOLUTION is cleared."""
    cell = nbformat.v4.new_code_cell(source.strip("\n"))
    cell.metadata.update(_nbgrader(grade_id, solution=True))
    return cell


def test(grade_id: str, source: str, points: float):
    """A read-only test cell worth `points`; ### BEGIN/END HIDDEN TESTS hide parts of it."""
    cell = nbformat.v4.new_code_cell(source.strip("\n"))
    cell.metadata.update(_nbgrader(grade_id, grade=True, locked=True, points=points))
    return cell


class _Notebook:
    def __init__(self, cells):
        self.nb = nbformat.v4.new_notebook()
        self.nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)",
                                          "language": "python", "name": "python3"}
        self.nb.metadata["language_info"] = {"name": "python"}
        counts = {"markdown": 0, "code": 0}
        for cell in cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            counts[cell.cell_type] += 1
            cell.id = grade_id or f"{cell.cell_type[:2]}-{counts[cell.cell_type]}"
        self.nb.cells = list(cells)

    def write(self, path: str | Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.validate(self.nb)
        nbformat.write(self.nb, str(path))


def notebook(cells) -> _Notebook:
    return _Notebook(cells)


# Hidden regions must not tell students their inputs: a failure there shows the author's
# reason, which names the check. A name like f"out (n={n})" or "weights for a (3, 7) mask"
# would hand out the hidden shapes, so such strings are refused.
_STATES_VALUES = re.compile(r"\(\s*-?\d+\s*,\s*-?\d|\b[A-Za-z_]\w*\s*=\s*-?\d")


def hidden_text_problems(test_source: str) -> list[str]:
    """Strings in the hidden regions of a test cell that would carry hidden inputs into
    feedback: f-strings with values (except rng keys), and literals stating shapes or
    parameter values such as "(3, 7)" or "n=5"."""
    hidden = hidden_line_numbers(test_source)
    if not hidden:
        return []
    tree = ast.parse(test_source)
    rng_keys = {id(arg) for node in ast.walk(tree) if isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "rng" for arg in node.args}
    problems = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) not in hidden or id(node) in rng_keys:
            continue
        if isinstance(node, ast.JoinedStr) and any(isinstance(v, ast.FormattedValue) for v in node.values):
            problems.append(f"line {node.lineno}: f-string {ast.unparse(node)[:80]}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _STATES_VALUES.search(node.value):
            problems.append(f"line {node.lineno}: {node.value[:80]!r}")
    return problems
