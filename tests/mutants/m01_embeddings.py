"""Chapter 01: the mistakes students really make, and correct alternatives."""

WRONG = {
    "one_hot": {
        "no range check: negative ids wrap around, large ids raise IndexError": """
def one_hot(token_ids, vocab_size):
    return np.eye(vocab_size)[np.asarray(token_ids)]
""",
        "off-by-one range check (ids > vocab_size)": """
def one_hot(token_ids, vocab_size):
    ids = np.asarray(token_ids)
    if np.any(ids < 0) or np.any(ids > vocab_size):
        raise ValueError("id out of range")
    return np.eye(vocab_size)[ids]
""",
        "checks only the upper bound (negative ids wrap around)": """
def one_hot(token_ids, vocab_size):
    ids = np.asarray(token_ids)
    if np.any(ids >= vocab_size):
        raise ValueError("id out of range")
    return np.eye(vocab_size)[ids]
""",
        "integer result": """
def one_hot(token_ids, vocab_size):
    ids = np.asarray(token_ids)
    if np.any(ids < 0) or np.any(ids >= vocab_size):
        raise ValueError("id out of range")
    return np.eye(vocab_size, dtype=np.int64)[ids]
""",
        "float32 result": """
def one_hot(token_ids, vocab_size):
    ids = np.asarray(token_ids)
    if np.any(ids < 0) or np.any(ids >= vocab_size):
        raise ValueError("id out of range")
    return np.eye(vocab_size, dtype=np.float32)[ids]
""",
        "transposed: (V, n)": """
def one_hot(token_ids, vocab_size):
    ids = np.asarray(token_ids)
    if np.any(ids < 0) or np.any(ids >= vocab_size):
        raise ValueError("id out of range")
    return np.eye(vocab_size)[ids].swapaxes(-1, -2)
""",
        "width inferred from the data (max id + 1)": """
def one_hot(token_ids, vocab_size):
    ids = np.asarray(token_ids)
    if np.any(ids < 0) or np.any(ids >= vocab_size):
        raise ValueError("id out of range")
    return np.eye(ids.max() + 1)[ids]
""",
        "loop for a 1-D sequence only (no batch dimensions)": """
def one_hot(token_ids, vocab_size):
    ids = np.asarray(token_ids)
    if np.any(ids < 0) or np.any(ids >= vocab_size):
        raise ValueError("id out of range")
    out = np.zeros((ids.shape[0], vocab_size))
    for k in range(ids.shape[0]):
        out[k, ids[k]] = 1.0
    return out
""",
        "flattens the batch dimensions": """
def one_hot(token_ids, vocab_size):
    ids = np.asarray(token_ids)
    if np.any(ids < 0) or np.any(ids >= vocab_size):
        raise ValueError("id out of range")
    return np.eye(vocab_size)[ids.reshape(-1)]
""",
    },
    "embedding_lookup": {
        "no range check: negative ids silently wrap around": """
def embedding_lookup(token_ids, E):
    return as_float_array(E)[np.asarray(token_ids)]
""",
        "columns instead of rows (E[:, ids])": """
def embedding_lookup(token_ids, E):
    E = as_float_array(E)
    ids = np.asarray(token_ids)
    if np.any(ids < 0) or np.any(ids >= E.shape[0]):
        raise ValueError("id out of range")
    return E[:, ids]
""",
        "one-hot times E in float64 (float32 tables come back as float64)": """
def embedding_lookup(token_ids, E):
    E = np.asarray(E)
    ids = np.asarray(token_ids)
    if np.any(ids < 0) or np.any(ids >= E.shape[0]):
        raise ValueError("id out of range")
    return np.eye(E.shape[0])[ids] @ E
""",
        "casts to float32": """
def embedding_lookup(token_ids, E):
    E = np.asarray(E, dtype=np.float32)
    ids = np.asarray(token_ids)
    if np.any(ids < 0) or np.any(ids >= E.shape[0]):
        raise ValueError("id out of range")
    return E[ids]
""",
        "integer tables stay integer (no float conversion)": """
def embedding_lookup(token_ids, E):
    E = np.asarray(E)
    ids = np.asarray(token_ids)
    if np.any(ids < 0) or np.any(ids >= E.shape[0]):
        raise ValueError("id out of range")
    return E[ids]
""",
        "flattens the batch dimensions": """
def embedding_lookup(token_ids, E):
    E = as_float_array(E)
    ids = np.asarray(token_ids)
    if np.any(ids < 0) or np.any(ids >= E.shape[0]):
        raise ValueError("id out of range")
    return E[ids.reshape(-1)]
""",
        "loop over a 1-D sequence only": """
def embedding_lookup(token_ids, E):
    E = as_float_array(E)
    ids = np.asarray(token_ids)
    if np.any(ids < 0) or np.any(ids >= E.shape[0]):
        raise ValueError("id out of range")
    return np.array([E[int(t)] for t in ids])
""",
        "raises IndexError instead of ValueError": """
def embedding_lookup(token_ids, E):
    E = as_float_array(E)
    ids = np.asarray(token_ids)
    if np.any(ids < 0) or np.any(ids >= E.shape[0]):
        raise IndexError("id out of range")
    return E[ids]
""",
    },
    "bag_of_words": {
        "np.bincount without minlength": """
def bag_of_words(token_ids, vocab_size):
    ids = np.asarray(token_ids)
    if np.any(ids < 0) or np.any(ids >= vocab_size):
        raise ValueError("id out of range")
    return np.bincount(ids).astype(np.float64)
""",
        "np.bincount with minlength, 1-D only, no upper range check": """
def bag_of_words(token_ids, vocab_size):
    return np.bincount(np.asarray(token_ids, dtype=np.int64), minlength=vocab_size).astype(np.float64)
""",
        "presence flags instead of counts": """
def bag_of_words(token_ids, vocab_size):
    ids = np.asarray(token_ids)
    if np.any(ids < 0) or np.any(ids >= vocab_size):
        raise ValueError("id out of range")
    return (ids[..., None] == np.arange(vocab_size)).any(axis=-2).astype(np.float64)
""",
        "relative frequencies instead of counts": """
def bag_of_words(token_ids, vocab_size):
    ids = np.asarray(token_ids)
    if np.any(ids < 0) or np.any(ids >= vocab_size):
        raise ValueError("id out of range")
    return (ids[..., None] == np.arange(vocab_size)).mean(axis=-2)
""",
        "integer counts": """
def bag_of_words(token_ids, vocab_size):
    ids = np.asarray(token_ids)
    if np.any(ids < 0) or np.any(ids >= vocab_size):
        raise ValueError("id out of range")
    return (ids[..., None] == np.arange(vocab_size)).sum(axis=-2)
""",
        "sums over axis 0 instead of the token axis": """
def bag_of_words(token_ids, vocab_size):
    ids = np.asarray(token_ids)
    if np.any(ids < 0) or np.any(ids >= vocab_size):
        raise ValueError("id out of range")
    return (ids[..., None] == np.arange(vocab_size)).sum(axis=0).astype(np.float64)
""",
        "one-hot rows summed without a range check (negative ids counted as the last word)": """
def bag_of_words(token_ids, vocab_size):
    return np.eye(vocab_size)[np.asarray(token_ids, dtype=np.int64)].sum(axis=-2)
""",
        "counts the whole batch as one document": """
def bag_of_words(token_ids, vocab_size):
    ids = np.asarray(token_ids)
    if np.any(ids < 0) or np.any(ids >= vocab_size):
        raise ValueError("id out of range")
    return np.bincount(ids.reshape(-1), minlength=vocab_size).astype(np.float64)
""",
    },
    "tfidf": {
        "raw counts as tf": """
def tfidf(counts):
    counts = as_float_array(counts)
    df = (counts > 0).sum(axis=0)
    return counts * np.log(counts.shape[0] / np.maximum(df, 1))
""",
        "tf normalised by the column sums": """
def tfidf(counts):
    counts = as_float_array(counts)
    df = (counts > 0).sum(axis=0)
    tf = counts / np.maximum(counts.sum(axis=0, keepdims=True), 1)
    return tf * np.log(counts.shape[0] / np.maximum(df, 1))
""",
        "idf = ln(df / N)": """
def tfidf(counts):
    counts = as_float_array(counts)
    length = counts.sum(axis=1, keepdims=True)
    tf = counts / np.where(length > 0, length, 1)
    df = (counts > 0).sum(axis=0)
    return tf * np.where(df > 0, np.log(np.maximum(df, 1) / counts.shape[0]), 0.0)
""",
        "log10 instead of ln": """
def tfidf(counts):
    counts = as_float_array(counts)
    length = counts.sum(axis=1, keepdims=True)
    tf = counts / np.where(length > 0, length, 1)
    df = (counts > 0).sum(axis=0)
    return tf * np.log10(counts.shape[0] / np.maximum(df, 1))
""",
        "df = total occurrences instead of documents": """
def tfidf(counts):
    counts = as_float_array(counts)
    length = counts.sum(axis=1, keepdims=True)
    tf = counts / np.where(length > 0, length, 1)
    df = counts.sum(axis=0)
    return tf * np.log(counts.shape[0] / np.maximum(df, 1))
""",
        "N = vocabulary size (wrong axis)": """
def tfidf(counts):
    counts = as_float_array(counts)
    length = counts.sum(axis=1, keepdims=True)
    tf = counts / np.where(length > 0, length, 1)
    df = (counts > 0).sum(axis=0)
    return tf * np.log(counts.shape[1] / np.maximum(df, 1))
""",
        "scikit-learn's smoothed idf": """
def tfidf(counts):
    counts = as_float_array(counts)
    length = counts.sum(axis=1, keepdims=True)
    tf = counts / np.where(length > 0, length, 1)
    df = (counts > 0).sum(axis=0)
    return tf * (np.log((1 + counts.shape[0]) / (1 + df)) + 1)
""",
        "NaN for an empty document (0 / 0)": """
def tfidf(counts):
    counts = as_float_array(counts)
    df = (counts > 0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        tf = counts / counts.sum(axis=1, keepdims=True)
    return tf * np.log(counts.shape[0] / np.maximum(df, 1))
""",
        "NaN for a word in no document (0 * inf)": """
def tfidf(counts):
    counts = as_float_array(counts)
    length = counts.sum(axis=1, keepdims=True)
    tf = counts / np.where(length > 0, length, 1)
    df = (counts > 0).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return tf * np.log(counts.shape[0] / df)
""",
        "normalises in place (modifies counts)": """
def tfidf(counts):
    counts = as_float_array(counts)
    df = (counts > 0).sum(axis=0)
    length = counts.sum(axis=1, keepdims=True)
    counts /= np.where(length > 0, length, 1)
    counts *= np.log(counts.shape[0] / np.maximum(df, 1))
    return counts
""",
        "float64 for float32 counts": """
def tfidf(counts):
    counts = np.asarray(counts, dtype=np.float64)
    length = counts.sum(axis=1, keepdims=True)
    tf = counts / np.where(length > 0, length, 1)
    df = (counts > 0).sum(axis=0)
    return tf * np.log(counts.shape[0] / np.maximum(df, 1))
""",
        "empty documents left out of N": """
def tfidf(counts):
    counts = as_float_array(counts)
    length = counts.sum(axis=1, keepdims=True)
    tf = counts / np.where(length > 0, length, 1)
    df = (counts > 0).sum(axis=0)
    n_docs = int((length > 0).sum())
    return tf * np.log(max(n_docs, 1) / np.maximum(df, 1))
""",
    },
}

