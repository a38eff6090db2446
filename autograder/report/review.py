"""A static read of a submission's code for the instructor: what looks like an attempt to
tamper with grading. It never changes a score (the sandbox and the grader's own
comparisons make tampering useless); it explains, in the flags column, what was tried.
"""
from __future__ import annotations

import ast

_MODULES = {"np", "numpy", "torch", "builtins", "__builtins__", "math", "autograder", "testing",
            "IPython", "sys", "os", "nbgrader", "unittest", "pytest"}
_CALLS = {
    ("os", "_exit"): "ends its own process (os._exit)",
    ("os", "kill"): "sends signals to processes",
    ("os", "fork"): "starts processes",
    ("os", "system"): "runs shell commands",
    ("os", "listdir"): "lists directories",
    ("os", "scandir"): "lists directories",
    ("os", "walk"): "lists directories",
    ("sys", "exit"): "exits the interpreter",
    ("sys", "setrecursionlimit"): "changes the recursion limit",
}
_IMPORTS = {
    "socket": "network access", "urllib": "network access", "http": "network access",
    "requests": "network access", "ctypes": "uses ctypes (raw memory access)",
    "subprocess": "starts processes", "multiprocessing": "starts processes",
    "shutil": "file operations", "glob": "lists files", "pathlib": "file operations",
    "sqlite3": "opens databases", "pickle": "unpickles data", "inspect": "inspects the call stack",
    "gc": "walks the interpreter's objects", "signal": "handles signals",
}
_IPY = {"input_transformers_cleanup": "adds IPython input transformers",
        "input_transformers_post": "adds IPython input transformers",
        "set_custom_exc": "installs a custom IPython exception handler",
        "register_magic_function": "defines IPython magics", "events": "hooks IPython events",
        "ast_transformers": "adds IPython AST transformers"}


def review(cells: list[str]) -> list[str]:
    found: list[str] = []

    def note(text: str) -> None:
        if text not in found:
            found.append(text)

    modules = set(_MODULES)
    trees = []                  # each cell's nodes, walked once (0.6 ms a submission each walk)
    for source in cells:
        try:
            trees.append((source, list(ast.walk(ast.parse(source)))))
        except SyntaxError:
            continue
    for _, nodes in trees:      # `import autograder.testing as T`: T names a module too
        for node in nodes:
            if isinstance(node, ast.Import):
                modules |= {a.asname or a.name.split(".")[0] for a in node.names}
    for source, nodes in trees:
        for node in nodes:
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                for t in targets:
                    base = t
                    while isinstance(base, (ast.Attribute, ast.Subscript)):
                        base = base.value
                    if isinstance(t, (ast.Attribute, ast.Subscript)) and isinstance(base, ast.Name) \
                            and base.id in modules:
                        note(f"overrides {ast.unparse(t)}")
                    elif isinstance(t, ast.Name) and t.id in ("np", "numpy", "torch", "print", "open",
                                                               "isinstance", "type", "float", "len"):
                        note(f"shadows the name {t.id}")
            elif isinstance(node, ast.Call):
                f = node.func
                if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
                    text = _CALLS.get((f.value.id, f.attr))
                    if text:
                        note(text)
                if isinstance(f, ast.Name) and f.id in ("setattr", "delattr") and node.args \
                        and isinstance(node.args[0], ast.Name) and node.args[0].id in modules:
                    note(f"overrides attributes of {node.args[0].id} with {f.id}")
                if isinstance(f, ast.Name) and f.id in ("open", "exec", "eval", "__import__", "compile"):
                    note({"open": "opens files"}.get(f.id, f"uses {f.id}()"))
            elif isinstance(node, ast.Attribute) and node.attr in _IPY:
                note(_IPY[node.attr])
            elif isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv"):
                note("reads environment variables (grading detection?)")
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                for name in names:
                    text = _IMPORTS.get(name.split(".")[0])
                    if text:
                        note(text)
    for source, _ in trees:
        if "get_ipython().system" in source or any(line.lstrip().startswith("!") for line in source.splitlines()):
            note("runs shell commands")
    return found
