"""Probes: fixed recipes that exercise a student's class or function and return plain data.

Test cells call them through `autograder.testing.run_probe(name, target, ...)`. In a
student's kernel the recipe runs in the kernel; under the trusted grader it runs inside
the sandbox, next to the student's code, and only NumPy arrays and numbers come back.
A student can change what a probe returns only by changing their own code's results,
and results are compared with references in the grader's process.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

import numpy as np


# What the module probe calls (and what those calls look up), captured by the sandbox before the
# notebook's first cell (`capture`): a notebook that patches torch.manual_seed, Module.double or a
# Tensor method cannot change which module the probe builds or what it reads from it.
_TRUSTED: dict = {}


def _reachable() -> dict:
    """Everything on the module probe's path that a notebook could reassign, by name: the
    callables it uses itself, and the namespaces they look names up in (torch.nn.Module's and
    torch.Tensor's attributes, torch.nn.modules.module's globals, its global hooks)."""
    import builtins

    import torch
    import torch.nn.modules.module as module_module

    names = {"manual_seed": torch.manual_seed, "as_tensor": torch.as_tensor, "tensor": torch.tensor,
             "float64": torch.float64, "float32": torch.float32, "asarray": np.asarray,
             "autograd.backward": torch.autograd.backward,
             "autograd.grad": torch.autograd.grad}
    for key in ("type", "isinstance", "list", "dict", "zip", "tuple", "getattr", "len", "iter", "next"):
        names[f"builtins.{key}"] = vars(builtins)[key]
    for owner, space in (("Module", torch.nn.Module), ("Tensor", torch.Tensor), ("Parameter", torch.nn.Parameter)):
        names.update({f"{owner}.{k}": v for k, v in vars(space).items()})
    names["TensorBase"] = {k: vars(torch._C.TensorBase)[k] for k in ("sum", "numpy", "__mul__", "__add__", "grad")}
    names.update({f"module.{k}": v for k, v in vars(module_module).items() if callable(v)})
    names.update({f"hooks.{k}": len(v) for k, v in vars(module_module).items()
                  if k.startswith("_global_") and isinstance(v, dict)})
    return names


def capture() -> None:
    """Record `_reachable()` now (the sandbox calls this before the notebook's first cell)."""
    import sys

    if "torch" in sys.modules:
        _TRUSTED.clear()
        _TRUSTED.update(_reachable())


def reachable_changed(trusted: dict) -> bool:
    """Whether anything on the module probe's path differs from what `capture` recorded."""
    if not trusted:
        return False
    live = _reachable()
    return live.keys() != trusted.keys() or not all(_same(live[k], v) for k, v in trusted.items())


def _same(a, b) -> bool:
    """Identity, but for what `_reachable` builds afresh (counts, TensorBase's dict)."""
    if type(a) is int and type(b) is int:
        return a == b
    if type(a) is dict and type(b) is dict:
        return a.keys() == b.keys() and all(a[k] is b[k] for k in a)
    return a is b


def module_forward_backward(cls: Any, init_kwargs: dict, state: dict, inputs: list,
                            forward_kwargs: dict | None = None,
                            upstream: list | None = None, dtype: str = "float64") -> dict:
    """Build cls(**init_kwargs), load `state`, run forward on `inputs`, then backward.

    dtype:    "float64" (the module made .double()) or "float32" (made .float()); the state
              and the inputs are given that dtype too, and what comes back keeps the dtypes
              the module computed in, so a test can check that a float32 module stays float32
    state:    {parameter name: array}, loaded with load_state_dict(strict=True)
    inputs:   arrays, turned into tensors of `dtype` that require grad
    upstream: one array per output (the gradient flowing into it); the loss is
              sum(output * upstream) over the outputs, so every output's gradient counts
    Returns {"outputs": [...], "input_grads": [...], "param_grads": {name: array}}.
    Every torch and NumPy function it calls is the one `capture` recorded before the notebook
    ran (in the sandbox), and the module it measures must be an instance of `cls` itself:
    neither cls(...) nor .double() may hand it another object.
    """

    if dtype not in ("float32", "float64"):
        raise ValueError(f"dtype must be 'float32' or 'float64', not {dtype!r}")
    t = _TRUSTED or _reachable()
    kind, base = t["builtins.type"], t["TensorBase"]
    cast, tensor_dtype = (t["Module.float"], t["float32"]) if dtype == "float32" else (t["Module.double"], t["float64"])
    t["manual_seed"](0)
    module = cls(**init_kwargs)
    if kind(module) is not cls or cast(module) is not module:
        raise TypeError(f"{cls.__name__}(...) or its .{'float' if dtype == 'float32' else 'double'}() gave an "
                        f"object that is not the {cls.__name__} it built: the module tests measure your class itself")
    t["Module.load_state_dict"](module, {k: t["as_tensor"](t["asarray"](v), dtype=tensor_dtype)
                                         for k, v in state.items()}, strict=True)
    xs = [t["tensor"](t["asarray"](x), dtype=tensor_dtype, requires_grad=True) for x in inputs]
    kwargs = {k: (t["as_tensor"](t["asarray"](v)) if t["builtins.isinstance"](v, (np.ndarray, list)) else v)
              for k, v in (forward_kwargs or {}).items()}
    out = t["Module.__call__"](module, *xs, **kwargs)
    outs = list(out) if t["builtins.isinstance"](out, (tuple, list)) else [out]
    loss = 0
    for o, g in zip(outs, upstream or []):
        product = base["__mul__"](o, t["as_tensor"](t["asarray"](g), dtype=o.dtype))
        loss = base["__add__"](base["sum"](product), loss)
    if upstream:
        t["Tensor.backward"](loss)

    def array(x):
        return t["asarray"](base["numpy"](t["Tensor.detach"](x))).copy()

    def grad(x):
        g = base["grad"].__get__(x)
        return None if g is None else array(g)

    return {
        "outputs": [array(o) for o in outs],
        "input_grads": [grad(x) for x in xs],
        "param_grads": {n: grad(p) for n, p in t["Module.named_parameters"](module)},
    }


PROBES: dict[str, Callable[..., dict]] = {"module_forward_backward": module_forward_backward}


def _resident_high_water() -> int | None:
    """The process's peak resident memory (VmHWM) in bytes, after resetting it to the current
    resident size (writing 5 to /proc/self/clear_refs, Linux 4.0 and later); None where the
    kernel does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return _status_bytes("VmHWM")
    except OSError:
        return None


def proc_bytes(path: str, field: str) -> int | None:
    """A size field ("VmHWM", "Referenced", in kB) of a /proc file (status, smaps_rollup) in
    bytes; None where it cannot be read. The sandbox's zygote reads its child's with it too."""
    try:
        with open(path, "rb") as f:
            return field_bytes(f.read(), field)
    except OSError:
        return None


def field_bytes(text: bytes, field: str) -> int | None:
    """A size field ("VmHWM", "Referenced", in kB) of a /proc file's text, in bytes."""
    key = field.encode() + b":"
    for line in text.splitlines():
        if line.startswith(key):
            try:
                return int(line.split()[1]) * 1024
            except (ValueError, IndexError):
                return None
    return None


def _status_bytes(field: str) -> int | None:
    return proc_bytes("/proc/self/status", field)


# Memory a process touched, as /proc/PID/smaps shows it after its referenced bits were cleared
# (writing 1 to /proc/PID/clear_refs). Per mapping, the touched bytes count, but never more than
# the mapping's pages the process holds alone: pages it shares with other processes since a fork
# (the interpreter's, torch's) are marked referenced whenever any of them touches one. Pages of
# the system's and the course's files are code, not data. Of the C heap, the first HEAP_NOISE
# bytes are the allocator's own traffic (it reads and writes chunk headers of the notebook's
# small objects: 3 to 9 MiB in a measured call of chapter 12).
HEAP_NOISE = 16 << 20
_MAPPING = re.compile(rb"^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+ *([^\n]*)\n(?:[A-Z][^\n]*\n)*?"
                      rb"Private_Clean:\s+(\d+) kB\nPrivate_Dirty:\s+(\d+) kB\nReferenced:\s+(\d+)", re.M)


def system_files() -> tuple[str, ...]:
    """Where the system's and the course's code lives (its pages are code, not data)."""
    import sys

    return tuple(sorted({"/usr/", "/lib", "/opt/autograder/", "/etc/", os.path.realpath(sys.prefix) + "/",
                         os.path.realpath(sys.base_prefix) + "/"}))


def own_touched_bytes(smaps: bytes, system: tuple[str, ...]) -> int:
    """The memory a process touched that is its own data (see above), from its smaps."""
    total = heap = 0
    for m in _MAPPING.finditer(smaps):
        name = m.group(1).strip()
        own = min(int(m.group(4)), int(m.group(2)) + int(m.group(3))) * 1024
        if name == b"[heap]":
            heap += own
        elif not name.decode(errors="replace").startswith(system):
            total += own
    return total + max(0, heap - HEAP_NOISE)


def _touched_since_cleared() -> int | None:
    try:
        with open("/proc/self/smaps", "rb") as f:
            return own_touched_bytes(f.read(), system_files())
    except OSError:
        return None


def peak_memory(fn: Any, *args: Any, **kwargs: Any) -> dict:
    """Call fn(*args, **kwargs) and report the memory it needed.

    Returns {"output": what fn returned, "peak_bytes": the larger of two measurements, each
    above its level when the call started: the peak that tracemalloc traced (Python objects
    and NumPy arrays, allocated even if never touched) and the rise of the process's peak
    resident memory (everything the call touched, PyTorch's tensors included);
    "touched_bytes": the memory the process touched during the call, wherever it was
    allocated (a buffer made before the call and filled during it counts); "processes": 0
    (this process cannot tell); "measured": True}. The arguments are copied before measuring
    starts (the caller's arrays never change).

    This is the recipe a student's own kernel runs. The grader takes none of these numbers
    from the student's process: it measures the same call from outside it (the sandbox's
    zygote, autograder/sandbox/meter.Meter; as root also the kernel's count of the
    sandbox's memory, cgroups.MemoryCounter), processes started included.
    """
    import copy
    import os
    import tracemalloc

    if os.environ.get("AUTOGRADER_SANDBOX"):
        # graded: the sandbox's zygote measures this call from outside (meter.Meter) and the
        # grader takes its numbers, never these; measuring here too would only slow the call
        return {"output": fn(*args, **kwargs), "peak_bytes": 0, "touched_bytes": 0, "processes": 0,
                "measured": False}
    args, kwargs = copy.deepcopy(args), copy.deepcopy(kwargs)
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        resident_start = _resident_high_water()
        cleared = _clear_referenced()
        tracemalloc.reset_peak()
        start, _ = tracemalloc.get_traced_memory()
        output = fn(*args, **kwargs)
        _, peak = tracemalloc.get_traced_memory()
        resident_peak = _status_bytes("VmHWM") if resident_start is not None else None
        touched = _touched_since_cleared() if cleared else None
    finally:
        if not was_tracing:
            tracemalloc.stop()
    resident = (resident_peak - resident_start) if resident_peak is not None and resident_start is not None else 0
    return {"output": output, "peak_bytes": int(max(peak - start, resident, 0)),
            "touched_bytes": int(touched or 0), "processes": 0, "measured": True}


def _clear_referenced() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("1")
        return True
    except OSError:
        return False


PROBES["peak_memory"] = peak_memory