CORRECT = {
    "one_hot": {
        "loops with an explicit check": """
def one_hot(token_ids, vocab_size):
    ids = np.asarray(token_ids)
    flat = ids.reshape(-1)
    out = np.zeros((flat.size, vocab_size))
    for k, t in enumerate(flat):
        if not 0 <= t < vocab_size:
            raise ValueError(f"id {t} is not in [0, {vocab_size})")
        out[k, t] = 1.0
    return out.reshape(ids.shape + (vocab_size,))
""",
        "comparison with arange": """
def one_hot(token_ids, vocab_size):
    ids = np.asarray(token_ids)
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        raise ValueError("token id out of range")
    return (ids[..., None] == np.arange(vocab_size)).astype(np.float64)
""",
        "torch": """
def one_hot(token_ids, vocab_size):
    t = torch.as_tensor(np.asarray(token_ids), dtype=torch.int64)
    if ((t < 0) | (t >= vocab_size)).any():
        raise ValueError("token id out of range")
    return torch.nn.functional.one_hot(t, vocab_size).double().numpy()
""",
    },
    "embedding_lookup": {
        "np.take along axis 0": """
def embedding_lookup(token_ids, E):
    E = as_float_array(E)
    ids = np.asarray(token_ids)
    if ((ids < 0) | (ids >= len(E))).any():
        raise ValueError("token id out of range")
    return np.take(E, ids, axis=0)
""",
        "one-hot times E, in E's dtype": """
def embedding_lookup(token_ids, E):
    E = as_float_array(E)
    ids = np.asarray(token_ids)
    if ((ids < 0) | (ids >= E.shape[0])).any():
        raise ValueError("token id out of range")
    return np.eye(E.shape[0], dtype=E.dtype)[ids] @ E
""",
        "loop over the flattened ids": """
def embedding_lookup(token_ids, E):
    E = as_float_array(E)
    ids = np.asarray(token_ids)
    rows = []
    for t in ids.reshape(-1):
        if t < 0 or t >= E.shape[0]:
            raise ValueError("token id out of range")
        rows.append(E[t].copy())
    return np.array(rows, dtype=E.dtype).reshape(ids.shape + (E.shape[1],))
""",
    },
    "bag_of_words": {
        "bincount per row": """
def bag_of_words(token_ids, vocab_size):
    ids = np.asarray(token_ids)
    if ((ids < 0) | (ids >= vocab_size)).any():
        raise ValueError("token id out of range")
    rows = ids.reshape(int(np.prod(ids.shape[:-1])), ids.shape[-1])
    out = np.stack([np.bincount(row, minlength=vocab_size) for row in rows]).astype(np.float64)
    return out.reshape(ids.shape[:-1] + (vocab_size,))
""",
        "np.add.at": """
def bag_of_words(token_ids, vocab_size):
    ids = np.asarray(token_ids, dtype=np.int64)
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        raise ValueError("token id out of range")
    out = np.zeros(ids.shape[:-1] + (vocab_size,))
    batch = np.indices(ids.shape)[:-1]
    np.add.at(out, (*batch, ids), 1.0)
    return out
""",
    },
    "tfidf": {
        "loops": """
def tfidf(counts):
    import math
    counts = as_float_array(counts)
    N, V = counts.shape
    out = np.zeros_like(counts)
    for w in range(V):
        df = sum(1 for i in range(N) if counts[i, w] > 0)
        if df == 0:
            continue
        idf = math.log(N / df)
        for i in range(N):
            total = counts[i].sum()
            if total > 0:
                out[i, w] = counts[i, w] / total * idf
    return out
""",
        "np.divide with where, then einsum": """
def tfidf(counts):
    counts = as_float_array(counts)
    lengths = counts.sum(axis=-1, keepdims=True)
    tf = np.divide(counts, lengths, out=np.zeros_like(counts), where=lengths != 0)
    df = np.count_nonzero(counts, axis=0)
    idf = np.log(counts.shape[0] / np.where(df == 0, counts.shape[0], df)).astype(counts.dtype)
    return np.einsum("iw,w->iw", tf, idf)
""",
    },
}
