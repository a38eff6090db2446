"""Adversarial submissions, graded together in one run of the real `autograder grade`.

Each case is a crafted submission of 02_similarity with its expected outcome: the most
points it may get (usually exactly what it deserves), and a flag that must explain it.
Across all cases: no undeserved point, the run never crashes, and the honest students
graded in the same run (control_*) keep full marks, as they do when graded alone.
"""
from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

from autograder.notebook import strip_hidden
from tests.builders import (A, MAX, MODES, WRONG, answer_case, answers, base_notebook, correct_code,
                            grade_attackers_then_controls, graded_cells, with_answer, write)
from tests.conftest import needs_sandbox, read_csv, read_results, run_grade, source_path

# Under `make test` (pytest -n 2 --dist loadgroup) this file runs on one worker, whole:
# its module-scoped fixture runs once.
pytestmark = [pytest.mark.xdist_group("adversarial")]



@dataclass
class Case:
    name: str
    build: object                  # (folder, context) -> None: writes the student's folder
    max_score: float = 0.0         # the most points it may earn
    min_score: float = 0.0         # and the least (for honest answers)
    flag: str | None = None        # a substring one of its flags must contain
    what: str = ""
    checks: list = field(default_factory=list)


# -------------------------------------------------------------------------- the cases
_FORK_BOMB = "import os\nfor _ in range(100000):\n    try:\n        os.fork()\n    except OSError:\n        break\n"


def _tamper(code_before: str):
    return answer_case(code_before + "\n" + WRONG)


def _edited_tests(folder, ctx):
    nb = with_answer(WRONG)
    for c in graded_cells(nb):
        c.source = "pass  # tests? what tests?"
    write(folder, nb)


def _deleted_tests(folder, ctx):
    nb = with_answer(WRONG)
    nb.cells = [c for c in nb.cells if c not in graded_cells(nb)]
    write(folder, nb)


def _stripped(folder, ctx):
    nb = with_answer(WRONG)
    for c in nb.cells:
        c.metadata.pop("nbgrader", None)
    write(folder, nb)


def _stripped_tests_only(folder, ctx):
    nb = with_answer(WRONG)
    for c in graded_cells(nb):
        c.metadata.pop("nbgrader", None)
        c.source = "assert True"
    write(folder, nb)


SNOOP = r'''
import glob, os
_leaks = []
for _pattern in {patterns!r}:
    try:
        for _path in glob.glob(_pattern, recursive=True)[:50]:
            try:
                with open(_path, "rb") as _f:
                    if _f.read(1 << 16):
                        _leaks.append(_path)
            except OSError:
                pass
    except Exception:
        pass
for _path in {paths!r}:
    try:
        with open(_path, "rb") as _f:
            _f.read(10)
        _leaks.append(_path)
    except OSError:
        pass
LEAKED = _leaks
'''


def _read_secrets(folder, ctx):
    paths = [str(source_path(A)), str(ctx["workspace"] / "gradebook.db"), str(ctx["workspace"] / "secret.key"),
             str(ctx["submissions"] / "zz_control_a" / f"{A}.ipynb"), "/work/main/grading/gradebook.db"]
    patterns = ["/work/**/02_similarity.ipynb", "/work/**/gradebook.db", "/work/**/secret.key",
                "/home/**/*.ipynb", "/opt/**/*.ipynb", "/tmp/**/gradebook.db", "/tmp/**/secret.key",
                "/tmp/**/zz_control_a/*.ipynb"]
    # correct answers only while nothing could be read: full marks prove the files were out of reach
    code = SNOOP.format(patterns=patterns, paths=paths) + "\n" + correct_code() + \
        "\nif LEAKED:\n" + "\n".join("    " + ln for ln in WRONG.splitlines())
    write(folder, with_answer(code))


# What the grader holds and no submission may find anywhere in its own memory: the sandbox's
# zygote is a fork of a grading worker's early state (autograder/sandbox/template.py).
MEMORY_SCAN = r'''
import ctypes
def _scan(reversed_needles):
    needles = [bytes(reversed(n)) for n in reversed_needles]      # no other whole copy anywhere
    header = __import__("sys").getsizeof(b"") - 1                  # where a bytes object's data starts
    skip = [(id(n) + header, id(n) + header + len(n)) for n in needles]
    buf = bytearray(1 << 20)
    at = ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))
    skip.append((at, at + len(buf)))
    found, scanned = [], 0
    with open("/proc/self/maps") as f:
        regions = [line.split() for line in f.read().splitlines()]
    # its own memory through process_vm_readv (its /proc/self/mem is root's: the process is
    # non-dumpable), which fails instead of faulting where a page cannot be read
    class Span(ctypes.Structure):
        _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.process_vm_readv.restype = ctypes.c_ssize_t
    local, remote, me = Span(at, 0), Span(0, 0), __import__("os").getpid()
    for parts in regions:
        if not parts[1].startswith("rw") and parts[-1] != "[stack]":
            continue
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        pos = lo
        while pos < hi:
            local.len = remote.len = min(len(buf), hi - pos)
            remote.base = pos
            got = libc.process_vm_readv(me, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
            if got <= 0:
                break
            scanned += got
            for i, n in enumerate(needles):
                k = buf.find(n, 0, got)
                while k >= 0:
                    if not any(a <= pos + k < b for a, b in skip):
                        found.append(i)
                    k = buf.find(n, k + 1, got)
            pos += got
    return sorted(set(found)), scanned
FOUND, SCANNED = _scan({needles!r})
LEAKED = bool(FOUND) or SCANNED < (50 << 20)      # 50 MiB at least, or the scan did not run
'''


def memory_needles(ctx) -> list[bytes]:
    """A hidden test's message, the grader's environment secret and the workspace's path (it
    is on the grader's command line), each reversed: the submission's code never holds them."""
    hidden = next(m for m in re.findall(r'name="([^"]{20,})"', hidden_regions(source_path(A))))
    return [bytes(reversed(x.encode())) for x in (hidden, ctx["env_secret"], str(ctx["workspace"]))]


