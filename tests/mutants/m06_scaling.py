"""Chapter 06: the mistakes students really make, and correct alternatives."""

WRONG = {
    "scaled_dot_product_attention": {
        "no scaling": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    s = Q @ np.swapaxes(K, -1, -2)
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    w = e / np.maximum(e.sum(axis=-1, keepdims=True), 1e-300)
    return w @ V, w
""",
        "scaled by d_k instead of sqrt(d_k)": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    s = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1]
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    w = e / np.maximum(e.sum(axis=-1, keepdims=True), 1e-300)
    return w @ V, w
""",
        "scaled by sqrt(d_v), the width of V": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    s = Q @ np.swapaxes(K, -1, -2) / V.shape[-1] ** 0.5
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    w = e / np.maximum(e.sum(axis=-1, keepdims=True), 1e-300)
    return w @ V, w
""",
        "scaled by sqrt(K.shape[0]) (the number of keys for 2-D inputs)": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(K.shape[0]).item()
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    w = e / np.maximum(e.sum(axis=-1, keepdims=True), 1e-300)
    return w @ V, w
""",
        "mask polarity inverted (True treated as blocked)": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    s = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1] ** 0.5
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), -np.inf, s)
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    w = e / np.maximum(e.sum(axis=-1, keepdims=True), 1e-300)
    return w @ V, w
""",
        "NaN on a fully masked row (plain stable softmax)": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    s = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1] ** 0.5
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        w = e / e.sum(axis=-1, keepdims=True)
    return w @ V, w
""",
        "blocked scores filled with -1e9 (fully masked rows become uniform)": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    s = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1] ** 0.5
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -1e9)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return w @ V, w
""",
        "masked with 0 instead of -inf": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    s = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1] ** 0.5
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, 0.0)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return w @ V, w
""",
        "mask multiplied into the weights after the softmax": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    s = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1] ** 0.5
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    if mask is not None:
        w = w * np.asarray(mask, dtype=bool)
    return w @ V, w
""",
        "mask ignored": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    s = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1] ** 0.5
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return w @ V, w
""",
        "softmax over the wrong axis (queries instead of keys)": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    s = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1] ** 0.5
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
    m = np.max(s, axis=-2, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    w = e / np.maximum(e.sum(axis=-2, keepdims=True), 1e-300)
    return w @ V, w
""",
        "K.T instead of swapaxes(K, -1, -2) (wrong for batches)": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    s = Q @ K.T / Q.shape[-1] ** 0.5
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    w = e / np.maximum(e.sum(axis=-1, keepdims=True), 1e-300)
    return w @ V, w
""",
        "2-D only (einsum without batch dimensions)": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    s = np.einsum("qd,kd->qk", Q, K) / Q.shape[-1] ** 0.5
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    w = e / np.maximum(e.sum(axis=-1, keepdims=True), 1e-300)
    return np.einsum("qk,kv->qv", w, V), w
""",
        "boolean indexing scores[~mask] (the mask cannot broadcast)": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    s = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1] ** 0.5
    if mask is not None:
        s[~np.asarray(mask, dtype=bool)] = -np.inf
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    w = e / np.maximum(e.sum(axis=-1, keepdims=True), 1e-300)
    return w @ V, w
""",
        "returns (weights, out)": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    s = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1] ** 0.5
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    w = e / np.maximum(e.sum(axis=-1, keepdims=True), 1e-300)
    return w, w @ V
""",
        "no max shift (overflows on large scores)": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    s = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1] ** 0.5
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(s)
        total = e.sum(axis=-1, keepdims=True)
        w = np.where(total > 0, e / np.where(total > 0, total, 1.0), 0.0)
    return w @ V, w
""",
        "scales Q in place (modifies the input)": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    Q /= Q.shape[-1] ** 0.5
    s = Q @ np.swapaxes(K, -1, -2)
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    w = e / np.maximum(e.sum(axis=-1, keepdims=True), 1e-300)
    return w @ V, w
""",
        "casts everything to float32": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=np.float32) for a in (Q, K, V))
    s = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1] ** 0.5
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    w = e / np.maximum(e.sum(axis=-1, keepdims=True), 1e-30)
    return w @ V, w
""",
        "always float64, even for float32 inputs": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    w = e / np.maximum(e.sum(axis=-1, keepdims=True), 1e-300)
    return w @ V, w
""",
    },
}

CORRECT = {
    "scaled_dot_product_attention": {
        "einsum and logsumexp": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    s = np.einsum("...qd,...kd->...qk", Q, K) * (1.0 / Q.shape[-1] ** 0.5)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    top = np.max(s, axis=-1, keepdims=True)
    top = np.where(np.isneginf(top), 0.0, top)
    lse = top + np.log(np.sum(np.exp(s - top), axis=-1, keepdims=True))
    with np.errstate(invalid="ignore"):
        w = np.where(np.isneginf(lse), 0.0, np.exp(s - lse))
    return np.einsum("...qk,...kv->...qv", w, V), w
""",
        "loops over batch elements and query rows": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    n_q, n_k = Q.shape[-2], K.shape[-2]
    if mask is not None:
        batch = np.broadcast_shapes(batch, np.shape(mask)[:-2])
        allowed = np.broadcast_to(np.asarray(mask, dtype=bool), batch + (n_q, n_k))
    else:
        allowed = np.ones(batch + (n_q, n_k), dtype=bool)
    Qb = np.broadcast_to(Q, batch + Q.shape[-2:])
    Kb = np.broadcast_to(K, batch + K.shape[-2:])
    Vb = np.broadcast_to(V, batch + V.shape[-2:])
    dtype = np.result_type(Q, K, V)
    out = np.zeros(batch + (n_q, V.shape[-1]), dtype=dtype)
    weights = np.zeros(batch + (n_q, n_k), dtype=dtype)
    for idx in np.ndindex(batch):
        for i in range(n_q):
            keep = allowed[idx][i]
            if not keep.any():
                continue
            row = np.array([Qb[idx][i] @ Kb[idx][j] for j in range(n_k)]) / np.sqrt(Q.shape[-1]).astype(dtype)
            row = row[keep]
            e = np.exp(row - row.max())
            weights[idx][i, keep] = e / e.sum()
            out[idx][i] = weights[idx][i] @ Vb[idx]
    return out, weights
""",
        "PyTorch inside, NumPy outside": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    q, k, v = torch.from_numpy(np.array(Q)), torch.from_numpy(np.array(K)), torch.from_numpy(np.array(V))
    scores = torch.matmul(q, k.transpose(-2, -1)) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~torch.as_tensor(np.asarray(mask, dtype=bool)), float("-inf"))
    w = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return (w @ v).numpy(), w.numpy()
""",
        "plain softmax, then NaN rows replaced by zeros": """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    scale = 1 / np.sqrt(Q.shape[-1])
    s = np.matmul(Q, np.moveaxis(K, -1, -2)) * scale.astype(Q.dtype)
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        w = np.nan_to_num(e / e.sum(axis=-1, keepdims=True), nan=0.0)
    return np.matmul(w, V), w
""",
    },
}
