"""Chapter 12: the mistakes students really make, and correct alternatives."""

WRONG = {
    "local_attention_mask": {
        "strict < instead of <= (the keys exactly `window` away are missing)": """
def local_attention_mask(n, window, causal=False):
    if window < 0:
        raise ValueError("window")
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    mask = np.abs(i - j) < window
    return mask & (j <= i) if causal else mask
""",
        "causal flag ignored": """
def local_attention_mask(n, window, causal=False):
    if window < 0:
        raise ValueError("window")
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    return np.abs(i - j) <= window
""",
        "causal condition inverted (j >= i)": """
def local_attention_mask(n, window, causal=False):
    if window < 0:
        raise ValueError("window")
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    mask = np.abs(i - j) <= window
    return mask & (j >= i) if causal else mask
""",
        "causal blocks the diagonal too (j < i)": """
def local_attention_mask(n, window, causal=False):
    if window < 0:
        raise ValueError("window")
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    mask = np.abs(i - j) <= window
    return mask & (j < i) if causal else mask
""",
        "window applied one-sided (always looks back only)": """
def local_attention_mask(n, window, causal=False):
    if window < 0:
        raise ValueError("window")
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    return (i - j >= 0) & (i - j <= window)
""",
        "no abs(): i - j <= window lets every later key in": """
def local_attention_mask(n, window, causal=False):
    if window < 0:
        raise ValueError("window")
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    mask = (i - j) <= window
    return mask & (j <= i) if causal else mask
""",
        "causal=True drops the window (plain causal mask)": """
def local_attention_mask(n, window, causal=False):
    if window < 0:
        raise ValueError("window")
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    if causal:
        return j <= i
    return np.abs(i - j) <= window
""",
        "tril/triu offsets swapped (window only at the corners)": """
def local_attention_mask(n, window, causal=False):
    if window < 0:
        raise ValueError("window")
    ones = np.ones((n, n), dtype=bool)
    mask = np.triu(ones, window) | np.tril(ones, -window)
    return np.tril(mask) if causal else mask
""",
        "window one too wide (<= window + 1)": """
def local_attention_mask(n, window, causal=False):
    if window < 0:
        raise ValueError("window")
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    mask = np.abs(i - j) <= window + 1
    return mask & (j <= i) if causal else mask
""",
        "returns a float 0/1 matrix instead of bool": """
def local_attention_mask(n, window, causal=False):
    if window < 0:
        raise ValueError("window")
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    mask = np.abs(i - j) <= window
    if causal:
        mask = mask & (j <= i)
    return mask.astype(np.float64)
""",
        "a negative window is not rejected": """
def local_attention_mask(n, window, causal=False):
    i, j = np.arange(n)[:, None], np.arange(n)[None, :]
    mask = np.abs(i - j) <= window
    return mask & (j <= i) if causal else mask
""",
        "np.eye-based band of a fixed width (ignores window beyond 1)": """
def local_attention_mask(n, window, causal=False):
    if window < 0:
        raise ValueError("window")
    mask = np.eye(n, dtype=bool) | np.eye(n, k=1, dtype=bool) | np.eye(n, k=-1, dtype=bool)
    if window == 0:
        mask = np.eye(n, dtype=bool)
    return np.tril(mask) if causal else mask
""",
    },
    "online_softmax_merge": {
        "no rescaling: l1 + l2 and acc1 + acc2": """
def online_softmax_merge(m1, l1, acc1, m2, l2, acc2):
    m1, l1, acc1, m2, l2, acc2 = (as_float_array(a) for a in (m1, l1, acc1, m2, l2, acc2))
    return np.maximum(m1, m2), l1 + l2, acc1 + acc2
""",
        "rescaling factors swapped between the states": """
def online_softmax_merge(m1, l1, acc1, m2, l2, acc2):
    m1, l1, acc1, m2, l2, acc2 = (as_float_array(a) for a in (m1, l1, acc1, m2, l2, acc2))
    m = np.maximum(m1, m2)
    safe = np.where(np.isfinite(m), m, 0.0)
    a1, a2 = np.exp(m1 - safe), np.exp(m2 - safe)
    return m, a2 * l1 + a1 * l2, a2[..., None] * acc1 + a1[..., None] * acc2
""",
        "factors inverted: exp(m - m_i)": """
def online_softmax_merge(m1, l1, acc1, m2, l2, acc2):
    m1, l1, acc1, m2, l2, acc2 = (as_float_array(a) for a in (m1, l1, acc1, m2, l2, acc2))
    m = np.maximum(m1, m2)
    with np.errstate(over="ignore"):
        a1, a2 = np.exp(m - m1), np.exp(m - m2)
    return m, a1 * l1 + a2 * l2, a1[..., None] * acc1 + a2[..., None] * acc2
""",
        "keeps the first maximum and rescales the second state by exp(m2 - m1)": """
def online_softmax_merge(m1, l1, acc1, m2, l2, acc2):
    m1, l1, acc1, m2, l2, acc2 = (as_float_array(a) for a in (m1, l1, acc1, m2, l2, acc2))
    with np.errstate(over="ignore", invalid="ignore"):
        a2 = np.where(np.isneginf(m2), 0.0, np.exp(m2 - np.where(np.isfinite(m1), m1, 0.0)))
    return np.where(np.isfinite(m1), m1, m2), l1 + a2 * l2, acc1 + a2[..., None] * acc2
""",
        "NaN when both states are empty (-inf - -inf)": """
def online_softmax_merge(m1, l1, acc1, m2, l2, acc2):
    m1, l1, acc1, m2, l2, acc2 = (as_float_array(a) for a in (m1, l1, acc1, m2, l2, acc2))
    m = np.maximum(m1, m2)
    with np.errstate(invalid="ignore"):
        a1, a2 = np.exp(m1 - m), np.exp(m2 - m)
    return m, a1 * l1 + a2 * l2, a1[..., None] * acc1 + a2[..., None] * acc2
""",
        "only the accumulator is rescaled, not the sum": """
def online_softmax_merge(m1, l1, acc1, m2, l2, acc2):
    m1, l1, acc1, m2, l2, acc2 = (as_float_array(a) for a in (m1, l1, acc1, m2, l2, acc2))
    m = np.maximum(m1, m2)
    safe = np.where(np.isfinite(m), m, 0.0)
    a1, a2 = np.exp(m1 - safe), np.exp(m2 - safe)
    return m, l1 + l2, a1[..., None] * acc1 + a2[..., None] * acc2
""",
        "factors broadcast without [..., None] (wrong axis for acc)": """
def online_softmax_merge(m1, l1, acc1, m2, l2, acc2):
    m1, l1, acc1, m2, l2, acc2 = (as_float_array(a) for a in (m1, l1, acc1, m2, l2, acc2))
    m = np.maximum(m1, m2)
    safe = np.where(np.isfinite(m), m, 0.0)
    a1, a2 = np.exp(m1 - safe), np.exp(m2 - safe)
    return m, a1 * l1 + a2 * l2, a1 * acc1 + a2 * acc2
""",
        "returns the normalised output acc / l instead of acc": """
def online_softmax_merge(m1, l1, acc1, m2, l2, acc2):
    m1, l1, acc1, m2, l2, acc2 = (as_float_array(a) for a in (m1, l1, acc1, m2, l2, acc2))
    m = np.maximum(m1, m2)
    safe = np.where(np.isfinite(m), m, 0.0)
    a1, a2 = np.exp(m1 - safe), np.exp(m2 - safe)
    l = a1 * l1 + a2 * l2
    acc = a1[..., None] * acc1 + a2[..., None] * acc2
    return m, l, acc / np.where(l > 0, l, 1.0)[..., None]
""",
        "returns (m, acc, l)": """
def online_softmax_merge(m1, l1, acc1, m2, l2, acc2):
    m1, l1, acc1, m2, l2, acc2 = (as_float_array(a) for a in (m1, l1, acc1, m2, l2, acc2))
    m = np.maximum(m1, m2)
    safe = np.where(np.isfinite(m), m, 0.0)
    a1, a2 = np.exp(m1 - safe), np.exp(m2 - safe)
    return m, a1[..., None] * acc1 + a2[..., None] * acc2, a1 * l1 + a2 * l2
""",
        "merged maximum is the minimum": """
def online_softmax_merge(m1, l1, acc1, m2, l2, acc2):
    m1, l1, acc1, m2, l2, acc2 = (as_float_array(a) for a in (m1, l1, acc1, m2, l2, acc2))
    m = np.maximum(m1, m2)
    safe = np.where(np.isfinite(m), m, 0.0)
    a1, a2 = np.exp(m1 - safe), np.exp(m2 - safe)
    return np.minimum(m1, m2), a1 * l1 + a2 * l2, a1[..., None] * acc1 + a2[..., None] * acc2
""",
        "casts everything to float64": """
def online_softmax_merge(m1, l1, acc1, m2, l2, acc2):
    m1, l1, acc1, m2, l2, acc2 = (np.asarray(a, dtype=np.float64) for a in (m1, l1, acc1, m2, l2, acc2))
    m = np.maximum(m1, m2)
    safe = np.where(np.isfinite(m), m, 0.0)
    a1, a2 = np.exp(m1 - safe), np.exp(m2 - safe)
    return m, a1 * l1 + a2 * l2, a1[..., None] * acc1 + a2[..., None] * acc2
""",
        "rescales in place (modifies the inputs)": """
def online_softmax_merge(m1, l1, acc1, m2, l2, acc2):
    m = np.maximum(m1, m2)
    safe = np.where(np.isfinite(m), m, 0.0)
    a1, a2 = np.exp(m1 - safe), np.exp(m2 - safe)
    l1 *= a1
    l1 += a2 * l2
    acc1 *= a1[..., None]
    acc1 += a2[..., None] * acc2
    return m, l1, acc1
""",
    },
    "chunked_attention": {
        "no rescaling of the running sum and accumulator when the max grows": """
def chunked_attention(Q, K, V, chunk_size):
    if chunk_size < 1:
        raise ValueError("chunk_size")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    m = np.full(Q.shape[:-1] + (1,), -np.inf, dtype=Q.dtype)
    l = np.zeros(Q.shape[:-1] + (1,), dtype=Q.dtype)
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:], dtype=Q.dtype)
    for s0 in range(0, K.shape[-2], chunk_size):
        s = Q @ np.swapaxes(K[..., s0:s0 + chunk_size, :], -1, -2) / Q.shape[-1] ** 0.5
        m = np.maximum(m, s.max(axis=-1, keepdims=True))
        p = np.exp(s - m)
        l = l + p.sum(axis=-1, keepdims=True)
        acc = acc + p @ V[..., s0:s0 + chunk_size, :]
    return acc / l
""",
        "global max first, over the whole (n_q, n_k) score matrix": """
def chunked_attention(Q, K, V, chunk_size):
    if chunk_size < 1:
        raise ValueError("chunk_size")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    scale = Q.shape[-1] ** 0.5
    m = (Q @ np.swapaxes(K, -1, -2) / scale).max(axis=-1, keepdims=True)
    l = np.zeros(Q.shape[:-1] + (1,), dtype=Q.dtype)
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:], dtype=Q.dtype)
    for s0 in range(0, K.shape[-2], chunk_size):
        p = np.exp(Q @ np.swapaxes(K[..., s0:s0 + chunk_size, :], -1, -2) / scale - m)
        l = l + p.sum(axis=-1, keepdims=True)
        acc = acc + p @ V[..., s0:s0 + chunk_size, :]
    return acc / l
""",
        "plain full attention (materialises every score)": """
def chunked_attention(Q, K, V, chunk_size):
    if chunk_size < 1:
        raise ValueError("chunk_size")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    s = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1] ** 0.5
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ V
""",
        "query blocks, a full softmax over all keys per block (no online softmax; issue 27, item 9)": """
def chunked_attention(Q, K, V, chunk_size):
    if chunk_size < 1:
        raise ValueError("chunk_size must be >= 1")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    outs = []
    for start in range(0, Q.shape[-2], chunk_size):
        s = Q[..., start:start + chunk_size, :] @ np.swapaxes(K, -1, -2) / Q.shape[-1] ** 0.5
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        outs.append(w / w.sum(axis=-1, keepdims=True) @ V)
    return np.concatenate(outs, axis=-2)
""",
        "every score written into a buffer made before the call (issue 27, item 2)": """
_SCORES = np.ones(1 << 24)                  # 128 MiB, allocated and touched when the cell runs
def chunked_attention(Q, K, V, chunk_size):
    if chunk_size < 1:
        raise ValueError("chunk_size")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    shape = Q.shape[:-1] + K.shape[-2:-1]
    s = _SCORES[:int(np.prod(shape))].reshape(shape)
    np.matmul(Q, np.swapaxes(K, -1, -2), out=s)
    s /= Q.shape[-1] ** 0.5
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    return s @ V
""",
        "no 1/sqrt(d_k) scale": """
def chunked_attention(Q, K, V, chunk_size):
    if chunk_size < 1:
        raise ValueError("chunk_size")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    m = np.full(Q.shape[:-1], -np.inf, dtype=Q.dtype)
    l = np.zeros(Q.shape[:-1], dtype=Q.dtype)
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:], dtype=Q.dtype)
    for s0 in range(0, K.shape[-2], chunk_size):
        s = Q @ np.swapaxes(K[..., s0:s0 + chunk_size, :], -1, -2)
        m_b = s.max(axis=-1)
        p = np.exp(s - m_b[..., None])
        m, l, acc = online_softmax_merge(m, l, acc, m_b, p.sum(axis=-1), p @ V[..., s0:s0 + chunk_size, :])
    return acc / l[..., None]
""",
        "last partial chunk dropped": """
def chunked_attention(Q, K, V, chunk_size):
    if chunk_size < 1:
        raise ValueError("chunk_size")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    m = np.full(Q.shape[:-1], -np.inf, dtype=Q.dtype)
    l = np.zeros(Q.shape[:-1], dtype=Q.dtype)
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:], dtype=Q.dtype)
    n_blocks = max(K.shape[-2] // chunk_size, 1)
    for b in range(n_blocks):
        s0 = b * chunk_size
        s = Q @ np.swapaxes(K[..., s0:s0 + chunk_size, :], -1, -2) / Q.shape[-1] ** 0.5
        m_b = s.max(axis=-1)
        p = np.exp(s - m_b[..., None])
        m, l, acc = online_softmax_merge(m, l, acc, m_b, p.sum(axis=-1), p @ V[..., s0:s0 + chunk_size, :])
    return acc / l[..., None]
""",
        "each chunk normalised separately, then averaged": """
def chunked_attention(Q, K, V, chunk_size):
    if chunk_size < 1:
        raise ValueError("chunk_size")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    outs = []
    for s0 in range(0, K.shape[-2], chunk_size):
        s = Q @ np.swapaxes(K[..., s0:s0 + chunk_size, :], -1, -2) / Q.shape[-1] ** 0.5
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        outs.append((w / w.sum(axis=-1, keepdims=True)) @ V[..., s0:s0 + chunk_size, :])
    return sum(outs) / len(outs)
""",
        "running max starts at 0 instead of -inf": """
def chunked_attention(Q, K, V, chunk_size):
    if chunk_size < 1:
        raise ValueError("chunk_size")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    m = np.zeros(Q.shape[:-1] + (1,), dtype=Q.dtype)
    l = np.zeros(Q.shape[:-1] + (1,), dtype=Q.dtype)
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:], dtype=Q.dtype)
    for s0 in range(0, K.shape[-2], chunk_size):
        s = Q @ np.swapaxes(K[..., s0:s0 + chunk_size, :], -1, -2) / Q.shape[-1] ** 0.5
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        p = np.exp(s - m_new)
        a = np.exp(m - m_new)
        l = a * l + p.sum(axis=-1, keepdims=True)
        acc = a * acc + p @ V[..., s0:s0 + chunk_size, :]
        m = m_new
    with np.errstate(invalid="ignore"):
        return acc / l
""",
        "no maximum at all (raw exp of the scores)": """
def chunked_attention(Q, K, V, chunk_size):
    if chunk_size < 1:
        raise ValueError("chunk_size")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    l = np.zeros(Q.shape[:-1] + (1,), dtype=Q.dtype)
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:], dtype=Q.dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        for s0 in range(0, K.shape[-2], chunk_size):
            p = np.exp(Q @ np.swapaxes(K[..., s0:s0 + chunk_size, :], -1, -2) / Q.shape[-1] ** 0.5)
            l = l + p.sum(axis=-1, keepdims=True)
            acc = acc + p @ V[..., s0:s0 + chunk_size, :]
        return acc / l
""",
        "rescale factor inverted: exp(m_new - m)": """
def chunked_attention(Q, K, V, chunk_size):
    if chunk_size < 1:
        raise ValueError("chunk_size")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    m = np.full(Q.shape[:-1] + (1,), -np.inf, dtype=Q.dtype)
    l = np.zeros(Q.shape[:-1] + (1,), dtype=Q.dtype)
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:], dtype=Q.dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        for s0 in range(0, K.shape[-2], chunk_size):
            s = Q @ np.swapaxes(K[..., s0:s0 + chunk_size, :], -1, -2) / Q.shape[-1] ** 0.5
            m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
            a = np.where(np.isneginf(m), 0.0, np.exp(m_new - m))
            p = np.exp(s - m_new)
            l = a * l + p.sum(axis=-1, keepdims=True)
            acc = a * acc + p @ V[..., s0:s0 + chunk_size, :]
            m = m_new
        return acc / l
""",
        "only the running sum is rescaled, not the accumulator": """
def chunked_attention(Q, K, V, chunk_size):
    if chunk_size < 1:
        raise ValueError("chunk_size")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    m = np.full(Q.shape[:-1] + (1,), -np.inf, dtype=Q.dtype)
    l = np.zeros(Q.shape[:-1] + (1,), dtype=Q.dtype)
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:], dtype=Q.dtype)
    for s0 in range(0, K.shape[-2], chunk_size):
        s = Q @ np.swapaxes(K[..., s0:s0 + chunk_size, :], -1, -2) / Q.shape[-1] ** 0.5
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        p = np.exp(s - m_new)
        l = np.exp(m - m_new) * l + p.sum(axis=-1, keepdims=True)
        acc = acc + p @ V[..., s0:s0 + chunk_size, :]
        m = m_new
    return acc / l
""",
        "K.T instead of swapaxes (wrong for batches)": """
def chunked_attention(Q, K, V, chunk_size):
    if chunk_size < 1:
        raise ValueError("chunk_size")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    m = np.full(Q.shape[:-1], -np.inf, dtype=Q.dtype)
    l = np.zeros(Q.shape[:-1], dtype=Q.dtype)
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:], dtype=Q.dtype)
    for s0 in range(0, K.shape[-2], chunk_size):
        s = Q @ K[..., s0:s0 + chunk_size, :].T / Q.shape[-1] ** 0.5
        m_b = s.max(axis=-1)
        p = np.exp(s - m_b[..., None])
        m, l, acc = online_softmax_merge(m, l, acc, m_b, p.sum(axis=-1), p @ V[..., s0:s0 + chunk_size, :])
    return acc / l[..., None]
""",
        "chunks along axis 0 (K[s0:s0 + c]) instead of the key axis": """
def chunked_attention(Q, K, V, chunk_size):
    if chunk_size < 1:
        raise ValueError("chunk_size")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    m = np.full(Q.shape[:-1], -np.inf, dtype=Q.dtype)
    l = np.zeros(Q.shape[:-1], dtype=Q.dtype)
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:], dtype=Q.dtype)
    for s0 in range(0, len(K), chunk_size):
        s = Q @ np.swapaxes(K[s0:s0 + chunk_size], -1, -2) / Q.shape[-1] ** 0.5
        m_b = s.max(axis=-1)
        p = np.exp(s - m_b[..., None])
        m, l, acc = online_softmax_merge(m, l, acc, m_b, p.sum(axis=-1), p @ V[s0:s0 + chunk_size])
    return acc / l[..., None]
""",
        "returns (out, weights) like scaled_dot_product_attention": """
def chunked_attention(Q, K, V, chunk_size):
    if chunk_size < 1:
        raise ValueError("chunk_size")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    s = Q @ np.swapaxes(K, -1, -2) / Q.shape[-1] ** 0.5
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    w = w / w.sum(axis=-1, keepdims=True)
    return w @ V, w
""",
        "float32 inputs computed and returned in float64": """
def chunked_attention(Q, K, V, chunk_size):
    if chunk_size < 1:
        raise ValueError("chunk_size")
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    m = np.full(Q.shape[:-1], -np.inf)
    l = np.zeros(Q.shape[:-1])
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:])
    for s0 in range(0, K.shape[-2], chunk_size):
        s = Q @ np.swapaxes(K[..., s0:s0 + chunk_size, :], -1, -2) / Q.shape[-1] ** 0.5
        m_b = s.max(axis=-1)
        p = np.exp(s - m_b[..., None])
        m, l, acc = online_softmax_merge(m, l, acc, m_b, p.sum(axis=-1), p @ V[..., s0:s0 + chunk_size, :])
    return acc / l[..., None]
""",
        "chunk_size < 1 not rejected (silently returns NaN)": """
def chunked_attention(Q, K, V, chunk_size):
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    m = np.full(Q.shape[:-1], -np.inf, dtype=Q.dtype)
    l = np.zeros(Q.shape[:-1], dtype=Q.dtype)
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:], dtype=Q.dtype)
    start = 0
    while start < K.shape[-2] and chunk_size > 0:
        s = Q @ np.swapaxes(K[..., start:start + chunk_size, :], -1, -2) / Q.shape[-1] ** 0.5
        m_b = s.max(axis=-1)
        p = np.exp(s - m_b[..., None])
        m, l, acc = online_softmax_merge(m, l, acc, m_b, p.sum(axis=-1), p @ V[..., start:start + chunk_size, :])
        start += chunk_size
    with np.errstate(invalid="ignore"):
        return acc / l[..., None]
""",
    },
}

