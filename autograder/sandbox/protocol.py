"""The wire format between the grader and the sandbox: plain data, never pickle.

A message is a 4-byte big-endian length, a UTF-8 JSON header, then raw binary blobs whose
lengths the header lists. Values are JSON with tagged objects:

    {"$nd": {"dtype", "shape", "blob", "sub"}}  a NumPy array ("sub": the subclass name, if any)
    {"$t": {"dtype", "shape", "blob", "grad"}}  a torch tensor
    {"$tuple": [...]} {"$list": [...]} {"$dict": [[key, value], ...]}   (subclasses such as
                                                namedtuples travel as their plain base type)
    {"$np": {"dtype", "blob"}}                  a NumPy scalar (np.float64(1.5) stays one)
    {"$f": "nan" | "inf" | "-inf"}              non-finite Python floats
    {"$opaque": {"type", "repr"}}               anything else: type name and a short repr only

Decoding (in the grader) validates everything: dtypes from a fixed list, shapes that
match the byte counts, bounded depth, sizes and lengths. Anything else is a ProtocolError.
"""
from __future__ import annotations

import json
import math
import socket
import struct
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..jsontext import json_nesting

MAX_MESSAGE = 256 << 20      # bytes in one message
MAX_DEPTH = 32
MAX_ITEMS = 100_000          # list/tuple/dict entries in one value
MAX_STR = 100_000            # characters in one string
MAX_HEADER = 64 << 20        # bytes of JSON in one message
DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
          "float16", "float32", "float64", "complex64", "complex128"}
TORCH_DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64",
                "complex64", "complex128"}


def clean_text(text: str, limit: int = 2000) -> str:
    """Text that is safe to store and show: valid UTF-8 (lone surrogates replaced), capped."""
    return text[:limit].encode("utf-8", "replace").decode("utf-8")


class ProtocolError(Exception):
    """The other side sent something that is not a valid message."""


class Opaque:
    """Stands in for an object the sandbox could not send as data (it never compares equal)."""

    def __init__(self, type_name: str, text: str):
        self.type_name, self.text = type_name, text

    def __repr__(self) -> str:
        return f"<{self.type_name} object>"

    __eq__ = object.__eq__
    __hash__ = object.__hash__


class ReturnedSubclass(np.ndarray):
    """A plain array standing in for an ndarray subclass the student returned (the type
    checks see a subclass and fail; the subclass's own methods never reach the grader)."""

    original_type = ""


