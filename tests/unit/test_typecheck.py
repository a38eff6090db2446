"""The type checker `make test` runs (`make typecheck`: mypy with pyproject.toml's [tool.mypy])
finds what the settings are there for: a wrong type inside a function that has no annotations
(check_untyped_defs) and a `# type: ignore` that silences nothing (warn_unused_ignores)."""
from pathlib import Path

from mypy import api

ROOT = Path(__file__).resolve().parents[2]

PLANTED = '''\
def count(words):
    n: int = ",".join(words)
    return n


def total() -> int:
    return 1  # type: ignore
'''


def test_the_projects_settings_find_a_planted_error(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(PLANTED)
    out, err, status = api.run(["--config-file", str(ROOT / "pyproject.toml"),
                                "--cache-dir", str(tmp_path / "cache"), str(planted)])
    assert status == 1, (status, out, err)
    errors = [line.split("planted.py:", 1)[1] for line in out.splitlines() if "planted.py:" in line]
    assert errors == ['2: error: Incompatible types in assignment (expression has type "str", variable has type "int")'
                      '  [assignment]',
                      '7: error: Unused "type: ignore" comment  [unused-ignore]'], out


def test_no_module_of_the_package_holds_off_the_checkers_errors():
    """Every module is checked whole: no override silences an error code or a module, and
    every `# type: ignore` in the package names its code (warn_unused_ignores drops stale ones)."""
    import re
    import tomllib

    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert not {"disable_error_code", "ignore_errors"} & set(settings)
    for override in settings.get("overrides", []):
        modules = override["module"] if isinstance(override["module"], list) else [override["module"]]
        assert not [m for m in modules if m.startswith("autograder")], override
        assert not {"disable_error_code", "ignore_errors"} & set(override), override
    bare = [f"{path.relative_to(ROOT)}:{n}" for path in sorted((ROOT / "autograder").rglob("*.py"))
            for n, line in enumerate(path.read_text().splitlines(), 1)
            if re.search(r"#\s*type:\s*ignore(?!\[)", line) or re.search(r"#\s*mypy:", line)]
    assert bare == []
