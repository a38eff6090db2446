"""The grader's modules import only downward: no cycle in autograder's import graph.

Every import counts, at module level or inside a function (a function-level import that
closes a circle still ties the two modules together). A module's package counts as
importing the module only when it does so itself.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "autograder"


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
    assert "autograder.store.gradebook" in graph and "autograder.term.deadlines" in graph["autograder.store.gradebook"]


def test_a_cycle_is_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_in_a_circle():
    found = cycles(import_graph())
    assert not found, "modules that import each other, directly or around a circle: " + "; ".join(
        " <-> ".join(c) for c in found)


# The sandbox speaks plain data and knows nothing of tests or grading; the workspace, the
# course and the versions know nothing of a grading run (issue 39 item 3): the workspace
# stores results and reads them through records, and names the sandbox's limits (for typing).
MAY_IMPORT = {
    "autograder.sandbox": {"autograder.probes", "autograder.jsontext", "autograder.errors"},
    "autograder.course": {"autograder.errors", "autograder.versions", "autograder.notebook", "autograder.jsontext"},
    "autograder.versions": set(),
    "autograder.store.workspace": {"autograder.course", "autograder.flags", "autograder.store.spreadsheet",
                                   "autograder.versions", "autograder.errors", "autograder.jsontext",
                                   "autograder.records", "autograder.sandbox.host"},
}

# The package's layers, bottom up. A module imports from its own layer or below, never above;
# every module has a place here (a new one must be given one). Folders group concerns (the
# Canvas and Moodle files in lms/, the term in term/, the store, the report, the sandbox, the
# command line); a folder's modules may sit on different layers: the term's dates are read by
# the LMS readers, its settings read their roster.
LAYERS = [
    ("plain data", {"autograder.errors", "autograder.jsontext", "autograder.versions", "autograder.flags", "autograder.records",
                    "autograder.probes", "autograder.store.spreadsheet", "autograder.jupyter_server_config"}),
    ("notebooks, the course's places, the sandbox", {"autograder.notebook", "autograder.startup", "autograder.course",
                                                     "autograder.sandbox"}),
    ("test cells, dates, reading code, the course's builds",
     {"autograder.testing", "autograder.modified", "autograder.term.deadlines", "autograder.report.review",
      "autograder.report.similarity",
      "autograder.report.normalise", "autograder.report.sanitise", "autograder.authoring", "autograder.edition",
      "autograder.student_repo", "autograder.bench"}),
    ("what Canvas and Moodle hand over, nbgrader's plug-ins, the feedback pages",
     {"autograder.lms.formats", "autograder.lms.roster", "autograder.lms.submissions", "autograder.lms.times",
      "autograder.lms.unzip", "autograder.nbgrader_plugins",
      "autograder.nbgrader_config", "autograder.report.feedback"}),
    ("the term's settings, the store", {"autograder.term.settings", "autograder.term.standing", "autograder.store.workspace",
                                        "autograder.store.gradebook"}),
    ("grading, exports, release, Formgrader", {"autograder.grade", "autograder.lms.export", "autograder.release",
                                               "autograder.formgrade"}),
    ("the student's check", {"autograder.check"}),
    ("the command line", {"autograder.cli", "autograder.__main__"}),
]
# Folders that are only a docstring: importing a module through its folder names the folder too.
FOLDERS = {"autograder", "autograder.lms", "autograder.term", "autograder.store", "autograder.report"}


def layer_of(module: str) -> int | None:
    best = None
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > best[1]):
                best = (index, len(prefix))
    return None if best is None else best[0]


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return [f"{m} ({LAYERS[layer_of(m)][0]}) imports {t} ({LAYERS[layer_of(t)][0]})"
            for m in sorted(graph) if m not in FOLDERS
            for t in sorted(graph[m]) if t not in FOLDERS and layer_of(t) > layer_of(m)]


def test_every_module_has_a_layer_and_imports_none_above_it():
    graph = import_graph()
    unplaced = sorted(m for m in graph if m not in FOLDERS and layer_of(m) is None)
    assert not unplaced, f"modules with no layer in LAYERS: {unplaced}"
    wrong = upward_imports(graph)
    assert not wrong, "imports running upward: " + "; ".join(wrong)


def test_an_upward_import_is_found():
    graph = import_graph()
    graph["autograder.store.workspace"].add("autograder.grade.run")      # what issue 39 found
    assert upward_imports(graph) == ["autograder.store.workspace (the term's settings, the store) imports "
                                     "autograder.grade.run (grading, exports, release, Formgrader)"]


def test_the_folder_docstrings_import_nothing():
    graph = import_graph()
    assert all(not graph[f] for f in FOLDERS), {f: graph[f] for f in FOLDERS if graph[f]}


def test_no_layer_imports_upward():
    graph = import_graph()
    wrong = []
    for layer, allowed in MAY_IMPORT.items():
        for module, targets in graph.items():
            if module == layer or module.startswith(layer + "."):
                wrong += [f"{module} imports {t}" for t in sorted(targets)
                          if not t.startswith(layer) and t not in allowed]
    assert not wrong, "; ".join(wrong)
