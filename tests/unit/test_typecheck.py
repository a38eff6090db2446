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
