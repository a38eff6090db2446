"""Chapter 10: the mistakes students really make, and correct alternatives."""

# --------------------------------------------------------------------------------------
# Shared pieces of the encoder-block mutants: one correct block with a switch per bug.
# --------------------------------------------------------------------------------------
_BLOCK = '''
def encoder_block(x, params, num_heads, norm_first=False, mask=None):
    p = params
    x = as_float_array(x)
    {setup}

    def mha(h):
        out, _ = multi_head_attention(h, h, p["W_q"], p["W_k"], p["W_v"], p["W_o"], num_heads, {mask},
                                      b_q=p["b_q"], b_k=p["b_k"], b_v=p["b_v"], b_o=p["b_o"])
        return out

    def ffn(h):
        return {ffn}

    if {pre}:
        {pre_body}
    {post_body}
'''
_DEFAULTS = dict(
    setup="",
    mask="mask",
    ffn='np.maximum(h @ p["W_1"] + p["b_1"], 0.0) @ p["W_2"] + p["b_2"]',
    pre="norm_first",
    pre_body='h = x + mha(layer_norm(x, p["gamma_1"], p["beta_1"]))\n'
             '        return h + ffn(layer_norm(h, p["gamma_2"], p["beta_2"]))',
    post_body='h = layer_norm(x + mha(x), p["gamma_1"], p["beta_1"])\n'
              '    return layer_norm(h + ffn(h), p["gamma_2"], p["beta_2"])',
)


def _block(**changes):
    return _BLOCK.format(**{**_DEFAULTS, **changes})