def hidden_regions(path: Path) -> str:
    """The hidden regions of a solution's test cells, and nothing else."""
    nb = nbformat.read(str(path), as_version=4)
    return "\n".join(re.findall(r"### BEGIN HIDDEN TESTS(.*?)### END HIDDEN TESTS", "\n".join(c.source for c in nb.cells),
                                flags=re.S))


def _scans_memory(folder, ctx):
    code = MEMORY_SCAN.format(needles=memory_needles(ctx)) + "\n" + correct_code() + \
        "\nif LEAKED:\n" + "\n".join("    " + ln for ln in WRONG.splitlines())
    nb = base_notebook()
    for cell in graded_cells(nb):           # as released: this notebook must not carry the needle
        cell.source = strip_hidden(cell.source)
    write(folder, with_answer(code, nb))


def _write_secrets(folder, ctx):
    targets = [str(ctx["workspace"] / "gradebook.db"), str(ctx["submissions"] / "zz_control_a" / f"{A}.ipynb"),
               str(ctx["workspace"] / "results" / A / "zz_control_a.json"), str(source_path(A))]
    code = f"""
_wrote = []
for _path in {targets!r}:
    try:
        with open(_path, "r+b") as _f:
            _f.write(b"PWNED")
        _wrote.append(_path)
    except OSError:
        pass
try:
    import sqlite3
    _db = sqlite3.connect({str(ctx["workspace"] / "gradebook.db")!r})
    _db.execute("update grade set auto_score = 100")
    _db.commit()
    _wrote.append("db")
except Exception:
    pass
""" + correct_code() + "\nif _wrote:\n" + "\n".join("    " + ln for ln in WRONG.splitlines())
    write(folder, with_answer(code))


def _network(folder, ctx):
    code = f"""
import socket
_reached = False
for _host in ("127.0.0.1", "10.0.2.2", "8.8.8.8"):
    try:
        socket.create_connection((_host, {ctx['port']}), timeout=2).close()
        _reached = True
    except OSError:
        pass
""" + correct_code() + "\nif _reached:\n" + "\n".join("    " + ln for ln in WRONG.splitlines())
    write(folder, with_answer(code))


def _hang_in_function(folder, ctx):
    code = correct_code() + "\n\ndef softmax(x, axis=-1):\n    while True:\n        pass\n"
    write(folder, with_answer(code))


# Raises classes named like the grader's limits at once, in softmax and at the end of its cell:
# neither is a time limit reached, so neither may be reported as one.
FORGED_LIMITS = correct_code() + """

_Named = type("TimeLimitExceeded", (Exception,), {})


def softmax(x, axis=-1):
    raise _Named("time limit reached")


raise type("OutputLimitExceeded", (Exception,), {})("the notebook printed more output than allowed")
"""


# Attaches to its parent, the zygote whose meter measures its memory (and which could fork the
# next submission), and opens that process's memory: as root the zygote is another uid's; without
# root it has the submission's own uid in the sandbox's user namespace, and must be non-dumpable.
# Correct answers only where every attempt failed.
PTRACE_PARENT = """
import ctypes as _ct, os as _os
_libc = _ct.CDLL(None, use_errno=True)
_parent = _os.getppid()
_reached = []
for _request in (16, 0x4206):                     # PTRACE_ATTACH, PTRACE_SEIZE
    if _libc.ptrace(_request, _parent, None, None) == 0:
        _reached.append(_request)
        _libc.ptrace(17, _parent, None, None)     # PTRACE_DETACH
for _name, _mode in (("mem", _os.O_RDWR), ("mem", _os.O_RDONLY), ("environ", _os.O_RDONLY)):
    try:
        _os.close(_os.open(f"/proc/{_parent}/{_name}", _mode))
        _reached.append(_name)
    except OSError:
        pass
""" + correct_code() + "\nif _reached:\n" + "\n".join("    " + ln for ln in WRONG.splitlines())


def _two_notebooks(folder, ctx):
    write(folder, base_notebook(), "attempt1.ipynb")
    write(folder, base_notebook(), "attempt2.ipynb")


def _other_assignment(folder, ctx):
    nb = base_notebook()
    for c in nb.cells:
        meta = c.metadata.get("nbgrader")
        if meta:
            meta["grade_id"] = "other_" + meta["grade_id"]
    write(folder, nb)


def _corrupt(folder, ctx):
    folder.mkdir(parents=True)
    (folder / f"{A}.ipynb").write_text('{"cells": [{"cell_type": "code", "source": ')


def _empty(folder, ctx):
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("I forgot to attach my notebook")


def _hardcoded(folder, ctx):
    # Answers computed for the visible tests' inputs as the student's kernel draws them,
    # served from a table; anything else gets zeros.
    code = '''
from autograder.testing import rng as _rng
import torch as _torch
_r = _rng("dot-random"); _A, _B = _r.normal(size=(4, 3)), _r.normal(size=(5, 3))
_TABLE = {("dot", _A.tobytes(), _B.tobytes()): _A @ _B.T}
def dot_similarity(A, B):
    A, B = np.asarray(A, dtype=float), np.asarray(B, dtype=float)
    key = ("dot", A.tobytes(), B.tobytes())
    if key in _TABLE:
        return _TABLE[key]
    if A.tolist() == [[1, 2], [3, 4], [0, -1]]:
        return np.array([[1., 4.], [3., 10.], [0., -1.]])
    return np.zeros((A.shape[0], B.shape[0]))
def cosine_similarity(A, B, eps=1e-8):
    return np.zeros((np.shape(A)[0], np.shape(B)[0]))
def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    if x.tolist() == [3.0, 1.0, 0.2]:
        return np.exp(x) / np.exp(x).sum()
    return np.zeros(x.shape)
'''
    write(folder, with_answer(code))


def _detects_grading(folder, ctx):
    code = '''
import os, sys
_GRADING = "ipykernel" not in sys.modules or "NBGRADER_EXECUTION" in os.environ
''' + correct_code() + '''
if _GRADING:
    np.allclose = lambda *a, **k: True
    def dot_similarity(A, B):
        return np.zeros((len(A), len(B)))
    def cosine_similarity(A, B, eps=1e-8):
        return np.zeros((len(A), len(B)))
    def softmax(x, axis=-1):
        return np.zeros(np.shape(x))
'''
    write(folder, with_answer(code))


