"""The words a student reads: a failure names what happened, not a cause they do not have."""
from __future__ import annotations

import math

import numpy as np
import pytest

from autograder.testing import TestFailure, expect_array


def _message(got, expected, **kw) -> TestFailure:
    with pytest.raises(TestFailure) as failure:
        expect_array(got, expected, name="softmax(x)", **kw)
    return failure.value


def test_a_dtype_failure_names_what_happened():
    x = np.array([1.0, 2.0, 3.0])
    # integers returned (a list of ints used as it came): converting is what is missing
    ints = _message(np.array([1, 2, 3]), x)
    assert "integers" in str(ints) and "np.asarray(x, dtype=np.float64)" in str(ints), str(ints)
    assert "do not cast" not in str(ints)
    # float32 in, float64 out, with no cast anywhere: a NumPy float64 scalar promoted it
    x32 = x.astype(np.float32)
    promoted = x32 / np.sqrt(4)
    assert promoted.dtype == np.float64          # what NumPy does (NEP 50): the advice is about this
    message = _message(promoted, x32, dtype="float32")
    assert "promoted" in str(message) and "np.sqrt(d)" in str(message) and "math.sqrt" in str(message), str(message)
    assert abs(math.sqrt(4) * x32 - 2 * x32).max() == 0 and (x32 / math.sqrt(4)).dtype == np.float32
    # float64 in, float32 out: precision was lost
    lost = _message(x.astype(np.float32), x)
    assert "precision was lost" in str(lost), str(lost)
    # what a hidden test may show names none of it: only that the dtype is wrong
    assert {ints.public, message.public, lost.public} == {"softmax(x) has the wrong dtype."}


def test_a_plural_name_takes_a_plural_verb():
    """'the weights W is wrong' (issue 37): the verb agrees with the name the test gives."""
    plural = _message(np.zeros(3), np.ones(3), like={"the softmax ran over the wrong axis": np.zeros(3)})
    with pytest.raises(TestFailure) as weights:
        expect_array(np.zeros(3), np.ones(3), name="the weights W", like={"the softmax ran over axis 0": np.zeros(3)})
    assert str(weights.value).startswith("the weights W are wrong: the softmax ran over axis 0."), str(weights.value)
    with pytest.raises(TestFailure) as shape:
        expect_array(np.zeros(2), np.ones(3), name="weights with a fully blocked row")
    assert str(shape.value).startswith("weights with a fully blocked row have the wrong shape"), str(shape.value)
    # a call or an identifier is one thing, whatever its last letter
    assert str(plural).startswith("softmax(x) is wrong:"), str(plural)
    for name in ("split_heads(X, 3)", "merge_heads on other shapes", "the output Y", "acc / l"):
        with pytest.raises(TestFailure) as one:
            expect_array(np.zeros(3), np.ones(3), name=name)
        assert str(one.value).startswith(f"{name} differs from the reference"), str(one.value)


def test_a_shape_hint_is_shown_for_a_wrong_shape_only():
    """A hint about one bug (axes counted from the end) is not shown for wrong values, which
    that bug does not cause (the student's only bug was the scale)."""
    axes = "use axes counted from the end (-1, -2, -3) so any leading dimensions work"
    with pytest.raises(TestFailure) as values:
        expect_array(np.zeros((2, 3)), np.ones((2, 3)), name="weights", shape_hint=axes)
    with pytest.raises(TestFailure) as shape:
        expect_array(np.zeros((3, 2)), np.ones((2, 3)), name="weights", shape_hint=axes)
    assert axes not in str(values.value) and axes in str(shape.value)


RAISES_ON = '''
from autograder.grade.testcells import StudentError as _StudentError
_right = multi_head_attention
def multi_head_attention(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    if {condition}:
        raise _StudentError(["ValueError", "Exception"], {error!r})
    return _right(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads, mask)
'''

WRONG_SCALE = '''
_right = multi_head_attention
def multi_head_attention(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    return _right(x_q * 1.5, x_kv, W_q, W_k, W_v, W_o, num_heads, mask)
'''


@pytest.fixture(scope="module")
def chapter_07():
    from autograder.notebook import load_source
    from tests.conftest import source_path

    return load_source(source_path("07_multi_head"))


def _messages(source, extra_code) -> dict[str, str]:
    from autograder.check import check_notebook

    return {r.grade_id: r.message for r in check_notebook(source, extra_code=extra_code) if not r.passed}


def test_when_the_students_code_raises_the_tests_hint_follows_the_error(chapter_07):
    """NumPy's raw error alone (a mask that does not broadcast, a matmul's core dimension) hides
    the hint the test has for exactly that bug: both are shown."""
    mask = _messages(chapter_07, RAISES_ON.format(
        condition="mask is not None and np.ndim(mask) == 3 and np.shape(x_q)[0] == 2",
        error="operands could not be broadcast together with shapes (2,3,4,5) (2,4,5)"))
    assert mask["test_mha_mask"].startswith("your code raised ValueError: operands could not be broadcast"), mask
    assert "Hint: the mask has no head axis: insert one, mask[..., None, :, :]" in mask["test_mha_mask"], mask
    axes = _messages(chapter_07, RAISES_ON.format(
        condition="np.ndim(x_q) == 4",
        error="matmul: Input operand 1 has a mismatch in its core dimension 0"))
    assert "core dimension 0. Hint: use axes counted from the end" in axes["test_mha_contract"], axes


