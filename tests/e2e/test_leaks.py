"""Issue 37, item 3: after a hidden input, the student's page says only whether each test passed.

A chapter-12 submission answers right until its code has received the hidden inputs of the
first test cell, keeps them, and from then on encodes one bit of them (the parity of what it
received) in everything its later tests' feedback could show, failing the same tests whatever
the bit is:
  (a) which check fails: a wrong shape for one bit, wrong values for the other;
  (b) a student-visible flag: torch tensors (torch-result) or float32 arrays (float32), an
      ndarray subclass (ndarray-subclass) or a plain list (no flag);
  (c) the memory it uses in the memory test: 64 MiB of scores, or 192 MiB;
  (d) the exception it raises: a ValueError, or one of a class of its own named TimeLimitExceeded.
It is graded twice, in two workspaces whose secrets give it different bits (and so different
hidden inputs), each time with an honest control graded after it by the same worker. The
student's feedback page must be byte for byte the same in both runs; the instructor's
grades.csv still shows what the code did (its flags differ), so the bit did reach the code.
"""
from __future__ import annotations

import csv
import os
import secrets

import nbformat
import pytest

from autograder.grade import student_salt
from autograder.grade.testcells import AFTER_HIDDEN
from tests.conftest import SANDBOX, read_results, run_grade, source_path, student_folder

pytestmark = [pytest.mark.xdist_group("leaks")]

A = "12_long_sequences"
LEAKER = "leaker"

# All three graded functions, in the first answer cell, after the solution's local_attention_mask
# and online_softmax_merge renamed _right_mask and _right_merge. The first 11 calls of
# local_attention_mask are test_local_mask_window's (1 visible, 6 fixed hidden, 4 drawn from
# the secret): the parity of the sum of their arguments is the bit.
ATTACK = '''
import math as _math
_SEEN = {"mask": 0, "merge": 0, "sum": 0}


def _bit():
    return _SEEN["sum"] % 2


def local_attention_mask(n, window, causal=False):
    _SEEN["mask"] += 1
    call = _SEEN["mask"]
    if call <= 11:                           # test_local_mask_window, its hidden inputs included
        _SEEN["sum"] += int(n) + int(window)
        return _right_mask(n, window, causal)
    if call == 12:                           # test_local_mask_causal: (a) which check fails
        right = _right_mask(n, window, causal)
        return np.zeros((int(n) + 1, int(n)), dtype=bool) if _bit() else ~right
    if call == 13:                           # test_local_mask_contract: (d) which exception
        if _bit():
            raise type("TimeLimitExceeded", (Exception,), {})("time limit reached")
        raise ValueError("no")
    return _right_mask(n, window, causal)


class _Sub(np.ndarray):
    pass


def online_softmax_merge(m1, l1, acc1, m2, l2, acc2):
    _SEEN["merge"] += 1
    state = _right_merge(m1, l1, acc1, m2, l2, acc2)
    if _SEEN["merge"] == 1:                  # test_merge_two_blocks: (b) torch-result or float32
        if _bit():
            return tuple(torch.from_numpy(np.asarray(s)) for s in state)
        return tuple(np.asarray(s, dtype=np.float32) for s in state)
    if _SEEN["merge"] == 2:                  # test_merge_large_gap: (b) ndarray-subclass or none
        if _bit():
            return tuple(np.asarray(s).view(_Sub) for s in state)
        return tuple(np.asarray(s).tolist() for s in state)
    return state


def chunked_attention(Q, K, V, chunk_size):
    if int(chunk_size) < 1:
        raise ValueError("chunk_size must be at least 1")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    extra = None
    if K.shape[-2] >= 2 ** 14 and _bit():    # test_chunked_memory: (c) how much memory
        extra = np.ones(1 << 24)             # 128 MiB more
    s = Q @ np.swapaxes(K, -1, -2) / _math.sqrt(Q.shape[-1])      # every score at once
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    del extra
    return (w / w.sum(axis=-1, keepdims=True)) @ V
'''

# The tests whose failure is chosen by the bit, and what the channel is.
CHANNELS = {"test_local_mask_causal": "(a) which check fails",
            "test_local_mask_contract": "(d) which exception",
            "test_merge_two_blocks": "(b) torch-result or float32 flag",
            "test_merge_large_gap": "(b) ndarray-subclass flag or none",
            "test_chunked_memory": "(c) how much memory"}


def _notebook(attack: bool) -> nbformat.NotebookNode:
    nb = nbformat.read(str(source_path(A)), as_version=4)
    if attack:
        answers = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")]
        right = {c.metadata["nbgrader"]["grade_id"]: c.source for c in answers}
        answers[0].source = "\n\n".join([
            right["local_attention_mask"].replace("def local_attention_mask(", "def _right_mask(", 1),
            right["online_softmax_merge"].replace("def online_softmax_merge(", "def _right_merge(", 1), ATTACK])
        for cell in answers[1:]:
            cell.source = "# (answer given above)"
    return nb


