"""Start-up speed: how the grader's processes import nbformat and nbgrader fast. A reader of
the grading can skip this module: each function gives the same package, the same answers,
only sooner.

Nothing here happens when the module is imported. Each trick is a function, called by the
code that is about to import the package concerned (`docs/measurements.md` has the numbers
and the commands that printed them):

- `skip_uri_grammars`: nbformat validates with jsonschema, whose format checkers import the
  optional packages they find installed. One of them, `rfc3987_syntax` (installed for
  jupyter-events), builds 38 lark grammars when imported (about 2 s of CPU), and the others
  (idna, isoduration, webcolors, ...) cost about 0.2 s together. nbformat's schemas use no
  `format` keyword and nbformat no format checker, so jsonschema is shown them as absent
  while it is imported; `rfc3987_syntax` stays absent (`None` in `sys.modules`), the others
  stay importable by whoever needs them.
- `ready_validator`, `fast_nbformat`: nbformat validates every notebook it reads with the
  code fastjsonschema generates from nbformat's schema, generated and compiled by each process
  that reads its first notebook (about 80 ms). `make bytecode` stores that code compiled
  beside the package's bytecode, under a key of everything it is made from (Python's bytecode
  version, fastjsonschema's version, the schema); loading it takes a few milliseconds. A file
  whose key does not match, or that cannot be read, is never used: nbformat then compiles its
  validator as usual.
- `defer_nbgrader_init`, `fast_nbgrader`: nbgrader's package `__init__` imports its Jupyter
  server extensions, through them nbconvert and every nbgrader app (about 0.5 s of CPU); the
  gradebook needs `nbgrader.api` alone. The package is registered from its spec with a module
  `__getattr__`: its submodules import as usual, and the first other name read
  (`nbgrader.__version__`, an extension hook) runs the real `__init__` in the same module.
  And nbgrader asks a new `alembic heads` process for its schema's newest revision each time
  it creates a gradebook (`nbgrader.api.get_alembic_version`: a second Python start and
  alembic import, about 1.5 s of a first run); `alembic_head` reads the same revision from
  nbgrader's migration scripts in this process, and `fast_nbgrader` puts it in that
  function's place.

Each function is idempotent and safe from several threads (the grading parent opens the
gradebook in a thread of its own). A process that imported the package already keeps it.
"""
from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

_LOCK = threading.RLock()

# jsonschema's format checkers' optional packages (Jupyter's dependencies install them).
_FORMAT_CHECKER_PACKAGES = ("fqdn", "idna", "rfc3987", "rfc3986_validator", "rfc3339_validator",
                            "webcolors", "jsonpointer", "uri_template", "isoduration")


def skip_uri_grammars() -> None:
    """Import jsonschema with its format checkers' optional packages shown as absent (and
    `rfc3987_syntax` absent for good). Call before importing nbformat or nbgrader."""
    with _LOCK:
        modules: dict = sys.modules                 # None: a module the import system treats as absent
        modules.setdefault("rfc3987_syntax", None)
        if "jsonschema" in modules:
            return
        absent = [name for name in _FORMAT_CHECKER_PACKAGES if name not in modules]
        modules.update(dict.fromkeys(absent))
        try:
            import jsonschema  # noqa: F401
        except ImportError:
            pass
        finally:
            for name in absent:
                if name in sys.modules and sys.modules[name] is None:
                    del sys.modules[name]


# ------------------------------------------------------------------ nbformat's validator
_VALIDATOR: dict = {"ready": False, "folder": Path(__file__).parent / "__pycache__"}


def fast_nbformat():
    """nbformat, imported without the URI grammars, with its validator for version 4 ready
    (`ready_validator`, once per process)."""
    skip_uri_grammars()
    import nbformat

    if not _VALIDATOR["ready"]:
        ready_validator()
    return nbformat


def _validator_key(schema: dict) -> str:
    import hashlib
    import importlib.util

    import fastjsonschema

    text = json.dumps(schema, sort_keys=True).encode()
    parts = (importlib.util.MAGIC_NUMBER, fastjsonschema.VERSION.encode(), text)
    return hashlib.sha256(b"\0".join(parts)).hexdigest()


