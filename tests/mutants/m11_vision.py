"""Chapter 11: the mistakes students really make, and correct alternatives."""

# The right rest of a squeeze_excitation and of a non_local_block, after first lines that get the dtypes wrong.
_SE_HEAD = """
def squeeze_excitation(x, W1, b1, W2, b2):
    x = {x}
    W1, b1, W2, b2 = ({w} for w in (W1, b1, W2, b2))
"""
_SE_REST = """    s = x.mean(axis=(2, 3))
    a = 0.5 * (1 + np.tanh((np.maximum(s @ W1 + b1, 0) @ W2 + b2) / 2))
    return x * a[:, :, None, None]
"""
_NL_REST = """    B, C, H, W = x.shape
    X = x.reshape(B, C, H * W).transpose(0, 2, 1)
    s = (X @ W_theta) @ (X @ W_phi).transpose(0, 2, 1) / W_theta.shape[1] ** 0.5
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    A = e / e.sum(axis=-1, keepdims=True)
    return x + ((A @ (X @ W_g)) @ W_out).transpose(0, 2, 1).reshape(B, C, H, W), A
"""

WRONG = {
    "patchify": {
        "reshape without transposes (tokens are strips of image rows)": """
def patchify(images, patch_size):
    x = as_float_array(images)
    B, C, H, W = x.shape
    p = patch_size
    if H % p or W % p:
        raise ValueError("p must divide H and W")
    return x.reshape(B, (H // p) * (W // p), C * p * p)
""",
        "column-major grid order": """
def patchify(images, patch_size):
    x = as_float_array(images)
    B, C, H, W = x.shape
    p = patch_size
    if H % p or W % p:
        raise ValueError("p must divide H and W")
    x = x.reshape(B, C, H // p, p, W // p, p).transpose(0, 4, 2, 1, 3, 5)
    return x.reshape(B, (H // p) * (W // p), C * p * p)
""",
        "each patch flattened in (p, p, C) order (channels last)": """
def patchify(images, patch_size):
    x = as_float_array(images)
    B, C, H, W = x.shape
    p = patch_size
    if H % p or W % p:
        raise ValueError("p must divide H and W")
    x = x.reshape(B, C, H // p, p, W // p, p).transpose(0, 2, 4, 3, 5, 1)
    return x.reshape(B, (H // p) * (W // p), C * p * p)
""",
        "patch_size used as the number of patches per side": """
def patchify(images, patch_size):
    x = as_float_array(images)
    B, C, H, W = x.shape
    n = patch_size
    if H % n or W % n:
        raise ValueError("patch_size must divide H and W")
    ph, pw = H // n, W // n
    x = x.reshape(B, C, n, ph, n, pw).transpose(0, 2, 4, 1, 3, 5)
    return x.reshape(B, n * n, C * ph * pw)
""",
        "returns (B, C*p*p, N), unfold's layout": """
def patchify(images, patch_size):
    x = as_float_array(images)
    B, C, H, W = x.shape
    p = patch_size
    if H % p or W % p:
        raise ValueError("p must divide H and W")
    x = x.reshape(B, C, H // p, p, W // p, p).transpose(0, 2, 4, 1, 3, 5)
    return x.reshape(B, (H // p) * (W // p), C * p * p).transpose(0, 2, 1)
""",
        "silently crops the leftover pixels (like unfold)": """
def patchify(images, patch_size):
    x = as_float_array(images)
    B, C, H, W = x.shape
    p = patch_size
    gh, gw = H // p, W // p
    x = x[:, :, :gh * p, :gw * p].reshape(B, C, gh, p, gw, p).transpose(0, 2, 4, 1, 3, 5)
    return x.reshape(B, gh * gw, C * p * p)
""",
        "strided patches (reshape to (B, C, p, H/p, p, W/p))": """
def patchify(images, patch_size):
    x = as_float_array(images)
    B, C, H, W = x.shape
    p = patch_size
    if H % p or W % p:
        raise ValueError("p must divide H and W")
    gh, gw = H // p, W // p
    x = x.reshape(B, C, p, gh, p, gw).transpose(0, 3, 5, 1, 2, 4)
    return x.reshape(B, gh * gw, C * p * p)
""",
        "assumes square images (uses H for both sides)": """
def patchify(images, patch_size):
    x = as_float_array(images)
    B, C, H, W = x.shape
    p = patch_size
    if H % p:
        raise ValueError("p must divide H")
    g = H // p
    x = x.reshape(B, C, g, p, -1, p).transpose(0, 2, 4, 1, 3, 5)
    return x.reshape(B, g * g, -1)
""",
        "loops that check only the height (crops the width)": """
def patchify(images, patch_size):
    x = as_float_array(images)
    B, C, H, W = x.shape
    p = patch_size
    if H % p:
        raise ValueError("p must divide H")
    tokens = []
    for i in range(0, H, p):
        for j in range(0, W - p + 1, p):
            tokens.append(x[:, :, i:i + p, j:j + p].reshape(B, -1))
    return np.stack(tokens, axis=1)
""",
        "no float conversion (integer images stay integers)": """
def patchify(images, patch_size):
    x = np.asarray(images)
    B, C, H, W = x.shape
    p = patch_size
    if H % p or W % p:
        raise ValueError("p must divide H and W")
    x = x.reshape(B, C, H // p, p, W // p, p).transpose(0, 2, 4, 1, 3, 5)
    return x.reshape(B, (H // p) * (W // p), C * p * p)
""",
        "always float64, even for float32 images": """
def patchify(images, patch_size):
    x = np.asarray(images, dtype=np.float64)
    B, C, H, W = x.shape
    p = patch_size
    if H % p or W % p:
        raise ValueError("p must divide H and W")
    x = x.reshape(B, C, H // p, p, W // p, p).transpose(0, 2, 4, 1, 3, 5)
    return x.reshape(B, (H // p) * (W // p), C * p * p)
""",
        "torch unfold returned as a tensor": """
def patchify(images, patch_size):
    x = torch.as_tensor(as_float_array(images))
    B, C, H, W = x.shape
    if H % patch_size or W % patch_size:
        raise ValueError("p must divide H and W")
    return torch.nn.functional.unfold(x, patch_size, stride=patch_size).transpose(1, 2)
""",
    },
    "squeeze_excitation": {
        "max pooling instead of the mean": """
def squeeze_excitation(x, W1, b1, W2, b2):
    x = as_float_array(x)
    s = x.max(axis=(2, 3))
    a = 1 / (1 + np.exp(-(np.maximum(s @ W1 + b1, 0) @ W2 + b2)))
    return x * a[:, :, None, None]
""",
        "sum instead of the mean": """
def squeeze_excitation(x, W1, b1, W2, b2):
    x = as_float_array(x)
    s = x.sum(axis=(2, 3))
    a = 1 / (1 + np.exp(-(np.maximum(s @ W1 + b1, 0) @ W2 + b2)))
    return x * a[:, :, None, None]
""",
        "softmax over the channels instead of a sigmoid": """
def squeeze_excitation(x, W1, b1, W2, b2):
    x = as_float_array(x)
    s = x.mean(axis=(2, 3))
    z = np.maximum(s @ W1 + b1, 0) @ W2 + b2
    e = np.exp(z - z.max(axis=1, keepdims=True))
    a = e / e.sum(axis=1, keepdims=True)
    return x * a[:, :, None, None]
""",
        "ReLU missing": """
def squeeze_excitation(x, W1, b1, W2, b2):
    x = as_float_array(x)
    s = x.mean(axis=(2, 3))
    a = 1 / (1 + np.exp(-((s @ W1 + b1) @ W2 + b2)))
    return x * a[:, :, None, None]
""",
        "ReLU instead of the final sigmoid": """
def squeeze_excitation(x, W1, b1, W2, b2):
    x = as_float_array(x)
    s = x.mean(axis=(2, 3))
    a = np.maximum(np.maximum(s @ W1 + b1, 0) @ W2 + b2, 0)
    return x * a[:, :, None, None]
""",
        "scales the columns (W axis) instead of the channels": """
def squeeze_excitation(x, W1, b1, W2, b2):
    x = as_float_array(x)
    s = x.mean(axis=(2, 3))
    a = 1 / (1 + np.exp(-(np.maximum(s @ W1 + b1, 0) @ W2 + b2)))
    return x * a[:, None, None, :]
""",
        "scales the rows (H axis) instead of the channels": """
def squeeze_excitation(x, W1, b1, W2, b2):
    x = as_float_array(x)
    s = x.mean(axis=(2, 3))
    a = 1 / (1 + np.exp(-(np.maximum(s @ W1 + b1, 0) @ W2 + b2)))
    return x * a[:, None, :, None]
""",
        "weights applied transposed (W1 @ s)": """
def squeeze_excitation(x, W1, b1, W2, b2):
    x = as_float_array(x)
    s = x.mean(axis=(2, 3))
    h = np.maximum((np.asarray(W1) @ s.T).T + b1, 0)
    a = 1 / (1 + np.exp(-((np.asarray(W2) @ h.T).T + b2)))
    return x * a[:, :, None, None]
""",
        "returns the channel weights a": """
def squeeze_excitation(x, W1, b1, W2, b2):
    x = as_float_array(x)
    s = x.mean(axis=(2, 3))
    return 1 / (1 + np.exp(-(np.maximum(s @ W1 + b1, 0) @ W2 + b2)))
""",
        "squeeze also averages over the batch": """
def squeeze_excitation(x, W1, b1, W2, b2):
    x = as_float_array(x)
    s = x.mean(axis=(0, 2, 3))
    a = 1 / (1 + np.exp(-(np.maximum(s @ W1 + b1, 0) @ W2 + b2)))
    return x * a[None, :, None, None]
""",
        "second bias b2 forgotten": """
def squeeze_excitation(x, W1, b1, W2, b2):
    x = as_float_array(x)
    s = x.mean(axis=(2, 3))
    a = 1 / (1 + np.exp(-(np.maximum(s @ W1 + b1, 0) @ W2)))
    return x * a[:, :, None, None]
""",
        "rescales x in place": """
def squeeze_excitation(x, W1, b1, W2, b2):
    x = as_float_array(x)
    s = x.mean(axis=(2, 3))
    a = 1 / (1 + np.exp(-(np.maximum(s @ W1 + b1, 0) @ W2 + b2)))
    x *= a[:, :, None, None]
    return x
""",
        "np.squeeze on the pooled vector (breaks B = 1 or C = 1)": """
def squeeze_excitation(x, W1, b1, W2, b2):
    x = as_float_array(x)
    s = np.squeeze(x.mean(axis=(2, 3)))
    a = 1 / (1 + np.exp(-(np.maximum(s @ W1 + b1, 0) @ W2 + b2)))
    return x * a.reshape(x.shape[0], x.shape[1])[:, :, None, None] if a.ndim == 2 else x * a[:, None, None]
""",
        "always float64, even for float32 inputs": """
def squeeze_excitation(x, W1, b1, W2, b2):
    x = np.asarray(x, dtype=np.float64)
    s = x.mean(axis=(2, 3))
    a = 1 / (1 + np.exp(-(np.maximum(s @ W1 + b1, 0) @ W2 + b2)))
    return x * a[:, :, None, None]
""",
        "weights cast to x's dtype before x is made float (integer x truncates the weights)":
            _SE_HEAD.format(x="np.asarray(x)", w="np.asarray(w, dtype=x.dtype)") + _SE_REST,
        "weights not cast to x's dtype (float32 x, float64 weights: float64 out)":
            _SE_HEAD.format(x="as_float_array(x)", w="as_float_array(w)") + _SE_REST,
    },
    "non_local_block": {
        "x.reshape(B, H*W, C) without the transpose (and back)": """
def non_local_block(x, W_theta, W_phi, W_g, W_out):
    x = as_float_array(x)
    B, C, H, W = x.shape
    X = x.reshape(B, H * W, C)
    s = (X @ W_theta) @ np.swapaxes(X @ W_phi, 1, 2) / np.shape(W_theta)[1] ** 0.5
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    A = e / e.sum(axis=-1, keepdims=True)
    return x + ((A @ (X @ W_g)) @ W_out).reshape(B, C, H, W), A
""",
        "output reshaped back without the transpose": """
def non_local_block(x, W_theta, W_phi, W_g, W_out):
    x = as_float_array(x)
    B, C, H, W = x.shape
    X = x.reshape(B, C, H * W).transpose(0, 2, 1)
    s = (X @ W_theta) @ np.swapaxes(X @ W_phi, 1, 2) / np.shape(W_theta)[1] ** 0.5
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    A = e / e.sum(axis=-1, keepdims=True)
    return x + ((A @ (X @ W_g)) @ W_out).reshape(B, C, H, W), A
""",
        "residual missing": """
def non_local_block(x, W_theta, W_phi, W_g, W_out):
    x = as_float_array(x)
    B, C, H, W = x.shape
    X = x.reshape(B, C, H * W).transpose(0, 2, 1)
    s = (X @ W_theta) @ np.swapaxes(X @ W_phi, 1, 2) / np.shape(W_theta)[1] ** 0.5
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    A = e / e.sum(axis=-1, keepdims=True)
    return ((A @ (X @ W_g)) @ W_out).transpose(0, 2, 1).reshape(B, C, H, W), A
""",
        "no 1/sqrt(d_k) scaling": """
def non_local_block(x, W_theta, W_phi, W_g, W_out):
    x = as_float_array(x)
    B, C, H, W = x.shape
    X = x.reshape(B, C, H * W).transpose(0, 2, 1)
    s = (X @ W_theta) @ np.swapaxes(X @ W_phi, 1, 2)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    A = e / e.sum(axis=-1, keepdims=True)
    return x + ((A @ (X @ W_g)) @ W_out).transpose(0, 2, 1).reshape(B, C, H, W), A
""",
        "scaled by sqrt(C) instead of sqrt(d_k)": """
def non_local_block(x, W_theta, W_phi, W_g, W_out):
    x = as_float_array(x)
    B, C, H, W = x.shape
    X = x.reshape(B, C, H * W).transpose(0, 2, 1)
    s = (X @ W_theta) @ np.swapaxes(X @ W_phi, 1, 2) / C ** 0.5
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    A = e / e.sum(axis=-1, keepdims=True)
    return x + ((A @ (X @ W_g)) @ W_out).transpose(0, 2, 1).reshape(B, C, H, W), A
""",
        "softmax over the queries (axis -2)": """
def non_local_block(x, W_theta, W_phi, W_g, W_out):
    x = as_float_array(x)
    B, C, H, W = x.shape
    X = x.reshape(B, C, H * W).transpose(0, 2, 1)
    s = (X @ W_theta) @ np.swapaxes(X @ W_phi, 1, 2) / np.shape(W_theta)[1] ** 0.5
    e = np.exp(s - s.max(axis=-2, keepdims=True))
    A = e / e.sum(axis=-2, keepdims=True)
    return x + ((A @ (X @ W_g)) @ W_out).transpose(0, 2, 1).reshape(B, C, H, W), A
""",
        "theta and phi swapped (weights transposed)": """
def non_local_block(x, W_theta, W_phi, W_g, W_out):
    x = as_float_array(x)
    B, C, H, W = x.shape
    X = x.reshape(B, C, H * W).transpose(0, 2, 1)
    s = (X @ W_phi) @ np.swapaxes(X @ W_theta, 1, 2) / np.shape(W_theta)[1] ** 0.5
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    A = e / e.sum(axis=-1, keepdims=True)
    return x + ((A @ (X @ W_g)) @ W_out).transpose(0, 2, 1).reshape(B, C, H, W), A
""",
        "positions numbered column by column": """
def non_local_block(x, W_theta, W_phi, W_g, W_out):
    x = as_float_array(x)
    B, C, H, W = x.shape
    X = x.transpose(0, 1, 3, 2).reshape(B, C, W * H).transpose(0, 2, 1)
    s = (X @ W_theta) @ np.swapaxes(X @ W_phi, 1, 2) / np.shape(W_theta)[1] ** 0.5
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    A = e / e.sum(axis=-1, keepdims=True)
    Z = ((A @ (X @ W_g)) @ W_out).transpose(0, 2, 1).reshape(B, C, W, H).transpose(0, 1, 3, 2)
    return x + Z, A
""",
        "output projection W_out skipped when shapes allow": """
def non_local_block(x, W_theta, W_phi, W_g, W_out):
    x = as_float_array(x)
    B, C, H, W = x.shape
    X = x.reshape(B, C, H * W).transpose(0, 2, 1)
    s = (X @ W_theta) @ np.swapaxes(X @ W_phi, 1, 2) / np.shape(W_theta)[1] ** 0.5
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    A = e / e.sum(axis=-1, keepdims=True)
    Y = A @ (X @ W_g)
    if Y.shape[-1] != C:
        Y = Y @ W_out
    return x + Y.transpose(0, 2, 1).reshape(B, C, H, W), A
""",
        "returns (weights, z)": """
def non_local_block(x, W_theta, W_phi, W_g, W_out):
    x = as_float_array(x)
    B, C, H, W = x.shape
    X = x.reshape(B, C, H * W).transpose(0, 2, 1)
    s = (X @ W_theta) @ np.swapaxes(X @ W_phi, 1, 2) / np.shape(W_theta)[1] ** 0.5
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    A = e / e.sum(axis=-1, keepdims=True)
    return A, x + ((A @ (X @ W_g)) @ W_out).transpose(0, 2, 1).reshape(B, C, H, W)
""",
        "no max shift (overflows on large scores)": """
def non_local_block(x, W_theta, W_phi, W_g, W_out):
    x = as_float_array(x)
    B, C, H, W = x.shape
    X = x.reshape(B, C, H * W).transpose(0, 2, 1)
    s = (X @ W_theta) @ np.swapaxes(X @ W_phi, 1, 2) / np.shape(W_theta)[1] ** 0.5
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(s)
        A = e / e.sum(axis=-1, keepdims=True)
    return x + ((A @ (X @ W_g)) @ W_out).transpose(0, 2, 1).reshape(B, C, H, W), A
""",
        "adds the residual in place": """
def non_local_block(x, W_theta, W_phi, W_g, W_out):
    x = as_float_array(x)
    B, C, H, W = x.shape
    X = x.reshape(B, C, H * W).transpose(0, 2, 1)
    s = (X @ W_theta) @ np.swapaxes(X @ W_phi, 1, 2) / np.shape(W_theta)[1] ** 0.5
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    A = e / e.sum(axis=-1, keepdims=True)
    x += ((A @ (X @ W_g)) @ W_out).transpose(0, 2, 1).reshape(B, C, H, W)
    return x, A
""",
        "scale np.sqrt(d_k) promotes float32 to float64": """
def non_local_block(x, W_theta, W_phi, W_g, W_out):
    x = as_float_array(x)
    B, C, H, W = x.shape
    X = x.reshape(B, C, H * W).transpose(0, 2, 1)
    s = (X @ W_theta) @ np.swapaxes(X @ W_phi, 1, 2) / np.sqrt(np.shape(W_theta)[1])
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    A = e / e.sum(axis=-1, keepdims=True)
    return x + ((A @ (X @ W_g)) @ W_out).transpose(0, 2, 1).reshape(B, C, H, W), A
""",
        "one image only (2-D matmuls, batch of one)": """
def non_local_block(x, W_theta, W_phi, W_g, W_out):
    x = as_float_array(x)
    B, C, H, W = x.shape
    X = x[0].reshape(C, H * W).T
    s = (X @ W_theta) @ (X @ W_phi).T / np.shape(W_theta)[1] ** 0.5
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    A = e / e.sum(axis=-1, keepdims=True)
    Z = ((A @ (X @ W_g)) @ W_out).T.reshape(1, C, H, W)
    return x + Z, np.broadcast_to(A, (B,) + A.shape).copy()
""",
        "weights cast to x's dtype before x is made float (integer x truncates the weights)": """
def non_local_block(x, W_theta, W_phi, W_g, W_out):
    x = np.asarray(x)
    W_theta, W_phi, W_g, W_out = (np.asarray(w, dtype=x.dtype) for w in (W_theta, W_phi, W_g, W_out))
""" + _NL_REST,
        "weights not cast to x's dtype (float32 x, float64 weights: float64 out)": """
def non_local_block(x, W_theta, W_phi, W_g, W_out):
    x = as_float_array(x)
    W_theta, W_phi, W_g, W_out = (as_float_array(w) for w in (W_theta, W_phi, W_g, W_out))
""" + _NL_REST,
    },
}

