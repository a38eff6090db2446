"""Possible copying, for the instructor to look at: groups of students whose graded functions
are the same code once everything that does not change what the code does is set aside. It
changes no score and flags nobody; the report lists each group with the students' names.

What is compared is the code of each graded function (the names the released answer cells
define: `dot_similarity`, `MultiHeadAttention`, ...), wherever the student wrote it. Every code
cell of the student's notebook counts, the answer cells and any cell the student added, and
of several definitions of one name the last one that is not the released stub, as Python
would run them. Order does not matter: each graded function is compared on its own, so two
functions swapped in a cell, or moved into a new cell, compare as before. On the parsed code
(Python's `ast`), a function is normalised (report/normalise.py): docstrings, comments,
dead and unused statements and the released stub's own statements dropped, names replaced by
their role, the result printed back as Python and tokenised.

Two students' token sequences for one function are compared with RapidFuzz's normalised Indel
similarity (a maintained C++ library, installed with nbgrader): 1.0 is the same sequence. A
pair is reported at `THRESHOLD` or above. An answer is left out when the student added fewer
than `MIN_TOKENS` tokens to the stub (an untouched or nearly untouched exercise is nobody's
copy; one line such as `return A @ B.T` is what everyone writes) or when it is at least
`NEAR_SOLUTION` alike to the instructor's solution (what the docstring leads to: two students
who both wrote it copied nobody). Byte-identical notebook files are reported too, when they
hold an answer compared here (two untouched released notebooks are identical and are no sign
of anything). Pairs are joined into groups: students linked by any chain of similar pairs are
one group. A class of 200 is read and compared in about two seconds on a busy two-core
machine (tests/unit/test_copying.py measures and prints it), nearly all of it parsing.

A cell that does not parse is compared as tokens, its own names renamed in order of first
use. Anything in one student's code that defeats the comparison (too deep to parse, too
large) leaves that student out of it; the class's run goes on.
"""
from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

from .normalise import DEFS, Pruner, Student, parse, token_unit

THRESHOLD = 0.95
NEAR_SOLUTION = 0.85         # an answer this close to the instructor's is what the docstring leads to
MIN_TOKENS = 12
MAX_CHARS = 200_000          # a student's code beyond this is not compared (no honest answer is this long)
IDENTICAL = "identical notebook files"


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    what: str            # a graded function's name, or IDENTICAL
    similarity: float    # 1.0: the same normalised code (or the same file)


@dataclass(frozen=True)
class Group:
    """Students linked by similar pairs (a connected component), with the pairs that link them."""
    students: tuple[str, ...]
    pairs: tuple[Pair, ...]

    @property
    def similarity(self) -> float:
        return max(p.similarity for p in self.pairs)


# ------------------------------------------------------------------ reading a notebook
def notebook_code(path: Path, answer_ids, skip_ids=(), released=()) -> dict[str, str]:
    """The student's code in a notebook file, in the notebook's order: {answer cell's grade_id:
    code} for answer cells, {"cell N": code} for any other code cell, leaving out cells whose
    grade_id is in `skip_ids` (the instructor's test cells) and cells that are exactly a
    released cell (`released`: their code). An unreadable notebook is {}."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, ValueError):
        return {}
    return code_of(text, answer_ids, skip_ids, released)


def code_of(text: str, answer_ids, skip_ids=(), released=()) -> dict[str, str]:
    """`notebook_code` of a notebook's JSON text, already in memory."""
    answer_ids, skip_ids = set(answer_ids), set(skip_ids)
    released = {code.strip() for code in released}
    try:
        nb = json.loads(text)
        cells = nb.get("cells", [])
        out: dict[str, str] = {}
        for i, cell in enumerate(cells if isinstance(cells, list) else []):
            if not isinstance(cell, dict) or cell.get("cell_type") != "code":
                continue
            gid = _grade_id(cell)
            source = cell.get("source", "")
            code = "".join(source) if isinstance(source, list) else source
            if not isinstance(code, str) or gid in skip_ids:
                continue
            if gid in answer_ids and gid not in out:
                out[gid] = code
            elif code.strip() and code.strip() not in released:
                out[f"cell {i}"] = code
        return out
    except (OSError, ValueError, TypeError, AttributeError, RecursionError, MemoryError):
        return {}                       # (a corrupt notebook is flagged by grading, not here)


def stub(solution: str) -> str:
    """An answer cell as released, from the instructor's (when exercises/ has none): each
    `### BEGIN SOLUTION` ... `### END SOLUTION` region replaced by `raise NotImplementedError()`,
    as nbgrader's ClearSolutions does."""
    out, inside = [], False
    for line in solution.splitlines():
        if line.strip().startswith("### BEGIN SOLUTION"):
            inside = True
            out.append(line[:len(line) - len(line.lstrip())] + "raise NotImplementedError()")
        elif line.strip().startswith("### END SOLUTION"):
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out) + "\n"


