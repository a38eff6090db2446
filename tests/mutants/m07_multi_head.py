"""Chapter 07: the mistakes students really make, and correct alternatives."""

# A correct split and merge, for mutants of multi_head_attention that get another step wrong.
_SPLIT = """
def _split(X, h):
    *b, n, d = X.shape
    return np.swapaxes(X.reshape(*b, n, h, d // h), -3, -2)


def _merge(X):
    *b, h, n, dh = X.shape
    return np.swapaxes(X, -3, -2).reshape(*b, n, h * dh)
"""


def _mha(body: str) -> str:
    """A multi_head_attention whose body follows the usual first lines."""
    return _SPLIT + """
def multi_head_attention(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    x_q, x_kv = as_float_array(x_q), as_float_array(x_kv)
    W_q, W_k, W_v, W_o = (as_float_array(W) for W in (W_q, W_k, W_v, W_o))
""" + body


# A MultiHeadAttention whose forward pass is `body` (after the projections and the split).
def _module(body: str, split: str = "x.reshape(B, -1, self.h, self.dh).transpose(1, 2)",
            init_extra: str = "", bias: str = "bias") -> str:
    return f"""
class MultiHeadAttention(torch.nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h, self.dh = num_heads, d_model // num_heads
        self.q_proj = torch.nn.Linear(d_model, d_model, bias={bias})
        self.k_proj = torch.nn.Linear(d_model, d_model, bias={bias})
        self.v_proj = torch.nn.Linear(d_model, d_model, bias={bias})
        self.out_proj = torch.nn.Linear(d_model, d_model, bias={bias}){init_extra}

    def forward(self, query, key, value, mask=None):
        B, n_q, d = query.shape

        def split(x):
            return {split}

        q, k, v = split(self.q_proj(query)), split(self.k_proj(key)), split(self.v_proj(value))
        if mask is not None:
            mask = torch.as_tensor(mask, dtype=torch.bool)
{body}
"""


_RIGHT_MODULE_BODY = """
        s = q @ k.transpose(-2, -1) / self.dh ** 0.5
        w = masked_softmax_torch(s, None if mask is None else mask.unsqueeze(-3))
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, n_q, d)), w
"""