CORRECT = {
    "patchify": {
        "loops over the grid": """
def patchify(images, patch_size):
    x = as_float_array(images)
    B, C, H, W = x.shape
    p = patch_size
    if H % p != 0 or W % p != 0:
        raise ValueError("patch_size must divide H and W")
    out = np.empty((B, (H // p) * (W // p), C * p * p), dtype=x.dtype)
    n = 0
    for i in range(H // p):
        for j in range(W // p):
            out[:, n] = x[:, :, i * p:(i + 1) * p, j * p:(j + 1) * p].reshape(B, -1)
            n += 1
    return out
""",
        "PyTorch unfold inside, NumPy outside": """
def patchify(images, patch_size):
    x = as_float_array(images)
    if x.shape[2] % patch_size or x.shape[3] % patch_size:
        raise ValueError("patch_size must divide H and W")
    t = torch.from_numpy(np.ascontiguousarray(x))
    return torch.nn.functional.unfold(t, patch_size, stride=patch_size).transpose(1, 2).contiguous().numpy()
""",
        "sliding_window_view with a step": """
def patchify(images, patch_size):
    x = as_float_array(images)
    B, C, H, W = x.shape
    p = patch_size
    if H % p or W % p:
        raise ValueError("patch_size must divide H and W")
    v = np.lib.stride_tricks.sliding_window_view(x, (p, p), axis=(2, 3))[:, :, ::p, ::p]  # (B, C, gh, gw, p, p)
    v = np.moveaxis(v, 1, 3)                                                               # (B, gh, gw, C, p, p)
    return v.reshape(B, -1, C * p * p).copy()
""",
        "einsum-free: split the width first, then the height": """
def patchify(images, patch_size):
    x = as_float_array(images)
    B, C, H, W = x.shape
    p = patch_size
    if H % p or W % p:
        raise ValueError("patch_size must divide H and W")
    cols = np.stack(np.split(x, W // p, axis=3), axis=1)         # (B, gw, C, H, p)
    rows = np.stack(np.split(cols, H // p, axis=3), axis=1)      # (B, gh, gw, C, p, p)
    return rows.reshape(B, -1, C * p * p)
""",
    },
    "squeeze_excitation": {
        "PyTorch inside, NumPy outside": """
def squeeze_excitation(x, W1, b1, W2, b2):
    x = as_float_array(x)
    t = torch.from_numpy(np.array(x))
    W1, b1, W2, b2 = (torch.as_tensor(np.asarray(w, dtype=x.dtype)) for w in (W1, b1, W2, b2))
    s = t.mean(dim=(2, 3))
    a = torch.sigmoid(torch.relu(s @ W1 + b1) @ W2 + b2)
    return (t * a[:, :, None, None]).numpy()
""",
        "einsum and a piecewise stable sigmoid": """
def squeeze_excitation(x, W1, b1, W2, b2):
    x = as_float_array(x)
    W1, b1, W2, b2 = (np.asarray(w, dtype=x.dtype) for w in (W1, b1, W2, b2))
    s = np.einsum("bchw->bc", x) / (x.shape[2] * x.shape[3])
    z = np.einsum("bk,kc->bc", np.maximum(np.einsum("bc,ck->bk", s, W1) + b1, 0), W2) + b2
    e = np.exp(-np.abs(z))
    a = np.where(z >= 0, 1 / (1 + e), e / (1 + e))
    return np.einsum("bchw,bc->bchw", x, a)
""",
        "loops over images and channels": """
def squeeze_excitation(x, W1, b1, W2, b2):
    x = as_float_array(x)
    W1, b1, W2, b2 = (np.asarray(w, dtype=x.dtype) for w in (W1, b1, W2, b2))
    out = np.empty_like(x)
    for b in range(x.shape[0]):
        s = np.array([x[b, c].mean() for c in range(x.shape[1])], dtype=x.dtype)
        h = np.maximum(s @ W1 + b1, 0)
        z = h @ W2 + b2
        for c in range(x.shape[1]):
            a = 1 / (1 + np.exp(-z[c])) if z[c] >= 0 else np.exp(z[c]) / (1 + np.exp(z[c]))
            out[b, c] = x[b, c] * a
    return out
""",
    },
    "non_local_block": {
        "PyTorch scaled_dot_product_attention inside": """
def non_local_block(x, W_theta, W_phi, W_g, W_out):
    x = as_float_array(x)
    t = torch.from_numpy(np.array(x))
    Wt, Wp, Wg, Wo = (torch.as_tensor(np.asarray(w, dtype=x.dtype)) for w in (W_theta, W_phi, W_g, W_out))
    B, C, H, W = t.shape
    X = t.flatten(2).transpose(1, 2)
    q, k, v = X @ Wt, X @ Wp, X @ Wg
    A = torch.softmax(q @ k.transpose(1, 2) / q.shape[-1] ** 0.5, dim=-1)
    Y = torch.nn.functional.scaled_dot_product_attention(q, k, v) @ Wo
    return (t + Y.transpose(1, 2).reshape(B, C, H, W)).numpy(), A.numpy()
""",
        "einsum on the (B, C, H, W) layout, no reshape of x": """
def non_local_block(x, W_theta, W_phi, W_g, W_out):
    x = as_float_array(x)
    W_theta, W_phi, W_g, W_out = (np.asarray(w, dtype=x.dtype) for w in (W_theta, W_phi, W_g, W_out))
    B, C, H, W = x.shape
    theta = np.einsum("bchw,ck->bhwk", x, W_theta).reshape(B, H * W, -1)
    phi = np.einsum("bchw,ck->bhwk", x, W_phi).reshape(B, H * W, -1)
    g = np.einsum("bchw,cv->bhwv", x, W_g).reshape(B, H * W, -1)
    s = np.einsum("bik,bjk->bij", theta, phi) * (1 / W_theta.shape[1] ** 0.5)
    s = s - s.max(axis=-1, keepdims=True)
    A = np.exp(s) / np.exp(s).sum(axis=-1, keepdims=True)
    Z = np.einsum("bij,bjv,vc->bci", A, g, W_out).reshape(B, C, H, W)
    return x + Z, A
""",
        "loops over query positions": """
def non_local_block(x, W_theta, W_phi, W_g, W_out):
    x = as_float_array(x)
    W_theta, W_phi, W_g, W_out = (np.asarray(w, dtype=x.dtype) for w in (W_theta, W_phi, W_g, W_out))
    B, C, H, W = x.shape
    d_k = W_theta.shape[1]
    A = np.zeros((B, H * W, H * W), dtype=x.dtype)
    z = x.copy()
    for b in range(B):
        keys = [x[b, :, j // W, j % W] @ W_phi for j in range(H * W)]
        values = [x[b, :, j // W, j % W] @ W_g for j in range(H * W)]
        for i in range(H * W):
            q = x[b, :, i // W, i % W] @ W_theta
            s = np.array([q @ k for k in keys]) / d_k ** 0.5
            e = np.exp(s - s.max())
            A[b, i] = e / e.sum()
            y = sum(a * v for a, v in zip(A[b, i], values))
            z[b, :, i // W, i % W] = x[b, :, i // W, i % W] + y @ W_out
    return z, A
""",
    },
}
