"""Chapter 09: the mistakes students really make, and correct alternatives."""

# A stable masked softmax over the last axis, shared by most wrong versions below: each
# mutant changes one thing and keeps the rest right.
_SOFTMAX = """
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    t = e.sum(axis=-1, keepdims=True)
    w = e / np.where(t > 0, t, 1.0)
"""


def _cross(projections, scale="Q.shape[-1] ** 0.5", fill="np.where(np.asarray(mask, dtype=bool), s, -np.inf)",
           ret="return w @ V, w", softmax=_SOFTMAX, head=""):
    return f"""
def cross_attention(x_dec, x_enc, W_q, W_k, W_v, mask=None):
    x_dec, x_enc = as_float_array(x_dec), as_float_array(x_enc)
    W_q, W_k, W_v = as_float_array(W_q), as_float_array(W_k), as_float_array(W_v)
{head}    {projections}
    s = Q @ np.swapaxes(K, -1, -2) / ({scale})
    if mask is not None:
        s = {fill}
{softmax}    {ret}
"""


_RIGHT = "Q, K, V = x_dec @ W_q, x_enc @ W_k, x_enc @ W_v"

WRONG = {
    "cross_attention": {
        "queries from the encoder, keys from the decoder (weights (n_enc, n_dec))":
            _cross("Q, K, V = x_enc @ W_q, x_dec @ W_k, x_dec @ W_v"),
        "queries from the encoder, keys from the decoder, values from the encoder":
            _cross("Q, K, V = x_enc @ W_q, x_dec @ W_k, x_enc @ W_v"),
        "values from the decoder": _cross("Q, K, V = x_dec @ W_q, x_enc @ W_k, x_dec @ W_v"),
        "keys from the decoder": _cross("Q, K, V = x_dec @ W_q, x_dec @ W_k, x_enc @ W_v"),
        "self-attention on the decoder only (x_enc ignored)": _cross("Q, K, V = x_dec @ W_q, x_dec @ W_k, x_dec @ W_v"),
        "values projected with W_k": _cross("Q, K, V = x_dec @ W_q, x_enc @ W_k, x_enc @ W_k"),
        "values are x_enc itself (no W_v)": _cross("Q, K, V = x_dec @ W_q, x_enc @ W_k, x_enc"),
        "no scaling": _cross(_RIGHT, scale="1.0"),
        "scaled by d_k instead of sqrt(d_k)": _cross(_RIGHT, scale="Q.shape[-1]"),
        "scaled by sqrt(d_model) of the decoder": _cross(_RIGHT, scale="x_dec.shape[-1] ** 0.5"),
        "scaled by sqrt(d_model) of the encoder": _cross(_RIGHT, scale="x_enc.shape[-1] ** 0.5"),
        "scaled by sqrt(n_enc)": _cross(_RIGHT, scale="x_enc.shape[-2] ** 0.5"),
        "scaled by sqrt(d_v)": _cross(_RIGHT, scale="V.shape[-1] ** 0.5"),
        "softmax over the decoder axis": _cross(_RIGHT, softmax="""
    m = np.max(s, axis=-2, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
    t = e.sum(axis=-2, keepdims=True)
    w = e / np.where(t > 0, t, 1.0)
"""),
        "mask polarity inverted": _cross(_RIGHT, fill="np.where(np.asarray(mask, dtype=bool), -np.inf, s)"),
        "blocked scores set to 0 instead of -inf": _cross(_RIGHT, fill="np.where(np.asarray(mask, dtype=bool), s, 0.0)"),
        "mask applied after the softmax": _cross(_RIGHT, fill="s", ret="""
    if mask is not None:
        w = w * np.asarray(mask, dtype=bool)
    return w @ V, w"""),
        "NaN on a fully blocked row (plain softmax)": _cross(_RIGHT, softmax="""
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        w = e / e.sum(axis=-1, keepdims=True)
"""),
        "shift by the max of all scores, blocked ones included (issue 27, item 8)": _cross(_RIGHT, fill="s", softmax="""
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    if mask is not None:
        e = np.where(np.asarray(mask, dtype=bool), e, 0.0)
    t = e.sum(axis=-1, keepdims=True)
    w = e / np.where(t > 0, t, 1.0)
"""),
        "softmax, then the mask, then renormalised (issue 27, item 8)": _cross(_RIGHT, fill="s", softmax="""
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    w = e / e.sum(axis=-1, keepdims=True)
    if mask is not None:
        w = w * np.asarray(mask, dtype=bool)
        t = w.sum(axis=-1, keepdims=True)
        w = w / np.where(t > 0, t, 1.0)
"""),
        "fill value -1e9 (fully blocked rows become uniform)":
            _cross(_RIGHT, fill="np.where(np.asarray(mask, dtype=bool), s, -1e9)"),
        "no max shift (overflows on large scores)": _cross(_RIGHT, softmax="""
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(s)
        t = e.sum(axis=-1, keepdims=True)
        w = np.where(t > 0, e / np.where(t > 0, t, 1.0), 0.0)
"""),
        "returns (weights, out)": _cross(_RIGHT, ret="return w, w @ V"),
        "no batch support (2-D einsum)": _cross(_RIGHT, ret="return np.einsum('qk,kv->qv', w, V), w").replace(
            "s = Q @ np.swapaxes(K, -1, -2)", "s = np.einsum('qd,kd->qk', Q, K)"),
        "K.T instead of swapaxes (wrong for batches)": _cross(_RIGHT).replace("np.swapaxes(K, -1, -2)", "K.T"),
        "scales x_dec in place (modifies the input)": _cross(
            "Q, K, V = x_dec @ W_q, x_enc @ W_k, x_enc @ W_v",
            scale="1.0", head="    x_dec /= W_q.shape[1] ** 0.5\n"),
        "boolean indexing scores[~mask] (the mask cannot broadcast)": _cross(_RIGHT, fill="s").replace(
            "        s = s\n", "        s[~np.asarray(mask, dtype=bool)] = -np.inf\n"),
        "casts everything to float32": _cross(_RIGHT).replace(
            "x_dec, x_enc = as_float_array(x_dec), as_float_array(x_enc)",
            "x_dec, x_enc = np.asarray(x_dec, np.float32), np.asarray(x_enc, np.float32)"),
        "always float64, even for float32 inputs": _cross(_RIGHT, scale="np.sqrt(Q.shape[-1])"),
        "an empty encoder side raises (the max over zero encoder positions has no initial value)": _cross(_RIGHT),
    },
    "cross_attention_mask": {
        "a causal mask added": """
def cross_attention_mask(enc_lengths, n_dec, n_enc=None):
    lengths = np.asarray(enc_lengths)
    n_enc = int(lengths.max()) if n_enc is None else n_enc
    if np.any(lengths < 0) or np.any(lengths > n_enc):
        raise ValueError("bad length")
    real = np.arange(n_enc)[None, None, :] < lengths[:, None, None]
    causal = np.arange(n_enc)[None, :] <= np.arange(n_dec)[:, None]
    return real & causal
""",
        "polarity inverted (True at the padding)": """
def cross_attention_mask(enc_lengths, n_dec, n_enc=None):
    lengths = np.asarray(enc_lengths)
    n_enc = int(lengths.max()) if n_enc is None else n_enc
    if np.any(lengths < 0) or np.any(lengths > n_enc):
        raise ValueError("bad length")
    pad = np.arange(n_enc) >= lengths[:, None]
    return np.repeat(pad[:, None, :], n_dec, axis=1)
""",
        "padding applied to the decoder rows": """
def cross_attention_mask(enc_lengths, n_dec, n_enc=None):
    lengths = np.asarray(enc_lengths)
    n_enc = int(lengths.max()) if n_enc is None else n_enc
    if np.any(lengths < 0) or np.any(lengths > n_enc):
        raise ValueError("bad length")
    rows = np.arange(n_dec) < lengths[:, None]
    return np.repeat(rows[:, :, None], n_enc, axis=2)
""",
        "off by one (j <= length)": """
def cross_attention_mask(enc_lengths, n_dec, n_enc=None):
    lengths = np.asarray(enc_lengths)
    n_enc = int(lengths.max()) if n_enc is None else n_enc
    if np.any(lengths < 0) or np.any(lengths > n_enc):
        raise ValueError("bad length")
    real = np.arange(n_enc) <= lengths[:, None]
    return np.repeat(real[:, None, :], n_dec, axis=1)
""",
        "shape (B, n_enc, n_dec)": """
def cross_attention_mask(enc_lengths, n_dec, n_enc=None):
    lengths = np.asarray(enc_lengths)
    n_enc = int(lengths.max()) if n_enc is None else n_enc
    if np.any(lengths < 0) or np.any(lengths > n_enc):
        raise ValueError("bad length")
    real = np.arange(n_enc) < lengths[:, None]
    return np.repeat(real[:, :, None], n_dec, axis=2)
""",
        "shape (B, 1, n_enc) (not repeated over the decoder positions)": """
def cross_attention_mask(enc_lengths, n_dec, n_enc=None):
    lengths = np.asarray(enc_lengths)
    n_enc = int(lengths.max()) if n_enc is None else n_enc
    if np.any(lengths < 0) or np.any(lengths > n_enc):
        raise ValueError("bad length")
    return (np.arange(n_enc) < lengths[:, None])[:, None, :]
""",
        "n_enc defaults to n_dec": """
def cross_attention_mask(enc_lengths, n_dec, n_enc=None):
    lengths = np.asarray(enc_lengths)
    n_enc = n_dec if n_enc is None else n_enc
    real = np.arange(n_enc) < lengths[:, None]
    return np.repeat(real[:, None, :], n_dec, axis=1)
""",
        "n_enc ignored (always the longest sentence)": """
def cross_attention_mask(enc_lengths, n_dec, n_enc=None):
    lengths = np.asarray(enc_lengths)
    n_enc = int(lengths.max())
    if np.any(lengths < 0):
        raise ValueError("bad length")
    real = np.arange(n_enc) < lengths[:, None]
    return np.repeat(real[:, None, :], n_dec, axis=1)
""",
        "returns integers instead of booleans": """
def cross_attention_mask(enc_lengths, n_dec, n_enc=None):
    lengths = np.asarray(enc_lengths)
    n_enc = int(lengths.max()) if n_enc is None else n_enc
    if np.any(lengths < 0) or np.any(lengths > n_enc):
        raise ValueError("bad length")
    real = (np.arange(n_enc) < lengths[:, None]).astype(int)
    return np.repeat(real[:, None, :], n_dec, axis=1)
""",
        "no validation (a length longer than n_enc is silently clipped)": """
def cross_attention_mask(enc_lengths, n_dec, n_enc=None):
    lengths = np.asarray(enc_lengths)
    n_enc = int(lengths.max()) if n_enc is None else n_enc
    real = np.arange(n_enc) < lengths[:, None]
    return np.repeat(real[:, None, :], n_dec, axis=1)
""",
        "a stack of n_dec copies (raises for n_dec = 0)": """
def cross_attention_mask(enc_lengths, n_dec, n_enc=None):
    lengths = np.asarray(enc_lengths)
    n_enc = int(lengths.max()) if n_enc is None else int(n_enc)
    if np.any(lengths < 0) or np.any(lengths > n_enc):
        raise ValueError("bad length")
    real = np.arange(n_enc)[None, :] < lengths[:, None]
    return np.stack([real] * n_dec, axis=1)
""",
        "a length of 0 rejected": """
def cross_attention_mask(enc_lengths, n_dec, n_enc=None):
    lengths = np.asarray(enc_lengths)
    n_enc = int(lengths.max()) if n_enc is None else n_enc
    if np.any(lengths <= 0) or np.any(lengths > n_enc):
        raise ValueError("bad length")
    real = np.arange(n_enc) < lengths[:, None]
    return np.repeat(real[:, None, :], n_dec, axis=1)
""",
    },
}

