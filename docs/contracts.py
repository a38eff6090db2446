"""Write docs/contracts.md: the graded functions' contracts, read from the solution notebooks.

    .venv/bin/python docs/contracts.py

A graded function is the answer cell of a solution notebook (`solutions/NN_slug/NN_slug.ipynb`,
nbgrader metadata `solution: true`) that defines the function or class its `grade_id` names.
Its signature and docstring are the contract; the docstring is split into what the function
takes, what it returns, and what it must not do (or raises). tests/unit/test_contracts.py fails when
docs/contracts.md is not what this script writes, or when a graded function is missing from it.
"""
from __future__ import annotations

import ast
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "docs" / "contracts.md"

HEADER = """\
# The graded functions' contracts

Every graded function of the twelve exercises, as the solution notebooks define it: its
signature, what it takes (shapes, dtypes), what it returns, and what it must not do. Students
implement exactly these names and signatures; the tests of each exercise check these promises.

This page is written by `docs/contracts.py` from `solutions/*/*.ipynb` (the signature and
docstring of each answer cell's function): do not edit it by hand. Change the solution
notebook, then run `.venv/bin/python docs/contracts.py`; `tests/unit/test_contracts.py` fails while
this page differs from the notebooks.

What every graded function shares: NumPy in and NumPy out (float64 unless the input has
another float dtype), array-likes accepted, inputs never modified; the row-vector convention
(a sequence is a matrix with one token per row, a projection is `X @ W`); leading batch
dimensions wherever a shape starts with `...`; boolean masks with True = may attend; attention
functions return `(output, weights)`.

| chapter | function | takes | returns | must not, raises |
|---|---|---|---|---|
"""

# Sentences that say what a function must not do, or when it raises.
PROHIBITION = re.compile(r"not modified|[Nn]o input|[Nn]othing is modified|[Nn]either|never|"
                         r"no float64|no NaN|[Rr]aises")


def graded_functions(notebook: Path) -> list[ast.FunctionDef | ast.ClassDef]:
    """The definitions of the notebook's graded functions, in the notebook's order."""
    found = []
    for cell in json.loads(notebook.read_text())["cells"]:
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell["cell_type"] != "code" or not meta.get("solution") or not meta.get("grade_id"):
            continue
        tree = ast.parse("".join(cell["source"]))
        found += [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))
                  and node.name == meta["grade_id"]]
    return found


def signature(node: ast.FunctionDef | ast.ClassDef) -> str:
    """`name(arguments)`; a class's are its __init__'s, without self."""
    if isinstance(node, ast.ClassDef):
        init = next(n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__")
        arguments = ast.unparse(init.args).removeprefix("self").removeprefix(", ")
    else:
        arguments = ast.unparse(node.args)
    return f"{node.name}({arguments})"


def sentences(text: str) -> list[tuple[str, str]]:
    """(the space before it, a sentence or clause) for each clause of text: split after `.` or
    `;` ending a word, and before "Raises"; the spaces are kept, so are the line breaks."""
    pieces = re.split(r"((?<=[^\s.][.;])\s+|\s+(?=Raises\b)|\n\s*(?=\w+ is not modified))", text.strip())
    return list(zip(["", *pieces[1::2]], pieces[0::2]))


def parts(doc: str) -> tuple[str, str, str, str]:
    """(summary, takes, returns, must not) of a docstring."""
    summary, _, rest = doc.partition("\n\n")
    split = re.search(r"\bReturns\b|^-> ", rest, re.M)
    takes, returns = (rest[:split.start()], rest[split.start():]) if split else (rest, "")
    kept = {"takes": "", "returns": ""}
    must_not = ""
    for name, text in (("takes", takes), ("returns", returns)):
        for space, clause in sentences(text):
            if PROHIBITION.search(clause) and not clause.startswith(("Returns", "-> ")):
                must_not += (space if must_not else "") + clause
            else:
                kept[name] += (space if kept[name] else "") + clause
    return summary, *(re.sub(r";$", ".", part) for part in (kept["takes"], kept["returns"], must_not))


def cell(text: str) -> str:
    """Docstring text as one Markdown table cell: its own line breaks kept where a line starts
    a new item (an argument, a case), Markdown's special characters escaped."""
    lines = [line.rstrip() for line in text.strip().splitlines()]
    out = ""
    for line in lines:
        item = re.match(r"\s+\S|[\w\[\]\"]+(, \w+)*:\s|- ", line)
        plain = re.sub(r"\s+", " ", line.strip())
        escaped = re.sub(r"([\\`*_\[\]|])", r"\\\1", plain).replace("<", "&lt;").replace(">", "&gt;")
        out += ("<br>" if out and item else " " if out else "") + escaped
    return out


def contracts() -> str:
    rows = []
    for notebook in sorted((ROOT / "solutions").glob("*/*.ipynb")):
        chapter = notebook.stem[:2]
        for node in graded_functions(notebook):
            summary, takes, returns, must_not = parts(ast.get_docstring(node) or "")
            rows.append(f"| {chapter} | `{signature(node)}`<br>{cell(summary)} | {cell(takes)} | "
                        f"{cell(returns)} | {cell(must_not)} |")
    return HEADER + "\n".join(rows) + "\n"


if __name__ == "__main__":
    TARGET.write_text(contracts())
    print(f"wrote {TARGET.relative_to(ROOT)}: {contracts().count(chr(10) + '| ') - 1} graded functions")
