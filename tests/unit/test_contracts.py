"""docs/contracts.md, the table of the graded functions' contracts, is what the solution
notebooks define: every graded function (an answer cell's grade_id) is in it, in its chapter,
with the signature the notebook's code really has, and the page is what docs/contracts.py
writes from the notebooks today (so a changed docstring cannot leave it behind)."""
from __future__ import annotations

import importlib.util
import inspect
import json
import re

import numpy as np
import pytest
import torch

from tests.conftest import ROOT

CONTRACTS = ROOT / "docs" / "contracts.md"


def notebook_signatures() -> set[tuple[str, str]]:
    """(chapter, name(signature)) of every graded function, from the objects the answer cells
    make when they run (inspect's reading, not the generator's)."""
    found = set()
    for notebook in sorted((ROOT / "solutions").glob("*/*.ipynb")):
        for cell in json.loads(notebook.read_text())["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            if cell["cell_type"] == "code" and meta.get("solution") and meta.get("grade_id"):
                space = {"np": np, "torch": torch}
                exec(compile("".join(cell["source"]), str(notebook), "exec"), space)
                graded = space[meta["grade_id"]]
                found.add((notebook.stem[:2], f"{meta['grade_id']}{inspect.signature(graded)}"))
    return found


def table_signatures() -> set[tuple[str, str]]:
    rows = re.findall(r"^\| (\d\d) \| `([^`]+)`", CONTRACTS.read_text(), re.M)
    return set(rows)


def test_every_graded_function_is_in_the_table_with_its_signature():
    graded, table = notebook_signatures(), table_signatures()
    assert len(graded) >= 26, f"only {len(graded)} graded functions found in solutions/"
    assert not graded - table, f"missing from docs/contracts.md, or another signature: {sorted(graded - table)}"
    assert not table - graded, f"in docs/contracts.md but not graded (so): {sorted(table - graded)}"


def test_the_table_is_what_the_solution_notebooks_say_today():
    spec = importlib.util.spec_from_file_location("contracts", ROOT / "docs" / "contracts.py")
    contracts = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(contracts)
    assert CONTRACTS.read_text() == contracts.contracts(), \
        "docs/contracts.md is stale: run .venv/bin/python docs/contracts.py"


def test_contributing_points_at_the_table_not_outside_the_repository():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    assert "docs/contracts.md" in text
    assert "COURSE_SPEC" not in text and "shared folder" not in text


@pytest.mark.parametrize("column", ["takes", "returns"])
def test_every_row_fills_what_the_function_takes_and_returns(column):
    index = {"takes": 3, "returns": 4}[column]
    for row in re.findall(r"^\| \d\d \|.*", CONTRACTS.read_text(), re.M):
        cells = re.split(r"(?<!\\)\|", row)
        assert cells[index].strip(), f"empty '{column}' in {row[:80]}"