def _grade_id(cell: dict):
    from ..notebook import nbgrader_meta

    return nbgrader_meta(cell).get("grade_id")


# ------------------------------------------------------------------ comparing
def possible_copying(digests: dict[str, str | None], answers: dict[str, dict[str, str]],
                     templates: dict[str, str], solutions: dict[str, str] | None = None,
                     threshold: float = THRESHOLD) -> list[Group]:
    """Groups of students whose graded functions are near-identical, largest and most similar
    first. `answers`: student -> {cell: code} (notebook_code's answer cells and added cells);
    `templates`: the released answer cells {grade_id: code}; `solutions`: the instructor's
    {grade_id: code}; `digests`: student -> the submitted file's sha256."""
    from rapidfuzz.distance import Indel
    from rapidfuzz.process import cdist

    template = Student(templates)
    graded = set(template.defs)
    given: set[str] = set()          # the statements the released template's functions already hold
    for code in template.texts.values():
        tree = parse(code)
        assert tree is not None         # Student.texts holds only code that parsed
        for node in tree.body:
            if isinstance(node, DEFS):
                given |= {ast.dump(s) for s in ast.walk(node) if isinstance(s, ast.stmt) and not isinstance(s, DEFS)}
    pruner = Pruner(given)
    solution = Student(solutions or {})
    alphabet: dict[str, str] = {}

    def text(tokens: list[str]) -> str:     # one character per distinct token: RapidFuzz compares strings fast
        return "".join(alphabet.setdefault(t, chr(0x10000 + len(alphabet))) for t in tokens)

    reference = {}
    for name in graded:
        tokens = solution.unit(name, graded, pruner)
        if tokens is not None:
            reference[name] = text(tokens)
    cell_of = {name: gid for gid, code in templates.items() for name in Student({gid: code}).defs}
    units: dict[str, dict[str, str]] = {name: {} for name in sorted(graded)}
    for student in sorted(answers):
        cells = answers[student]
        try:
            if sum(len(code) for code in cells.values()) > MAX_CHARS:
                continue
            mine = Student(cells)
            for name in units:
                tokens = mine.unit(name, graded, pruner)
                if tokens is None and cell_of.get(name) in mine.unparsed:
                    tokens = token_unit(mine.unparsed[cell_of[name]], templates[cell_of[name]])
                if tokens is None or len(tokens) < MIN_TOKENS:
                    continue
                t = text(tokens)
                if name in reference and Indel.normalized_similarity(t, reference[name]) >= NEAR_SOLUTION:
                    continue
                units[name][student] = t
        except (RecursionError, MemoryError, ValueError, TypeError):
            continue                # code that defeats the comparison: this student is left out
    pairs = []
    for name, by_student in units.items():
        students = list(by_student)
        if len(students) < 2:
            continue
        texts = [by_student[s] for s in students]
        scores = cdist(texts, texts, scorer=Indel.normalized_similarity, score_cutoff=threshold)
        for i in range(len(students)):
            for j in range(i + 1, len(students)):
                if scores[i][j] >= threshold:
                    pairs.append(Pair(students[i], students[j], name, round(float(scores[i][j]), 3)))
    compared = {s for by_student in units.values() for s in by_student}
    by_digest: dict[str, list[str]] = {}
    for student, digest in sorted(digests.items()):
        if digest and student in compared:
            by_digest.setdefault(digest, []).append(student)
    for same in by_digest.values():
        pairs += [Pair(a, b, IDENTICAL, 1.0) for i, a in enumerate(same) for b in same[i + 1:]]
    return groups(pairs)


def groups(pairs: list[Pair]) -> list[Group]:
    """The connected components of `pairs`, each with its pairs: largest, then most similar,
    first."""
    parent: dict[str, str] = {}

    def root(s: str) -> str:
        parent.setdefault(s, s)
        while parent[s] != s:
            parent[s] = parent[parent[s]]
            s = parent[s]
        return s

    for p in pairs:
        parent[root(p.a)] = root(p.b)
    members: dict[str, list[str]] = {}
    for s in sorted(parent):
        members.setdefault(root(s), []).append(s)
    linking: dict[str, list[Pair]] = {}
    for p in pairs:
        linking.setdefault(root(p.a), []).append(p)
    out = [Group(tuple(m), tuple(sorted(linking[r], key=lambda p: (p.a, p.b, p.what != IDENTICAL, p.what))))
           for r, m in members.items()]
    out.sort(key=lambda g: (-len(g.students), -g.similarity, g.students))
    return out


__all__ = ["Group", "Pair", "groups", "notebook_code", "possible_copying", "stub", "IDENTICAL", "NEAR_SOLUTION",
           "THRESHOLD"]
