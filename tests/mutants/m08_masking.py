"""Chapter 08: the mistakes students really make, and correct alternatives."""

WRONG = {
    "causal_mask": {
        "polarity inverted (True = blocked, the nn.MultiheadAttention convention)": """
def causal_mask(n):
    return np.triu(np.ones((n, n), dtype=bool), k=1)
""",
        "off by one: strictly lower triangle (j < i), a token cannot see itself": """
def causal_mask(n):
    return np.tril(np.ones((n, n), dtype=bool), k=-1)
""",
        "upper triangle (j >= i), anti-causal": """
def causal_mask(n):
    return np.triu(np.ones((n, n), dtype=bool))
""",
        "float mask (np.tril of ones)": """
def causal_mask(n):
    return np.tril(np.ones((n, n)))
""",
        "int mask (np.tri with dtype=int)": """
def causal_mask(n):
    return np.tri(n, dtype=int)
""",
        "returns a torch tensor": """
def causal_mask(n):
    return torch.ones(n, n, dtype=torch.bool).tril()
""",
        "everything allowed (no mask at all)": """
def causal_mask(n):
    return np.ones((n, n), dtype=bool)
""",
        "only the diagonal (each token sees itself only)": """
def causal_mask(n):
    return np.eye(n, dtype=bool)
""",
        "hard-coded for the visible size": """
def causal_mask(n):
    return np.tri(4, dtype=bool)
""",
    },
    "padding_mask": {
        "polarity inverted (True at the padding)": """
def padding_mask(lengths, max_len):
    lengths = np.asarray(lengths)
    if np.any(lengths < 0) or np.any(lengths > max_len):
        raise ValueError("bad length")
    return np.arange(max_len)[None, :] >= lengths[:, None]
""",
        "off by one: p <= length": """
def padding_mask(lengths, max_len):
    lengths = np.asarray(lengths)
    if np.any(lengths < 0) or np.any(lengths > max_len):
        raise ValueError("bad length")
    return np.arange(max_len)[None, :] <= lengths[:, None]
""",
        "off by one: positions counted from 1 (p < length - 1)": """
def padding_mask(lengths, max_len):
    lengths = np.asarray(lengths)
    if np.any(lengths < 0) or np.any(lengths > max_len):
        raise ValueError("bad length")
    return np.arange(1, max_len + 1)[None, :] < lengths[:, None]
""",
        "left padding (real tokens at the end)": """
def padding_mask(lengths, max_len):
    lengths = np.asarray(lengths)
    if np.any(lengths < 0) or np.any(lengths > max_len):
        raise ValueError("bad length")
    return np.arange(max_len)[None, :] >= max_len - lengths[:, None]
""",
        "int mask": """
def padding_mask(lengths, max_len):
    lengths = np.asarray(lengths)
    if np.any(lengths < 0) or np.any(lengths > max_len):
        raise ValueError("bad length")
    return (np.arange(max_len)[None, :] < lengths[:, None]).astype(int)
""",
        "float mask": """
def padding_mask(lengths, max_len):
    lengths = np.asarray(lengths)
    if np.any(lengths < 0) or np.any(lengths > max_len):
        raise ValueError("bad length")
    return (np.arange(max_len)[None, :] < lengths[:, None]).astype(float)
""",
        "no validation (a length above max_len is silently truncated)": """
def padding_mask(lengths, max_len):
    lengths = np.asarray(lengths)
    return np.arange(max_len)[None, :] < lengths[:, None]
""",
        "rejects lengths above max_len, but not negative ones": """
def padding_mask(lengths, max_len):
    lengths = np.asarray(lengths)
    if np.any(lengths > max_len):
        raise ValueError("bad length")
    return np.arange(max_len)[None, :] < lengths[:, None]
""",
        "rejects a length equal to max_len": """
def padding_mask(lengths, max_len):
    lengths = np.asarray(lengths)
    if np.any(lengths < 0) or np.any(lengths >= max_len):
        raise ValueError("bad length")
    return np.arange(max_len)[None, :] < lengths[:, None]
""",
        "clips the lengths in place instead of raising": """
def padding_mask(lengths, max_len):
    lengths = np.asarray(lengths)
    np.clip(lengths, 0, max_len, out=lengths)
    return np.arange(max_len)[None, :] < lengths[:, None]
""",
        "width max(lengths) instead of max_len": """
def padding_mask(lengths, max_len):
    lengths = np.asarray(lengths)
    if np.any(lengths < 0) or np.any(lengths > max_len):
        raise ValueError("bad length")
    return np.arange(lengths.max())[None, :] < lengths[:, None]
""",
        "transposed, (max_len, batch)": """
def padding_mask(lengths, max_len):
    lengths = np.asarray(lengths)
    if np.any(lengths < 0) or np.any(lengths > max_len):
        raise ValueError("bad length")
    return np.arange(max_len)[:, None] < lengths[None, :]
""",
        "raises a bare Exception (not ValueError)": """
def padding_mask(lengths, max_len):
    lengths = np.asarray(lengths)
    if np.any(lengths < 0) or np.any(lengths > max_len):
        raise Exception("bad length")
    return np.arange(max_len)[None, :] < lengths[:, None]
""",
    },
    "masked_softmax": {
        "polarity inverted (True = blocked)": """
def masked_softmax(scores, mask, axis=-1):
    scores = as_float_array(scores)
    s = np.where(np.asarray(mask, dtype=bool), -np.inf, scores)
    top = np.max(s, axis=axis, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    t = e.sum(axis=axis, keepdims=True)
    return e / np.where(t > 0, t, 1.0)
""",
        "-1e9 fill (fully blocked rows become uniform)": """
def masked_softmax(scores, mask, axis=-1):
    scores = as_float_array(scores)
    s = np.where(np.asarray(mask, dtype=bool), scores, -1e9)
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
""",
        "-1e4 fill, fully blocked rows zeroed (issue 27, item 7: blocked keys win below -1e4)": """
def masked_softmax(scores, mask, axis=-1):
    scores = as_float_array(scores)
    m = np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)
    s = np.where(m, scores, -1e4)
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return np.where(m.any(axis=axis, keepdims=True), e / e.sum(axis=axis, keepdims=True), 0.0)
""",
        "plain stable softmax with -inf (NaN on fully blocked rows)": """
def masked_softmax(scores, mask, axis=-1):
    scores = as_float_array(scores)
    s = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)
""",
        "mask multiplied in after the softmax, no renormalisation": """
def masked_softmax(scores, mask, axis=-1):
    scores = as_float_array(scores)
    e = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True) * np.asarray(mask, dtype=bool)
""",
        "mask multiplied in after the softmax, then renormalised (underflows when a blocked score is largest)": """
def masked_softmax(scores, mask, axis=-1):
    scores = as_float_array(scores)
    e = np.exp(scores - scores.max(axis=axis, keepdims=True))
    w = e / e.sum(axis=axis, keepdims=True) * np.asarray(mask, dtype=bool)
    t = w.sum(axis=axis, keepdims=True)
    with np.errstate(invalid="ignore"):
        return np.where(np.asarray(mask, dtype=bool).any(axis=axis, keepdims=True), w / t, 0.0)
""",
        "blocked scores set to 0 instead of -inf": """
def masked_softmax(scores, mask, axis=-1):
    scores = as_float_array(scores)
    s = np.where(np.asarray(mask, dtype=bool), scores, 0.0)
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
""",
        "bool mask added to the scores as if it were additive": """
def masked_softmax(scores, mask, axis=-1):
    scores = as_float_array(scores)
    s = scores + np.asarray(mask, dtype=bool)
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
""",
        "no max shift (overflows on large scores)": """
def masked_softmax(scores, mask, axis=-1):
    scores = as_float_array(scores)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.where(np.asarray(mask, dtype=bool), np.exp(scores), 0.0)
        t = e.sum(axis=axis, keepdims=True)
        return e / np.where(t > 0, t, 1.0)
""",
        "shift by the max of all scores, blocked ones included": """
def masked_softmax(scores, mask, axis=-1):
    scores = as_float_array(scores)
    e = np.where(np.asarray(mask, dtype=bool), np.exp(scores - scores.max(axis=axis, keepdims=True)), 0.0)
    t = e.sum(axis=axis, keepdims=True)
    return e / np.where(t > 0, t, 1.0)
""",
        "axis ignored (always the last axis)": """
def masked_softmax(scores, mask, axis=-1):
    scores = as_float_array(scores)
    s = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    top = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    t = e.sum(axis=-1, keepdims=True)
    return e / np.where(t > 0, t, 1.0)
""",
        "no broadcasting (boolean indexing with the mask)": """
def masked_softmax(scores, mask, axis=-1):
    s = np.array(as_float_array(scores), copy=True)
    s[~np.asarray(mask, dtype=bool)] = -np.inf
    top = np.max(s, axis=axis, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    t = e.sum(axis=axis, keepdims=True)
    return e / np.where(t > 0, t, 1.0)
""",
        "writes -inf into the scores in place": """
def masked_softmax(scores, mask, axis=-1):
    s = as_float_array(scores)
    np.copyto(s, -np.inf, where=~np.asarray(mask, dtype=bool))
    top = np.max(s, axis=axis, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    t = e.sum(axis=axis, keepdims=True)
    return e / np.where(t > 0, t, 1.0)
""",
        "always float64 (float32 scores come back float64)": """
def masked_softmax(scores, mask, axis=-1):
    scores = np.asarray(scores, dtype=np.float64)
    s = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    top = np.max(s, axis=axis, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    t = e.sum(axis=axis, keepdims=True)
    return e / np.where(t > 0, t, 1.0)
""",
        "always float32": """
def masked_softmax(scores, mask, axis=-1):
    scores = np.asarray(scores, dtype=np.float32)
    s = np.where(np.asarray(mask, dtype=bool), scores, -np.inf)
    top = np.max(s, axis=axis, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(top), top, 0.0))
    t = e.sum(axis=axis, keepdims=True)
    return e / np.where(t > 0, t, 1.0)
""",
        "returns a torch tensor": """
def masked_softmax(scores, mask, axis=-1):
    s = torch.as_tensor(as_float_array(scores)).masked_fill(~torch.as_tensor(np.asarray(mask, dtype=bool)), float("-inf"))
    return torch.softmax(s, dim=axis).nan_to_num(0.0)
""",
    },
}