LIAR = '''
class _Liar:
    shape = property(lambda self: (0,))
    dtype = np.dtype("float64")
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __array__(self, *a, **k): return np.zeros(0)
    def __float__(self): return 0.0
    def __getattr__(self, name): return lambda *a, **k: True
def dot_similarity(A, B): return _Liar()
def cosine_similarity(A, B, eps=1e-8): return _Liar()
def softmax(x, axis=-1): return _Liar()
'''

SUBCLASS = '''
class _Lying(np.ndarray):
    def __eq__(self, other): return np.ones(np.shape(other), dtype=bool)
    def __array_ufunc__(self, *a, **k): return np.zeros(1)
    def __sub__(self, other): return np.zeros(np.shape(other))
    def allclose(self, *a, **k): return True
def _lie(shape): return np.zeros(shape).view(_Lying)
def dot_similarity(A, B): return _lie((len(A), len(B)))
def cosine_similarity(A, B, eps=1e-8): return _lie((len(A), len(B)))
def softmax(x, axis=-1): return _lie(np.shape(x))
'''

TORCH = '''
import torch
def dot_similarity(A, B):
    A, B = torch.as_tensor(np.asarray(A, dtype=float)), torch.as_tensor(np.asarray(B, dtype=float))
    return A @ B.T
def cosine_similarity(A, B, eps=1e-8):
    A, B = torch.as_tensor(np.asarray(A, dtype=float)), torch.as_tensor(np.asarray(B, dtype=float))
    return torch.nn.functional.cosine_similarity(A[:, None], B[None], dim=-1, eps=eps)
def softmax(x, axis=-1):
    return torch.softmax(torch.as_tensor(np.asarray(x, dtype=float)), dim=axis)
'''

FLOAT32 = '''
def dot_similarity(A, B):
    return np.asarray(A, dtype=np.float32) @ np.asarray(B, dtype=np.float32).T
def cosine_similarity(A, B, eps=1e-8):
    A, B = np.asarray(A, dtype=np.float32), np.asarray(B, dtype=np.float32)
    a = np.maximum(np.linalg.norm(A, axis=1, keepdims=True), eps)
    b = np.maximum(np.linalg.norm(B, axis=1, keepdims=True), eps)
    return (A / a) @ (B / b).T
def softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float32)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
'''

INPLACE = '''
def dot_similarity(A, B):
    A, B = as_float_array(A), as_float_array(B)
    return A @ B.T
def cosine_similarity(A, B, eps=1e-8):
    A, B = as_float_array(A), as_float_array(B)
    A /= np.maximum(np.linalg.norm(A, axis=-1, keepdims=True), eps)
    B /= np.maximum(np.linalg.norm(B, axis=-1, keepdims=True), eps)
    return A @ B.T
def softmax(x, axis=-1):
    x = as_float_array(x)
    x -= np.max(x, axis=axis, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(axis=axis, keepdims=True)
    return x
'''