def test_a_hint_about_another_bug_is_not_shown(chapter_07):
    """The only bug is the scale: no test tells this student to count axes from the end, or
    that a fully blocked row must be 0, and the multi-head tests say which helper to fix first."""
    messages = _messages(chapter_07, WRONG_SCALE)
    assert {"test_mha_contract", "test_mha_fully_blocked_row", "test_mha_matches_torch"} <= set(messages), messages
    assert not [m for m in messages.values() if "counted from the end" in m or "must be 0 in every head" in m], messages
    assert "if split_heads or merge_heads fails its own tests, fix it first" in messages["test_mha_matches_torch"]


def test_a_fully_blocked_row_with_even_weights_is_named(chapter_07):
    even = '''
def multi_head_attention(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    x_q, x_kv = as_float_array(x_q), as_float_array(x_kv)
    q, k, v = (split_heads(a @ np.asarray(W), num_heads) for a, W in ((x_q, W_q), (x_kv, W_k), (x_kv, W_v)))
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool)[..., None, :, :], s, -1e9)     # a large negative fill
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return merge_heads(w @ v) @ np.asarray(W_o), w
'''
    messages = _messages(chapter_07, even)
    assert "spreads its weight evenly over every key" in messages["test_mha_fully_blocked_row"], messages


def test_a_passing_test_cell_prints_the_visible_total_in_the_students_kernel(capsys):
    """In the student's kernel only: each released test cell that passes prints one line with
    its points and the total so far; a failing one prints none and leaves the total; the
    instructor's cells (with hidden tests, as stock nbgrader runs them) print nothing."""
    import json

    from IPython.core.interactiveshell import InteractiveShell

    from autograder import testing
    from tests.conftest import release_path, source_path

    shell = InteractiveShell.instance()
    if not getattr(shell, "_autograder_guard", None):
        testing._install_input_guard()
    solution = json.loads(source_path("02_similarity").read_text())["cells"]
    released = json.loads(release_path("02_similarity").read_text())["cells"]
    meta = [c["metadata"].get("nbgrader", {}) for c in released]
    setup_and_answers = ["".join(c["source"]) for c in solution
                         if c["metadata"].get("nbgrader", {}).get("solution")
                         or c["metadata"].get("nbgrader", {}).get("grade_id") == "setup"]
    tests = {m["grade_id"]: "".join(c["source"]) for c, m in zip(released, meta) if m.get("grade")}
    total = sum(float(m["points"]) for m in meta if m.get("grade"))
    for code in setup_and_answers:
        shell.run_cell(code)
    capsys.readouterr()
    shell.run_cell(tests["test_dot_similarity_torch"])
    shell.run_cell(tests["test_cosine_similarity_torch"])
    shown = capsys.readouterr().out
    assert (f"\u2713 test_dot_similarity_torch: 1 / 1 point (visible total so far: 1 / {total:g})\n"
            f"\u2713 test_cosine_similarity_torch: 2 / 2 points (visible total so far: 3 / {total:g})\n") in shown, shown
    shell.run_cell("_right_softmax = softmax\nsoftmax = lambda x, axis=-1: np.zeros(np.shape(x))")
    capsys.readouterr()
    shell.run_cell(tests["test_softmax_torch"])
    assert "\u2713" not in capsys.readouterr().out
    shell.run_cell("softmax = _right_softmax")
    hidden = next("".join(c["source"]) for c in solution
                  if c["metadata"].get("nbgrader", {}).get("grade_id") == "test_softmax_torch")
    shell.run_cell(hidden)                                  # the instructor's cell: not a released one
    assert "\u2713" not in capsys.readouterr().out
    shell.run_cell(tests["test_softmax_torch"])
    assert f"(visible total so far: 4 / {total:g})" in capsys.readouterr().out
    testing.grading_context.trusted = True                  # the trusted grader prints nothing
    try:
        shell.run_cell(tests["test_softmax_axis"])
        assert "\u2713" not in capsys.readouterr().out
    finally:
        testing.grading_context.trusted = False


def test_after_a_hidden_input_every_failure_reads_the_same():
    """Once the student's code has received a hidden input, a failed test's line depends on
    nothing the code chose: not the check that failed, the mistake matched, the exception's
    type, a time limit, a broken submission (issue 37, item 3)."""
    from autograder.grade.testcells import AFTER_HIDDEN, StudentError, SubmissionBroken, describe_failure

    failures = [_message(np.zeros(3, dtype=np.float32), np.ones(3)), _message(np.zeros(2), np.ones(3)),
                _message([0.0, 1.0], np.ones(2)), _message(np.ones(3), np.zeros(3), like={"a known mistake": np.ones(3)}),
                StudentError(["ValueError", "Exception"], "a message of the code's own"),
                StudentError(["TimeLimitExceeded", "Exception"], "time limit reached", timed_out=True),
                StudentError(["TimeLimitExceeded", "Exception"], "time limit reached"),    # a class of its own
                SubmissionBroken("the notebook's process ended"), KeyError("x"), AssertionError("chosen words")]
    for hidden, tainted in ((False, True), (True, False), (True, True)):
        assert {describe_failure(exc, hidden, tainted) for exc in failures} == {AFTER_HIDDEN}, (hidden, tainted)
    # before any hidden input, each says what happened; a class of the code's own named
    # TimeLimitExceeded is a raised error, not the time limit (the host timed the call)
    assert len({describe_failure(exc) for exc in failures}) == len(failures)
    assert describe_failure(failures[5]).startswith("time limit reached while your function ran")
    assert describe_failure(failures[6]).startswith("your code raised TimeLimitExceeded: time limit reached")