WRONG = {
    "split_heads": {
        "reshape to (..., h, n, d_head) without the transpose": """
def split_heads(X, num_heads):
    X = as_float_array(X)
    *b, n, d = X.shape
    if d % num_heads:
        raise ValueError("not divisible")
    return X.reshape(*b, num_heads, n, d // num_heads)
""",
        "strided: head h takes features h, h + num_heads, ...": """
def split_heads(X, num_heads):
    X = as_float_array(X)
    *b, n, d = X.shape
    if d % num_heads:
        raise ValueError("not divisible")
    return np.moveaxis(X.reshape(*b, n, d // num_heads, num_heads), -1, -3)
""",
        "no transpose at all: (..., n, h, d_head)": """
def split_heads(X, num_heads):
    X = as_float_array(X)
    *b, n, d = X.shape
    if d % num_heads:
        raise ValueError("not divisible")
    return X.reshape(*b, n, num_heads, d // num_heads)
""",
        "only (B, n, d_model) inputs (transpose(0, 2, 1, 3))": """
def split_heads(X, num_heads):
    X = as_float_array(X)
    B, n, d = X.shape
    if d % num_heads:
        raise ValueError("not divisible")
    return X.reshape(B, n, num_heads, d // num_heads).transpose(0, 2, 1, 3)
""",
        "drops the leftover features instead of raising": """
def split_heads(X, num_heads):
    X = as_float_array(X)
    *b, n, d = X.shape
    dh = d // num_heads
    return np.swapaxes(X[..., :num_heads * dh].reshape(*b, n, num_heads, dh), -3, -2)
""",
        "asserts divisibility (AssertionError, not ValueError)": """
def split_heads(X, num_heads):
    X = as_float_array(X)
    *b, n, d = X.shape
    assert d % num_heads == 0, "not divisible"
    return np.swapaxes(X.reshape(*b, n, num_heads, d // num_heads), -3, -2)
""",
        "always float64 (float32 not kept)": """
def split_heads(X, num_heads):
    X = np.asarray(X, dtype=np.float64)
    *b, n, d = X.shape
    if d % num_heads:
        raise ValueError("not divisible")
    return np.swapaxes(X.reshape(*b, n, num_heads, d // num_heads), -3, -2)
""",
        "integer arrays stay integer (np.asarray, no float cast)": """
def split_heads(X, num_heads):
    X = np.asarray(X)
    *b, n, d = X.shape
    if d % num_heads:
        raise ValueError("not divisible")
    return np.swapaxes(X.reshape(*b, n, num_heads, d // num_heads), -3, -2)
""",
    },
    "merge_heads": {
        "reshape without the transpose": """
def merge_heads(X):
    X = as_float_array(X)
    *b, h, n, dh = X.shape
    return X.reshape(*b, n, h * dh)
""",
        "strided: interleaves the heads' features": """
def merge_heads(X):
    X = as_float_array(X)
    *b, h, n, dh = X.shape
    return np.moveaxis(X, -3, -1).reshape(*b, n, h * dh)
""",
        "swaps the last two axes instead of heads and tokens": """
def merge_heads(X):
    X = as_float_array(X)
    *b, h, n, dh = X.shape
    return np.swapaxes(X, -1, -2).reshape(*b, n, h * dh)
""",
        "only 4-D inputs (transpose(0, 2, 1, 3))": """
def merge_heads(X):
    X = as_float_array(X)
    B, h, n, dh = X.shape
    return X.transpose(0, 2, 1, 3).reshape(B, n, h * dh)
""",
        "always float64 (float32 not kept)": """
def merge_heads(X):
    X = np.asarray(X, dtype=np.float64)
    *b, h, n, dh = X.shape
    return np.swapaxes(X, -3, -2).reshape(*b, n, h * dh)
""",
        "sums the heads instead of concatenating them": """
def merge_heads(X):
    X = as_float_array(X)
    *b, h, n, dh = X.shape
    return np.concatenate([X.sum(axis=-3)] * h, axis=-1) / h
""",
        "integer arrays stay integer (np.asarray, no float cast)": """
def merge_heads(X):
    X = np.asarray(X)
    *b, h, n, dh = X.shape
    return np.swapaxes(X, -3, -2).reshape(*b, n, h * dh)
""",
    },
    "multi_head_attention": {
        "heads merged without the transpose": _mha("""
    q, k, v = _split(x_q @ W_q, num_heads), _split(x_kv @ W_k, num_heads), _split(x_kv @ W_v, num_heads)
    s = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    w = masked_softmax(s, None if mask is None else np.asarray(mask, dtype=bool)[..., None, :, :])
    o = w @ v
    return o.reshape(*o.shape[:-3], o.shape[-2], -1) @ W_o, w
"""),
        "heads split without the transpose": _mha("""
    def bad(Y):
        *b, n, d = Y.shape
        return Y.reshape(*b, num_heads, n, d // num_heads)
    q, k, v = bad(x_q @ W_q), bad(x_kv @ W_k), bad(x_kv @ W_v)
    s = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    w = masked_softmax(s, None if mask is None else np.asarray(mask, dtype=bool)[..., None, :, :])
    o = w @ v
    return o.reshape(*o.shape[:-3], o.shape[-2], -1) @ W_o, w
"""),
        "strided heads (reshape (..., n, d_head, h))": _mha("""
    def bad(Y):
        *b, n, d = Y.shape
        return np.moveaxis(Y.reshape(*b, n, d // num_heads, num_heads), -1, -3)
    q, k, v = bad(x_q @ W_q), bad(x_kv @ W_k), bad(x_kv @ W_v)
    s = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    w = masked_softmax(s, None if mask is None else np.asarray(mask, dtype=bool)[..., None, :, :])
    o = np.moveaxis(w @ v, -3, -1)
    return o.reshape(*o.shape[:-2], -1) @ W_o, w
"""),
        "scaled by sqrt(d_model)": _mha("""
    q, k, v = _split(x_q @ W_q, num_heads), _split(x_kv @ W_k, num_heads), _split(x_kv @ W_v, num_heads)
    s = q @ np.swapaxes(k, -1, -2) / x_q.shape[-1] ** 0.5
    w = masked_softmax(s, None if mask is None else np.asarray(mask, dtype=bool)[..., None, :, :])
    return _merge(w @ v) @ W_o, w
"""),
        "scaled by sqrt(n), the number of keys (issue 27, item 11)": _mha("""
    q, k, v = _split(x_q @ W_q, num_heads), _split(x_kv @ W_k, num_heads), _split(x_kv @ W_v, num_heads)
    s = q @ np.swapaxes(k, -1, -2) / x_kv.shape[-2] ** 0.5
    w = masked_softmax(s, None if mask is None else np.asarray(mask, dtype=bool)[..., None, :, :])
    return _merge(w @ v) @ W_o, w
"""),
        "no scaling": _mha("""
    q, k, v = _split(x_q @ W_q, num_heads), _split(x_kv @ W_k, num_heads), _split(x_kv @ W_v, num_heads)
    s = q @ np.swapaxes(k, -1, -2)
    w = masked_softmax(s, None if mask is None else np.asarray(mask, dtype=bool)[..., None, :, :])
    return _merge(w @ v) @ W_o, w
"""),
        "W_o forgotten": _mha("""
    q, k, v = _split(x_q @ W_q, num_heads), _split(x_kv @ W_k, num_heads), _split(x_kv @ W_v, num_heads)
    s = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    w = masked_softmax(s, None if mask is None else np.asarray(mask, dtype=bool)[..., None, :, :])
    return _merge(w @ v), w
"""),
        "weights transposed (X @ W.T, nn.Linear style)": _mha("""
    q, k, v = _split(x_q @ W_q.T, num_heads), _split(x_kv @ W_k.T, num_heads), _split(x_kv @ W_v.T, num_heads)
    s = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    w = masked_softmax(s, None if mask is None else np.asarray(mask, dtype=bool)[..., None, :, :])
    return _merge(w @ v) @ W_o.T, w
"""),
        "weights averaged over heads": _mha("""
    q, k, v = _split(x_q @ W_q, num_heads), _split(x_kv @ W_k, num_heads), _split(x_kv @ W_v, num_heads)
    s = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    w = masked_softmax(s, None if mask is None else np.asarray(mask, dtype=bool)[..., None, :, :])
    return _merge(w @ v) @ W_o, w.mean(axis=-3)
"""),
        "mask polarity inverted": _mha("""
    q, k, v = _split(x_q @ W_q, num_heads), _split(x_kv @ W_k, num_heads), _split(x_kv @ W_v, num_heads)
    s = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    w = masked_softmax(s, None if mask is None else ~np.asarray(mask, dtype=bool)[..., None, :, :])
    return _merge(w @ v) @ W_o, w
"""),
        "mask ignored": _mha("""
    q, k, v = _split(x_q @ W_q, num_heads), _split(x_kv @ W_k, num_heads), _split(x_kv @ W_v, num_heads)
    s = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    return _merge(masked_softmax(s) @ v) @ W_o, masked_softmax(s)
"""),
        "mask not broadcast over heads (no head axis inserted)": _mha("""
    q, k, v = _split(x_q @ W_q, num_heads), _split(x_kv @ W_k, num_heads), _split(x_kv @ W_v, num_heads)
    s = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    w = masked_softmax(s, None if mask is None else np.asarray(mask, dtype=bool))
    return _merge(w @ v) @ W_o, w
"""),
        "NaN on a fully masked row (plain softmax)": _mha("""
    q, k, v = _split(x_q @ W_q, num_heads), _split(x_kv @ W_k, num_heads), _split(x_kv @ W_v, num_heads)
    s = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool)[..., None, :, :], s, -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        w = e / e.sum(axis=-1, keepdims=True)
    return _merge(w @ v) @ W_o, w
"""),
        "fully masked row filled with -1e9 (uniform weights)": _mha("""
    q, k, v = _split(x_q @ W_q, num_heads), _split(x_kv @ W_k, num_heads), _split(x_kv @ W_v, num_heads)
    s = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool)[..., None, :, :], s, -1e9)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return _merge(w @ v) @ W_o, w
"""),
        "softmax over the wrong axis (queries)": _mha("""
    q, k, v = _split(x_q @ W_q, num_heads), _split(x_kv @ W_k, num_heads), _split(x_kv @ W_v, num_heads)
    s = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool)[..., None, :, :], s, -np.inf)
    e = np.exp(s - s.max(axis=-2, keepdims=True))
    w = np.nan_to_num(e / e.sum(axis=-2, keepdims=True))
    return _merge(w @ v) @ W_o, w
"""),
        "scale folded into W_q in place (modifies the input)": _mha("""
    W_q /= (W_q.shape[-1] // num_heads) ** 0.5
    q, k, v = _split(x_q @ W_q, num_heads), _split(x_kv @ W_k, num_heads), _split(x_kv @ W_v, num_heads)
    s = q @ np.swapaxes(k, -1, -2)
    w = masked_softmax(s, None if mask is None else np.asarray(mask, dtype=bool)[..., None, :, :])
    return _merge(w @ v) @ W_o, w
"""),
        "only 2-D inputs (einsum without batch dimensions)": _mha("""
    q = _split(np.einsum("nd,de->ne", x_q, W_q), num_heads)
    k, v = _split(x_kv @ W_k, num_heads), _split(x_kv @ W_v, num_heads)
    s = np.einsum("hqd,hkd->hqk", q, k) / q.shape[-1] ** 0.5
    w = masked_softmax(s, None if mask is None else np.asarray(mask, dtype=bool)[..., None, :, :])
    return _merge(w @ v) @ W_o, w
"""),
        "returns (weights, out)": _mha("""
    q, k, v = _split(x_q @ W_q, num_heads), _split(x_kv @ W_k, num_heads), _split(x_kv @ W_v, num_heads)
    s = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    w = masked_softmax(s, None if mask is None else np.asarray(mask, dtype=bool)[..., None, :, :])
    return w, _merge(w @ v) @ W_o
"""),
        "keys and values from x_q (self-attention only)": _mha("""
    q, k, v = _split(x_q @ W_q, num_heads), _split(x_q @ W_k, num_heads), _split(x_q @ W_v, num_heads)
    s = q @ np.swapaxes(k, -1, -2) / q.shape[-1] ** 0.5
    w = masked_softmax(s, None if mask is None else np.asarray(mask, dtype=bool)[..., None, :, :])
    return _merge(w @ v) @ W_o, w
"""),
        "casts everything to float64": _SPLIT + """
def multi_head_attention(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    x_q, x_kv, W_q, W_k, W_v, W_o = (np.asarray(a, dtype=np.float64) for a in (x_q, x_kv, W_q, W_k, W_v, W_o))
    q, k, v = _split(x_q @ W_q, num_heads), _split(x_kv @ W_k, num_heads), _split(x_kv @ W_v, num_heads)
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    w = masked_softmax(s, None if mask is None else np.asarray(mask, dtype=bool)[..., None, :, :])
    return _merge(w @ v) @ W_o, w
""",
    },
    "MultiHeadAttention": {
        "heads merged without the transpose": _module("""
        s = q @ k.transpose(-2, -1) / self.dh ** 0.5
        w = masked_softmax_torch(s, None if mask is None else mask.unsqueeze(-3))
        return self.out_proj((w @ v).reshape(B, n_q, d)), w
"""),
        "heads split without the transpose": _module(_RIGHT_MODULE_BODY,
                                                     split="x.reshape(B, self.h, -1, self.dh)"),
        "strided heads (reshape (B, n, d_head, h))": _module(_RIGHT_MODULE_BODY,
                                                             split="x.reshape(B, -1, self.dh, self.h).permute(0, 3, 1, 2)"),
        "scaled by sqrt(d_model)": _module("""
        s = q @ k.transpose(-2, -1) / d ** 0.5
        w = masked_softmax_torch(s, None if mask is None else mask.unsqueeze(-3))
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, n_q, d)), w
"""),
        "scaled by sqrt(n), the number of keys (issue 27, item 11)": _module("""
        s = q @ k.transpose(-2, -1) / k.shape[-2] ** 0.5
        w = masked_softmax_torch(s, None if mask is None else mask.unsqueeze(-3))
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, n_q, d)), w
"""),
        "scaled by sqrt(n_q), the number of queries": _module("""
        s = q @ k.transpose(-2, -1) / n_q ** 0.5
        w = masked_softmax_torch(s, None if mask is None else mask.unsqueeze(-3))
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, n_q, d)), w
"""),
        "plain softmax, times the mask, renormalised (clamped) (issue 27, item 6)": _module("""
        s = q @ k.transpose(-2, -1) / self.dh ** 0.5
        w = torch.softmax(s, dim=-1)
        if mask is not None:
            w = w * mask.unsqueeze(-3)
            w = w / w.sum(dim=-1, keepdim=True).clamp(min=1e-12)
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, n_q, d)), w
"""),
        "no scaling": _module("""
        s = q @ k.transpose(-2, -1)
        w = masked_softmax_torch(s, None if mask is None else mask.unsqueeze(-3))
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, n_q, d)), w
"""),
        "out_proj forgotten": _module("""
        s = q @ k.transpose(-2, -1) / self.dh ** 0.5
        w = masked_softmax_torch(s, None if mask is None else mask.unsqueeze(-3))
        return (w @ v).transpose(1, 2).reshape(B, n_q, d), w
"""),
        "weights averaged over heads": _module("""
        s = q @ k.transpose(-2, -1) / self.dh ** 0.5
        w = masked_softmax_torch(s, None if mask is None else mask.unsqueeze(-3))
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, n_q, d)), w.mean(dim=1)
"""),
        "mask polarity inverted (nn.MultiheadAttention's convention)": _module("""
        s = q @ k.transpose(-2, -1) / self.dh ** 0.5
        w = masked_softmax_torch(s, None if mask is None else ~mask.unsqueeze(-3))
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, n_q, d)), w
"""),
        "mask not broadcast over heads": _module("""
        s = q @ k.transpose(-2, -1) / self.dh ** 0.5
        w = masked_softmax_torch(s, mask)
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, n_q, d)), w
"""),
        "NaN on a fully masked row (plain softmax)": _module("""
        s = q @ k.transpose(-2, -1) / self.dh ** 0.5
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(-3), float("-inf"))
        w = torch.softmax(s, dim=-1)
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, n_q, d)), w
"""),
        "additive -inf mask, rows zeroed with torch.where after the softmax (NaN gradients)": _module("""
        s = q @ k.transpose(-2, -1) / self.dh ** 0.5
        if mask is not None:
            m = mask.unsqueeze(-3)
            s = s + torch.zeros(m.shape, dtype=s.dtype).masked_fill(~m, float("-inf"))
            w = torch.where(m.any(dim=-1, keepdim=True), torch.softmax(s, dim=-1), 0.0)
        else:
            w = torch.softmax(s, dim=-1)
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, n_q, d)), w
"""),
        "softmax over the wrong axis": _module("""
        s = q @ k.transpose(-2, -1) / self.dh ** 0.5
        if mask is not None:
            s = s.masked_fill(~mask.unsqueeze(-3), -1e9)
        w = torch.softmax(s, dim=-2)
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, n_q, d)), w
"""),
        "values from key instead of value": _module("""
        v = split(self.v_proj(key))
        s = q @ k.transpose(-2, -1) / self.dh ** 0.5
        w = masked_softmax_torch(s, None if mask is None else mask.unsqueeze(-3))
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, n_q, d)), w
"""),
        "keys and values from query (self-attention only)": _module("""
        k, v = split(self.k_proj(query)), split(self.v_proj(query))
        s = q @ k.transpose(-2, -1) / self.dh ** 0.5
        w = masked_softmax_torch(s, None if mask is None else mask.unsqueeze(-3))
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, n_q, d)), w
"""),
        "bias flag ignored (always bias=True)": _module(_RIGHT_MODULE_BODY, bias="True"),
        "returns (weights, out)": _module("""
        s = q @ k.transpose(-2, -1) / self.dh ** 0.5
        w = masked_softmax_torch(s, None if mask is None else mask.unsqueeze(-3))
        return w, self.out_proj((w @ v).transpose(1, 2).reshape(B, n_q, d))
"""),
        "output computed with NumPy (gradients lost)": _module("""
        s = q @ k.transpose(-2, -1) / self.dh ** 0.5
        w = masked_softmax_torch(s, None if mask is None else mask.unsqueeze(-3))
        merged = np.swapaxes((w @ v).detach().numpy(), 1, 2).reshape(B, n_q, d)
        return self.out_proj(torch.from_numpy(merged)), w
"""),
        "softmax in float64 for stability: a float32 module returns float64 weights": _module("""
        s = (q @ k.transpose(-2, -1) / self.dh ** 0.5).double()
        w = masked_softmax_torch(s, None if mask is None else mask.unsqueeze(-3))
        return self.out_proj((w.to(v.dtype) @ v).transpose(1, 2).reshape(B, n_q, d)), w
"""),
        "blocked scores filled from a float64 tensor (a float32 module raises)": _module("""
        s = q @ k.transpose(-2, -1) / self.dh ** 0.5
        if mask is not None:
            m = mask.unsqueeze(-3)
            s = torch.where(m, s, torch.full(s.shape, -1e30, dtype=torch.float64))
            w = torch.softmax(s, dim=-1) * m.any(dim=-1, keepdim=True)
        else:
            w = torch.softmax(s, dim=-1)
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, n_q, d)), w
"""),
        "scale as a float64 tensor: a float32 module computes in float64": _module("""
        scale = torch.full((1, 1, 1, 1), self.dh ** -0.5, dtype=torch.float64)
        s = q @ k.transpose(-2, -1) * scale
        w = masked_softmax_torch(s, None if mask is None else mask.unsqueeze(-3))
        return self.out_proj((w.to(v.dtype) @ v).transpose(1, 2).reshape(B, n_q, d)), w
"""),
    },
}