WRONG = {
    "sinusoidal_positional_encoding": {
        "cos at even columns, sin at odd columns": """
def sinusoidal_positional_encoding(n_positions, d_model):
    if d_model % 2:
        raise ValueError("odd d_model")
    p = np.arange(n_positions)[:, None]
    angles = p / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((n_positions, d_model))
    pe[:, 0::2] = np.cos(angles)
    pe[:, 1::2] = np.sin(angles)
    return pe
""",
        "sin in the first half, cos in the second half (concatenated)": """
def sinusoidal_positional_encoding(n_positions, d_model):
    if d_model % 2:
        raise ValueError("odd d_model")
    p = np.arange(n_positions)[:, None]
    angles = p / 10000 ** (np.arange(0, d_model, 2) / d_model)
    return np.concatenate([np.sin(angles), np.cos(angles)], axis=-1)
""",
        "exponent i / d_model instead of 2i / d_model": """
def sinusoidal_positional_encoding(n_positions, d_model):
    if d_model % 2:
        raise ValueError("odd d_model")
    p = np.arange(n_positions)[:, None]
    angles = p / 10000 ** (np.arange(d_model // 2) / d_model)
    pe = np.zeros((n_positions, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe
""",
        "exponent uses the column index j (odd columns get their own angle)": """
def sinusoidal_positional_encoding(n_positions, d_model):
    if d_model % 2:
        raise ValueError("odd d_model")
    p = np.arange(n_positions)[:, None]
    j = np.arange(d_model)
    angles = p / 10000 ** (j / d_model)
    return np.where(j % 2 == 0, np.sin(angles), np.cos(angles))
""",
        "base 1000 instead of 10000": """
def sinusoidal_positional_encoding(n_positions, d_model):
    if d_model % 2:
        raise ValueError("odd d_model")
    p = np.arange(n_positions)[:, None]
    angles = p / 1000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((n_positions, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe
""",
        "base d_model instead of 10000": """
def sinusoidal_positional_encoding(n_positions, d_model):
    if d_model % 2:
        raise ValueError("odd d_model")
    p = np.arange(n_positions)[:, None]
    angles = p / float(d_model) ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((n_positions, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe
""",
        "positions start at 1": """
def sinusoidal_positional_encoding(n_positions, d_model):
    if d_model % 2:
        raise ValueError("odd d_model")
    p = np.arange(1, n_positions + 1)[:, None]
    angles = p / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((n_positions, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe
""",
        "p multiplied by the power instead of divided": """
def sinusoidal_positional_encoding(n_positions, d_model):
    if d_model % 2:
        raise ValueError("odd d_model")
    p = np.arange(n_positions)[:, None]
    angles = p * 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((n_positions, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe
""",
        "no check: an odd d_model silently gives a table": """
def sinusoidal_positional_encoding(n_positions, d_model):
    pe = np.zeros((n_positions, d_model))
    for p in range(n_positions):
        for j in range(d_model):
            angle = p / 10000 ** ((j - j % 2) / d_model)
            pe[p, j] = np.cos(angle) if j % 2 else np.sin(angle)
    return pe
""",
        "assert instead of ValueError": """
def sinusoidal_positional_encoding(n_positions, d_model):
    assert d_model % 2 == 0, "d_model must be even"
    p = np.arange(n_positions)[:, None]
    angles = p / 10000 ** (np.arange(0, d_model, 2) / d_model)
    pe = np.zeros((n_positions, d_model))
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe
""",
        "transposed: (d_model, n_positions)": """
def sinusoidal_positional_encoding(n_positions, d_model):
    if d_model % 2:
        raise ValueError("odd d_model")
    p = np.arange(n_positions)[None, :]
    angles = p / 10000 ** (np.arange(0, d_model, 2)[:, None] / d_model)
    pe = np.zeros((d_model, n_positions))
    pe[0::2] = np.sin(angles)
    pe[1::2] = np.cos(angles)
    return pe
""",
        "float32 table": """
def sinusoidal_positional_encoding(n_positions, d_model):
    if d_model % 2:
        raise ValueError("odd d_model")
    p = np.arange(n_positions, dtype=np.float32)[:, None]
    angles = p / np.float32(10000) ** (np.arange(0, d_model, 2, dtype=np.float32) / np.float32(d_model))
    pe = np.zeros((n_positions, d_model), dtype=np.float32)
    pe[:, 0::2] = np.sin(angles)
    pe[:, 1::2] = np.cos(angles)
    return pe
""",
    },
    "layer_norm": {
        "normalised over axis 0": """
def layer_norm(x, gamma, beta, eps=1e-5):
    x = as_float_array(x)
    mean = x.mean(axis=0, keepdims=True)
    var = x.var(axis=0, keepdims=True)
    return gamma * (x - mean) / np.sqrt(var + eps) + beta
""",
        "unbiased variance (ddof=1)": """
def layer_norm(x, gamma, beta, eps=1e-5):
    x = as_float_array(x)
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, ddof=1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(var + eps) + beta
""",
        "eps outside the square root: / (std + eps)": """
def layer_norm(x, gamma, beta, eps=1e-5):
    x = as_float_array(x)
    mean = x.mean(axis=-1, keepdims=True)
    std = x.std(axis=-1, keepdims=True)
    return gamma * (x - mean) / (std + eps) + beta
""",
        "no eps at all": """
def layer_norm(x, gamma, beta, eps=1e-5):
    x = as_float_array(x)
    mean = x.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return gamma * (x - mean) / x.std(axis=-1, keepdims=True) + beta
""",
        "gamma and beta swapped": """
def layer_norm(x, gamma, beta, eps=1e-5):
    x = as_float_array(x)
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return beta * (x - mean) / np.sqrt(var + eps) + gamma
""",
        "gamma and beta missing": """
def layer_norm(x, gamma, beta, eps=1e-5):
    x = as_float_array(x)
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)
""",
        "beta missing": """
def layer_norm(x, gamma, beta, eps=1e-5):
    x = as_float_array(x)
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(var + eps)
""",
        "eps argument ignored (hard-coded 1e-5)": """
def layer_norm(x, gamma, beta, eps=1e-5):
    x = as_float_array(x)
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return gamma * (x - mean) / np.sqrt(var + 1e-5) + beta
""",
        "statistics of the whole array": """
def layer_norm(x, gamma, beta, eps=1e-5):
    x = as_float_array(x)
    return gamma * (x - x.mean()) / np.sqrt(x.var() + eps) + beta
""",
        "no keepdims (only works for a single vector)": """
def layer_norm(x, gamma, beta, eps=1e-5):
    x = as_float_array(x)
    return gamma * (x - x.mean(axis=-1)) / np.sqrt(x.var(axis=-1) + eps) + beta
""",
        "subtracts the mean in place": """
def layer_norm(x, gamma, beta, eps=1e-5):
    x = as_float_array(x)
    x -= x.mean(axis=-1, keepdims=True)
    return gamma * x / np.sqrt((x ** 2).mean(axis=-1, keepdims=True) + eps) + beta
""",
        "always float64": """
def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, dtype=np.float64)
    mean = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return np.asarray(gamma, dtype=np.float64) * (x - mean) / np.sqrt(var + eps) + np.asarray(beta, dtype=np.float64)
""",
    },
    "encoder_block": {
        "no residual connections": _block(
            pre_body='h = mha(layer_norm(x, p["gamma_1"], p["beta_1"]))\n'
                     '        return ffn(layer_norm(h, p["gamma_2"], p["beta_2"]))',
            post_body='h = layer_norm(mha(x), p["gamma_1"], p["beta_1"])\n'
                      '    return layer_norm(ffn(h), p["gamma_2"], p["beta_2"])'),
        "no residual around the feed-forward network": _block(
            pre_body='h = x + mha(layer_norm(x, p["gamma_1"], p["beta_1"]))\n'
                     '        return ffn(layer_norm(h, p["gamma_2"], p["beta_2"]))',
            post_body='h = layer_norm(x + mha(x), p["gamma_1"], p["beta_1"])\n'
                      '    return layer_norm(ffn(h), p["gamma_2"], p["beta_2"])'),
        "norm_first ignored (always post-norm)": _block(pre="False"),
        "norm_first ignored (always pre-norm)": _block(pre="True"),
        "pre-norm and post-norm swapped": _block(pre="not norm_first"),
        "post-norm as x + LN(sublayer(x))": _block(
            post_body='h = x + layer_norm(mha(x), p["gamma_1"], p["beta_1"])\n'
                      '    return h + layer_norm(ffn(h), p["gamma_2"], p["beta_2"])'),
        "pre-norm residual adds the normalised input": _block(
            pre_body='n1 = layer_norm(x, p["gamma_1"], p["beta_1"])\n'
                     '        h = n1 + mha(n1)\n'
                     '        n2 = layer_norm(h, p["gamma_2"], p["beta_2"])\n'
                     '        return n2 + ffn(n2)'),
        "FFN without ReLU": _block(ffn='(h @ p["W_1"] + p["b_1"]) @ p["W_2"] + p["b_2"]'),
        "FFN with GELU instead of ReLU": _block(
            ffn='torch.nn.functional.gelu(torch.from_numpy(h @ p["W_1"] + p["b_1"])).numpy() @ p["W_2"] + p["b_2"]'),
        "FFN without biases": _block(ffn='np.maximum(h @ p["W_1"], 0.0) @ p["W_2"]'),
        "ReLU after the second FFN layer too": _block(
            ffn='np.maximum(np.maximum(h @ p["W_1"] + p["b_1"], 0.0) @ p["W_2"] + p["b_2"], 0.0)'),
        "one layer norm's parameters used for both sublayers": _block(
            pre_body='h = x + mha(layer_norm(x, p["gamma_1"], p["beta_1"]))\n'
                     '        return h + ffn(layer_norm(h, p["gamma_1"], p["beta_1"]))',
            post_body='h = layer_norm(x + mha(x), p["gamma_1"], p["beta_1"])\n'
                      '    return layer_norm(h + ffn(h), p["gamma_1"], p["beta_1"])'),
        "mask polarity inverted": _block(mask="None if mask is None else ~np.asarray(mask, dtype=bool)"),
        "mask ignored": _block(mask="None"),
        "attention not scaled (own multi-head attention)": _block(setup='''
    def multi_head_attention(x_q, x_kv, W_q, W_k, W_v, W_o, num_heads, mask=None,
                             b_q=None, b_k=None, b_v=None, b_o=None):
        def split_heads(X, h):
            return np.swapaxes(X.reshape(*X.shape[:-1], h, -1), -2, -3)          # (..., h, n, d_head)

        def merge_heads(X):
            return np.swapaxes(X, -2, -3).reshape(*X.shape[:-3], X.shape[-2], -1)  # (..., n, d_model)

        q = split_heads(x_q @ W_q + b_q, num_heads)
        k = split_heads(x_kv @ W_k + b_k, num_heads)
        v = split_heads(x_kv @ W_v + b_v, num_heads)
        s = q @ np.swapaxes(k, -1, -2)
        if mask is not None:
            s = np.where(np.asarray(mask, dtype=bool)[..., None, :, :], s, -np.inf)
        m = s.max(axis=-1, keepdims=True)
        e = np.exp(s - np.where(np.isfinite(m), m, 0.0))
        w = e / np.maximum(e.sum(axis=-1, keepdims=True), 1e-300)
        return merge_heads(w @ v) @ W_o + b_o, w'''),
        "adds the residual in place (x += ...)": """
def encoder_block(x, params, num_heads, norm_first=False, mask=None):
    p = params
    x = as_float_array(x)

    def mha(h):
        return multi_head_attention(h, h, p["W_q"], p["W_k"], p["W_v"], p["W_o"], num_heads, mask,
                                    b_q=p["b_q"], b_k=p["b_k"], b_v=p["b_v"], b_o=p["b_o"])[0]

    def ffn(h):
        return np.maximum(h @ p["W_1"] + p["b_1"], 0.0) @ p["W_2"] + p["b_2"]

    if norm_first:
        x += mha(layer_norm(x, p["gamma_1"], p["beta_1"]))
        x += ffn(layer_norm(x, p["gamma_2"], p["beta_2"]))
        return x
    x += mha(x)
    h = layer_norm(x, p["gamma_1"], p["beta_1"])
    return layer_norm(h + ffn(h), p["gamma_2"], p["beta_2"])
""",
        "2-D only: the batch is flattened into one long sequence": """
def encoder_block(x, params, num_heads, norm_first=False, mask=None):
    p = params
    x = as_float_array(x)
    x = x.reshape(-1, x.shape[-1])

    def mha(h):
        return multi_head_attention(h, h, p["W_q"], p["W_k"], p["W_v"], p["W_o"], num_heads, mask,
                                    b_q=p["b_q"], b_k=p["b_k"], b_v=p["b_v"], b_o=p["b_o"])[0]

    def ffn(h):
        return np.maximum(h @ p["W_1"] + p["b_1"], 0.0) @ p["W_2"] + p["b_2"]

    if norm_first:
        h = x + mha(layer_norm(x, p["gamma_1"], p["beta_1"]))
        return h + ffn(layer_norm(h, p["gamma_2"], p["beta_2"]))
    h = layer_norm(x + mha(x), p["gamma_1"], p["beta_1"])
    return layer_norm(h + ffn(h), p["gamma_2"], p["beta_2"])
""",
    },
}