# ---------------------------------------------------------------------------- encoding
def encode(value: Any) -> tuple[Any, list[bytes]]:
    blobs: list[bytes] = []
    seen: set[int] = set()

    def enc(v: Any, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise ValueError("value nested too deeply")
        if v is None or type(v) is bool:
            return v
        if isinstance(v, str):
            return clean_text(str.__str__(v), MAX_STR)
        if type(v) is int:
            return v if abs(v) < 2**63 else {"$opaque": {"type": "int", "repr": "a very large int"}}
        if type(v) is float:
            return v if math.isfinite(v) else {"$f": "nan" if v != v else ("inf" if v > 0 else "-inf")}
        if isinstance(v, np.generic) and type(v).__module__ == "numpy":
            if v.dtype.name not in DTYPES:
                return {"$opaque": {"type": f"numpy.{v.dtype.name}", "repr": ""}}
            blobs.append(np.asarray(v).astype(v.dtype.newbyteorder("<")).tobytes())
            return {"$np": {"dtype": v.dtype.name, "blob": len(blobs) - 1}}
        if isinstance(v, np.ndarray):
            arr = np.ascontiguousarray(np.ndarray.view(v, np.ndarray))
            if arr.dtype.name not in DTYPES:
                return {"$opaque": {"type": f"ndarray[{arr.dtype.name}]", "repr": ""}}
            blobs.append(arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes())
            sub = "" if type(v) is np.ndarray else f"{type(v).__module__}.{type(v).__qualname__}"
            return {"$nd": {"dtype": arr.dtype.name, "shape": list(arr.shape), "blob": len(blobs) - 1,
                            "sub": sub}}
        if type(v).__module__.startswith("torch") and hasattr(v, "detach") and hasattr(v, "numpy"):
            t = v.detach().cpu().contiguous()
            name = str(t.dtype).replace("torch.", "")
            if name not in TORCH_DTYPES:
                return {"$opaque": {"type": f"torch.Tensor[{name}]", "repr": ""}}
            blobs.append(t.numpy().tobytes())
            return {"$t": {"dtype": name, "shape": list(t.shape), "blob": len(blobs) - 1,
                           "grad": bool(v.requires_grad)}}
        if isinstance(v, (list, tuple, dict)):
            # Subclasses (namedtuples, OrderedDicts) travel as their plain base type: the
            # items are what the student's kernel would compare.
            if id(v) in seen:
                raise ValueError("value contains itself")
            seen.add(id(v))
            # the base types' own methods: a subclass's items or __iter__ never runs here
            base: type
            items: list
            if isinstance(v, dict):
                base, items = dict, list(dict.items(v))
            elif isinstance(v, tuple):
                base, items = tuple, list(tuple.__iter__(v))
            else:
                base, items = list, list(list.__iter__(v))
            if len(items) > MAX_ITEMS:
                raise ValueError("too many items")
            if base is dict:
                out = {"$dict": [[enc(k, depth + 1), enc(x, depth + 1)] for k, x in items]}
            else:
                out = {"$" + base.__name__: [enc(x, depth + 1) for x in items]}
            seen.discard(id(v))
            return out
        try:
            text = repr(v)[:200]
        except Exception:  # noqa: BLE001 (a student's __repr__ may do anything)
            text = ""
        return {"$opaque": {"type": f"{type(v).__module__}.{type(v).__qualname__}"[:200], "repr": text}}

    return enc(value, 0), blobs


# ---------------------------------------------------------------------------- decoding
def decode(obj: Any, blobs: list[bytes]) -> Any:
    count = [0]

    def dec(o: Any, depth: int) -> Any:
        count[0] += 1
        if depth > MAX_DEPTH + 2 or count[0] > 10 * MAX_ITEMS:
            raise ProtocolError("value too deep or too large")
        if o is None or isinstance(o, bool):
            return o
        if isinstance(o, str):
            if len(o) > MAX_STR:
                raise ProtocolError("string too long")
            return clean_text(o, MAX_STR)
        if isinstance(o, int):
            if abs(o) >= 2**63:
                raise ProtocolError("integer out of range")
            return o
        if isinstance(o, float):
            return o
        if isinstance(o, dict) and len(o) == 1:
            (tag, body), = o.items()
            if tag == "$f" and body in ("nan", "inf", "-inf"):
                return float(body)
            if tag in ("$list", "$tuple") and isinstance(body, list):
                items = [dec(x, depth + 1) for x in body]
                return items if tag == "$list" else tuple(items)
            if tag == "$dict" and isinstance(body, list):
                out = {}
                for pair in body:
                    if not (isinstance(pair, list) and len(pair) == 2):
                        raise ProtocolError("bad dict entry")
                    key = dec(pair[0], depth + 1)
                    if not isinstance(key, (str, int, float, bool, tuple, type(None))):
                        raise ProtocolError("unhashable dict key")
                    out[key] = dec(pair[1], depth + 1)
                return out
            if tag == "$opaque" and isinstance(body, dict):
                return Opaque(str(body.get("type", "?"))[:200], str(body.get("repr", ""))[:200])
            if tag in ("$nd", "$t") and isinstance(body, dict):
                return _array(tag, body, blobs)
            if tag == "$np" and isinstance(body, dict):
                return _array("$nd", dict(body, shape=[], sub=""), blobs)[()]
        raise ProtocolError(f"unknown value of type {type(o).__name__}")

    return dec(obj, 0)


def _array(tag: str, body: dict, blobs: list[bytes]) -> Any:
    dtype, shape, index = body.get("dtype"), body.get("shape"), body.get("blob")
    allowed = DTYPES if tag == "$nd" else TORCH_DTYPES
    if dtype not in allowed or not isinstance(shape, list) or not isinstance(index, int):
        raise ProtocolError("bad array header")
    if not all(isinstance(s, int) and 0 <= s < 2**31 for s in shape) or len(shape) > 32:
        raise ProtocolError("bad array shape")
    if not 0 <= index < len(blobs):
        raise ProtocolError("array refers to a missing blob")
    dt = np.dtype(dtype).newbyteorder("<")
    if math.prod(shape) * dt.itemsize != len(blobs[index]):
        raise ProtocolError("array size does not match its shape")
    arr = np.frombuffer(blobs[index], dtype=dt).reshape(shape).astype(np.dtype(dtype), copy=True)
    if tag == "$t":
        import torch

        t = torch.from_numpy(arr)
        return t.requires_grad_(True) if body.get("grad") and t.is_floating_point() else t
    if body.get("sub"):
        view = arr.view(ReturnedSubclass)
        view.original_type = str(body["sub"])[:200]
        return view
    return arr


# ---------------------------------------------------------------------------- framing
def pack(header: dict, blobs: Sequence[bytes] = ()) -> bytes:
    header = dict(header, blobs=[len(b) for b in blobs])
    head = json.dumps(header, allow_nan=False).encode()
    body = struct.pack(">I", len(head)) + head + b"".join(blobs)
    return struct.pack(">Q", len(body)) + body


def send(sock: socket.socket, header: dict, blobs: Sequence[bytes] = ()) -> None:
    sock.sendall(pack(header, blobs))


def _recv_exact(sock: socket.socket, n: int, deadline: float | None) -> bytes:
    chunks, got = [], 0
    while got < n:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise socket.timeout("deadline passed")
            sock.settimeout(remaining)
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            raise EOFError("connection closed")
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def recv(sock: socket.socket, limit: int = MAX_MESSAGE, deadline: float | None = None) -> tuple[dict, list[bytes]]:
    """One message. `deadline` (time.monotonic()) bounds the whole read, however slowly
    the other side trickles its bytes."""
    (size,) = struct.unpack(">Q", _recv_exact(sock, 8, deadline))
    if size > limit:
        raise ProtocolError(f"message of {size} bytes is over the limit of {limit}")
    if size < 4:
        raise ProtocolError("message too short")
    body = _recv_exact(sock, size, deadline)
    (hlen,) = struct.unpack(">I", body[:4])
    if hlen > size - 4 or hlen > MAX_HEADER:
        raise ProtocolError("bad header length")
    raw = body[4:4 + hlen]
    # JSON cannot nest deeper than it has opening brackets: most messages are refused or
    # passed by counting them (in C), without the full scan
    if raw.count(b"[") + raw.count(b"{") > 4 * MAX_DEPTH and json_nesting(raw) > 4 * MAX_DEPTH:
        raise ProtocolError("header nested too deeply")
    try:
        header = json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError):   # ValueError: also over-long integers
        raise ProtocolError("header is not JSON") from None
    if not isinstance(header, dict) or not isinstance(header.get("blobs"), list):
        raise ProtocolError("bad header")
    blobs, pos = [], 4 + hlen
    for n in header["blobs"]:
        if not isinstance(n, int) or n < 0 or pos + n > size:
            raise ProtocolError("bad blob length")
        blobs.append(body[pos:pos + n])
        pos += n
    return header, blobs