CASES = [
    Case("zz_control_a", lambda f, c: write(f, base_notebook()), MAX, MAX, None, "an honest, correct submission"),
    Case("patch_np_allclose", _tamper("np.allclose = lambda *a, **k: True\nnp.testing.assert_allclose = lambda *a, **k: None\n"
                                      "np.array_equal = lambda *a, **k: True\nnp.isclose = lambda a, b, **k: np.ones(np.shape(a), bool)"),
         flag="overrides np.allclose", what="monkeypatches NumPy's comparisons, wrong answers"),
    Case("patch_torch_allclose", _tamper("import torch\ntorch.allclose = lambda *a, **k: True\n"
                                         "torch.testing.assert_close = lambda *a, **k: None\ntorch.equal = lambda *a: True"),
         flag="overrides torch.allclose", what="monkeypatches torch's comparisons, wrong answers"),
    Case("patch_builtins", _tamper("import builtins\nbuiltins.isinstance = lambda *a: True\nbuiltins.AssertionError = SystemExit\n"
                                   "builtins.abs = lambda x: 0 * x\nsetattr(builtins, 'all', lambda *a: True)"),
         flag="overrides builtins", what="replaces builtins used by checks, wrong answers"),
    Case("patch_testing_helpers", _tamper("import autograder.testing as T\nT.expect_array = lambda *a, **k: None\n"
                                          "T.fail = lambda *a, **k: None\nexpect_array = lambda *a, **k: None"),
         flag="overrides T.expect_array", what="replaces the course's test helpers, wrong answers"),
    Case("shadow_numpy", answer_case(WRONG + "\nclass _FakeNumpy:\n    def __getattr__(self, n):\n"
                                            "        return lambda *a, **k: True\nnp = _FakeNumpy()\n"),
         flag="shadows the name np", what="rebinds np to an object that says yes to everything"),
    Case("ipython_input_transformer", _tamper("get_ipython().input_transformers_cleanup.append(lambda lines: ['pass\\n'])"),
         flag="input transformers", what="an IPython input transformer that blanks every later cell"),
    Case("ipython_custom_exc", _tamper("get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)"),
         flag="custom IPython exception handler", what="swallows every exception, so failing asserts look silent"),
    Case("edited_test_cells", _edited_tests, flag="edited", what="test cells replaced with `pass`"),
    Case("deleted_test_cells", _deleted_tests, flag="deleted", what="test cells deleted"),
    Case("metadata_stripped", _stripped, flag="not a 02_similarity notebook", what="all nbgrader metadata removed"),
    Case("test_metadata_stripped", _stripped_tests_only, flag="deleted or its metadata removed",
         what="test cells' metadata stripped and their code replaced"),
    Case("reads_hidden_tests_and_gradebook", _read_secrets, MAX, MAX, "opens files",
         "looks for solutions/, hidden tests, the gradebook, the secret and others' notebooks "
         "(correct answers only if nothing was readable)"),
    Case("scans_its_memory", _scans_memory, MAX, MAX, "opens files",
         "searches all of its process's writable memory for a hidden test's text, a secret in the "
         "grader's environment and the grader's command line"),
    Case("writes_gradebook_and_others", _write_secrets, MAX, MAX, "opens files",
         "writes to the gradebook, another student's notebook and result (correct only if all writes failed)"),
    Case("network", _network, MAX, MAX, "network access",
         "connects to a server listening on the host (correct only if unreachable)"),
    Case("infinite_loop", _tamper("while True:\n    pass"), flag="time limit", what="an infinite loop in a cell"),
    Case("hang_in_softmax", _hang_in_function, 6.0, 6.0, "time limit",
         "dot and cosine right, softmax never returns: each call is interrupted, and the 6 points "
         "for the other two functions stay"),
    Case("forged_limits", answer_case(FORGED_LIMITS), 6.0, 6.0, "its own class",
         "dot and cosine right; softmax and its cell raise classes named TimeLimitExceeded and "
         "OutputLimitExceeded at once: a raised error, not a limit reached"),
    Case("ptrace_parent", answer_case(PTRACE_PARENT), MAX, MAX, "ctypes",
         "traces its parent, the zygote that meters it, and opens its memory (correct only if all failed)"),
    Case("os_exit", answer_case(correct_code() + "\nimport os\nos._exit(0)"), flag="exited early",
         what="kills its own process after defining correct functions"),
    Case("segfault", answer_case(correct_code() + "\nimport ctypes\nctypes.string_at(0)"), flag="crashed (SIGSEGV)",
         what="dereferences a null pointer"),
    Case("fork_bomb", _tamper(_FORK_BOMB),
         flag="starts processes", what="forks until the process limit stops it"),
    Case("fork_bomb_then_correct", answer_case(_FORK_BOMB + "\n" + correct_code()), MAX, MAX, "starts processes",
         "forks until the process limit stops it, then answers correctly: every copy runs the cell, "
         "only the original answers the grader (copies once raced it for the requests, 0-11 points)"),
    Case("forks_in_softmax", answer_case(correct_code() + "\n\nimport os\n_right = softmax\n\n\n"
                                         "def softmax(x, axis=-1):\n    os.fork()\n    return _right(x, axis)\n"),
         MAX, MAX, "starts processes",
         "softmax forks on every call: the copy must not send the grader a second reply"),
    Case("memory_bomb", _tamper("_hog = np.empty(1 << 33)  # 64 GiB"),
         flag="MemoryError", what="allocates 64 GiB: the memory limit refuses it"),
    Case("output_flood", answer_case("while True:\n    print('x' * 100000)\n"), flag="printed more than a notebook may print",
         what="prints without end (its answers are missing too)"),
    Case("flood_then_correct", lambda f, c: write(f, with_answer("for _ in range(10 ** 6):\n    try:\n        print('y' * 10000)\n"
                                                                  "    except OSError:\n        break\n" + correct_code())),
         MAX, MAX, "printed more than a notebook may print",
         "floods the output, then answers correctly: the flood is cut (flagged), the answers count"),
    Case("corrupt_json", _corrupt, flag="corrupt notebook", what="truncated JSON"),
    Case("empty_folder", _empty, flag="no notebook", what="a folder with no notebook"),
    Case("two_notebooks", _two_notebooks, flag="2 notebooks", what="two candidate notebooks, neither named 02_similarity.ipynb"),
    Case("other_assignment", _other_assignment, flag="not a 02_similarity notebook", what="a notebook of another assignment"),
    Case("detects_grading", _detects_grading, flag="environment variables",
         what="correct in Jupyter, but cheats when it detects the grader"),
    Case("hardcoded_visible", _hardcoded, 0.0, 0.0, "published inputs",
         "answers hard-coded for the visible tests' inputs"),
    Case("lying_eq_object", answer_case(LIAR), flag="not data", what="returns an object whose __eq__ is always True"),
    Case("lying_ndarray_subclass", answer_case(SUBCLASS), flag="ndarray subclass",
         what="returns an ndarray subclass that lies in comparisons"),
    Case("returns_torch", answer_case(TORCH), flag="torch.Tensor",
         what="right values, but torch tensors (policy: the contract asks for NumPy arrays)"),
    Case("returns_float32", answer_case(FLOAT32), flag="float32 for float64",
         what="right values in float32 for float64 inputs (policy: keep the input's precision)"),
    Case("modifies_inputs", answer_case(INPLACE), 2.0, 2.0, "modified its input in place",
         "right values, but cosine_similarity and softmax write into their inputs: every call that does "
         "fails (its own kernel gives the same 2 points)"),
    Case("syntax_error", answer_case("def dot_similarity(A, B)\n    return A @ B.T\n"), flag="SyntaxError",
         what="does not parse"),
    Case("warns_on_stderr", answer_case("import sys, warnings\nimport torch\n" + correct_code().replace(
        "    ### BEGIN SOLUTION", "    warnings.warn('careful', UserWarning); sys.stderr.write('note\\n')\n"
                                 "    torch.tensor([1.0]).storage()\n    ### BEGIN SOLUTION")),
         MAX, MAX, None, "a correct answer that writes warnings to stderr (PyTorch does) keeps full marks"),
    Case("zz_control_z", lambda f, c: write(f, base_notebook()), MAX, MAX, None, "another honest, correct submission"),
]


# ---------------------------------------------------------------- the hardened promises
ZEROES_INPUTS = """
def dot_similarity(A, B):
    A.reshape(-1)[:] = 0          # through a view: the shape check cannot see it
    B[...] = 0
    return np.zeros((len(A), len(B)))
def cosine_similarity(A, B, eps=1e-8):
    A[...] = 0
    return np.zeros((len(A), len(B)))
def softmax(x, axis=-1):
    x = np.asarray(x)
    x[...] = 0
    return np.full(x.shape, 1.0 / x.shape[axis])
"""

ALWAYS_RAISES = """
def dot_similarity(A, B):
    raise ValueError("no")
def cosine_similarity(A, B, eps=1e-8):
    raise ValueError("no")
def softmax(x, axis=-1):
    raise ValueError("no")
"""