def ready_validator(write: bool = False) -> str:
    """Put nbformat's validator for version-4 notebooks of its own minor version into
    nbformat's cache of validators, from the compiled code in `_VALIDATOR["folder"]` when
    that code's key matches: the same code fastjsonschema generates from the same schema,
    under the same Python. `write` (make bytecode) stores the code when it is missing or
    stale. Without it, nbformat compiles its validator as it always does, as it does for
    the older minor versions (Jupyter writes the current one, and so does this course).
    Returns "cached", "written" or "compiled"."""
    skip_uri_grammars()
    _VALIDATOR["ready"] = True
    from nbformat import v4
    from nbformat import validator as nbvalidator
    from nbformat.json_compat import FastJsonSchemaValidator, JsonSchemaValidator, get_current_validator

    minor = v4.nbformat_minor
    try:
        if get_current_validator() is not FastJsonSchemaValidator:   # NBFORMAT_VALIDATOR=jsonschema
            raise LookupError
        slot = (FastJsonSchemaValidator.name, 4, minor, False)       # nbformat's own key
        schema = nbvalidator._get_schema_json(v4, version=4, version_minor=minor)
        code, how = _stored_validator(schema, f"nbformat-v4.{minor}-validator", write)
        namespace: dict = {}
        exec(code, namespace)
        validate = namespace["validate"]
    except Exception:  # noqa: BLE001 (no file, a damaged one, another nbformat: nbformat's own way)
        nbvalidator.get_validator(4, minor)
        return "compiled"
    validator = FastJsonSchemaValidator.__new__(FastJsonSchemaValidator)
    JsonSchemaValidator.__init__(validator, schema)      # what FastJsonSchemaValidator.__init__ does,
    validator._validator = validate                      # with the stored code instead of a compile
    nbvalidator.validators[slot] = validator
    return how


def _stored_validator(schema: dict, stem: str, write: bool):
    """(the code object, "cached") from the file under `schema`'s key; else, with `write`,
    the code generated, compiled and stored, (code, "written"), or (code, "compiled") where
    the folder cannot be written. LookupError when there is nothing to use."""
    import marshal
    import types

    key = _validator_key(schema)
    path = _VALIDATOR["folder"] / f"{stem}.{key[:32]}.bin"
    header = f"{key}\n".encode()
    try:
        blob = path.read_bytes()
        code = marshal.loads(blob[len(header):]) if blob.startswith(header) else None
    except (OSError, EOFError, ValueError, TypeError):
        code = None
    if isinstance(code, types.CodeType):
        return code, "cached"
    if not write:
        raise LookupError(f"no stored {stem}")
    import fastjsonschema

    code = compile(fastjsonschema.compile_to_code(schema), f"<{stem}>", "exec")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_bytes(header + marshal.dumps(code))
        tmp.replace(path)
        for stale in path.parent.glob(f"{stem}.*.bin"):
            if stale != path:
                stale.unlink(missing_ok=True)
    except OSError:             # a package folder this user may not write: used, not stored
        return code, "compiled"
    return code, "written"


# ------------------------------------------------------------------------------- nbgrader
NBGRADERS_OWN: dict = {}        # what `fast_nbgrader` replaced: {"get_alembic_version": nbgrader's}


def defer_nbgrader_init() -> None:
    """Register nbgrader's package so that its `__init__` runs only when a name it defines is
    read (submodules import as usual); without URI grammars. Nothing when nbgrader is imported
    already, or not installed."""
    import importlib.util

    skip_uri_grammars()
    with _LOCK:
        if "nbgrader" in sys.modules:
            return
        spec = importlib.util.find_spec("nbgrader")
        if spec is None or spec.loader is None or not spec.submodule_search_locations:
            return
        loader = spec.loader
        package = importlib.util.module_from_spec(spec)
        folder = Path(spec.submodule_search_locations[0])

        def __getattr__(name: str):
            # a submodule: let the import system load it (`from . import utils` asks here first)
            if (folder / f"{name}.py").is_file() or (folder / name / "__init__.py").is_file():
                raise AttributeError(name)
            if package.__dict__.pop("__getattr__", None) is not None:
                loader.exec_module(package)
            try:
                return package.__dict__[name]
            except KeyError:
                raise AttributeError(f"module 'nbgrader' has no attribute {name!r}") from None

        setattr(package, "__getattr__", __getattr__)
        sys.modules["nbgrader"] = package


def alembic_head() -> str:
    """The newest revision of nbgrader's gradebook schema, read from nbgrader's migration
    scripts in this process (what `alembic heads` prints)."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    config = Config()
    config.set_main_option("script_location", ALEMBIC_DIR)
    head = ScriptDirectory.from_config(config).get_current_head()
    if head is None:
        raise RuntimeError(f"nbgrader's gradebook migrations in {ALEMBIC_DIR} have no head")
    return head


def fast_nbgrader():
    """`nbgrader.api`, imported with `defer_nbgrader_init`, its `get_alembic_version` replaced
    by `alembic_head` (nbgrader's own kept in `NBGRADERS_OWN`). Call before importing from
    nbgrader; returns the module."""
    defer_nbgrader_init()
    import nbgrader.api

    with _LOCK:
        if nbgrader.api.get_alembic_version is not alembic_head:
            NBGRADERS_OWN.setdefault("get_alembic_version", nbgrader.api.get_alembic_version)
            nbgrader.api.get_alembic_version = alembic_head
    return nbgrader.api
