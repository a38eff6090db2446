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
