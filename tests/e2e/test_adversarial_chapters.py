"""Adversarial submissions of the later chapters, graded by the real `autograder grade`.

tests/e2e/test_adversarial.py attacks the grader through chapter 02. The attacks here need a
later chapter's tests: the probes (chapter 07's module probe, chapter 12's memory probe)
and arguments that hold arrays inside containers (chapter 10's parameter dicts). Each
chapter's cases are graded in one run with one worker, as root and without root, and an
honest control (zz_*) is graded after the attackers by the same worker: it keeps full marks.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import nbformat
import pytest

from tests.builders import MODES, grade_attackers_then_controls
from tests.conftest import SANDBOX, read_results, source_path, student_folder

pytestmark = [pytest.mark.xdist_group("adversarial-chapters")]


@dataclass
class Case:
    name: str
    answer: str                  # the answer cell's new source ({solution}: the solution's own)
    failed: tuple = ()           # test cells that must fail
    flag: str | None = None      # a flag code the result must carry
    what: str = ""
    root_only: bool = False      # needs the kernel's count of the sandbox's memory (a cgroup: root)


# chapter 12: chunked attention's memory test must not pay an implementation that holds
# every score at once, however the memory is hidden from the process's own measurement
FULL = '''
def chunked_attention(Q, K, V, chunk_size):
    if int(chunk_size) < 1:
        raise ValueError("chunk_size must be at least 1")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])      # every score at once
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ V
'''

SWAPS_PROBE = FULL + '''
import autograder.probes as _P
_real = _P.PROBES["peak_memory"]
def _no_memory(fn, *args, **kwargs):
    out = _real(fn, *args, **kwargs)
    out.update(peak_bytes=0, touched_bytes=0)
    return out
_P.PROBES.update(peak_memory=_no_memory)
'''

PATCHES_MEASUREMENT = FULL + '''
import tracemalloc as _tm, autograder.probes as _P
_tm.get_traced_memory = lambda: (0, 0)                 # the tracer reports nothing
_P._status_bytes = lambda field: 0                     # nor the peak resident memory
_P._touched_since_cleared = lambda: 0
for _f in (_P.peak_memory,):
    _f.__globals__["_status_bytes"] = _P._status_bytes
'''

BUFFER_BEFORE = '''
_SCORES = np.ones(1 << 25)          # 256 MiB, allocated and touched before any test calls
def chunked_attention(Q, K, V, chunk_size):
    if int(chunk_size) < 1:
        raise ValueError("chunk_size must be at least 1")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    shape = Q.shape[:-1] + K.shape[-2:-1]
    s = _SCORES[:int(np.prod(shape))].reshape(shape)
    np.matmul(Q, np.swapaxes(K, -1, -2), out=s)
    s /= np.sqrt(Q.shape[-1])
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    return s @ V
'''

# a buffer made before the call, filled, then freed before the call returns (one per call):
# only the meter's samples during the call see it
BUFFER_FREED = '''
_BUFFERS = [np.ones(1 << 23) for _ in range(6)]      # six of 64 MiB, made (and touched) when the cell ran
def chunked_attention(Q, K, V, chunk_size):
    if int(chunk_size) < 1:
        raise ValueError("chunk_size must be at least 1")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    shape = Q.shape[:-1] + K.shape[-2:-1]
    if int(np.prod(shape)) < 1 << 20:               # small: plain full attention
        s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        return (w / w.sum(axis=-1, keepdims=True)) @ V
    buffer = _BUFFERS.pop() if _BUFFERS else np.empty(1 << 23)
    s = buffer[:int(np.prod(shape))].reshape(shape)
    np.matmul(Q, np.swapaxes(K, -1, -2), out=s)
    s /= np.sqrt(Q.shape[-1])
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    out = s @ V
    del s, buffer                                   # gone before the call returns
    return out
'''

# blocks under 128 KiB live in the C heap, whose first 16 MiB of touched pages the meter leaves
# to the allocator (probes.HEAP_NOISE): every score stored there, in blocks of 117 KiB
HEAP_BLOCKS = '''
_BLOCK = 15000
_HEAP = [np.ones(_BLOCK) for _ in range(2400)]     # 2400 blocks of 117 KiB: 275 MiB, made when the cell ran
def chunked_attention(Q, K, V, chunk_size):
    if int(chunk_size) < 1:
        raise ValueError("chunk_size must be at least 1")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    Qs, Ks, Vs = (a.reshape((-1,) + a.shape[-2:]) for a in (Q, K, V))
    n_k, used = Ks.shape[1], 0
    rows = []
    for b in range(Qs.shape[0]):                  # every score first, into the heap's blocks
        for q in range(Qs.shape[1]):
            row = Ks[b] @ Qs[b, q] / np.sqrt(Q.shape[-1])
            pieces = []
            for s0 in range(0, n_k, _BLOCK):
                piece = row[s0:s0 + _BLOCK]
                _HEAP[used][:len(piece)] = piece
                pieces.append((used, len(piece)))
                used += 1
            rows.append((b, q, pieces))
    out = np.empty(Qs.shape[:2] + Vs.shape[-1:])
    for b, q, pieces in rows:                     # then a plain softmax of each stored row
        top = max(_HEAP[i][:k].max() for i, k in pieces)
        w = np.concatenate([np.exp(_HEAP[i][:k] - top) for i, k in pieces])
        out[b, q] = (w / w.sum()) @ Vs[b]
    return out.reshape(Q.shape[:-1] + V.shape[-1:])
'''

FORKED_CHILD = '''
import mmap as _mmap, os as _os
def chunked_attention(Q, K, V, chunk_size):
    if int(chunk_size) < 1:
        raise ValueError("chunk_size must be at least 1")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    shape = Q.shape[:-1] + V.shape[-1:]
    shared = _mmap.mmap(-1, int(np.prod(shape)) * 8)
    pid = _os.fork()
    if pid == 0:                    # the child holds every score; the parent only waits
        s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        np.frombuffer(shared, dtype=np.float64).reshape(shape)[:] = (w / w.sum(axis=-1, keepdims=True)) @ V
        _os._exit(0)
    _os.waitpid(pid, 0)
    return np.frombuffer(shared, dtype=np.float64).reshape(shape).copy()
'''

# the start of an attack that works on (batch, n, d) stacks
_BY_BATCH = '''
def chunked_attention(Q, K, V, chunk_size):
    if int(chunk_size) < 1:
        raise ValueError("chunk_size must be at least 1")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    Qs, Ks, Vs = (a.reshape((-1,) + a.shape[-2:]) for a in (Q, K, V))
    B, n_q, n_k = Qs.shape[0], Qs.shape[1], Ks.shape[1]
'''[1:]

# issue 37, item 1: numbers the notebook's own process could reset or dodge. Every score into a
# buffer made (and touched) when the cell ran, a MiB at a time, the process's referenced bits
# reset through its own /proc/self/clear_refs after each MiB (the meter only ever sees a MiB
# more), and its peak resident memory reset before the call returns
CLEARS_ITS_REFERENCED_BITS = '''
_SCORES = np.ones(1 << 25)          # 256 MiB, allocated and touched before any test calls
def _forget(code="1"):
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write(code)
    except OSError:
        pass
''' + _BY_BATCH + '''    s = _SCORES[:B * n_q * n_k].reshape(B, n_q, n_k)          # every score at once
    rows = max(1, (1 << 17) // n_k)                             # a MiB of them at a time
    blocks = [(b, r) for b in range(B) for r in range(0, n_q, rows)]
    for b, r in blocks:
        np.matmul(Qs[b, r:r + rows], Ks[b].T, out=s[b, r:r + rows])
        s[b, r:r + rows] /= np.sqrt(Q.shape[-1])
        _forget()
    top = -np.inf
    for b, r in blocks:                                         # the maximum over ALL scores
        top = max(top, s[b, r:r + rows].max())
        _forget()
    out = np.empty(Qs.shape[:2] + Vs.shape[-1:])
    for b, r in blocks:
        w = s[b, r:r + rows]
        np.exp(w - top, out=w)
        out[b, r:r + rows] = (w @ Vs[b]) / w.sum(axis=-1, keepdims=True)
        _forget()
    _forget("5")
    return out.reshape(Q.shape[:-1] + V.shape[-1:])
'''

# every score into a MAP_SHARED buffer that a process forked when the cell ran maps too (and
# both touched): its pages are shared, nobody's own
SHARED_WITH_A_CHILD = '''
import mmap as _mmap, os as _os, time as _time
_SHARED = _mmap.mmap(-1, 1 << 28)                     # 256 MiB, MAP_SHARED
_VIEW = np.frombuffer(_SHARED, dtype=np.float64)
_VIEW[:] = 1.0                                        # touched here,
if _os.fork() == 0:                                   # and by a child that keeps it mapped
    _VIEW.sum()
    while True:
        _time.sleep(1)
''' + BUFFER_BEFORE.split("\n", 2)[2].replace("_SCORES[", "_VIEW[")    # then used as BUFFER_BEFORE's buffer

# a process forked when the cell ran (not during the measured call) computes full attention
# for every call, through a pipe: it never comes back to the request loop
SERVED_THROUGH_A_PIPE = '''
import os as _os
from multiprocessing.connection import Pipe as _Pipe
_mine, _theirs = _Pipe()
if _os.fork() == 0:
    while True:
        _Q, _K, _V = _theirs.recv()
        _s = _Q @ np.swapaxes(_K, -1, -2) / np.sqrt(_Q.shape[-1])       # every score at once
        _w = np.exp(_s - _s.max(axis=-1, keepdims=True))
        _theirs.send((_w / _w.sum(axis=-1, keepdims=True)) @ _V)
def chunked_attention(Q, K, V, chunk_size):
    if int(chunk_size) < 1:
        raise ValueError("chunk_size must be at least 1")
    _mine.send(tuple(as_float_array(a) for a in (Q, K, V)))
    return _mine.recv()
'''

# every score in pipes' buffers, a MiB a pipe: kernel memory, which no process's own numbers
# show (only the kernel's count of the sandbox's memory does: as root, with a memory cgroup)
SCORES_IN_PIPES = '''
import fcntl as _fcntl, os as _os
''' + _BY_BATCH + '''    rows = max(1, (1 << 17) // n_k)                             # a MiB of scores a pipe
    stored, top = [], -np.inf
    for b in range(B):
        for r in range(0, n_q, rows):
            s = Qs[b, r:r + rows] @ Ks[b].T / np.sqrt(Q.shape[-1])
            top = max(top, s.max())
            try:
                pr, pw = _os.pipe()
                _fcntl.fcntl(pw, 1031, 1 << 20)                  # F_SETPIPE_SZ
                _os.write(pw, s.tobytes())
                stored.append((b, r, s.shape, pr, pw, None))
            except OSError:
                stored.append((b, r, s.shape, None, None, s))   # past the pipes' limit: kept here
    out = np.empty(Qs.shape[:2] + Vs.shape[-1:])
    for b, r, shape, pr, pw, kept in stored:
        if kept is None:
            data = b""
            while len(data) < 8 * shape[0] * shape[1]:
                data += _os.read(pr, 8 * shape[0] * shape[1] - len(data))
            _os.close(pr), _os.close(pw)
            kept = np.frombuffer(data, dtype=np.float64).reshape(shape)
        w = np.exp(kept - top)
        out[b, r:r + rows] = (w @ Vs[b]) / w.sum(axis=-1, keepdims=True)
    return out.reshape(Q.shape[:-1] + V.shape[-1:])
'''

MEMORY = ("test_chunked_memory",)
CHAPTER_12 = [
    Case("swaps_the_probe", SWAPS_PROBE, MEMORY, "probes-changed",
         "full attention; replaces the memory probe with one that reports no memory (PROBES.update)"),
    Case("patches_the_measurement", PATCHES_MEASUREMENT, MEMORY, None,
         "full attention; patches tracemalloc and the probe module's readers to report 0"),
    Case("buffer_made_before_the_call", BUFFER_BEFORE, MEMORY, None,
         "writes every score into a 256 MiB buffer made (and touched) when the cell ran"),
    Case("buffer_freed_before_returning", BUFFER_FREED, MEMORY, None,
         "fills a 64 MiB buffer made when the cell ran and frees it before the call returns"),
    Case("scores_in_heap_blocks", HEAP_BLOCKS, MEMORY, None,
         "stores every score in 2400 blocks of 117 KiB made when the cell ran (the C heap, not a mapping)"),
    Case("scores_in_a_forked_child", FORKED_CHILD, MEMORY, None,
         "computes every score in a forked child process and reads the output from shared memory"),
    Case("clears_its_referenced_bits", CLEARS_ITS_REFERENCED_BITS, MEMORY, None,
         "fills a buffer made when the cell ran, then resets its referenced bits and peak memory "
         "(/proc/self/clear_refs)"),
    Case("scores_shared_with_a_child", SHARED_WITH_A_CHILD, MEMORY, None,
         "fills a MAP_SHARED buffer that a child forked when the cell ran also maps"),
    Case("served_through_a_pipe", SERVED_THROUGH_A_PIPE, MEMORY, None,
         "a process forked when the cell ran computes full attention for the call, through a pipe"),
    Case("scores_in_pipe_buffers", SCORES_IN_PIPES, MEMORY, None,
         "keeps every score in pipes' buffers (kernel memory) during the call", root_only=True),
    Case("zz_control", "{solution}", (), None, "honest, graded after the attackers"),
    Case("zz_control_threads", "{solution_renamed}" + '''

from concurrent.futures import ThreadPoolExecutor as _Threads
def chunked_attention(Q, K, V, chunk_size):
    Q = as_float_array(Q)
    half = Q.shape[-2] // 2 or 1                 # two threads, half of the queries each
    with _Threads(2) as pool:
        parts = list(pool.map(lambda q: _chunked_attention(q, K, V, chunk_size), (Q[..., :half, :], Q[..., half:, :])))
    return np.concatenate(parts, axis=-2)
''', (), None, "honest chunked attention on two threads"),
    Case("zz_control_forks_in_a_cell", "{solution}" + '''

import os as _os
_r, _w = _os.pipe()
if _os.fork() == 0:                              # a child that checks the function, then ends
    _os.write(_w, b"1" if chunked_attention(np.eye(3), np.eye(3), np.eye(3), 2).shape == (3, 3) else b"0")
    _os._exit(0)
assert _os.read(_r, 1) == b"1"
''', (), None, "honest, with a fork in its cell"),
]

# chapter 10: a write into an array inside a dict argument (issue 27, item 4), then (issue 37,
# item 4) nothing left in the dict that looks like an array


def _writes_into_params(then: str = "") -> str:
    return "{solution_renamed}" + '''

def encoder_block(x, params, num_heads, norm_first=False, mask=None):
    y = _encoder_block(x, params, num_heads, norm_first, mask)
    params["W_q"] /= np.sqrt(params["W_q"].shape[0])     # in place, inside the caller's dict
''' + then + "    return y\n"


CHAPTER_10 = [
    Case("folds_the_scale_into_params", _writes_into_params(), ("test_encoder_post_norm",), "inputs-modified",
         "answers right, then folds a scale into params['W_q'] in place"),
    Case("writes_then_empties_params", _writes_into_params("    params.clear()\n"), ("test_encoder_post_norm",),
         "inputs-modified", "folds a scale into params['W_q'] in place, then empties the dict"),
    Case("writes_then_makes_lists", _writes_into_params(
        "    for key in list(params):\n        params[key] = np.asarray(params[key]).tolist()\n"),
         ("test_encoder_post_norm",), "inputs-modified",
         "folds a scale into params['W_q'] in place, then turns the dict's arrays into lists"),
    Case("zz_control", "{solution}", (), None, "honest, graded after the attackers"),
]

# chapter 07: a wrong module whose notebook makes the module probe build the solution's
SWAPS_MODULE_PROBE = '''
import autograder.probes as _P
_real = _P.PROBES["module_forward_backward"]
def _right_module(cls, *args, **kwargs):
    return _real(_HonestMultiHeadAttention, *args, **kwargs)
_P.PROBES["module_forward_backward"] = _right_module
'''

# issue 37, item 2: a module left unimplemented, and a torch function the probe calls while it
# builds the module patched to build a right one instead (no change to autograder.probes)
UNIMPLEMENTED = '''

class MultiHeadAttention(torch.nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self._given = (d_model, num_heads, bias)
        raise NotImplementedError("not done yet")

    def forward(self, query, key, value, mask=None):
        raise NotImplementedError("not done yet")
'''

PATCHES_SEEDING = "{solution_class_renamed}" + UNIMPLEMENTED + '''
_seed = torch.manual_seed
def _seeding(seed):                 # called by the probe just before it builds the module
    MultiHeadAttention.__new__ = lambda cls, *args, **kwargs: _HonestMultiHeadAttention(*args, **kwargs)
    return _seed(seed)
torch.manual_seed = _seeding
'''

PATCHES_CONVERSION = "{solution_class_renamed}" + UNIMPLEMENTED.replace(
    '        raise NotImplementedError("not done yet")\n\n    def forward', "    def forward", 1) + '''
_double = torch.nn.Module.double
def _converting(self):              # .double(), called by the probe on the module it built
    if type(self) is MultiHeadAttention:
        return _double(_HonestMultiHeadAttention(*self._given))
    return _double(self)
torch.nn.Module.double = _converting
'''

MODULE_TESTS = ("test_module_matches_torch", "test_module_cross_no_bias", "test_module_mask",
                "test_module_fully_blocked_row")

CHAPTER_07 = [
    Case("patches_seeding", PATCHES_SEEDING, MODULE_TESTS, "probes-changed",
         "MultiHeadAttention unimplemented; torch.manual_seed patched to build a right module instead"),
    Case("patches_dtype_conversion", PATCHES_CONVERSION, MODULE_TESTS, "probes-changed",
         "MultiHeadAttention unimplemented; torch.nn.Module.double patched to return a right module"),
    Case("swaps_the_module_probe", "{solution_class_renamed}" + '''

class MultiHeadAttention(_HonestMultiHeadAttention):
    def forward(self, *args, **kwargs):
        out, weights = super().forward(*args, **kwargs)
        return out * 0, weights
''' + SWAPS_MODULE_PROBE, (), "probes-changed",
         "a module whose output is zero; the notebook makes the module probe build a right one instead"),
    Case("zz_control", "{solution}", (), None, "honest, graded after the attackers"),
]

CHAPTERS = {"12_long_sequences": ("chunked_attention", CHAPTER_12),
            "10_transformer_block": ("encoder_block", CHAPTER_10),
            "07_multi_head": ("MultiHeadAttention", CHAPTER_07)}


def _notebook(chapter: str, grade_id: str, answer: str) -> nbformat.NotebookNode:
    nb = nbformat.read(str(source_path(chapter)), as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    solution = cell.source
    cell.source = (answer.replace("{solution_renamed}", solution.replace(f"def {grade_id}(", f"def _{grade_id}(", 1))
                   .replace("{solution_class_renamed}",
                            solution.replace(f"class {grade_id}(", f"class _Honest{grade_id}(", 1))
                   .replace("{solution}", solution))
    return nb


@pytest.fixture(scope="module", params=[(c, mode) for c in CHAPTERS for mode in MODES],
                ids=lambda p: f"{p[0]}-{p[1]}")
def graded(request, tmp_path_factory):
    chapter, mode = request.param
    grade_id, cases = CHAPTERS[chapter]
    cases = [c for c in cases if mode == "root" or not c.root_only]

    def build(subs, ws):
        for case in cases:
            (subs / case.name).mkdir()
            nbformat.write(_notebook(chapter, grade_id, case.answer), str(subs / case.name / f"{chapter}.ipynb"))

    proc, _, ws, _ = grade_attackers_then_controls(chapter, mode, tmp_path_factory, build, cell_timeout=60,
                                                   timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return chapter, cases, read_results(ws, chapter)


def test_every_attack_loses_its_points_and_the_control_keeps_them(graded):
    chapter, cases, results = graded
    assert set(results) == {c.name for c in cases}
    for case in cases:
        result = results[case.name]
        tests = {t["grade_id"]: t for t in result["tests"]}
        flags = [f["code"] for f in result["flags"]]
        if case.name.startswith("zz_control"):
            assert result["score"] == result["max_score"] and not flags, (case.name, result["flags"], [
                (t["grade_id"], t["message"]) for t in result["tests"] if not t["passed"]])
            continue
        assert result["score"] < result["max_score"], f"{chapter} {case.name} ({case.what}) kept every point"
        for grade_id in case.failed:
            assert not tests[grade_id]["passed"], f"{chapter} {case.name}: {grade_id} passed ({case.what})"
        if case.flag:
            assert case.flag in flags, f"{chapter} {case.name}: no {case.flag} flag in {flags}"


# What measures a call's memory, as root and without (issue 37, item 1): as root, with a memory
# cgroup per sandbox, the kernel's count of everything the sandbox holds as well as the zygote's
# meter; without root there is no memory cgroup (nor delegation), and the meter alone measures:
# a 64 MiB array it sees either way, 48 MiB kept in pipes' buffers only the kernel's count does
# (48: a user's pipes may hold 64 MiB at most, pipe-user-pages-soft).
METER_SCRIPT = r'''
import json, sys
sys.path.insert(0, sys.argv[1])
from autograder.sandbox.host import Limits, Sandbox
CELL = """
import fcntl, os
import numpy as np
def in_an_array(n):
    return float(np.ones(n).sum())
