"""Chapter 04: the mistakes students really make, and correct alternatives."""

WRONG = {
    "additive_scores": {
        "tanh missing": """
def additive_scores(s, H, W_s, W_h, v):
    s, H, W_s, W_h, v = (as_float_array(a) for a in (s, H, W_s, W_h, v))
    return (W_s @ s + H @ W_h.T) @ v
""",
        "tanh applied after the product with v": """
def additive_scores(s, H, W_s, W_h, v):
    s, H, W_s, W_h, v = (as_float_array(a) for a in (s, H, W_s, W_h, v))
    return np.tanh((W_s @ s + H @ W_h.T) @ v)
""",
        "tanh of each projection separately": """
def additive_scores(s, H, W_s, W_h, v):
    s, H, W_s, W_h, v = (as_float_array(a) for a in (s, H, W_s, W_h, v))
    return (np.tanh(W_s @ s) + np.tanh(H @ W_h.T)) @ v
""",
        "row-vector convention: H @ W_h (works only when W_h is square)": """
def additive_scores(s, H, W_s, W_h, v):
    s, H, W_s, W_h, v = (as_float_array(a) for a in (s, H, W_s, W_h, v))
    return np.tanh(W_s @ s + H @ W_h) @ v
""",
        "returns softmax weights instead of scores": """
def additive_scores(s, H, W_s, W_h, v):
    s, H, W_s, W_h, v = (as_float_array(a) for a in (s, H, W_s, W_h, v))
    e = np.tanh(W_s @ s + H @ W_h.T) @ v
    w = np.exp(e - e.max())
    return w / w.sum()
""",
        "relu instead of tanh": """
def additive_scores(s, H, W_s, W_h, v):
    s, H, W_s, W_h, v = (as_float_array(a) for a in (s, H, W_s, W_h, v))
    return np.maximum(W_s @ s + H @ W_h.T, 0.0) @ v
""",
        "casts to float32": """
def additive_scores(s, H, W_s, W_h, v):
    s, H, W_s, W_h, v = (np.asarray(a, dtype=np.float32) for a in (s, H, W_s, W_h, v))
    return np.tanh(W_s @ s + H @ W_h.T) @ v
""",
        "always float64, even for float32 inputs": """
def additive_scores(s, H, W_s, W_h, v):
    s, H, W_s, W_h, v = (np.asarray(a, dtype=np.float64) for a in (s, H, W_s, W_h, v))
    return np.tanh(W_s @ s + H @ W_h.T) @ v
""",
        "hard-coded for the visible test's T = 6": """
def additive_scores(s, H, W_s, W_h, v):
    s, H, W_s, W_h, v = (as_float_array(a) for a in (s, H, W_s, W_h, v))
    out = np.zeros(6 if len(H) >= 6 else len(H))
    for j in range(len(out)):
        out[j] = v @ np.tanh(W_s @ s + W_h @ H[j])
    return out
""",
        "only the first encoder state's score, broadcast": """
def additive_scores(s, H, W_s, W_h, v):
    s, H, W_s, W_h, v = (as_float_array(a) for a in (s, H, W_s, W_h, v))
    return np.full(len(H), v @ np.tanh(W_s @ s + W_h @ H[0]))
""",
    },
    "luong_scores": {
        "general with W transposed": """
def luong_scores(s, H, method="dot", W=None, v=None):
    s, H = as_float_array(s), as_float_array(H)
    if method == "dot":
        return H @ s
    if method == "general":
        return H @ (as_float_array(W) @ s)
    if method == "concat":
        W, v = as_float_array(W), as_float_array(v)
        return np.tanh(W[:, :len(s)] @ s + H @ W[:, len(s):].T) @ v
    raise ValueError(method)
""",
        "concat in the order [h_j; s]": """
def luong_scores(s, H, method="dot", W=None, v=None):
    s, H = as_float_array(s), as_float_array(H)
    if method == "dot":
        return H @ s
    if method == "general":
        return (s @ as_float_array(W)) @ H.T
    if method == "concat":
        W, v = as_float_array(W), as_float_array(v)
        pairs = np.concatenate([H, np.broadcast_to(s, (len(H), len(s)))], axis=1)
        return np.tanh(pairs @ W.T) @ v
    raise ValueError(method)
""",
        "unknown method falls back to dot": """
def luong_scores(s, H, method="dot", W=None, v=None):
    s, H = as_float_array(s), as_float_array(H)
    if method == "general":
        return (s @ as_float_array(W)) @ H.T
    if method == "concat":
        W, v = as_float_array(W), as_float_array(v)
        return np.tanh(W[:, :len(s)] @ s + H @ W[:, len(s):].T) @ v
    return H @ s
""",
        "dictionary dispatch raises KeyError for an unknown method": """
def luong_scores(s, H, method="dot", W=None, v=None):
    s, H = as_float_array(s), as_float_array(H)
    funcs = {
        "dot": lambda: H @ s,
        "general": lambda: (s @ as_float_array(W)) @ H.T,
        "concat": lambda: np.tanh(as_float_array(W)[:, :len(s)] @ s + H @ as_float_array(W)[:, len(s):].T)
                          @ as_float_array(v),
    }
    return funcs[method]()
""",
        "unknown method raises NotImplementedError": """
def luong_scores(s, H, method="dot", W=None, v=None):
    s, H = as_float_array(s), as_float_array(H)
    if method == "dot":
        return H @ s
    if method == "general":
        return (s @ as_float_array(W)) @ H.T
    if method == "concat":
        W, v = as_float_array(W), as_float_array(v)
        return np.tanh(W[:, :len(s)] @ s + H @ W[:, len(s):].T) @ v
    raise NotImplementedError(method)
""",
        "concat without tanh": """
def luong_scores(s, H, method="dot", W=None, v=None):
    s, H = as_float_array(s), as_float_array(H)
    if method == "dot":
        return H @ s
    if method == "general":
        return (s @ as_float_array(W)) @ H.T
    if method == "concat":
        W, v = as_float_array(W), as_float_array(v)
        return (W[:, :len(s)] @ s + H @ W[:, len(s):].T) @ v
    raise ValueError(method)
""",
        "dot scaled by 1/sqrt(d) (chapter 06 too early)": """
def luong_scores(s, H, method="dot", W=None, v=None):
    s, H = as_float_array(s), as_float_array(H)
    if method == "dot":
        return H @ s / np.sqrt(len(s))
    if method == "general":
        return (s @ as_float_array(W)) @ H.T
    if method == "concat":
        W, v = as_float_array(W), as_float_array(v)
        return np.tanh(W[:, :len(s)] @ s + H @ W[:, len(s):].T) @ v
    raise ValueError(method)
""",
        "concat splits W at d_h instead of d_s": """
def luong_scores(s, H, method="dot", W=None, v=None):
    s, H = as_float_array(s), as_float_array(H)
    if method == "dot":
        return H @ s
    if method == "general":
        return (s @ as_float_array(W)) @ H.T
    if method == "concat":
        W, v = as_float_array(W), as_float_array(v)
        d_h = H.shape[1]
        return np.tanh(W[:, d_h:] @ s + H @ W[:, :d_h].T) @ v
    raise ValueError(method)
""",
        "casts to float32": """
def luong_scores(s, H, method="dot", W=None, v=None):
    s, H = np.asarray(s, dtype=np.float32), np.asarray(H, dtype=np.float32)
    if method == "dot":
        return H @ s
    if method == "general":
        return (s @ np.asarray(W, dtype=np.float32)) @ H.T
    if method == "concat":
        W, v = np.asarray(W, dtype=np.float32), np.asarray(v, dtype=np.float32)
        return np.tanh(W[:, :len(s)] @ s + H @ W[:, len(s):].T) @ v
    raise ValueError(method)
""",
        "integer lists stay integer for dot and general": """
def luong_scores(s, H, method="dot", W=None, v=None):
    s, H = np.asarray(s), np.asarray(H)
    if method == "dot":
        return H @ s
    if method == "general":
        return (s @ np.asarray(W)) @ H.T
    if method == "concat":
        W, v = as_float_array(W), as_float_array(v)
        return np.tanh(W[:, :len(s)] @ s + H @ W[:, len(s):].T) @ v
    raise ValueError(method)
""",
    },
    "attention_context": {
        "no max shift (overflows)": """
def attention_context(scores, H):
    scores, H = as_float_array(scores), as_float_array(H)
    w = np.exp(scores) / np.exp(scores).sum()
    return w @ H, w
""",
        "returns (weights, context)": """
def attention_context(scores, H):
    scores, H = as_float_array(scores), as_float_array(H)
    w = np.exp(scores - scores.max())
    w = w / w.sum()
    return w, w @ H
""",
        "raw scores used as weights": """
def attention_context(scores, H):
    scores, H = as_float_array(scores), as_float_array(H)
    return scores @ H, scores
""",
        "scores normalised by their sum, no exp": """
def attention_context(scores, H):
    scores, H = as_float_array(scores), as_float_array(H)
    w = scores / scores.sum()
    return w @ H, w
""",
        "hard attention: one-hot argmax": """
def attention_context(scores, H):
    scores, H = as_float_array(scores), as_float_array(H)
    w = np.zeros_like(scores)
    w[np.argmax(scores)] = 1.0
    return w @ H, w
""",
        "subtracts the maximum in place (modifies scores)": """
def attention_context(scores, H):
    scores, H = as_float_array(scores), as_float_array(H)
    scores -= scores.max()
    w = np.exp(scores)
    w /= w.sum()
    return w @ H, w
""",
        "shift by the mean (still overflows)": """
def attention_context(scores, H):
    scores, H = as_float_array(scores), as_float_array(H)
    w = np.exp(scores - scores.mean())
    w = w / w.sum()
    return w @ H, w
""",
        "context keeps a leading axis, shape (1, d_h)": """
def attention_context(scores, H):
    scores, H = as_float_array(scores), as_float_array(H)
    w = np.exp(scores - scores.max())
    w = w / w.sum()
    return w[None, :] @ H, w
""",
        "context is the mean of the weighted states (divides by T)": """
def attention_context(scores, H):
    scores, H = as_float_array(scores), as_float_array(H)
    w = np.exp(scores - scores.max())
    w = w / w.sum()
    return (w[:, None] * H).mean(axis=0), w
""",
        "casts to float32": """
def attention_context(scores, H):
    scores, H = np.asarray(scores, dtype=np.float32), np.asarray(H, dtype=np.float32)
    w = np.exp(scores - scores.max())
    w = w / w.sum()
    return w @ H, w
""",
        "always float64": """
def attention_context(scores, H):
    scores, H = np.asarray(scores, dtype=np.float64), np.asarray(H, dtype=np.float64)
    w = np.exp(scores - scores.max())
    w = w / w.sum()
    return w @ H, w
""",
        "shift by the first score": """
def attention_context(scores, H):
    scores, H = as_float_array(scores), as_float_array(H)
    w = np.exp(scores - scores[0])
    w = w / w.sum()
    return w @ H, w
""",
    },
}