# dot_similarity answers correctly and keeps every input it gets, hidden ones included;
# cosine_similarity raises an exception named after its input when the input has a shape
# only a hidden test uses; softmax's tests run after hidden tests, and it tries every
# channel to get the kept inputs into the feedback (marked LEAK, or a shape of 7777).
LEAKER = """
_SEEN = []
def _tag(a):
    return "LEAK" + "_".join(str(int(abs(v) * 1000)) for v in a.ravel()[:3]) + "x" + "x".join(map(str, a.shape))
def dot_similarity(A, B):
    A, B = as_float_array(A), as_float_array(B)
    _SEEN.append(A)
    return A @ B.T
def cosine_similarity(A, B, eps=1e-8):
    A, B = as_float_array(A), as_float_array(B)
    if A.shape[0] == 1:
        raise type(_tag(A), (ValueError,), {})(_tag(A) + chr(0xD800))
    a = A / np.maximum(np.linalg.norm(A, axis=-1, keepdims=True), eps)
    b = B / np.maximum(np.linalg.norm(B, axis=-1, keepdims=True), eps)
    return a @ b.T
def softmax(x, axis=-1):
    tags = " ".join(_tag(a) for a in _SEEN)
    print(tags)
    kind = len(_SEEN) % 3
    _SEEN.append(np.asarray(x, dtype=float))
    if kind == 0:
        raise type(_tag(_SEEN[-2]), (ValueError,), {})(tags)
    if kind == 1:
        return type(_tag(_SEEN[-2]), (), {})()
    return np.zeros((7777, len(_SEEN)))
"""

# Issue 27, item 3: once it has seen a hidden input, encode it in what a later (visible) test
# reports: the dtype it returns (named by expect_array's reason), which known mistake its
# answer matches (the `like` message), the shape. Feedback after hidden inputs shows fixed
# words only, so none of these reaches it.
CHANNEL_LEAKER = """
_SIZES = []
_DTYPES = ["float16", "int8", "int16", "int32", "uint8", "complex64", "int64"]
def _encoded(out):
    if len(_SIZES) < 15:            # right answers at first: the first test cells' hidden parts run
        return out
    n = max(_SIZES[:-1])
    kind = len(_SIZES) % 3
    if kind == 0:
        return out.astype(_DTYPES[n % 7])
    if kind == 1:
        return np.zeros((n + 1000, 3))
    return out.T if out.ndim == 2 else out[::-1]
def dot_similarity(A, B):
    A, B = as_float_array(A), as_float_array(B)
    _SIZES.append(A.shape[0] * 100 + B.shape[0])
    return _encoded(A @ B.T)
def cosine_similarity(A, B, eps=1e-8):
    A, B = as_float_array(A), as_float_array(B)
    _SIZES.append(A.shape[0] * 100 + B.shape[0])
    a = A / np.maximum(np.linalg.norm(A, axis=-1, keepdims=True), eps)
    b = B / np.maximum(np.linalg.norm(B, axis=-1, keepdims=True), eps)
    return _encoded(a @ b.T)
def softmax(x, axis=-1):
    x = as_float_array(x)
    _SIZES.append(x.size)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return _encoded(e / np.sum(e, axis=axis, keepdims=True))
"""


def _socket_writer(payload: str, when: str) -> str:
    """Code that writes raw bytes on the notebook process's own socket to the grader."""
    return f"""
import os as _os, socket as _socket, stat as _stat, struct as _struct, time as _time, json as _json
def _grader_socket():
    for fd in range(3, 256):
        try:
            if _stat.S_ISSOCK(_os.fstat(fd).st_mode):
                return _socket.socket(fileno=_os.dup(fd))
        except OSError:
            pass
def _attack():
{payload}
"""  + ("_attack()\n" if when == "cell" else "")


FORGED_FATAL = _socket_writer("""    s = _grader_socket()
    head = _json.dumps({"ok": False, "fatal": "the sandbox is broken, stop grading", "blobs": []}).encode()
    body = _struct.pack(">I", len(head)) + head
    s.sendall(_struct.pack(">Q", len(body)) + body)""", "cell") + "\n" + "{correct}"

TRICKLE = _socket_writer("""    s = _grader_socket()
    s.sendall(_struct.pack(">Q", 1000))
    while True:
        try:
            s.sendall(b" ")
            _time.sleep(0.5)
        except BaseException:
            pass""", "call") + """
def softmax(x, axis=-1):
    _attack()
"""

DEEP_REPLY = _socket_writer("""    s = _grader_socket()
    head = b"[" * 200000 + b"]" * 200000
    body = _struct.pack(">I", len(head)) + head
    s.sendall(_struct.pack(">Q", len(body)) + body)
    _time.sleep(30)""", "call") + """
def softmax(x, axis=-1):
    _attack()
"""

LITTERBUG = """
import os, subprocess
for folder in ("/scratch", "/scratch/work", "/dev/shm"):
    try:
        with open(os.path.join(folder, "left-behind.txt"), "w") as f:
            f.write("for the next student")
    except OSError:
        pass
os.makedirs("/scratch/work/locked/inner", exist_ok=True)
open("/scratch/work/locked/inner/file", "w").write("x")
os.chmod("/scratch/work/locked", 0)
try:
    with open("/scratch/filler", "wb") as f:
        while True:
            f.write(b"0" * (1 << 20))
except OSError:
    pass
subprocess.Popen(["sleep", "1000"], start_new_session=True)
# what the kernel keeps beyond files and processes: System V shared memory, message queues and
# semaphores, a POSIX message queue, keys in the session, user and user-session keyrings
import ctypes as _ct, platform as _pf
_libc = _ct.CDLL(None, use_errno=True)
for _get, _args in ((_libc.shmget, (4096,)), (_libc.msgget, ()), (_libc.semget, (1,))):
    _get(0x5EED, *_args, 0o1000 | 0o666)
try:
    _ct.CDLL("librt.so.1", use_errno=True).mq_open(b"/left-behind", os.O_CREAT | os.O_RDWR, 0o666, None)
except OSError:
    pass
_ADD_KEY = {"x86_64": 248, "aarch64": 217}.get(_pf.machine())
if _ADD_KEY:
    for _ring in (-3, -4, -5):
        _libc.syscall(_ADD_KEY, b"user", b"left-behind", b"for the next student", 20, _ring)
"""

