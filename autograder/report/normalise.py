"""Code normalised for comparison (report/similarity.py): what does not change what a graded
function does is set aside, and what is left is a sequence of tokens. On the parsed code
(Python's `ast`):

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

A cell that does not parse is read as tokens (`token_unit`), its own names renamed in order
of first use.
"""
from __future__ import annotations

import ast
import builtins
import io
import keyword
import tokenize


def parse(code: str) -> ast.Module | None:
    text = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in code.splitlines())
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
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


class Pruner:
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


class Student:
    """One student's (or the template's, or the solution's) code, parsed: the top-level
    definitions by name (in the order Python runs them) and the top-level variables."""

    def __init__(self, cells: dict[str, str]):
        self.texts: dict[str, str] = {}
        self.defs: dict[str, list[tuple[str, int]]] = {}     # name -> (cell, index in the cell's body)
        self.variables: set[str] = set()
        self.unparsed: dict[str, str] = {}                   # cell key -> code that does not parse
        for key, code in cells.items():
            tree = parse(code)
            if tree is None:
                self.unparsed[key] = code
                continue
            self.texts[key] = code
            for i, node in enumerate(tree.body):
                if isinstance(node, DEFS):
                    self.defs.setdefault(node.name, []).append((key, i))
                elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                    for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                        self.variables.update(_target_names(target) or [])

    def _pruned(self, where: tuple[str, int], pruner: Pruner):
        """A fresh copy of a definition (parsed again: faster than copying the tree), pruned."""
        key, i = where
        tree = parse(self.texts[key])
        assert tree is not None                     # it parsed when it was stored
        return pruner.definition(tree.body[i])

    def unit(self, name: str, graded: set[str], pruner: Pruner) -> list[str] | None:
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
        units: list = [chosen]
        helpers: dict = {}
        nodes: list = []
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
                body = sorted(body, key=lambda s: (isinstance(s, DEFS), getattr(s, "name", "")))
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


def token_unit(code: str, template: str) -> list[str]:
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
