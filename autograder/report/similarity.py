"""Possible copying, for the instructor to look at: groups of students whose graded functions
are the same code once everything that does not change what the code does is set aside. It
changes no score and flags nobody; the report lists each group with the students' names.

What is compared is the code of each graded function (the names the released answer cells
define: `dot_similarity`, `MultiHeadAttention`, ...), wherever the student wrote it. Every code
cell of the student's notebook counts, the answer cells and any cell the student added, and
of several definitions of one name the last one that is not the released stub, as Python
would run them. Order does not matter: each graded function is compared on its own, so two
functions swapped in a cell, or moved into a new cell, compare as before. On the parsed code
(Python's `ast`), a function is normalised:

- docstrings, comments, `pass`, `print(...)` and bare expressions that compute nothing (`x`,
  `A.shape`, a string), and statements after a `return`, `raise`, `break` or `continue` are
  dropped; so is every assignment to a local name nothing reads (repeatedly, so that a chain
  of unused variables goes too). An added unused line changes nothing;
- the released template's own statements (`raise NotImplementedError()`,
  `super().__init__()`) are dropped: only what the student added is compared;
- names are replaced by their role, in order of first use: parameters p0, p1, ..., local
  variables v0, v1, ..., the student's own top-level helper functions h0, h1, ... (whose code
  joins the function's, in the order they are first called) and the student's top-level
  variables g0, g1, .... Names the student does not bind (np, torch, a method, a keyword
  argument) are kept: they are the substance;
- the result is printed back as Python (`ast.unparse`: one layout, one quoting style) and
  tokenised.

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
machine (tests/test_copying.py measures and prints it), nearly all of it parsing.

A cell that does not parse is compared as tokens, its own names renamed in order of first
use. Anything in one student's code that defeats the comparison (too deep to parse, too
large) leaves that student out of it; the class's run goes on.
"""
from __future__ import annotations

import ast
import builtins
import io
import json
import keyword
import tokenize
from dataclasses import dataclass
from pathlib import Path

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


# ------------------------------------------------------------------ normalising
def _parse(code: str) -> ast.Module | None:
    text = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in code.splitlines())
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_ENDS = (ast.Return, ast.Raise, ast.Break, ast.Continue)
_EFFECTS = (ast.Call, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)


def _dead_expression(stmt: ast.stmt) -> bool:
    """A statement that only computes a value nobody keeps: `x`, `A.shape`, a docstring, or a
    print(...)."""
    if not isinstance(stmt, ast.Expr):
        return False
    value = stmt.value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "print":
        return True
    return not any(isinstance(node, _EFFECTS) for node in ast.walk(value))