CORRECT = {
    "sinusoidal_positional_encoding": {
        "two loops with math.sin and math.cos": """
def sinusoidal_positional_encoding(n_positions, d_model):
    if d_model % 2 == 1:
        raise ValueError("d_model must be even")
    pe = np.empty((int(n_positions), int(d_model)))
    for p in range(int(n_positions)):
        for i in range(int(d_model) // 2):
            angle = p / math.pow(10000, 2 * i / d_model)
            pe[p, 2 * i] = math.sin(angle)
            pe[p, 2 * i + 1] = math.cos(angle)
    return pe
""",
        "PyTorch tutorial style: exp(-log(10000) 2i / d) in torch": """
def sinusoidal_positional_encoding(n_positions, d_model):
    if d_model % 2 != 0:
        raise ValueError("d_model must be even")
    position = torch.arange(int(n_positions), dtype=torch.float64).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, int(d_model), 2, dtype=torch.float64) * (-math.log(10000.0) / d_model))
    pe = torch.zeros(int(n_positions), int(d_model), dtype=torch.float64)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe.numpy()
""",
        "stack sin and cos, then reshape": """
def sinusoidal_positional_encoding(n_positions, d_model):
    half, odd = divmod(d_model, 2)
    if odd:
        raise ValueError("d_model must be even")
    omega = 1.0 / np.power(10000.0, 2 * np.arange(half) / d_model)     # (d_model / 2,)
    angles = np.outer(np.arange(n_positions), omega)                    # (n, d_model / 2)
    return np.stack([np.sin(angles), np.cos(angles)], axis=-1).reshape(n_positions, d_model)
""",
    },
    "layer_norm": {
        "torch.nn.functional.layer_norm inside": """
def layer_norm(x, gamma, beta, eps=1e-5):
    x = as_float_array(x)
    t = torch.from_numpy(np.array(x))
    g = torch.as_tensor(np.asarray(gamma), dtype=t.dtype)
    b = torch.as_tensor(np.asarray(beta), dtype=t.dtype)
    return torch.nn.functional.layer_norm(t, t.shape[-1:], g, b, eps).numpy()
""",
        "np.var and a standardise-then-affine split": """
def layer_norm(x, gamma, beta, eps=1e-5):
    x = as_float_array(x)
    centred = x - np.mean(x, axis=-1, keepdims=True)
    x_hat = centred / np.sqrt(np.var(x, axis=-1, keepdims=True) + eps)
    return np.multiply(x_hat, as_float_array(gamma)) + as_float_array(beta)
""",
        "a loop over the vectors": """
def layer_norm(x, gamma, beta, eps=1e-5):
    x = as_float_array(x)
    gamma, beta = np.asarray(gamma, dtype=x.dtype), np.asarray(beta, dtype=x.dtype)
    out = np.empty_like(x)
    flat_in, flat_out = x.reshape(-1, x.shape[-1]), out.reshape(-1, x.shape[-1])
    for row in range(flat_in.shape[0]):
        v = flat_in[row].astype(np.float64)
        m = sum(v) / len(v)
        var = sum((vi - m) ** 2 for vi in v) / len(v)
        flat_out[row] = (v - m) / math.sqrt(var + eps) * gamma + beta
    return out
""",
    },
    "encoder_block": {
        "torch tensors inside": """
def encoder_block(x, params, num_heads, norm_first=False, mask=None):
    x = as_float_array(x)
    t = {k: torch.from_numpy(np.asarray(v, dtype=x.dtype)) for k, v in params.items()}
    h = torch.from_numpy(np.array(x))
    F = torch.nn.functional
    d = h.shape[-1]

    def mha(z):
        q = (z @ t["W_q"] + t["b_q"]).unflatten(-1, (num_heads, -1)).transpose(-3, -2)   # (..., h, n, d_head)
        k = (z @ t["W_k"] + t["b_k"]).unflatten(-1, (num_heads, -1)).transpose(-3, -2)
        v = (z @ t["W_v"] + t["b_v"]).unflatten(-1, (num_heads, -1)).transpose(-3, -2)
        m = None if mask is None else torch.from_numpy(np.asarray(mask, dtype=bool)).unsqueeze(-3)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=m)                           # (..., h, n, d_head)
        return o.transpose(-3, -2).flatten(-2) @ t["W_o"] + t["b_o"]

    def ffn(z):
        return torch.relu(z @ t["W_1"] + t["b_1"]) @ t["W_2"] + t["b_2"]

    ln1 = lambda z: F.layer_norm(z, (d,), t["gamma_1"], t["beta_1"])
    ln2 = lambda z: F.layer_norm(z, (d,), t["gamma_2"], t["beta_2"])
    if norm_first:
        h = h + mha(ln1(h))
        h = h + ffn(ln2(h))
    else:
        h = ln1(h + mha(h))
        h = ln2(h + ffn(h))
    return h.numpy()
""",
        "own einsum attention and inline layer norm": """
def encoder_block(x, params, num_heads, norm_first=False, mask=None):
    x = as_float_array(x)
    p = {k: np.asarray(v, dtype=x.dtype) for k, v in params.items()}

    def ln(z, g, b):
        mu = z.mean(-1, keepdims=True)
        return g * (z - mu) / np.sqrt(((z - mu) ** 2).mean(-1, keepdims=True) + 1e-5) + b

    def mha(z):
        *batch, n, d = z.shape
        dh = d // num_heads
        q, k, v = ((z @ p[W] + p[b]).reshape(*batch, n, num_heads, dh)
                   for W, b in (("W_q", "b_q"), ("W_k", "b_k"), ("W_v", "b_v")))
        s = np.einsum("...ihd,...jhd->...hij", q, k) / np.sqrt(dh).astype(x.dtype)
        if mask is not None:
            s = np.where(np.asarray(mask, dtype=bool)[..., None, :, :], s, -np.inf)
        top = s.max(-1, keepdims=True)
        e = np.exp(s - np.where(np.isfinite(top), top, 0))
        tot = e.sum(-1, keepdims=True)
        w = e / np.where(tot > 0, tot, 1)
        o = np.einsum("...hij,...jhd->...ihd", w, v).reshape(*batch, n, d)
        return o @ p["W_o"] + p["b_o"]

    def ffn(z):
        return np.maximum(z @ p["W_1"] + p["b_1"], 0) @ p["W_2"] + p["b_2"]

    if norm_first:
        h = x + mha(ln(x, p["gamma_1"], p["beta_1"]))
        return h + ffn(ln(h, p["gamma_2"], p["beta_2"]))
    h = ln(x + mha(x), p["gamma_1"], p["beta_1"])
    return ln(h + ffn(h), p["gamma_2"], p["beta_2"])
""",
        "a loop over the sequences of the batch": """
def encoder_block(x, params, num_heads, norm_first=False, mask=None):
    x = as_float_array(x)
    *batch, n, d = x.shape
    m = None if mask is None else np.broadcast_to(np.asarray(mask, dtype=bool), (*batch, n, n))
    out = np.empty_like(x)
    for idx in np.ndindex(*batch):
        h = x[idx]
        mh = None if m is None else m[idx]
        z = layer_norm(h, params["gamma_1"], params["beta_1"]) if norm_first else h
        a, _ = multi_head_attention(z, z, params["W_q"], params["W_k"], params["W_v"], params["W_o"], num_heads, mh,
                                    b_q=params["b_q"], b_k=params["b_k"], b_v=params["b_v"], b_o=params["b_o"])
        h = h + a if norm_first else layer_norm(h + a, params["gamma_1"], params["beta_1"])
        z = layer_norm(h, params["gamma_2"], params["beta_2"]) if norm_first else h
        f = np.maximum(z @ params["W_1"] + params["b_1"], 0) @ params["W_2"] + params["b_2"]
        out[idx] = h + f if norm_first else layer_norm(h + f, params["gamma_2"], params["beta_2"])
    return out
""",
    },
}

# Slips in layer_norm that cost only layer_norm's own tests (test_layer_norm_*), not encoder_block's as well:
# the encoder's tests compare with torch's layer and, when that fails, with the same layer built with the
# student's layer_norm, if it stays close to torch's (issue 27, item 10).
OWN_TESTS_ONLY = {"layer_norm": ["unbiased variance (ddof=1)", "eps outside the square root: / (std + eps)"]}
