"""Chapter 05: the mistakes students really make, and correct alternatives."""

WRONG = {
    "qkv_projection": {
        "values left untransformed (V = X)": """
def qkv_projection(X, W_q, W_k, W_v):
    X = as_float_array(X)
    return X @ as_float_array(W_q), X @ as_float_array(W_k), X
""",
        "W_k used for the values": """
def qkv_projection(X, W_q, W_k, W_v):
    X = as_float_array(X)
    return X @ as_float_array(W_q), X @ as_float_array(W_k), X @ as_float_array(W_k)
""",
        "queries and keys swapped": """
def qkv_projection(X, W_q, W_k, W_v):
    X = as_float_array(X)
    return X @ as_float_array(W_k), X @ as_float_array(W_q), X @ as_float_array(W_v)
""",
        "column-vector convention: returns (W^T X^T), one token per column": """
def qkv_projection(X, W_q, W_k, W_v):
    X = as_float_array(X)
    return tuple(as_float_array(W).T @ X.T for W in (W_q, W_k, W_v))
""",
        "2-D only einsum: no batch dimensions": """
def qkv_projection(X, W_q, W_k, W_v):
    X = as_float_array(X)
    return tuple(np.einsum("nd,dk->nk", X, as_float_array(W)) for W in (W_q, W_k, W_v))
""",
        "flattens the batch and forgets to reshape back": """
def qkv_projection(X, W_q, W_k, W_v):
    X = as_float_array(X)
    X2 = X.reshape(-1, X.shape[-1])
    return X2 @ as_float_array(W_q), X2 @ as_float_array(W_k), X2 @ as_float_array(W_v)
""",
        "casts to float32": """
def qkv_projection(X, W_q, W_k, W_v):
    X = np.asarray(X, dtype=np.float32)
    return tuple(X @ np.asarray(W, dtype=np.float32) for W in (W_q, W_k, W_v))
""",
        "always float64, even for float32 inputs": """
def qkv_projection(X, W_q, W_k, W_v):
    X = np.asarray(X, dtype=np.float64)
    return tuple(X @ np.asarray(W, dtype=np.float64) for W in (W_q, W_k, W_v))
""",
        "returns a list of torch tensors": """
def qkv_projection(X, W_q, W_k, W_v):
    tX = torch.as_tensor(as_float_array(X))
    return [tX @ torch.as_tensor(as_float_array(W)) for W in (W_q, W_k, W_v)]
""",
        "hard-coded for the visible test's shape": """
def qkv_projection(X, W_q, W_k, W_v):
    X = as_float_array(X)
    if X.shape == (5, 6):
        return X @ as_float_array(W_q), X @ as_float_array(W_k), X @ as_float_array(W_v)
    return tuple(np.zeros(X.shape[:-1] + (np.shape(W)[1],)) for W in (W_q, W_k, W_v))
""",
    },
    "qkv_attention": {
        "scaled by sqrt(d_k) (chapter 06, not yet)": """
def qkv_attention(X, W_q, W_k, W_v):
    Q, K, V = qkv_projection(X, W_q, W_k, W_v)
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return w @ V, w
""",
        "mixes X instead of the values V": """
def qkv_attention(X, W_q, W_k, W_v):
    Q, K, V = qkv_projection(X, W_q, W_k, W_v)
    s = Q @ np.swapaxes(K, -1, -2)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return w @ as_float_array(X), w
""",
        "K Q^T: transposed weights": """
def qkv_attention(X, W_q, W_k, W_v):
    Q, K, V = qkv_projection(X, W_q, W_k, W_v)
    s = K @ np.swapaxes(Q, -1, -2)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return w @ V, w
""",
        "softmax over the wrong axis (columns)": """
def qkv_attention(X, W_q, W_k, W_v):
    Q, K, V = qkv_projection(X, W_q, W_k, W_v)
    s = Q @ np.swapaxes(K, -1, -2)
    e = np.exp(s - s.max(axis=-2, keepdims=True))
    w = e / e.sum(axis=-2, keepdims=True)
    return w @ V, w
""",
        "returns (W, Y) swapped": """
def qkv_attention(X, W_q, W_k, W_v):
    Q, K, V = qkv_projection(X, W_q, W_k, W_v)
    s = Q @ np.swapaxes(K, -1, -2)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return w, w @ V
""",
        "W_k used for the values": """
def qkv_attention(X, W_q, W_k, W_v):
    Q, K, V = qkv_projection(X, W_q, W_k, W_v)
    s = Q @ np.swapaxes(K, -1, -2)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return w @ K, w
""",
        "no max shift: overflows for large scores": """
def qkv_attention(X, W_q, W_k, W_v):
    Q, K, V = qkv_projection(X, W_q, W_k, W_v)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(Q @ np.swapaxes(K, -1, -2))
        w = e / e.sum(axis=-1, keepdims=True)
    return w @ V, w
""",
        "shift by the global maximum: rows far below it underflow to 0/0": """
def qkv_attention(X, W_q, W_k, W_v):
    Q, K, V = qkv_projection(X, W_q, W_k, W_v)
    s = Q @ np.swapaxes(K, -1, -2)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max())
        w = e / e.sum(axis=-1, keepdims=True)
    return w @ V, w
""",
        "K.T instead of swapping the last two axes (breaks batches)": """
def qkv_attention(X, W_q, W_k, W_v):
    Q, K, V = qkv_projection(X, W_q, W_k, W_v)
    s = Q @ K.T
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return w @ V, w
""",
        "returns the raw scores as the weights": """
def qkv_attention(X, W_q, W_k, W_v):
    Q, K, V = qkv_projection(X, W_q, W_k, W_v)
    s = Q @ np.swapaxes(K, -1, -2)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return w @ V, s
""",
        "casts to float32": """
def qkv_attention(X, W_q, W_k, W_v):
    Q, K, V = (a.astype(np.float32) for a in qkv_projection(X, W_q, W_k, W_v))
    s = Q @ np.swapaxes(K, -1, -2)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return w @ V, w
""",
        "subtracts the maximum from X in place": """
def qkv_attention(X, W_q, W_k, W_v):
    X = as_float_array(X)
    X -= X.max()
    Q, K, V = qkv_projection(X, W_q, W_k, W_v)
    s = Q @ np.swapaxes(K, -1, -2)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    return w @ V, w
""",
    },
}