CORRECT = {
    "causal_mask": {
        "np.tri with dtype=bool": """
def causal_mask(n):
    return np.tri(n, dtype=bool)
""",
        "torch.tril, converted to NumPy": """
def causal_mask(n):
    return torch.ones(int(n), int(n), dtype=torch.bool).tril().numpy()
""",
        "double loop": """
def causal_mask(n):
    m = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(i + 1):
            m[i, j] = True
    return m
""",
        "the complement of the strict upper triangle": """
def causal_mask(n):
    return ~np.triu(np.ones((n, n), dtype=bool), k=1)
""",
    },
    "padding_mask": {
        "loop over the batch": """
def padding_mask(lengths, max_len):
    lengths = [int(x) for x in np.asarray(lengths).ravel()]
    out = np.zeros((len(lengths), max_len), dtype=bool)
    for b, ell in enumerate(lengths):
        if not 0 <= ell <= max_len:
            raise ValueError(f"length {ell} is not between 0 and {max_len}")
        out[b, :ell] = True
    return out
""",
        "torch.arange comparison": """
def padding_mask(lengths, max_len):
    t = torch.as_tensor(np.asarray(lengths, dtype=np.int64))
    if bool((t < 0).any()) or bool((t > max_len).any()):
        raise ValueError("lengths must lie in [0, max_len]")
    return (torch.arange(max_len)[None, :] < t[:, None]).numpy()
""",
        "np.less.outer": """
def padding_mask(lengths, max_len):
    lengths = np.asarray(lengths)
    if lengths.size and (lengths.min() < 0 or lengths.max() > max_len):
        raise ValueError("lengths must lie in [0, max_len]")
    return np.greater.outer(lengths, np.arange(max_len))
""",
    },
    "masked_softmax": {
        "torch: masked_fill(-inf), softmax, nan_to_num": """
def masked_softmax(scores, mask, axis=-1):
    s = torch.from_numpy(np.array(as_float_array(scores)))
    m = torch.from_numpy(np.broadcast_to(np.asarray(mask, dtype=bool), s.shape).copy())
    return torch.softmax(s.masked_fill(~m, float("-inf")), dim=axis).nan_to_num(0.0).numpy()
""",
        "moveaxis to the end, then a loop over the slices": """
def masked_softmax(scores, mask, axis=-1):
    scores = as_float_array(scores)
    m = np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)
    s, m = np.moveaxis(scores, axis, -1), np.moveaxis(m, axis, -1)
    out = np.zeros(s.shape, dtype=scores.dtype)
    for idx in np.ndindex(s.shape[:-1]):
        keep = m[idx]
        if keep.any():
            row = s[idx][keep]
            e = np.exp(row - row.max())
            out[idx + (keep,)] = e / e.sum()
    return np.moveaxis(out, -1, axis)
""",
        "logsumexp": """
def masked_softmax(scores, mask, axis=-1):
    scores = as_float_array(scores)
    s = np.where(mask, scores, -np.inf)
    top = np.max(s, axis=axis, keepdims=True)
    top = np.where(np.isneginf(top), 0.0, top)
    lse = top + np.log(np.sum(np.exp(s - top), axis=axis, keepdims=True))
    with np.errstate(invalid="ignore"):
        return np.where(np.isneginf(lse), 0.0, np.exp(s - lse)).astype(scores.dtype)
""",
        "exp times the mask, divided by the masked sum": """
def masked_softmax(scores, mask, axis=-1):
    scores = as_float_array(scores)
    m = np.asarray(mask, dtype=bool)
    top = np.max(np.where(m, scores, -np.inf), axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(over="ignore"):
        e = np.exp(np.where(m, scores - top, -np.inf))
    total = e.sum(axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)
""",
    },
}