ISOLATION_PROBE = """
import os
_clean = True
_mine = set(os.listdir("/scratch/work"))
_clean &= _mine <= {"02_similarity.ipynb"}
_clean &= not os.path.exists("/scratch/left-behind.txt") and not os.path.exists("/dev/shm/left-behind.txt")
_clean &= not os.path.exists("/scratch/filler")
_free = os.statvfs("/scratch")
_clean &= _free.f_bavail * _free.f_frsize > (200 << 20)     # the litterbug's filler is gone
# As root, this process is the first of a PID namespace of its own. Without root, it shares
# its sandbox's: bubblewrap's init (1), the zygote (its parent) and the holder (`cat`) a
# forked zygote joined. Any other process is another submission's.
_own = {1, os.getpid(), os.getppid()}
_others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in _own
           and open(f"/proc/{p}/cmdline", "rb").read() != b"cat\\0"]
_clean &= not _others
import ctypes as _ct, platform as _pf
for _kind in ("shm", "msg", "sem"):                          # System V objects of this IPC namespace
    try:
        _clean &= not [l for l in open(f"/proc/sysvipc/{_kind}").read().splitlines()[1:] if l.strip()]
    except OSError:
        pass
_libc = _ct.CDLL(None, use_errno=True)
_clean &= all(_get(0x5EED, *_args, 0o666) == -1 for _get, _args in
              ((_libc.shmget, (4096,)), (_libc.msgget, ()), (_libc.semget, (1,))))
try:
    _clean &= _ct.CDLL("librt.so.1", use_errno=True).mq_open(b"/left-behind", os.O_RDONLY) == -1
except OSError:
    pass
_KEYCTL = {"x86_64": 250, "aarch64": 219}.get(_pf.machine())
if _KEYCTL:                                                   # KEYCTL_SEARCH: -1 when not found
    _clean &= all(_libc.syscall(_KEYCTL, 10, _ring, b"user", b"left-behind", 0) == -1 for _ring in (-3, -4, -5))
"""

HONEST_FORMS = """
import torch
def dot_similarity(A, B):
    A, B = as_float_array(A), as_float_array(B)
    return (B @ A.T).T                       # a transposed, non-contiguous view
def cosine_similarity(A, B, eps=1e-8):
    A, B = as_float_array(A), as_float_array(B)
    a = torch.from_numpy(A) / torch.clamp(torch.from_numpy(A).norm(dim=1, keepdim=True), min=eps)
    b = torch.from_numpy(B) / torch.clamp(torch.from_numpy(B).norm(dim=1, keepdim=True), min=eps)
    out = (a @ b.T).numpy()
    out.setflags(write=False)                # read-only
    return out
def softmax(x, axis=-1):
    x = as_float_array(x)
    print("softmax of", x.shape)             # prints are fine
    m = np.max(x, axis=axis, keepdims=True)
    e = np.exp(x - np.where(np.isfinite(m), m, 0.0))
    return e / e.sum(axis=axis, keepdims=True)
"""


def _link(target_of):
    def build(folder, ctx):
        folder.parent.mkdir(parents=True, exist_ok=True)
        folder.symlink_to(target_of(ctx))
    return build


def _notebook_link(target_of):
    def build(folder, ctx):
        folder.mkdir(parents=True)
        (folder / f"{A}.ipynb").symlink_to(target_of(ctx))
    return build


def _raw(content: bytes, name: str = f"{A}.ipynb"):
    def build(folder, ctx):
        folder.mkdir(parents=True)
        (folder / name).write_bytes(content)
    return build


def _fifo(folder, ctx):
    folder.mkdir(parents=True)
    os.mkfifo(folder / f"{A}.ipynb")


def _folder_named_ipynb(folder, ctx):
    (folder / f"{A}.ipynb").mkdir(parents=True)
    (folder / f"{A}.ipynb" / "inside.txt").write_text("not a notebook")


def _dangling(folder, ctx):
    folder.mkdir(parents=True)
    (folder / f"{A}.ipynb").symlink_to(folder / "nowhere.ipynb")


def _list_grade_id(folder, ctx):
    nb = base_notebook()
    answers(nb)[0].metadata["nbgrader"]["grade_id"] = ["dot_similarity"]
    write(folder, nb)


def _surrogate(folder, ctx):
    write(folder, with_answer(correct_code() + '\ndef softmax(x, axis=-1):\n    raise ValueError("bad " + chr(0xD800))\n'))


def _deep_json(folder, ctx):
    folder.mkdir(parents=True)
    (folder / f"{A}.ipynb").write_text('{"cells": ' + "[" * 100000 + "]" * 100000 + "}")


def _big_int(folder, ctx):
    folder.mkdir(parents=True)
    (folder / f"{A}.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5, "x": '
                                      + "7" * 5000 + "}")


def _big_outputs(folder, ctx):
    """A correct notebook with 60 MB of outputs: printed training logs and large figures, as real
    submissions have. Outputs are never graded."""
    nb = base_notebook()
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                   text="epoch 1 [loss]: {0.5} \"ok\"\n" * 20000),
                            nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo" * 320000})]
    write(folder, nb)
    assert (folder / f"{A}.ipynb").stat().st_size > 60 << 20


LONG_NAME = ("a folder name as long as a student may make it " * 5)[:200].strip()


def _sparse_giant(folder, ctx):
    """A notebook file of 1.1 GiB (sparse: no disk used): too large even to read past."""
    folder.mkdir(parents=True)
    with open(folder / f"{A}.ipynb", "wb") as f:
        f.truncate(int(1.1 * (1 << 30)))