CORRECT = {
    "split_heads": {
        "a stack of column blocks": """
def split_heads(X, num_heads):
    X = as_float_array(X)
    d = X.shape[-1]
    if num_heads <= 0 or d % num_heads:
        raise ValueError(f"{num_heads} heads do not divide d_model = {d}")
    dh = d // num_heads
    return np.stack([X[..., i * dh:(i + 1) * dh] for i in range(num_heads)], axis=-3)
""",
        "np.split and np.stack": """
def split_heads(X, num_heads):
    X = as_float_array(X)
    if X.shape[-1] % num_heads != 0:
        raise ValueError("d_model must be a multiple of num_heads")
    return np.stack(np.split(X, num_heads, axis=-1), axis=-3)
""",
        "PyTorch inside": """
def split_heads(X, num_heads):
    X = as_float_array(X)
    if X.shape[-1] % num_heads:
        raise ValueError("d_model must be a multiple of num_heads")
    t = torch.from_numpy(np.array(X))
    return t.unflatten(-1, (num_heads, -1)).transpose(-3, -2).contiguous().numpy()
""",
    },
    "merge_heads": {
        "concatenate the heads": """
def merge_heads(X):
    X = as_float_array(X)
    return np.concatenate([X[..., i, :, :] for i in range(X.shape[-3])], axis=-1)
""",
        "moveaxis then reshape": """
def merge_heads(X):
    X = as_float_array(X)
    Y = np.moveaxis(X, -3, -2)
    return Y.reshape(Y.shape[:-2] + (-1,))
""",
        "PyTorch inside": """
def merge_heads(X):
    X = as_float_array(X)
    return torch.from_numpy(np.array(X)).transpose(-3, -2).flatten(-2).numpy()
""",
    },
    "multi_head_attention": {
        "loop over heads with column slices": """
def multi_head_attention(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    x_q, x_kv = as_float_array(x_q), as_float_array(x_kv)
    W_q, W_k, W_v, W_o = (as_float_array(W) for W in (W_q, W_k, W_v, W_o))
    dh = W_q.shape[1] // num_heads
    m = None if mask is None else np.asarray(mask, dtype=bool)
    outs, ws = [], []
    for i in range(num_heads):
        cols = slice(i * dh, (i + 1) * dh)
        q, k, v = x_q @ W_q[:, cols], x_kv @ W_k[:, cols], x_kv @ W_v[:, cols]
        w = masked_softmax(q @ np.swapaxes(k, -1, -2) / dh ** 0.5, m)
        outs.append(w @ v)
        ws.append(w)
    return np.concatenate(outs, axis=-1) @ W_o, np.stack(ws, axis=-3)
""",
        "einsum with the split inline": """
def multi_head_attention(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    x_q, x_kv = as_float_array(x_q), as_float_array(x_kv)
    W_q, W_k, W_v, W_o = (as_float_array(W) for W in (W_q, W_k, W_v, W_o))
    h = num_heads
    q = (x_q @ W_q).reshape(x_q.shape[:-1] + (h, -1))      # (..., n_q, h, dh)
    k = (x_kv @ W_k).reshape(x_kv.shape[:-1] + (h, -1))
    v = (x_kv @ W_v).reshape(x_kv.shape[:-1] + (h, -1))
    s = np.einsum("...qhd,...khd->...hqk", q, k) * (1.0 / q.shape[-1] ** 0.5)
    if mask is not None:
        mask = np.expand_dims(np.asarray(mask, dtype=bool), -3)
    w = masked_softmax(s, mask)
    o = np.einsum("...hqk,...khd->...qhd", w, v)
    return o.reshape(o.shape[:-2] + (-1,)) @ W_o, w
""",
        "PyTorch inside, with scaled_dot_product_attention": """
def multi_head_attention(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads, mask=None):
    x_q, x_kv = as_float_array(x_q), as_float_array(x_kv)
    W_q, W_k, W_v, W_o = (torch.from_numpy(np.array(as_float_array(W))) for W in (W_q, W_k, W_v, W_o))
    xq, xkv = torch.from_numpy(np.array(x_q)), torch.from_numpy(np.array(x_kv))
    split = lambda t: t.unflatten(-1, (num_heads, -1)).transpose(-3, -2)
    q, k, v = split(xq @ W_q), split(xkv @ W_k), split(xkv @ W_v)
    m = None if mask is None else torch.as_tensor(np.asarray(mask, dtype=bool)).unsqueeze(-3)
    s = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if m is not None:
        s = s.masked_fill(~m, float("-inf"))
    w = torch.softmax(s, dim=-1).nan_to_num(0.0)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m)
    return (out.transpose(-3, -2).flatten(-2) @ W_o).numpy(), w.numpy()
""",
    },
    "MultiHeadAttention": {
        "loop over heads": """
class MultiHeadAttention(torch.nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h = num_heads
        self.q_proj = torch.nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = torch.nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = torch.nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = torch.nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        q, k, v = self.q_proj(query), self.k_proj(key), self.v_proj(value)
        dh = q.shape[-1] // self.h
        m = None if mask is None else torch.as_tensor(mask, dtype=torch.bool)
        heads, ws = [], []
        for i in range(self.h):
            cols = slice(i * dh, (i + 1) * dh)
            w = masked_softmax_torch(q[..., cols] @ k[..., cols].transpose(-2, -1) / dh ** 0.5, m)
            heads.append(w @ v[..., cols])
            ws.append(w)
        return self.out_proj(torch.cat(heads, dim=-1)), torch.stack(ws, dim=1)
""",
        "einsum and unflatten, own NaN-free softmax": """
class MultiHeadAttention(torch.nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.num_heads = num_heads
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            setattr(self, name, torch.nn.Linear(d_model, d_model, bias=bias))

    def forward(self, query, key, value, mask=None):
        h = self.num_heads
        q = self.q_proj(query).unflatten(-1, (h, -1))           # (B, n_q, h, dh)
        k = self.k_proj(key).unflatten(-1, (h, -1))
        v = self.v_proj(value).unflatten(-1, (h, -1))
        s = torch.einsum("bqhd,bkhd->bhqk", q, k) / q.shape[-1] ** 0.5
        if mask is None:
            w = torch.softmax(s, dim=-1)
        else:
            m = torch.as_tensor(mask, dtype=torch.bool).unsqueeze(-3).expand_as(s)
            safe = torch.where(m, s, torch.full_like(s, -1e30))
            w = torch.softmax(safe, dim=-1) * m.any(dim=-1, keepdim=True)
        o = torch.einsum("bhqk,bkhd->bqhd", w, v).flatten(-2)
        return self.out_proj(o), w
""",
        "masked_fill, plain softmax, then torch.where (masked_fill's backward zeroes the NaN)":
            _module("""
        s = q @ k.transpose(-2, -1) / self.dh ** 0.5
        if mask is not None:
            m = mask.unsqueeze(-3)
            s = s.masked_fill(~m, float("-inf"))
            w = torch.where(m.any(dim=-1, keepdim=True), torch.softmax(s, dim=-1), 0.0)
        else:
            w = torch.softmax(s, dim=-1)
        return self.out_proj((w @ v).transpose(1, 2).reshape(B, n_q, d)), w
"""),
        "fused in_proj-style computation from the three layers' weights": """
class MultiHeadAttention(torch.nn.Module):
    def __init__(self, d_model, num_heads, bias=True):
        super().__init__()
        self.h = num_heads
        self.q_proj = torch.nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = torch.nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = torch.nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = torch.nn.Linear(d_model, d_model, bias=bias)

    def forward(self, query, key, value, mask=None):
        B, n_q, d = query.shape
        q = torch.nn.functional.linear(query, self.q_proj.weight, self.q_proj.bias)
        k = torch.nn.functional.linear(key, self.k_proj.weight, self.k_proj.bias)
        v = torch.nn.functional.linear(value, self.v_proj.weight, self.v_proj.bias)
        q, k, v = (t.view(B, t.shape[1], self.h, -1).permute(0, 2, 1, 3) for t in (q, k, v))
        m = None if mask is None else torch.as_tensor(mask, dtype=torch.bool)[..., None, :, :]
        w = masked_softmax_torch(torch.matmul(q, k.transpose(2, 3)) * (q.shape[-1] ** -0.5), m)
        o = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous().view(B, n_q, d)
        return self.out_proj(o), w
""",
    },
}
