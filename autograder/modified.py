"""Whether a call wrote into its arguments: what was sent, compared with what the function
holds afterwards (arrays and tensors by value, containers item by item, a torch module by its
parameters and buffers). The test helpers (`testing.modified_arguments`) and the grader use it;
only an argument is ever named, never an index or a key within it.
"""
from __future__ import annotations

from typing import Any

import numpy as np


def _changed(before: Any, after: Any) -> bool:
    try:
        if isinstance(before, np.ndarray):
            return not (isinstance(after, np.ndarray) and after.shape == before.shape
                        and np.array_equal(after, before, equal_nan=True))
        if type(before).__module__.startswith("torch") and hasattr(before, "detach"):
            import torch

            return not (after.shape == before.shape and torch.equal(after.detach(), before.detach()))
    except Exception:  # noqa: BLE001 (anything odd counts as a change)
        return True
    return False


def argument_names(args: tuple, kwargs: dict) -> list[str]:
    return [f"argument {i + 1}" for i in range(len(args))] + list(kwargs)


def _changes(before: Any, after: Any, depth: int = 0) -> bool:
    """Whether anything reachable from `before` differs in `after`: arrays and tensors by value,
    dicts, lists and tuples item by item (an item added, removed or replaced counts), a torch
    module by its parameters and buffers. Other values (numbers, strings) are compared by
    equality where they can be; anything odd counts as a change."""
    if depth > 32:
        return True
    try:
        torch_tensor = type(before).__module__.startswith("torch") and hasattr(before, "detach")
        if isinstance(before, np.ndarray) or torch_tensor:
            return _changed(before, after)
        if isinstance(before, dict):
            return (not isinstance(after, dict) or set(after) != set(before)
                    or any(_changes(before[k], after[k], depth + 1) for k in before))
        if isinstance(before, (list, tuple)):      # a namedtuple comes back as a plain tuple
            return (not isinstance(after, (list, tuple)) or isinstance(after, tuple) != isinstance(before, tuple)
                    or len(after) != len(before) or any(_changes(b, a, depth + 1) for b, a in zip(before, after)))
        if callable(getattr(before, "state_dict", None)) and type(before).__module__.startswith("torch"):
            return _changes(dict(before.state_dict()), dict(after.state_dict()), depth + 1)
        if isinstance(before, (int, float, complex, str, bytes, bool, type(None), np.generic)):
            return not (before == after or (before != before and after != after))   # NaN stays NaN
    except Exception:  # noqa: BLE001 (anything odd counts as a change)
        return True
    return False


def modified_arguments(sent: tuple, sent_kw: dict, after: list, after_kw: dict) -> list[str]:
    """Names of the arguments in which anything (an array, or one inside a dict, list or tuple,
    a module's parameters) differs after the call from what was sent. `after` holds None for
    what did not come back (values that are not data). Only the argument is named, never an
    index or a key within it: those could describe a hidden input."""
    names = argument_names(sent, sent_kw)
    pairs = list(zip(sent, list(after) + [None] * len(sent))) + [(v, after_kw.get(k)) for k, v in sent_kw.items()]
    return [name for name, (b, a) in zip(names, pairs) if a is not None and _changes(b, a)]