CORRECT = {
    "cross_attention": {
        "einsum and logsumexp": """
def cross_attention(x_dec, x_enc, W_q, W_k, W_v, mask=None):
    x_dec, x_enc = as_float_array(x_dec), as_float_array(x_enc)
    W_q, W_k, W_v = as_float_array(W_q), as_float_array(W_k), as_float_array(W_v)
    Q = np.einsum("...nd,dk->...nk", x_dec, W_q)
    K = np.einsum("...md,dk->...mk", x_enc, W_k)
    V = np.einsum("...md,dv->...mv", x_enc, W_v)
    s = np.einsum("...nk,...mk->...nm", Q, K) * (1.0 / Q.shape[-1] ** 0.5)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    top = np.max(s, axis=-1, keepdims=True, initial=-np.inf)
    top = np.where(np.isneginf(top), 0.0, top)
    with np.errstate(divide="ignore", invalid="ignore"):
        lse = top + np.log(np.sum(np.exp(s - top), axis=-1, keepdims=True))
        w = np.where(np.isneginf(lse), 0.0, np.exp(s - lse))
    return np.einsum("...nm,...mv->...nv", w, V), w
""",
        "loops over batch elements and decoder rows": """
def cross_attention(x_dec, x_enc, W_q, W_k, W_v, mask=None):
    x_dec, x_enc = as_float_array(x_dec), as_float_array(x_enc)
    W_q, W_k, W_v = as_float_array(W_q), as_float_array(W_k), as_float_array(W_v)
    Q, K, V = x_dec @ W_q, x_enc @ W_k, x_enc @ W_v
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2])
    n_dec, n_enc = Q.shape[-2], K.shape[-2]
    if mask is not None:
        batch = np.broadcast_shapes(batch, np.shape(mask)[:-2])
        allowed = np.broadcast_to(np.asarray(mask, dtype=bool), batch + (n_dec, n_enc))
    else:
        allowed = np.ones(batch + (n_dec, n_enc), dtype=bool)
    Qb = np.broadcast_to(Q, batch + Q.shape[-2:])
    Kb = np.broadcast_to(K, batch + K.shape[-2:])
    Vb = np.broadcast_to(V, batch + V.shape[-2:])
    dtype = np.result_type(Q, K, V)
    out = np.zeros(batch + (n_dec, V.shape[-1]), dtype=dtype)
    weights = np.zeros(batch + (n_dec, n_enc), dtype=dtype)
    scale = dtype.type(1.0 / np.sqrt(Q.shape[-1]))
    for idx in np.ndindex(batch):
        for i in range(n_dec):
            keep = allowed[idx][i]
            if not keep.any():
                continue
            row = np.array([Qb[idx][i] @ Kb[idx][j] for j in range(n_enc)], dtype=dtype) * scale
            row = row[keep]
            e = np.exp(row - row.max())
            weights[idx][i, keep] = e / e.sum()
            out[idx][i] = weights[idx][i] @ Vb[idx]
    return out, weights
""",
        "PyTorch inside, NumPy outside": """
def cross_attention(x_dec, x_enc, W_q, W_k, W_v, mask=None):
    t = [torch.from_numpy(np.array(as_float_array(a))) for a in (x_dec, x_enc, W_q, W_k, W_v)]
    xd, xe, wq, wk, wv = t
    q, k, v = xd @ wq, xe @ wk, xe @ wv
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~torch.as_tensor(np.asarray(mask, dtype=bool)), float("-inf"))
    w = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return (w @ v).numpy(), w.numpy()
""",
        "projections first, then a scaled dot-product attention helper": """
def _sdpa(Q, K, V, mask=None):
    s = Q @ np.moveaxis(K, -1, -2) * np.asarray(1 / np.sqrt(Q.shape[-1]), dtype=Q.dtype)
    if mask is not None:
        s = np.where(np.asarray(mask, dtype=bool), s, -np.inf)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(axis=-1, keepdims=True, initial=-np.inf))
        w = np.nan_to_num(e / e.sum(axis=-1, keepdims=True), nan=0.0)
    return np.matmul(w, V), w


def cross_attention(x_dec, x_enc, W_q, W_k, W_v, mask=None):
    x_dec, x_enc = as_float_array(x_dec), as_float_array(x_enc)
    return _sdpa(x_dec @ as_float_array(W_q), x_enc @ as_float_array(W_k), x_enc @ as_float_array(W_v), mask)
""",
    },
    "cross_attention_mask": {
        "a loop": """
def cross_attention_mask(enc_lengths, n_dec, n_enc=None):
    lengths = [int(x) for x in np.asarray(enc_lengths).ravel()]
    if n_enc is None:
        n_enc = max(lengths)
    if any(x < 0 or x > n_enc for x in lengths):
        raise ValueError("every length must be between 0 and n_enc")
    mask = np.zeros((len(lengths), n_dec, n_enc), dtype=bool)
    for b, length in enumerate(lengths):
        mask[b, :, :length] = True
    return mask
""",
        "broadcast_to a read-only view": """
def cross_attention_mask(enc_lengths, n_dec, n_enc=None):
    lengths = np.asarray(enc_lengths, dtype=np.int64)
    n_enc = int(np.max(lengths)) if n_enc is None else int(n_enc)
    if lengths.min() < 0 or lengths.max() > n_enc:
        raise ValueError("length out of range")
    real = np.arange(n_enc)[None, None, :] < lengths[:, None, None]
    return np.broadcast_to(real, (lengths.shape[0], n_dec, n_enc))
""",
        "torch inside": """
def cross_attention_mask(enc_lengths, n_dec, n_enc=None):
    lengths = torch.as_tensor(np.asarray(enc_lengths)).long()
    if n_enc is None:
        n_enc = int(lengths.max())
    if bool((lengths < 0).any()) or bool((lengths > n_enc).any()):
        raise ValueError("length out of range")
    real = torch.arange(n_enc)[None, :] < lengths[:, None]
    return real[:, None, :].expand(-1, n_dec, -1).contiguous().numpy()
""",
    },
}