# what test_local_mask_window's visible call and fixed hidden cases give local_attention_mask
FIXED_SUM = 7 + 2 + sum(n + w for n, w in [(1, 0), (6, 0), (5, 1), (9, 4), (4, 3), (3, 10)])


def _bit_of(secret: str) -> int:
    """The leaker's bit with this secret: the parity of the sum of the arguments of
    test_local_mask_window's calls, four of them drawn from the secret."""
    from autograder import testing

    context = testing.grading_context
    saved, context.salt = context.salt, student_salt(secret, A, LEAKER)
    try:
        r = testing.rng("local-mask-sizes")
        return (FIXED_SUM + sum(int(r.integers(2, 30)) + int(r.integers(0, 8)) for _ in range(4))) % 2
    finally:
        context.salt = saved


def _secrets() -> tuple[str, str]:
    first = secrets.token_hex(32)
    while True:
        second = secrets.token_hex(32)
        if _bit_of(second) != _bit_of(first):
            return first, second


@pytest.fixture(scope="module", params=["root", "without-root"])
def graded(request, tmp_path_factory):
    if not SANDBOX:
        pytest.skip("bubblewrap cannot run here")
    if request.param == "root" and os.geteuid() != 0:
        pytest.skip("grading as root needs root")
    root = tmp_path_factory.mktemp(f"leaks-{request.param}")
    subs = root / "submissions"
    home = None
    if request.param == "without-root":
        subs.mkdir()
        home = student_folder(root / "home")
    for name, attack in ((LEAKER, True), ("zz_control", False)):
        (subs / name).mkdir(parents=True)
        nbformat.write(_notebook(attack), str(subs / name / f"{A}.ipynb"))
    runs = []
    for secret in _secrets():
        ws = root / f"ws-{_bit_of(secret)}"
        if home is not None:
            student_folder(ws)
        else:
            ws.mkdir()
        (ws / "secret.key").write_text(secret)
        if home is not None:
            os.chown(ws / "secret.key", os.stat(ws).st_uid, os.stat(ws).st_gid)
        proc = run_grade(A, subs, ws, "--workers", "1", "--timeout", "60", check=False, timeout=900,
                         unprivileged_home=home)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        runs.append(ws)
    return runs


def _row(ws, student: str) -> dict:
    with open(ws / "reports" / A / "grades.csv", newline="") as f:
        return next(r for r in csv.DictReader(f) if r["student"] == student)


def test_the_attack_fails_the_same_tests_whatever_its_bit(graded):
    """The channels are the only difference: every bit fails exactly the channel tests."""
    for ws in graded:
        tests = {t["grade_id"]: t for t in read_results(ws, A)[LEAKER]["tests"]}
        failed = {g for g, t in tests.items() if not t["passed"]}
        assert failed == set(CHANNELS), (ws.name, failed)


def test_the_student_page_is_the_same_whatever_the_hidden_input(graded):
    pages = [(ws / "feedback" / LEAKER / A / "feedback.html").read_bytes() for ws in graded]
    results = [{t["grade_id"]: t["message"] for t in read_results(ws, A)[LEAKER]["tests"]} for ws in graded]
    for grade_id, channel in CHANNELS.items():
        assert results[0][grade_id] == results[1][grade_id], (
            f"{channel}: {grade_id} says {results[0][grade_id]!r} for one bit, {results[1][grade_id]!r} for the other")
        assert results[0][grade_id] == AFTER_HIDDEN
    assert pages[0] == pages[1], "the student's feedback page differs with the hidden input"


def test_the_instructor_still_sees_what_the_code_did(graded):
    """grades.csv keeps every flag, those raised after a hidden input included (marked as not
    shown to the student): here they differ with the bit, so the bit did reach the code."""
    rows = [_row(ws, LEAKER) for ws in graded]
    assert rows[0]["score"] == rows[1]["score"]
    assert rows[0]["flags"] != rows[1]["flags"], rows[0]["flags"]
    by_bit = dict(zip((ws.name for ws in graded), rows))
    assert "torch.Tensor" in by_bit["ws-1"]["flags"] and "float32" in by_bit["ws-0"]["flags"], by_bit
    assert "not shown to the student" in by_bit["ws-1"]["flags"]
    for ws in graded:
        flags = read_results(ws, A)[LEAKER]["flags"]
        assert not [f for f in flags if f["code"] in ("torch-result", "float32", "ndarray-subclass",
                                                      "call-time-limit") and f["student_visible"]], flags


def test_the_honest_control_keeps_full_marks(graded):
    for ws in graded:
        result = read_results(ws, A)["zz_control"]
        assert result["score"] == result["max_score"] and result["flags"] == [], (
            result["flags"], [(t["grade_id"], t["message"]) for t in result["tests"] if not t["passed"]])