CORRECT = {
    "qkv_projection": {
        "einsum with an ellipsis": """
def qkv_projection(X, W_q, W_k, W_v):
    X = as_float_array(X)
    return tuple(np.einsum("...nd,de->...ne", X, as_float_array(W)) for W in (W_q, W_k, W_v))
""",
        "tensordot over the feature axis": """
def qkv_projection(X, W_q, W_k, W_v):
    X = as_float_array(X)
    return tuple(np.tensordot(X, as_float_array(W), axes=([-1], [0])) for W in (W_q, W_k, W_v))
""",
        "torch matmul, converted back to NumPy": """
def qkv_projection(X, W_q, W_k, W_v):
    tX = torch.from_numpy(np.ascontiguousarray(as_float_array(X)))
    return tuple(torch.matmul(tX, torch.from_numpy(np.ascontiguousarray(as_float_array(W)))).numpy()
                 for W in (W_q, W_k, W_v))
""",
        "loop over tokens": """
def qkv_projection(X, W_q, W_k, W_v):
    X = as_float_array(X)
    outs = []
    for W in (W_q, W_k, W_v):
        W = as_float_array(W)
        out = np.zeros(X.shape[:-1] + (W.shape[1],), dtype=np.result_type(X, W))
        for idx in np.ndindex(X.shape[:-1]):
            out[idx] = X[idx] @ W
        outs.append(out)
    return tuple(outs)
""",
    },
    "qkv_attention": {
        "torch.softmax, converted back to NumPy": """
def qkv_attention(X, W_q, W_k, W_v):
    Q, K, V = (torch.from_numpy(np.ascontiguousarray(a)) for a in qkv_projection(X, W_q, W_k, W_v))
    w = torch.softmax(Q @ K.transpose(-1, -2), dim=-1)
    return (w @ V).numpy(), w.numpy()
""",
        "einsum and logsumexp": """
def qkv_attention(X, W_q, W_k, W_v):
    Q, K, V = qkv_projection(X, W_q, W_k, W_v)
    s = np.einsum("...id,...jd->...ij", Q, K)
    m = s.max(axis=-1, keepdims=True)
    w = np.exp(s - (m + np.log(np.exp(s - m).sum(axis=-1, keepdims=True))))
    return np.einsum("...ij,...jv->...iv", w, V), w
""",
        "loop over sequences and queries": """
def qkv_attention(X, W_q, W_k, W_v):
    Q, K, V = qkv_projection(X, W_q, W_k, W_v)
    W = np.zeros(Q.shape[:-1] + (K.shape[-2],), dtype=Q.dtype)
    Y = np.zeros(Q.shape[:-1] + (V.shape[-1],), dtype=Q.dtype)
    for b in np.ndindex(Q.shape[:-2]):
        for i in range(Q.shape[-2]):
            s = np.array([Q[b][i] @ K[b][j] for j in range(K.shape[-2])], dtype=Q.dtype)
            e = np.exp(s - s.max())
            W[b][i] = e / e.sum()
            Y[b][i] = W[b][i] @ V[b]
    return Y, W
""",
    },
}