CORRECT = {
    "additive_scores": {
        "loop over encoder positions": """
def additive_scores(s, H, W_s, W_h, v):
    s, H, W_s, W_h, v = (as_float_array(a) for a in (s, H, W_s, W_h, v))
    query_part = W_s @ s                                   # (d_a,), the same for every j
    out = np.empty(H.shape[0], dtype=np.result_type(s, H, W_s, W_h, v))
    for j in range(H.shape[0]):
        out[j] = np.dot(v, np.tanh(query_part + W_h @ H[j]))
    return out
""",
        "einsum": """
def additive_scores(s, H, W_s, W_h, v):
    s, H, W_s, W_h, v = (as_float_array(a) for a in (s, H, W_s, W_h, v))
    hidden = np.tanh(np.einsum("ad,d->a", W_s, s)[None, :] + np.einsum("ad,td->ta", W_h, H))
    return np.einsum("ta,a->t", hidden, v)
""",
        "torch, converted back": """
def additive_scores(s, H, W_s, W_h, v):
    arrays = [as_float_array(a) for a in (s, H, W_s, W_h, v)]
    ts, tH, tWs, tWh, tv = (torch.from_numpy(np.ascontiguousarray(a)) for a in arrays)
    with torch.no_grad():
        e = torch.tanh(torch.nn.functional.linear(tH, tWh) + torch.nn.functional.linear(ts, tWs)) @ tv
    return e.numpy().copy()
""",
        "as a concatenation [s; h_j] (Luong's concat form)": """
def additive_scores(s, H, W_s, W_h, v):
    s, H, W_s, W_h, v = (as_float_array(a) for a in (s, H, W_s, W_h, v))
    W = np.concatenate([W_s, W_h], axis=1)                 # (d_a, d_s + d_h)
    pairs = np.concatenate([np.broadcast_to(s, (H.shape[0], s.shape[0])), H], axis=1)
    return np.tanh(pairs @ W.T) @ v
""",
    },
    "luong_scores": {
        "loops and np.dot": """
def luong_scores(s, H, method="dot", W=None, v=None):
    if method not in ("dot", "general", "concat"):
        raise ValueError(f"method must be 'dot', 'general' or 'concat', not {method!r}")
    s, H = as_float_array(s), as_float_array(H)
    out = np.empty(H.shape[0], dtype=np.result_type(s, H))
    for j, h in enumerate(H):
        if method == "dot":
            out[j] = np.dot(s, h)
        elif method == "general":
            out[j] = s @ as_float_array(W) @ h
        else:
            out[j] = np.dot(as_float_array(v), np.tanh(as_float_array(W) @ np.concatenate([s, h])))
    return out
""",
        "einsum": """
def luong_scores(s, H, method="dot", W=None, v=None):
    s, H = as_float_array(s), as_float_array(H)
    if method == "dot":
        return np.einsum("d,td->t", s, H)
    elif method == "general":
        return np.einsum("i,ij,tj->t", s, as_float_array(W), H)
    elif method == "concat":
        W, v = as_float_array(W), as_float_array(v)
        d_s = s.shape[0]
        hidden = np.einsum("ai,i->a", W[:, :d_s], s) + np.einsum("aj,tj->ta", W[:, d_s:], H)
        return np.einsum("ta,a->t", np.tanh(hidden), v)
    else:
        raise ValueError("unknown method: " + repr(method))
""",
    },
    "attention_context": {
        "logsumexp and an explicit sum": """
def attention_context(scores, H):
    scores, H = as_float_array(scores), as_float_array(H)
    m = np.max(scores)
    lse = m + np.log(np.sum(np.exp(scores - m)))
    weights = np.exp(scores - lse)
    context = (weights[:, None] * H).sum(axis=0)
    return context, weights
""",
        "loop over positions": """
def attention_context(scores, H):
    scores, H = as_float_array(scores), as_float_array(H)
    shifted = scores - np.max(scores)
    weights = np.exp(shifted) / np.sum(np.exp(shifted))
    context = np.zeros(H.shape[1], dtype=np.result_type(weights, H))
    for j in range(H.shape[0]):
        context = context + weights[j] * H[j]
    return context, weights
""",
        "torch.softmax, converted back": """
def attention_context(scores, H):
    t_scores = torch.from_numpy(np.array(as_float_array(scores)))
    tH = torch.from_numpy(np.array(as_float_array(H)))
    weights = torch.softmax(t_scores, dim=0)
    return (weights @ tH).numpy(), weights.numpy()
""",
    },
}