CORRECT = {
    "local_attention_mask": {
        "double loop": """
def local_attention_mask(n, window, causal=False):
    if window < 0:
        raise ValueError("negative window")
    mask = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(n):
            mask[i, j] = abs(i - j) <= window and (j <= i or not causal)
    return mask
""",
        "np.tril and np.triu with offsets": """
def local_attention_mask(n, window, causal=False):
    if window < 0:
        raise ValueError("negative window")
    ones = np.ones((n, n), dtype=bool)
    mask = np.tril(ones, window) & np.triu(ones, -window)
    return np.tril(mask) if causal else mask
""",
        "torch band via triu/tril, converted to NumPy": """
def local_attention_mask(n, window, causal=False):
    if window < 0:
        raise ValueError("negative window")
    band = torch.ones(n, n, dtype=torch.bool).triu(-int(window)).tril(0 if causal else int(window))
    return band.numpy()
""",
        "np.subtract.outer": """
def local_attention_mask(n, window, causal=False):
    if window < 0:
        raise ValueError("negative window")
    offset = np.subtract.outer(np.arange(n), np.arange(n))   # i - j
    low = 0 if causal else -window
    return (offset >= low) & (offset <= window)
""",
    },
    "online_softmax_merge": {
        "torch, with torch.where for empty states": """
def online_softmax_merge(m1, l1, acc1, m2, l2, acc2):
    t = [torch.as_tensor(as_float_array(a)) for a in (m1, l1, acc1, m2, l2, acc2)]
    m1, l1, acc1, m2, l2, acc2 = t
    m = torch.maximum(m1, m2)
    ref = torch.where(torch.isinf(m), torch.zeros_like(m), m)
    a1, a2 = torch.exp(m1 - ref), torch.exp(m2 - ref)
    return m.numpy(), (a1 * l1 + a2 * l2).numpy(), (a1[..., None] * acc1 + a2[..., None] * acc2).numpy()
""",
        "log-domain: keep log l, combine with logaddexp": """
def online_softmax_merge(m1, l1, acc1, m2, l2, acc2):
    m1, l1, acc1, m2, l2, acc2 = (as_float_array(a) for a in (m1, l1, acc1, m2, l2, acc2))
    m = np.maximum(m1, m2)
    with np.errstate(divide="ignore", invalid="ignore"):
        lse1, lse2 = m1 + np.log(l1), m2 + np.log(l2)       # log of sum of exp(s): -inf for an empty state
        lse = np.logaddexp(lse1, lse2)
        l = np.where(np.isneginf(m), 0.0, np.exp(lse - m))
        a1 = np.where(np.isneginf(m1), 0.0, np.exp(m1 - m))
        a2 = np.where(np.isneginf(m2), 0.0, np.exp(m2 - m))
    acc = a1[..., None] * acc1 + a2[..., None] * acc2
    return m, l.astype(acc.dtype), acc
""",
        "branch on which maximum is larger": """
def online_softmax_merge(m1, l1, acc1, m2, l2, acc2):
    m1, l1, acc1, m2, l2, acc2 = (as_float_array(a) for a in (m1, l1, acc1, m2, l2, acc2))
    first_big = m1 >= m2
    m = np.where(first_big, m1, m2)
    gap = -np.abs(np.where(np.isneginf(m1) & np.isneginf(m2), 0.0, m1 - m2))  # <= 0, NaN-free
    small = np.exp(np.nan_to_num(gap, nan=-np.inf))      # factor for the state with the smaller max
    a1 = np.where(first_big, 1.0, small).astype(m.dtype)
    a2 = np.where(first_big, small, 1.0).astype(m.dtype)
    both_empty = np.isneginf(m)
    a1, a2 = np.where(both_empty, 0.0, a1).astype(m.dtype), np.where(both_empty, 0.0, a2).astype(m.dtype)
    return m, a1 * l1 + a2 * l2, a1[..., None] * acc1 + a2[..., None] * acc2
""",
    },
    "chunked_attention": {
        "explicit running arrays (no merge call), keepdims": """
def chunked_attention(Q, K, V, chunk_size):
    if chunk_size < 1:
        raise ValueError("chunk_size")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    m = np.full(Q.shape[:-1] + (1,), -np.inf, dtype=Q.dtype)    # (..., n_q, 1)
    l = np.zeros(Q.shape[:-1] + (1,), dtype=Q.dtype)
    acc = np.zeros(Q.shape[:-1] + V.shape[-1:], dtype=Q.dtype)
    for s0 in range(0, K.shape[-2], chunk_size):
        s = Q @ np.swapaxes(K[..., s0:s0 + chunk_size, :], -1, -2) / Q.shape[-1] ** 0.5
        m_new = np.maximum(m, s.max(axis=-1, keepdims=True))
        a = np.exp(m - m_new)                                     # m_new is finite after any block
        p = np.exp(s - m_new)
        l = a * l + p.sum(axis=-1, keepdims=True)
        acc = a * acc + p @ V[..., s0:s0 + chunk_size, :]
        m = m_new
    return acc / l
""",
        "normalised running output and log-sum-exp, with torch per block": """
def chunked_attention(Q, K, V, chunk_size):
    if chunk_size < 1:
        raise ValueError("chunk_size")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    q, k, v = torch.from_numpy(np.ascontiguousarray(Q)), torch.from_numpy(np.ascontiguousarray(K)), \\
        torch.from_numpy(np.ascontiguousarray(V))
    lse = torch.full(q.shape[:-1] + (1,), float("-inf"), dtype=q.dtype)
    out = torch.zeros(q.shape[:-1] + v.shape[-1:], dtype=q.dtype)
    for s0 in range(0, k.shape[-2], chunk_size):
        s = q @ k[..., s0:s0 + chunk_size, :].transpose(-2, -1) / q.shape[-1] ** 0.5
        lse_b = torch.logsumexp(s, dim=-1, keepdim=True)
        o_b = torch.softmax(s, dim=-1) @ v[..., s0:s0 + chunk_size, :]
        lse_new = torch.logaddexp(lse, lse_b)
        out = torch.exp(lse - lse_new) * out + torch.exp(lse_b - lse_new) * o_b
        lse = lse_new
    return out.numpy()
""",
        "block states merged pairwise in a tree": """
def chunked_attention(Q, K, V, chunk_size):
    if chunk_size < 1:
        raise ValueError("chunk_size")
    Q, K, V = as_float_array(Q), as_float_array(K), as_float_array(V)
    states = []
    for s0 in range(0, K.shape[-2], chunk_size):
        s = np.einsum("...qd,...kd->...qk", Q, K[..., s0:s0 + chunk_size, :]) / np.sqrt(Q.shape[-1]).astype(Q.dtype)
        m_b = s.max(axis=-1)
        p = np.exp(s - m_b[..., None])
        states.append((m_b, p.sum(axis=-1), np.einsum("...qk,...kv->...qv", p, V[..., s0:s0 + chunk_size, :])))
        while len(states) >= 2 and len(states) % 2 == 0:
            b, a = states.pop(), states.pop()
            states.append(online_softmax_merge(*a, *b))
    while len(states) > 1:
        b, a = states.pop(), states.pop()
        states.append(online_softmax_merge(*a, *b))
    m, l, acc = states[0]
    return acc / l[..., None]
""",
    },
}

# The memory probe measures resident memory too: holding every score inside PyTorch
# (invisible to tracemalloc) is caught like holding them in NumPy.
WRONG["chunked_attention"]["all scores held at once, inside torch (invisible to tracemalloc)"] = """
def chunked_attention(Q, K, V, chunk_size):
    q, k, v = (torch.as_tensor(as_float_array(a)) for a in (Q, K, V))
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5     # (..., n_q, n_k), all at once
    return (torch.softmax(scores, dim=-1) @ v).numpy()
"""
