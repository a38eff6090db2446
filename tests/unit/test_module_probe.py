"""The test-cell format handles PyTorch module exercises: a chapter-07 style
MultiHeadAttention is checked for outputs and gradients against torch.nn.MultiheadAttention,
in the student's kernel (in-process); through the trusted grader (sandboxed) in
tests/e2e/test_module_probe.py."""
from __future__ import annotations

import pytest

from autograder.authoring import md, notebook, setup, solution
from autograder.authoring import test as graded_test_cell
from autograder.check import check_notebook

MHA = '''
class MultiHeadAttention(torch.nn.Module):
    """Multi-head attention with q_proj, k_proj, v_proj, out_proj (nn.Linear, bias optional)."""

    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h, self.d_k = num_heads, d_model // num_heads
        self.q_proj = torch.nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = torch.nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = torch.nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = torch.nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        ### BEGIN SOLUTION
        B, n_q, _ = query.shape
        def split(x):  # (B, n, d_model) -> (B, h, n, d_k)
            return x.view(B, -1, self.h, self.d_k).transpose(1, 2)
        q, k, v = split(self.q_proj(query)), split(self.k_proj(key)), split(self.v_proj(value))
        scores = q @ k.transpose(-2, -1) / self.d_k ** 0.5      # (B, h, n_q, n_k)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)
        out = (weights @ v).transpose(1, 2).reshape(B, n_q, -1)   # (B, n_q, d_model)
        return self.out_proj(out), weights
        ### END SOLUTION
'''

TEST = '''
# MultiHeadAttention gives torch.nn.MultiheadAttention's outputs and gradients
r = rng("mha")
d, h, B, n = 8, 2, 2, 5
ref = torch.nn.MultiheadAttention(d, h, bias=True, batch_first=True).double()
with torch.no_grad():
    for p in ref.parameters():
        p.copy_(torch.from_numpy(r.normal(size=tuple(p.shape)) * 0.3))
W = ref.in_proj_weight.detach().numpy(); b = ref.in_proj_bias.detach().numpy()
state = {"q_proj.weight": W[:d], "k_proj.weight": W[d:2 * d], "v_proj.weight": W[2 * d:],
         "q_proj.bias": b[:d], "k_proj.bias": b[d:2 * d], "v_proj.bias": b[2 * d:],
         "out_proj.weight": ref.out_proj.weight.detach().numpy(), "out_proj.bias": ref.out_proj.bias.detach().numpy()}
x = [r.normal(size=(B, n, d)) for _ in range(3)]
g_out, g_w = r.normal(size=(B, n, d)), r.normal(size=(B, h, n, n))
got = run_probe("module_forward_backward", MultiHeadAttention, {"d_model": d, "num_heads": h}, state, x,
                upstream=[g_out, g_w])
xs = [torch.tensor(a, requires_grad=True) for a in x]
out, w = ref(*xs, average_attn_weights=False)
((out * torch.from_numpy(g_out)).sum() + (w * torch.from_numpy(g_w)).sum()).backward()
expect_array(got["outputs"][0], out.detach().numpy(), name="output", hint="compare with torch.nn.MultiheadAttention")
expect_array(got["outputs"][1], w.detach().numpy(), name="weights",
             hint="scores are q . k / sqrt(d_k), softmax over the keys")
for i, name in enumerate(["query", "key", "value"]):
    expect_array(got["input_grads"][i], xs[i].grad.numpy(), name=f"gradient for the {name}")
expect_array(got["param_grads"]["q_proj.weight"], ref.in_proj_weight.grad[:d].numpy(), name="gradient of q_proj.weight")
'''


def _write_course(path):
    notebook([
        md("# Module exercise"),
        setup("import numpy as np\nimport torch\nfrom autograder.testing import expect_array, rng, run_probe"),
        solution("MultiHeadAttention", MHA),
        graded_test_cell("test_mha_matches_torch", TEST, points=3),
    ]).write(path)


def test_module_probe_in_the_students_kernel(tmp_path):
    _write_course(tmp_path / "mha.ipynb")
    results = check_notebook(tmp_path / "mha.ipynb")
    assert [r.passed for r in results] == [True], results[0].message
    wrong = MHA.replace("/ self.d_k ** 0.5", "")
    results = check_notebook(tmp_path / "mha.ipynb", extra_code=wrong.replace("### BEGIN SOLUTION", "").replace(
        "### END SOLUTION", ""))
    assert not results[0].passed and "differs from the reference" in results[0].message


# The float32 probe: the module is made .float() and gets float32 state and inputs; what comes back keeps the
# dtypes the module computed in, so a softmax done in float64 (weights left float64) is seen.
TEST32 = TEST.replace("batch_first=True).double()", "batch_first=True).float()").replace(
    "p.copy_(torch.from_numpy(r.normal(size=tuple(p.shape)) * 0.3))",
    "p.copy_(torch.from_numpy(r.normal(size=tuple(p.shape)).astype(np.float32) * 0.3))").replace(
    "x = [r.normal(size=(B, n, d)) for _ in range(3)]", "x = [r.normal(size=(B, n, d)).astype(np.float32) for _ in range(3)]"
).replace("upstream=[g_out, g_w])", "upstream=[g_out, g_w], dtype=\"float32\")").replace(
    "name=\"weights\",", "name=\"weights\", dtype=\"float32\", rtol=1e-4, atol=1e-5,").replace(
    "name=\"output\",", "name=\"output\", dtype=\"float32\", rtol=1e-4, atol=1e-5,")
FLOAT64_SOFTMAX = ("weights = torch.softmax(scores, dim=-1)",
                   "weights = torch.softmax(scores.double(), dim=-1)\n        v = v.double()")


def _write_float32_course(path, variant):
    assert TEST32.count('dtype="float32"') == 3 and FLOAT64_SOFTMAX[0] in MHA
    body = MHA if variant == "right" else MHA.replace(*FLOAT64_SOFTMAX).replace(
        "return self.out_proj(out), weights", "return self.out_proj(out.float()), weights")
    notebook([
        md("# Module exercise, float32"),
        setup("import numpy as np\nimport torch\nfrom autograder.testing import expect_array, rng, run_probe"),
        solution("MultiHeadAttention", body),
        graded_test_cell("test_mha_float32", TEST32.split("for i, name in")[0], points=1),
    ]).write(path)


@pytest.mark.parametrize("variant,passes", [("right", True), ("float64 softmax", False)])
def test_float32_module_probe_in_the_students_kernel(tmp_path, variant, passes):
    _write_float32_course(tmp_path / "mha.ipynb", variant)
    results = check_notebook(tmp_path / "mha.ipynb")
    assert [r.passed for r in results] == [passes], results[0].message
    if not passes:
        assert "dtype" in results[0].message
