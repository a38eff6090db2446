"""JSON text measured before a parser sees it: light enough for every process (the grading
parent checks notebooks with it and never imports NumPy; the sandbox's protocol checks
every message's header with it)."""
from __future__ import annotations

import re

_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_BRACKETS = re.compile(rb"[\[\]{}]")


def json_nesting(data: bytes) -> int:
    """How deeply JSON text nests (brackets outside strings), in linear time and without
    recursion, so that a hostile document can be refused before the parser sees it."""
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_JSON_STRING.sub(b"", data)):
        depth += 1 if bracket in (b"[", b"{") else -1
        deepest = max(deepest, depth)
    return deepest
