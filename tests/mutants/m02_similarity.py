"""Chapter 02: the mistakes students really make, and correct alternatives."""

WRONG = {
    "dot_similarity": {
        "transposed result (B @ A.T)": """
def dot_similarity(A, B):
    return as_float_array(B) @ as_float_array(A).T
""",
        "elementwise product, no sum": """
def dot_similarity(A, B):
    A, B = as_float_array(A), as_float_array(B)
    return A[:, None, :] * B[None, :, :]
""",
        "casts to float32": """
def dot_similarity(A, B):
    return (np.asarray(A, dtype=np.float32) @ np.asarray(B, dtype=np.float32).T)
""",
        "hard-coded for the first visible test's shape": """
def dot_similarity(A, B):
    A, B = as_float_array(A), as_float_array(B)
    return np.array([[A[i] @ B[j] for j in range(5)] for i in range(4)]) if A.shape == (4, 3) else np.zeros((A.shape[0], B.shape[0]))
""",
        "always float64, even for float32 inputs": """
def dot_similarity(A, B):
    return np.asarray(A, dtype=np.float64) @ np.asarray(B, dtype=np.float64).T
""",
    },
    "cosine_similarity": {
        "plain dot product, no normalisation": """
def cosine_similarity(A, B, eps=1e-8):
    return as_float_array(A) @ as_float_array(B).T
""",
        "divides by squared norms": """
def cosine_similarity(A, B, eps=1e-8):
    A, B = as_float_array(A), as_float_array(B)
    return (A @ B.T) / np.maximum(np.outer((A * A).sum(1), (B * B).sum(1)), eps)
""",
        "no eps: NaN for zero vectors": """
def cosine_similarity(A, B, eps=1e-8):
    A, B = as_float_array(A), as_float_array(B)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (A @ B.T) / np.outer(np.linalg.norm(A, axis=1), np.linalg.norm(B, axis=1))
""",
        "normalises A only": """
def cosine_similarity(A, B, eps=1e-8):
    A, B = as_float_array(A), as_float_array(B)
    return (A / np.maximum(np.linalg.norm(A, axis=1, keepdims=True), eps)) @ B.T
""",
        "normalises in place (modifies the inputs)": """
def cosine_similarity(A, B, eps=1e-8):
    A, B = as_float_array(A), as_float_array(B)
    A /= np.maximum(np.linalg.norm(A, axis=1, keepdims=True), eps)
    B /= np.maximum(np.linalg.norm(B, axis=1, keepdims=True), eps)
    return A @ B.T
""",
        "norms over the wrong axis": """
def cosine_similarity(A, B, eps=1e-8):
    A, B = as_float_array(A), as_float_array(B)
    a = np.maximum(np.linalg.norm(A, axis=0, keepdims=True), eps)
    b = np.maximum(np.linalg.norm(B, axis=0, keepdims=True), eps)
    return (A / a) @ (B / b).T
""",
    },
    "softmax": {
        "no max shift (overflows)": """
def softmax(x, axis=-1):
    x = as_float_array(x)
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)
""",
        "ignores axis (always the last)": """
def softmax(x, axis=-1):
    x = as_float_array(x)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
""",
        "global maximum and global sum": """
def softmax(x, axis=-1):
    x = as_float_array(x)
    e = np.exp(x - x.max())
    return e / e.sum()
""",
        "shift by the global maximum (underflows rows far below it)": """
def softmax(x, axis=-1):
    x = as_float_array(x)
    e = np.exp(x - np.max(x[np.isfinite(x)]))
    return e / e.sum(axis=axis, keepdims=True)
""",
        "subtracts in place (modifies x)": """
def softmax(x, axis=-1):
    x = as_float_array(x)
    x -= x.max(axis=axis, keepdims=True)
    np.exp(x, out=x)
    x /= x.sum(axis=axis, keepdims=True)
    return x
""",
        "no keepdims: broadcasts the row maxima along the wrong axis": """
def softmax(x, axis=-1):
    x = as_float_array(x)
    e = np.exp(x - x.max(axis=axis))
    return e / e.sum(axis=axis)
""",
        "replaces -inf by a large negative number then forgets to shift": """
def softmax(x, axis=-1):
    x = np.where(np.isneginf(as_float_array(x)), -1e9, as_float_array(x))
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)
""",
        "returns float64 for float32 input": """
def softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
""",
    },
}

CORRECT = {
    "dot_similarity": {
        "loops": """
def dot_similarity(A, B):
    A, B = as_float_array(A), as_float_array(B)
    out = np.zeros((A.shape[0], B.shape[0]), dtype=np.result_type(A, B))
    for i in range(A.shape[0]):
        for j in range(B.shape[0]):
            out[i, j] = np.sum(A[i] * B[j])
    return out
""",
        "einsum": """
def dot_similarity(A, B):
    return np.einsum("id,jd->ij", as_float_array(A), as_float_array(B))
""",
    },
    "cosine_similarity": {
        "divide after the product": """
def cosine_similarity(A, B, eps=1e-8):
    A, B = as_float_array(A), as_float_array(B)
    na = np.maximum(np.sqrt((A ** 2).sum(-1)), eps)
    nb = np.maximum(np.sqrt((B ** 2).sum(-1)), eps)
    return np.einsum("id,jd->ij", A, B) / np.outer(na, nb)
""",
        "loops, math.sqrt": """
def cosine_similarity(A, B, eps=1e-8):
    import math
    A, B = as_float_array(A), as_float_array(B)
    out = np.zeros((A.shape[0], B.shape[0]), dtype=np.result_type(A, B))
    for i, a in enumerate(A):
        for j, b in enumerate(B):
            la = max(math.sqrt(float(np.sum(a * a))), eps)
            lb = max(math.sqrt(float(np.sum(b * b))), eps)
            out[i, j] = np.sum(a * b) / (la * lb)
    return out
""",
    },
    "softmax": {
        "logsumexp": """
def softmax(x, axis=-1):
    x = as_float_array(x)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    lse = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    return np.exp(x - lse)
""",
        "moveaxis and a loop over rows": """
def softmax(x, axis=-1):
    x = as_float_array(x)
    moved = np.moveaxis(x, axis, -1)
    out = np.empty_like(moved)
    for idx in np.ndindex(moved.shape[:-1]):
        row = moved[idx]
        e = np.exp(row - row.max())
        out[idx] = e / e.sum()
    return np.moveaxis(out, -1, axis)
""",
    },
}
