"""The grader's modules import only downward: no cycle in autograder's import graph.

Every import counts, at module level or inside a function (a function-level import that
closes a circle still ties the two modules together). A module's package counts as
importing the module only when it does so itself.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "autograder"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[:len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                targets = [f"{base}.{a.name}" for a in node.names] + [base]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(target + "."):
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_the_package():
    graph = import_graph()
    assert "autograder.gradebook" in graph and "autograder.deadlines" in graph["autograder.gradebook"]


def test_a_cycle_is_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_in_a_circle():
    found = cycles(import_graph())
    assert not found, "modules that import each other, directly or around a circle: " + "; ".join(
        " <-> ".join(c) for c in found)


# The layers, bottom up: what each may import from the package outside itself (issue 39 item 3).
# The sandbox speaks plain data and knows nothing of tests or grading; the workspace, the
# course and the versions know nothing of a grading run.
MAY_IMPORT = {
    "autograder.sandbox": {"autograder.probes", "autograder.jsontext", "autograder.errors"},
    "autograder.course": {"autograder.errors", "autograder.versions", "autograder.notebook", "autograder.jsontext"},
    "autograder.versions": set(),
    "autograder.workspace": {"autograder.course", "autograder.flags", "autograder.spreadsheet",
                             "autograder.versions", "autograder.errors", "autograder.jsontext"},
}


def test_no_layer_imports_upward():
    graph = import_graph()
    wrong = []
    for layer, allowed in MAY_IMPORT.items():
        for module, targets in graph.items():
            if module == layer or module.startswith(layer + "."):
                wrong += [f"{module} imports {t}" for t in sorted(targets)
                          if not t.startswith(layer) and t not in allowed]
    assert not wrong, "; ".join(wrong)