HARDENED = [
    Case("zeroes_inputs", answer_case(ZEROES_INPUTS), 0.0, 0.0, "modified its input in place",
         "zeroes its inputs (through a view, too) and returns what fits zeros"),
    Case("always_raises", answer_case(ALWAYS_RAISES), 0.0, 0.0, None,
         "every function raises: no test may reward that (and nothing flags it: the course's own "
         "closing demonstration, which would have raised, is not run)"),
    Case("link_to_solutions", _notebook_link(lambda ctx: source_path(A)), 0.0, 0.0, "only regular files",
         "its notebook is a symlink to the instructor's solution notebook"),
    Case("link_to_classmate", _link(lambda ctx: ctx["submissions"] / "zz_control_a"), 0.0, 0.0, "is a link",
         "its folder is a symlink to a classmate's folder"),
    Case("leaks_hidden_inputs", answer_case(LEAKER), 6.0, 0.0, "not data",
         "tries to get hidden inputs into its feedback: exception names and messages, type names, "
         "stashed inputs raised later, shapes"),
    Case("leaks_through_channels", answer_case(CHANNEL_LEAKER), MAX, 0.0, None,
         "after a hidden input, encodes it in the dtype, the shape or the known mistake a later visible "
         "test reports: feedback after hidden inputs shows fixed words only"),
    Case("folder_named_ipynb", _folder_named_ipynb, 0.0, 0.0, "only regular files", "a folder called *.ipynb"),
    Case("dangling_symlink", _dangling, 0.0, 0.0, "only regular files", "its notebook is a dangling symlink"),
    Case("fifo_notebook", _fifo, 0.0, 0.0, "only regular files", "a FIFO where the notebook should be"),
    Case("json_100000_deep", _deep_json, 0.0, 0.0, "nests more than", "notebook JSON nested 100,000 deep"),
    Case("json_5000_digit_int", _big_int, 0.0, 0.0, "corrupt notebook", "a 5,000-digit integer in the JSON"),
    Case("grade_id_is_a_list", _list_grade_id, MAX, MAX, "metadata removed", "a grade_id that is a list"),
    Case("big_outputs", _big_outputs, MAX, MAX, None, "correct, with 60 MB of outputs: read without them"),
    Case(LONG_NAME, lambda f, c: write(f, base_notebook()), MAX, MAX, None,
         "honest, in a folder whose name has 200 characters: reported under that name"),
    Case("sparse_giant", _sparse_giant, 0.0, 0.0, "more than the 1024 MiB a notebook may be",
         "a 1.1 GiB notebook file: refused with a flag saying so, not read"),
    Case("lone_surrogate", _surrogate, 6.0, 6.0, None,
         "an exception message with a lone surrogate, in every softmax test's failure"),
    Case("forged_fatal", answer_case(FORGED_FATAL.replace("{correct}", correct_code())), 0.0, 0.0,
         "invalid reply", "writes a forged 'fatal' message on the protocol socket"),
    Case("trickles_reply", answer_case(correct_code() + TRICKLE), 6.0, 0.0, "time limit",
         "its reply trickles one byte at a time, forever"),
    Case("over_deep_reply", answer_case(correct_code() + DEEP_REPLY), 6.0, 0.0, "invalid data",
         "sends a reply nested 200,000 deep"),
    Case("Doe, Jane_123_assignsubmission_file_", lambda f, c: write(f, base_notebook()), MAX, MAX, None,
         "an LMS-style folder name, honest"),
    Case("a_litterbug", answer_case(LITTERBUG + correct_code()), MAX, MAX, "starts processes",
         "graded first in its worker: leaves files, a locked folder, a full scratch space, a process, "
         "System V and POSIX IPC objects and keys in its keyrings"),
    Case("zz_isolation_probe", answer_case(ISOLATION_PROBE + correct_code() + "\nif not _clean:\n"
                                           + "\n".join("    " + ln for ln in WRONG.splitlines())), MAX, MAX,
         "lists directories", "graded after the attackers: correct only if it sees none of their traces"),
    Case("zz_honest_forms", answer_case(HONEST_FORMS), MAX, MAX, None,
         "correct, returning views, read-only and non-contiguous arrays, printing, using torch inside"),
]

CASES += HARDENED