def in_pipes(n):
    pipes = []
    for _ in range(n):
        r, w = os.pipe()
        fcntl.fcntl(w, 1031, 1 << 20)          # F_SETPIPE_SZ: 1 MiB
        os.write(w, b"x" * (1 << 20))
        pipes.append((r, w))
    return len(pipes)
"""
box = Sandbox(limits=Limits(wall_seconds=60), warm=("numpy",))
try:
    with box.session(b"{}", "nb.ipynb", [CELL], ["in_an_array", "in_pipes"]) as session:
        print(json.dumps({name: session.probe("peak_memory", name, (n,), {}, measured=True)["meter"]
                          for name, n in (("in_an_array", 8 << 20), ("in_pipes", 48))}))
finally:
    box.close()
'''


@pytest.mark.parametrize("mode", ["root", "without-root"])
def test_the_kernel_counts_the_sandbox_memory_as_root_and_the_meter_alone_without(mode, tmp_path):
    import json
    import sys

    from tests.conftest import ROOT, run_unprivileged

    if not SANDBOX:
        pytest.skip("bubblewrap cannot run here")
    if mode == "root" and os.geteuid() != 0:
        pytest.skip("needs root")
    home = student_folder(tmp_path / "home")
    script = home / "meter.py"
    script.write_text(METER_SCRIPT)
    args = [sys.executable, str(script), str(ROOT)]
    if mode == "root":
        import subprocess

        proc = subprocess.run(args, capture_output=True, text=True, timeout=300)
    else:
        proc = run_unprivileged(args, home=home)
    assert proc.returncode == 0, proc.stderr[-3000:]
    meters = json.loads(proc.stdout.splitlines()[-1])
    array, pipes = meters["in_an_array"], meters["in_pipes"]
    assert array["ok"] and pipes["ok"], meters
    assert array["rise"] >= 60 << 20, meters            # 64 MiB in an array: seen either way
    if mode == "root":
        assert array["kernel"] and pipes["kernel"], meters
        assert pipes["rise"] >= 44 << 20, meters        # 48 MiB in pipes: the kernel's count sees it
    else:
        assert not array["kernel"] and not pipes["kernel"], meters
        assert pipes["rise"] < 16 << 20, meters         # the meter alone does not: said in the README
