"""A module probe graded by the trusted grader, in the sandbox: the right MultiHeadAttention keeps
its points and each wrong variant loses them, in float64 and float32, as in the student's kernel
(tests/unit/test_module_probe.py)."""
from __future__ import annotations

import nbformat
import pytest

from autograder.grade.submission import grade_submission
from autograder.notebook import load_source
from autograder.sandbox.host import Limits, Sandbox
from tests.conftest import needs_sandbox
from tests.unit.test_module_probe import _write_course, _write_float32_course


# a wrong module whose notebook patches what the probe calls while it builds the module
# (issue 37, item 2): torch.nn.Module.double then hands the probe a right module instead
PATCHES_DOUBLE = '''

class _Right(MultiHeadAttention):      # the wrong class's parameters, a right forward
    forward = _RightMHA.forward

_double = torch.nn.Module.double
def _converting(self):
    if type(self).__name__ == "MultiHeadAttention":
        return _double(_Right(self.h * self.d_k, self.h))
    return _double(self)
torch.nn.Module.double = _converting
'''


@needs_sandbox
@pytest.mark.parametrize("variant,passes", [("right", True), ("unscaled", False), ("no_out_proj", False),
                                            ("patches_double", False)])
def test_module_probe_through_the_trusted_grader(tmp_path, variant, passes):
    _write_course(tmp_path / "mha.ipynb")
    source = load_source(tmp_path / "mha.ipynb")
    nb = nbformat.read(str(tmp_path / "mha.ipynb"), as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution"))
    if variant == "unscaled":
        cell.source = cell.source.replace("/ self.d_k ** 0.5", "")
    if variant == "no_out_proj":
        cell.source = cell.source.replace("return self.out_proj(out), weights", "return out, weights")
    if variant == "patches_double":       # a right class kept aside, the graded one wrong
        cell.source = (cell.source.replace("class MultiHeadAttention(", "class _RightMHA(", 1) + "\n"
                       + cell.source.replace("/ self.d_k ** 0.5", "") + PATCHES_DOUBLE)
    nbformat.write(nb, str(tmp_path / "student.ipynb"))
    result = _grade_in_a_sandbox(source, (tmp_path / "student.ipynb").read_bytes())
    assert result["tests"][0]["passed"] is passes, result["tests"][0]["message"]
    assert result["score"] == (3.0 if passes else 0.0)
    if variant == "patches_double":
        assert "probes-changed" in [f["code"] for f in result["flags"]], result["flags"]


def _grade_in_a_sandbox(source, notebook: bytes) -> dict:
    """One submission graded by the trusted grader, in a fresh sandbox."""
    box = Sandbox(limits=Limits(wall_seconds=60))
    try:
        return grade_submission(source, "s", "mha", notebook, "student.ipynb", box, salt="x")
    finally:
        box.kill()


@needs_sandbox
@pytest.mark.parametrize("variant,passes", [("right", True), ("float64 softmax", False)])
def test_float32_module_probe_through_the_trusted_grader(tmp_path, variant, passes):
    _write_float32_course(tmp_path / "mha.ipynb", variant)
    result = _grade_in_a_sandbox(load_source(tmp_path / "mha.ipynb"), (tmp_path / "mha.ipynb").read_bytes())
    assert result["tests"][0]["passed"] is passes, result["tests"][0]["message"]