class _Listener:
    """A TCP server on the host's loopback; any connection means the sandbox leaked."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
                self.connections += 1
                conn.close()
            except OSError:
                pass


def _contents(folder: Path) -> dict:
    """{file: its sha256}: a submission folder's contents, a 1.1 GiB file included, in little memory."""
    import hashlib

    out = {}
    for p in folder.rglob("*"):
        if p.is_file() and not p.is_symlink():
            h = hashlib.sha256()
            with open(p, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            out[p] = h.hexdigest()
    return out


@pytest.fixture(scope="module", params=MODES)
def graded(request, tmp_path_factory):
    """Every case graded in one run, as root and as an instructor without root (MODES)."""
    listener = _Listener()
    secret = "pg-password-" + os.urandom(8).hex()

    def build(subs, ws):
        ctx = {"submissions": subs, "workspace": ws, "port": listener.port, "env_secret": secret}
        for case in CASES:
            case.build(subs / case.name, ctx)
        return _contents(subs)

    try:
        proc, subs, ws, before = grade_attackers_then_controls(A, request.param, tmp_path_factory, build,
                                                               cell_timeout=15, timeout=1500,
                                                               env={"PGPASSWORD": secret})
    finally:
        listener.stop = True
    return {"proc": proc, "results": read_results(ws, A) if proc.returncode == 0 else {}, "ws": ws,
            "subs": subs, "before": before, "connections": listener.connections}


def test_the_run_completes(graded):
    proc = graded["proc"]
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert set(graded["results"]) == {c.name for c in CASES}


@needs_sandbox
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_outcome(graded, case):
    result = graded["results"][case.name]
    assert case.min_score <= result["score"] <= case.max_score, (
        f"{case.name} ({case.what}) scored {result['score']}, expected {case.min_score}..{case.max_score}; "
        f"flags: {result['flags']}")
    if case.flag:
        assert any(case.flag in f["message"] for f in result["flags"]), \
            f"no flag mentions {case.flag!r}: {result['flags']}"
    else:
        assert result["flags"] == [], f"an honest submission was flagged: {result['flags']}"


@needs_sandbox
def test_a_class_named_like_a_limit_is_not_a_limit(graded):
    """A limit is reported only where the grader's own limit was reached: the call timed by the
    host, the cell by the sandbox's own class; the classes' names alone earn neither flag."""
    result = graded["results"]["forged_limits"]
    messages = [f["message"] for f in result["flags"]]
    assert not any("time limit" in m or "printed more" in m for m in messages), messages
    real = [f["message"] for f in graded["results"]["hang_in_softmax"]["flags"]]
    assert any("time limit reached in a call of softmax" in m for m in real), real


def test_a_long_folder_name_is_reported_under_its_own_name(graded):
    """grades.csv and the results name the student by the whole folder name; the gradebook,
    whose column holds 128 characters, by gradebook.book_id of it, with the same score."""
    from autograder.store.gradebook import book_id, open_gradebook, scores

    rows = {r["student"]: r for r in read_csv(graded["ws"], A)}
    assert len(LONG_NAME) == 200 and float(rows[LONG_NAME]["score"]) == MAX
    assert graded["results"][LONG_NAME]["student"] == LONG_NAME
    with open_gradebook(f"sqlite:///{graded['ws'] / 'gradebook.db'}") as gb:
        in_book = scores(gb, A)
    assert len(book_id(LONG_NAME)) == 128 and in_book[book_id(LONG_NAME)] == MAX
    assert set(in_book) == {book_id(r["student"]) for r in graded["results"].values()}


@needs_sandbox
def test_nothing_escaped_the_sandbox(graded):
    assert graded["connections"] == 0, "a submission reached a server on the host"
    after = _contents(graded["subs"])
    changed = sorted(str(p) for p in set(after) | set(graded["before"]) if after.get(p) != graded["before"].get(p))
    assert not changed, f"a submission changed files in the submissions folder: {changed}"
    db = sqlite3.connect(graded["ws"] / "gradebook.db")
    assert db.execute("pragma integrity_check").fetchone()[0] == "ok"
    assert db.execute("select max(auto_score) from grade").fetchone()[0] <= 2.0
    scores = {row[0]: row[1] for row in db.execute(
        "select student.id, sum(grade.auto_score) from grade join submitted_notebook on grade.notebook_id = "
        "submitted_notebook.id join submitted_assignment on submitted_notebook.assignment_id = "
        "submitted_assignment.id join student on submitted_assignment.student_id = student.id group by student.id")}
    from autograder.store.gradebook import book_id        # the gradebook's ids hold 128 characters

    assert scores == {book_id(name): r["score"] for name, r in graded["results"].items()}


@needs_sandbox
def test_feedback_and_report_show_no_hidden_test_code(graded):
    nb = base_notebook()
    hidden, visible = set(), set()
    for cell in nb.cells:
        for part in re.findall(r"### BEGIN HIDDEN TESTS(.*?)### END HIDDEN TESTS", cell.source, flags=re.S):
            hidden |= {ln.strip() for ln in part.splitlines() if len(ln.strip()) >= 12}
        visible |= {ln.strip() for ln in strip_hidden(cell.source).splitlines()}
    shown = "\n".join(visible)
    hidden = {ln for ln in hidden if ln not in shown}   # also shown in visible code or descriptions
    pages = list((graded["ws"] / "feedback").rglob("*.html")) + [graded["ws"] / "reports" / A / "report.html"]
    assert len(pages) == len(CASES) + 1
    for page in pages:
        text = page.read_text()
        leaked = [ln for ln in hidden if ln in text]
        assert not leaked, f"{page}: {leaked[:2]}"
    report = (graded["ws"] / "reports" / A / "report.html").read_text()
    for case in CASES:
        if case.flag:
            assert case.name in report


@needs_sandbox
def test_honest_students_are_unaffected(graded, tmp_path):
    """The controls score the same as when graded alone, in a run of their own."""
    subs = tmp_path / "subs"
    write(subs / "zz_control_a", base_notebook())
    run_grade(A, subs, tmp_path / "ws")
    alone = read_results(tmp_path / "ws", A)["zz_control_a"]
    for name in ("zz_control_a", "zz_control_z"):
        together = graded["results"][name]
        assert together["score"] == alone["score"] == MAX
        assert together["flags"] == []
    rows = {r["student"]: r for r in read_csv(graded["ws"], A)}
    assert rows["zz_control_a"]["flags"] == "" and float(rows["zz_control_z"]["score"]) == MAX


@needs_sandbox
def test_no_hidden_input_reaches_feedback(graded):
    """Once a hidden call has run, nothing the student's code produced (messages, type names,
    reprs, shapes) reaches feedback, flags, the CSV or the report."""
    ws = graded["ws"]
    texts = [p.read_text(errors="replace") for p in (ws / "feedback").rglob("*.html")]
    texts += [(ws / "reports" / A / "grades.csv").read_text(), (ws / "reports" / A / "report.html").read_text()]
    texts += [json.dumps([r["tests"], r["flags"]]) for r in graded["results"].values()]
    for text in texts:
        assert "LEAK" not in text and "7777" not in text
    # the channel leaker: after its first hidden input, no dtype, shape or known mistake it chose
    # (its answers are right until hidden inputs have run, so every failure comes after them)
    page = (ws / "feedback" / "leaks_through_channels" / A / "feedback.html").read_text()
    for chosen in ("float16", "int8", "int16", "uint8", "complex64", "int32", "int64", "(shape ", "has dtype",
                   "is wrong:"):
        assert chosen not in page, f"{chosen!r} reached feedback after a hidden input"


def test_every_class_of_the_hardening_issue_has_cases():
    names = {c.name for c in CASES}
    assert len([c for c in CASES if not c.name.startswith("zz_control")]) >= 50
    assert {"zeroes_inputs", "always_raises", "link_to_solutions", "link_to_classmate",     # undeserved points
            "leaks_hidden_inputs",                                                          # leaks
            "folder_named_ipynb", "dangling_symlink", "fifo_notebook", "json_100000_deep",  # stopped runs
            "json_5000_digit_int", "grade_id_is_a_list", "lone_surrogate", "forged_fatal",
            "trickles_reply", "over_deep_reply", "Doe, Jane_123_assignsubmission_file_",
            "a_litterbug", "zz_isolation_probe",                                            # same worker
            "zz_honest_forms"} <= names                                                     # honest forms
    # issue 27: what one student leaves (IPC, keyrings: the litterbug and the probe), big
    # outputs, a file too large to read, a folder name past nbgrader's 128-character column
    assert {"a_litterbug", "zz_isolation_probe", "big_outputs", "sparse_giant", LONG_NAME,
            "leaks_through_channels"} <= names