def _target_names(target) -> list[str] | None:
    """The names a simple assignment target binds, or None if it writes anything else (an
    attribute, an item): that is never an unused local."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Starred):
        return _target_names(target.value)
    if isinstance(target, (ast.Tuple, ast.List)):
        names = []
        for element in target.elts:
            inner = _target_names(element)
            if inner is None:
                return None
            names += inner
        return names
    return None


def _unused_assignment(stmt: ast.stmt, read: set[str]) -> bool:
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    else:
        return False
    names = []
    for target in targets:
        inner = _target_names(target)
        if inner is None:
            return False
        names += inner
    return not any(name in read for name in names)


class _Pruner:
    """Drops dead statements (see the module's docstring) from a definition, in place.
    `given`: the released stubs' own statements (ast.dump'ed), dropped wherever they are."""

    def __init__(self, given: set[str]):
        self.given = given
        self.kinds = {s.split("(", 1)[0] for s in given}
        self.removed = 0

    def dead(self, stmt, read) -> bool:
        return (_dead_expression(stmt) or isinstance(stmt, ast.Pass)
                or (type(stmt).__name__ in self.kinds and ast.dump(stmt) in self.given)
                or (read is not None and _unused_assignment(stmt, read)))

    def block(self, stmts: list, read: set[str] | None) -> list:
        """`read`: the names the enclosing function reads (None at class level, where
        assignments are attributes)."""
        out = []
        for i, stmt in enumerate(stmts):
            if self.dead(stmt, read):
                self.removed += not isinstance(stmt, ast.Pass)      # a pass reads nothing
                continue
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                stmt.body = self.block(stmt.body, read if read is not None else _read_names(stmt)) or [ast.Pass()]
            elif isinstance(stmt, ast.ClassDef):
                stmt.body = self.block(stmt.body, None) or [ast.Pass()]
            else:
                for attr in ("body", "orelse", "finalbody"):
                    block = getattr(stmt, attr, None)
                    if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                        setattr(stmt, attr, self.block(block, read) or [ast.Pass()] * (attr == "body"))
                for handler in getattr(stmt, "handlers", None) or getattr(stmt, "cases", None) or ():
                    handler.body = self.block(handler.body, read) or [ast.Pass()]
            out.append(stmt)
            if isinstance(stmt, _ENDS):
                self.removed += len(stmts) - i - 1
                break                   # the rest of the block never runs
        return out

    def definition(self, node):
        """`node` (a fresh tree: it is changed) without its dead statements, pruned again
        until nothing more goes (removing `b = a + 1` can leave `a` unused)."""
        while True:
            self.removed = 0
            read = None if isinstance(node, ast.ClassDef) else _read_names(node)
            node.body = self.block(node.body, read) or [ast.Pass()]
            if not self.removed:
                return node


def _read_names(node) -> set[str]:
    read = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store):
            read.add(n.id)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            read.update(n.names)
    return read


def _in_order(node) -> list:
    """Nodes in source order (ast.walk is breadth first)."""
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(reversed(list(ast.iter_child_nodes(n))))
    return out


class _Renamer(ast.NodeTransformer):
    def __init__(self, roles: dict[str, str]):
        self.roles = roles

    def visit_Name(self, node):
        node.id = self.roles.get(node.id, node.id)
        return node

    def visit_arg(self, node):
        node.arg = self.roles.get(node.arg, node.arg)
        node.annotation = None
        return node

    def _named(self, node):
        node.name = self.roles.get(node.name, node.name)
        if hasattr(node, "returns"):
            node.returns = None
        self.generic_visit(node)
        return node

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _named

    def visit_ExceptHandler(self, node):
        if node.name:
            node.name = self.roles.get(node.name, node.name)
        self.generic_visit(node)
        return node


def _tokens(code: str) -> list[str]:
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER):
                continue
            if tok.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                out.append({tokenize.NEWLINE: ";", tokenize.INDENT: "{", tokenize.DEDENT: "}"}[tok.type])
            else:
                out.append(tok.string)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return code.split()
    while out and out[-1] in (";", "}"):
        out.pop()
    return out


class _Student:
    """One student's (or the template's, or the solution's) code, parsed: the top-level
    definitions by name (in the order Python runs them) and the top-level variables."""

    def __init__(self, cells: dict[str, str]):
        self.texts: dict[str, str] = {}
        self.defs: dict[str, list[tuple[str, int]]] = {}     # name -> (cell, index in the cell's body)
        self.variables: set[str] = set()
        self.unparsed: dict[str, str] = {}                   # cell key -> code that does not parse
        for key, code in cells.items():
            tree = _parse(code)
            if tree is None:
                self.unparsed[key] = code
                continue
            self.texts[key] = code
            for i, node in enumerate(tree.body):
                if isinstance(node, _DEFS):
                    self.defs.setdefault(node.name, []).append((key, i))
                elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                    for target in getattr(node, "targets", None) or [node.target]:
                        self.variables.update(_target_names(target) or [])

    def _pruned(self, where: tuple[str, int], pruner: _Pruner):
        """A fresh copy of a definition (parsed again: faster than copying the tree), pruned."""
        key, i = where
        return pruner.definition(_parse(self.texts[key]).body[i])

    def unit(self, name: str, graded: set[str], pruner: _Pruner) -> list[str] | None:
        """The normalised tokens of graded function `name`, with the helpers it calls; None if
        the student has no definition of it beyond the released stub."""
        chosen = None
        for where in reversed(self.defs.get(name, [])):
            pruned = self._pruned(where, pruner)
            if _body(pruned):
                chosen = pruned
                break
        if chosen is None:
            return None
        units, helpers, nodes = [chosen], {}, []
        while len(nodes) < len(units):                # the student's helpers it reaches, in order
            nodes.append(_in_order(units[len(nodes)]))
            for n in nodes[-1]:
                if isinstance(n, ast.Name) and n.id in self.defs and n.id not in graded and n.id not in helpers:
                    helpers[n.id] = f"h{len(helpers)}"
                    units.append(self._pruned(self.defs[n.id][-1], pruner))
        shared = dict(helpers)                        # the student's top-level names: one meaning
        tokens = []
        for i, (tree, in_order) in enumerate(zip(units, nodes)):
            local: dict[str, str] = {}                # each function's own: p0, v0 ... again

            def role(name: str, kind: str) -> None:
                if name in shared or name in local or name in graded:
                    return
                where = shared if kind == "g" else local
                where[name] = f"{kind}{sum(1 for r in where.values() if r[0] == kind)}"

            bound = _bound(in_order)
            for n in in_order:
                if isinstance(n, ast.arg):
                    role(n.arg, "p")
                elif isinstance(n, ast.Name) and n.id in bound:
                    role(n.id, "v")
                elif isinstance(n, ast.Name) and n.id in self.variables:
                    role(n.id, "g")
                elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n is not tree:
                    role(n.name, "v")
            tree = _Renamer({**shared, **local}).visit(tree)
            body = _body(tree)
            if isinstance(tree, ast.ClassDef):         # methods in any order: sorted by name
                body = sorted(body, key=lambda s: (isinstance(s, _DEFS), getattr(s, "name", "")))
            if i:                                      # a helper: its signature is the student's own
                tree.body = body
                tokens += _tokens(ast.unparse(tree))
            else:
                for stmt in body:
                    tokens += _tokens(ast.unparse(stmt)) + [";"]
        return tokens


def _body(node) -> list:
    """A definition's statements; a class's methods that do nothing do not count."""
    return [s for s in node.body if not isinstance(s, ast.Pass)
            and not (isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _body(s))]


def _bound(nodes: list) -> set[str]:
    """Names a definition (`nodes`: all of its nodes) binds inside itself (assigned, looped
    over, imported, caught)."""
    bound = set()
    for n in nodes:
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            bound.add(n.id)
        elif isinstance(n, ast.ExceptHandler) and n.name:
            bound.add(n.name)
        elif isinstance(n, ast.alias):
            bound.add((n.asname or n.name).split(".")[0])
    return bound


_KEEP = set(keyword.kwlist) | set(dir(builtins))


def _token_unit(code: str, template: str) -> list[str]:
    """A cell that does not parse: its tokens without the template's lines, every name it
    does not share with Python renamed n0, n1, ... in order of first use."""
    given = {line.strip() for line in template.splitlines() if line.strip()}
    text = "\n".join(line for line in code.splitlines() if line.strip() not in given) + "\n"
    names: dict[str, str] = {}
    out, previous = [], ""
    for tok in _tokens(text):
        if tok.isidentifier() and tok not in _KEEP and previous != ".":
            tok = names.setdefault(tok, f"n{len(names)}")
        out.append(tok)
        previous = tok
    return out


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

    template = _Student(templates)
    graded = set(template.defs)
    given = {ast.dump(s) for key, code in template.texts.items() for node in _parse(code).body
             if isinstance(node, _DEFS) for s in ast.walk(node) if isinstance(s, ast.stmt) and not isinstance(s, _DEFS)}
    pruner = _Pruner(given)
    solution = _Student(solutions or {})
    alphabet: dict[str, str] = {}

    def text(tokens: list[str]) -> str:     # one character per distinct token: RapidFuzz compares strings fast
        return "".join(alphabet.setdefault(t, chr(0x10000 + len(alphabet))) for t in tokens)

    reference = {}
    for name in graded:
        tokens = solution.unit(name, graded, pruner)
        if tokens is not None:
            reference[name] = text(tokens)
    cell_of = {name: gid for gid, code in templates.items() for name in _Student({gid: code}).defs}
    units: dict[str, dict[str, str]] = {name: {} for name in sorted(graded)}
    for student in sorted(answers):
        cells = answers[student]
        try:
            if sum(len(code) for code in cells.values()) > MAX_CHARS:
                continue
            mine = _Student(cells)
            for name in units:
                tokens = mine.unit(name, graded, pruner)
                if tokens is None and cell_of.get(name) in mine.unparsed:
                    tokens = _token_unit(mine.unparsed[cell_of[name]], templates[cell_of[name]])
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
