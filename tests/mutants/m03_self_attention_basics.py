"""Chapter 03: the mistakes students really make, and correct alternatives."""

WRONG = {
    "simple_self_attention": {
        "softmax over the wrong axis (columns)": """
def simple_self_attention(X):
    X = as_float_array(X)
    S = X @ np.swapaxes(X, -1, -2)
    E = np.exp(S - S.max(axis=-2, keepdims=True))
    W = E / E.sum(axis=-2, keepdims=True)
    return W @ X, W
""",
        "softmax over axis 1 (right for one sentence, wrong for a batch)": """
def simple_self_attention(X):
    X = as_float_array(X)
    S = X @ np.swapaxes(X, -1, -2)
    E = np.exp(S - S.max(axis=1, keepdims=True))
    W = E / E.sum(axis=1, keepdims=True)
    return W @ X, W
""",
        "scores scaled by sqrt(d)": """
def simple_self_attention(X):
    X = as_float_array(X)
    S = X @ np.swapaxes(X, -1, -2) / np.sqrt(X.shape[-1])
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    W = E / E.sum(axis=-1, keepdims=True)
    return W @ X, W
""",
        "returns (W, Y) instead of (Y, W)": """
def simple_self_attention(X):
    X = as_float_array(X)
    S = X @ np.swapaxes(X, -1, -2)
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    W = E / E.sum(axis=-1, keepdims=True)
    return W, W @ X
""",
        "Y = W X^T instead of W X": """
def simple_self_attention(X):
    X = as_float_array(X)
    Xt = np.swapaxes(X, -1, -2)
    S = X @ Xt
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    W = E / E.sum(axis=-1, keepdims=True)
    return W @ Xt, W
""",
        "Y = W^T X": """
def simple_self_attention(X):
    X = as_float_array(X)
    S = X @ np.swapaxes(X, -1, -2)
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    W = E / E.sum(axis=-1, keepdims=True)
    return np.swapaxes(W, -1, -2) @ X, W
""",
        "no max shift (overflows on large inputs)": """
def simple_self_attention(X):
    X = as_float_array(X)
    E = np.exp(X @ np.swapaxes(X, -1, -2))
    W = E / E.sum(axis=-1, keepdims=True)
    return W @ X, W
""",
        "shift by one global maximum (underflows the other rows)": """
def simple_self_attention(X):
    X = as_float_array(X)
    S = X @ np.swapaxes(X, -1, -2)
    E = np.exp(S - S.max())
    W = E / E.sum(axis=-1, keepdims=True)
    return W @ X, W
""",
        "shift by the self-score x_i . x_i (assumed to be the row maximum)": """
def simple_self_attention(X):
    X = as_float_array(X)
    S = X @ np.swapaxes(X, -1, -2)
    E = np.exp(S - np.sum(X * X, axis=-1)[..., :, None])
    W = E / E.sum(axis=-1, keepdims=True)
    return W @ X, W
""",
        "X.T instead of swapping the last two axes (breaks batches)": """
def simple_self_attention(X):
    X = as_float_array(X)
    S = X @ X.T
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    W = E / E.sum(axis=-1, keepdims=True)
    return W @ X, W
""",
        "loop over the rows of a single sentence (forgets batch dimensions)": """
def simple_self_attention(X):
    X = as_float_array(X)
    n = X.shape[0]
    W = np.zeros((n, n), dtype=X.dtype)
    for i in range(n):
        s = X @ X[i]
        e = np.exp(s - s.max())
        W[i] = e / e.sum()
    return W @ X, W
""",
        "writes the output into X to save memory (modifies the input)": """
def simple_self_attention(X):
    X = as_float_array(X)
    S = X @ np.swapaxes(X, -1, -2)
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    W = E / E.sum(axis=-1, keepdims=True)
    X[...] = W @ X
    return X, W
""",
        "exp without dividing by the row sum": """
def simple_self_attention(X):
    X = as_float_array(X)
    S = X @ np.swapaxes(X, -1, -2)
    W = np.exp(S - S.max(axis=-1, keepdims=True))
    return W @ X, W
""",
        "normalises the raw scores by their sum (no exponential)": """
def simple_self_attention(X):
    X = as_float_array(X)
    S = X @ np.swapaxes(X, -1, -2)
    W = S / S.sum(axis=-1, keepdims=True)
    return W @ X, W
""",
        "no keepdims in the softmax sum": """
def simple_self_attention(X):
    X = as_float_array(X)
    S = X @ np.swapaxes(X, -1, -2)
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    W = E / E.sum(axis=-1)
    return W @ X, W
""",
        "always float64 (float32 input comes back as float64)": """
def simple_self_attention(X):
    X = np.asarray(X, dtype=np.float64)
    S = X @ np.swapaxes(X, -1, -2)
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    W = E / E.sum(axis=-1, keepdims=True)
    return W @ X, W
""",
        "casts to float32": """
def simple_self_attention(X):
    X = np.asarray(X, dtype=np.float32)
    S = X @ np.swapaxes(X, -1, -2)
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    W = E / E.sum(axis=-1, keepdims=True)
    return W @ X, W
""",
        "no mixing: returns X itself as the output": """
def simple_self_attention(X):
    X = as_float_array(X)
    S = X @ np.swapaxes(X, -1, -2)
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    return X, E / E.sum(axis=-1, keepdims=True)
""",
        "hard-coded for the visible (4, 4) input": """
def simple_self_attention(X):
    X = as_float_array(X)
    if X.shape != (4, 4):
        n = X.shape[-2]
        W = np.full(X.shape[:-1] + (n,), 1.0 / n)
        return W @ X, W
    S = X @ X.T
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    W = E / E.sum(axis=-1, keepdims=True)
    return W @ X, W
""",
    },
}

CORRECT = {
    "simple_self_attention": {
        "loops over batches, words and features": """
def simple_self_attention(X):
    X = as_float_array(X)
    n, d = X.shape[-2], X.shape[-1]
    Y = np.zeros_like(X)
    W = np.zeros(X.shape[:-1] + (n,), dtype=X.dtype)
    for b in np.ndindex(X.shape[:-2]):
        sent = X[b]
        for i in range(n):
            s = np.array([sum(sent[i, k] * sent[j, k] for k in range(d)) for j in range(n)], dtype=X.dtype)
            e = np.exp(s - s.max())
            W[b + (i,)] = e / e.sum()
            for j in range(n):
                Y[b + (i,)] += W[b + (i, j)] * sent[j]
    return Y, W
""",
        "einsum and logsumexp": """
def simple_self_attention(X):
    X = as_float_array(X)
    S = np.einsum("...id,...jd->...ij", X, X)
    log_Z = np.logaddexp.reduce(S, axis=-1, keepdims=True)
    W = np.exp(S - log_Z)
    return np.einsum("...ij,...jd->...id", W, X), W
""",
        "torch under the hood": """
def simple_self_attention(X):
    X = as_float_array(X)
    t = torch.from_numpy(np.ascontiguousarray(X))
    W = torch.softmax(torch.matmul(t, t.transpose(-2, -1)), dim=-1)
    return torch.matmul(W, t).numpy(), W.numpy()
""",
    },
}
