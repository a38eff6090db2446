"""Possible copying, for the instructor to look at: submissions that are byte-identical, and
answer cells that are near-identical once comments, docstrings, whitespace and the student's
own names are set aside. It changes no score; the report lists each pair with a figure.

An answer is compared after normalising it: the lines of the released exercise (signature,
docstring, placeholders) are dropped, comments and blank lines vanish with tokenising, and
every name the cell binds (parameters, assigned variables, loop variables, inner functions)
becomes v0, v1, ... in order of first use, so renaming variables or reformatting changes
nothing. Names it only reads (np, torch, a method) are kept: they are the substance. Two
normalised answers are compared with RapidFuzz's normalised Indel similarity (a maintained C++
library, already installed with nbgrader, that compares all pairs of a class in milliseconds):
1.0 is the same token sequence. Short answers are skipped (one line such as `return A @ B.T`
is what everyone writes), and so are answers equal to the instructor's solution.
"""
from __future__ import annotations

import ast
import io
import keyword
import tokenize
from dataclasses import dataclass

THRESHOLD = 0.95
MIN_TOKENS = 12


@dataclass(frozen=True)
class Pair:
    a: str
    b: str
    what: str            # "the whole notebook" or "answer cell NAME"
    similarity: float    # 1.0 for byte-identical notebooks


def _bound_names(code: str) -> list[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            names.append(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.append(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not tree.body[0]:
            names.append(node.name)
    return names


def _docstring_lines(code: str) -> set[int]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def normalise(code: str, template: str = "") -> list[str]:
    """The answer's tokens with the template's lines, docstrings and comments gone and its own
    names replaced by v0, v1, ... (see the module's docstring)."""
    given = {line.strip() for line in template.splitlines() if line.strip()}
    docs = _docstring_lines(code)
    keep = [line if (i + 1) not in docs and line.strip() not in given else ""
            for i, line in enumerate(code.splitlines())]
    text = "\n".join(keep) + "\n"
    bound = {}
    for name in _bound_names(code):
        bound.setdefault(name, f"v{len(bound)}")
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER):
                continue
            if tok.type == tokenize.NAME and not keyword.iskeyword(tok.string):
                out.append(bound.get(tok.string, tok.string))
            elif tok.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                out.append({tokenize.NEWLINE: ";", tokenize.INDENT: "{", tokenize.DEDENT: "}"}[tok.type])
            else:
                out.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        out = text.split()
    while out and out[-1] in (";", "}"):
        out.pop()
    return out


def possible_copying(digests: dict[str, str | None], answers: dict[str, dict[str, str]],
                     templates: dict[str, str], solutions: dict[str, str] | None = None,
                     threshold: float = THRESHOLD) -> list[Pair]:
    """Pairs of students whose notebooks are byte-identical (`digests`: student -> sha256), or
    whose answer to a cell is near-identical (`answers`: student -> {cell: code}), most similar
    first."""
    from rapidfuzz.distance import Indel
    from rapidfuzz.process import cdist

    pairs = []
    by_digest: dict[str, list[str]] = {}
    for student, digest in sorted(digests.items()):
        if digest:
            by_digest.setdefault(digest, []).append(student)
    same = set()
    for group in by_digest.values():
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                pairs.append(Pair(a, b, "the whole notebook", 1.0))
                same.add((a, b))
    solutions = solutions or {}
    for cell, template in templates.items():
        reference = " ".join(normalise(solutions[cell], template)) if cell in solutions else None
        students, texts = [], []
        for student in sorted(answers):
            tokens = normalise(answers[student].get(cell, ""), template)
            text = " ".join(tokens)
            if len(tokens) < MIN_TOKENS or text == reference:
                continue
            students.append(student)
            texts.append(text)
        if len(texts) < 2:
            continue
        scores = cdist(texts, texts, scorer=Indel.normalized_similarity, score_cutoff=threshold)
        for i in range(len(texts)):
            for j in range(i + 1, len(texts)):
                if scores[i][j] >= threshold and (students[i], students[j]) not in same:
                    pairs.append(Pair(students[i], students[j], f"answer cell {cell}", round(float(scores[i][j]), 3)))
    pairs.sort(key=lambda p: (-p.similarity, p.what, p.a, p.b))
    return pairs


__all__ = ["Pair", "normalise", "possible_copying", "THRESHOLD"]
