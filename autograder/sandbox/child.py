"""One submission's process inside the sandbox: run its cells, then answer requests.

Requests (autograder.sandbox.protocol messages) from the grader:
  run    {cells, names, notebook_name} + the notebook's bytes -> which cells raised, what the names are
  call   {name, args, kwargs}   -> the function's result, and the array arguments after the call
                                   (so the grader can see whether an input was modified in place)
  probe  {probe, target, args, kwargs} -> a fixed recipe (autograder.probes) run on the target
  get    {name}                 -> a value the notebook defines
  bye                           -> the process ends
Everything sent back is plain data; exceptions are reported by type names and message.
"""
from __future__ import annotations

import gc
import os
import signal
import socket
import traceback
from contextlib import contextmanager

from autograder.sandbox import protocol


class TimeLimitExceeded(BaseException):
    """Raised inside a cell or a call that runs longer than its share of the time."""


def _alarm(signum, frame):
    raise TimeLimitExceeded("time limit reached")


@contextmanager
def _time_limit(seconds: float):
    """Interrupt a single cell or call that hangs, so the rest can still be graded.
    (Code that blocks the signal still meets the grader's wall clock for the notebook.)"""
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _error(exc: BaseException) -> dict:
    try:
        names = [c.__name__ for c in type(exc).__mro__][:10]
        message = str(exc)[:2000]
    except Exception:  # noqa: BLE001 (a student's exception may misbehave)
        names, message = ["Exception"], ""
    return {"ok": False, "error": {"types": [str(n)[:100] for n in names], "message": message}}


def _is_array(x) -> bool:
    import numpy as np

    return isinstance(x, np.ndarray) or (type(x).__module__.startswith("torch") and hasattr(x, "detach"))


def _shell():
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    shell = InteractiveShell.instance(config=config, colors="nocolor")
    if "transform_cell" not in vars(shell):
        full, manager = shell.transform_cell, shell.input_transformer_manager
        stock = [list(manager.cleanup_transforms), list(manager.line_transforms), list(manager.token_transformers)]

        def transform_cell(raw_cell: str) -> str:
            # IPython's own path whenever a transform was added (a notebook may add its own)
            customised = shell.input_transformers_post or stock != [
                manager.cleanup_transforms, manager.line_transforms, manager.token_transformers]
            plain = None if customised else plain_python(raw_cell)
            return full(raw_cell) if plain is None else plain

        shell.transform_cell = transform_cell  # type: ignore[method-assign]  # this shell's own, on purpose
    if "should_run_async" not in vars(shell):
        full_async = shell.should_run_async

        def should_run_async(raw_cell: str, *, transformed_cell=None, preprocessing_exc_tuple=None) -> bool:
            # IPython compiles the whole cell to see whether it awaits at top level; only a
            # cell with `await` or `async` in its text can (keywords have no other spelling)
            if isinstance(transformed_cell, str) and "await" not in transformed_cell \
                    and "async" not in transformed_cell:
                return False
            return full_async(raw_cell, transformed_cell=transformed_cell,
                              preprocessing_exc_tuple=preprocessing_exc_tuple)

        shell.should_run_async = should_run_async  # type: ignore[method-assign]  # this shell's own
    return shell


_NOT_PLAIN_LINE = (",", ";", "/", ">>>", "...", "In [")


def plain_python(cell: str) -> str | None:
    """What IPython's `transform_cell` returns for a cell none of its input transforms would
    change, without tokenizing it (half the time IPython takes to run a typical cell); None
    when one of them might apply, and IPython's own transform is used. Such a cell has no
    `%`, `!` or `?` (magics, shell escapes, help), no line that starts like a prompt or an
    autocall (`>>>`, `...`, `In [`, `,`, `;`, `/`), its first line is not indented, and it
    has more than one line (IPython applies its dynamic transforms, automagic and autocall,
    to one-line cells). IPython drops the leading blank lines and ends the cell with a
    newline; so does this."""
    if "%" in cell or "!" in cell or "?" in cell:
        return None
    if not cell.endswith("\n"):
        cell += "\n"
    lines = cell.splitlines(keepends=True)
    first = next((i for i, line in enumerate(lines) if line and not line.isspace()), None)
    if first is None or lines[first][:1] in (" ", "\t"):
        return None
    lines = lines[first:]
    if len(lines) < 2 or any(line.lstrip().startswith(_NOT_PLAIN_LINE) for line in lines):
        return None
    return "".join(lines)


# The submission's process. A process the submission forks is a copy of it, request loop and
# socket included: a copy that came back here would race the original for the grader's
# requests and answer some of them itself (a fork bomb's results and flags changed from run to
# run). A copy ends as soon as the cell or the call that forked it is over (`_end_if_a_copy`).
_ORIGINAL = {"pid": 0}


def _end_if_a_copy() -> None:
    """A copy ends here; the original ends every process the cell or call started that is
    still running (it is their subreaper: orphans included, confine.seal), and reaps them.
    A process started in one cell does not outlive it: none can hold memory for, or serve,
    a later call (the zygote's meter ends them too before every measured call)."""
    if os.getpid() != _ORIGINAL["pid"]:
        os._exit(0)
    from autograder.sandbox.processes import end_descendants

    try:
        end_descendants(os.getpid())
    except OSError:
        pass
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break


def serve(sock: socket.socket, step_seconds: float = 10.0) -> None:
    _ORIGINAL["pid"] = os.getpid()
    try:
        shell = _shell()
    except BaseException:  # noqa: BLE001 (report set-up failures instead of dying silently)
        protocol.send(sock, {"ok": False, "fatal": traceback.format_exc()[-2000:]})
        return
    ns = shell.user_ns
    _capture_probes()                # before the submission's first cell
    while True:
        try:
            header, blobs = protocol.recv(sock)
        except (EOFError, OSError, protocol.ProtocolError):
            return
        op = header.get("op")
        try:
            if op == "run":
                reply, out_blobs = _run(shell, header, blobs, step_seconds), []
            elif op == "call":
                with _time_limit(step_seconds):
                    reply, out_blobs = _call(ns, header, blobs)
            elif op == "probe":
                with _time_limit(step_seconds):
                    reply, out_blobs = _probe(ns, header, blobs)
            elif op == "get":
                value, out_blobs = protocol.encode(ns.get(header["name"]))
                reply = {"ok": True, "result": value}
            elif op == "bye":
                return
            else:
                reply, out_blobs = {"ok": False, "error": {"types": ["ProtocolError"], "message": op}}, []
        except BaseException as exc:  # noqa: BLE001 (the student's code may raise anything)
            reply, out_blobs = _error(exc), []
        _end_if_a_copy()
        try:
            protocol.send(sock, reply, out_blobs)
        except (ValueError, TypeError) as exc:
            protocol.send(sock, _error(exc))
        # Every object made so far is left out of later garbage collections: a full
        # collection during a measured call (the zygote's meter, meter.Meter) would touch
        # every object the notebook made, tens of MiB, and count them as the call's memory.
        gc.freeze()


def _output_full() -> bool:
    """Whether the submission's output (fd 1 and 2, one capped file) has reached its cap."""
    import resource
    import sys

    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass                                # the cap refuses the flush too: the size says it
    try:
        limit = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
        return limit != resource.RLIM_INFINITY and os.fstat(1).st_size >= limit - 4096
    except (OSError, ValueError):
        return False


def _cell_error_name(error: BaseException) -> str:
    """The class name a cell's error is reported under. The grading side reads two names as
    the grader's own limits (a cell's time, the output cap); a class of the notebook's that
    bears one of them is named as such, so it cannot pass for a limit reached."""
    name = type(error).__name__
    if name in ("TimeLimitExceeded", "OutputLimitExceeded") and type(error) is not TimeLimitExceeded:
        return f"the notebook's own class {name}"
    return name


def _run(shell, header: dict, blobs: list[bytes], step_seconds: float) -> dict:
    name = os.path.basename(str(header.get("notebook_name", "submission.ipynb"))) or "submission.ipynb"
    try:
        with open(name, "wb") as f:
            f.write(blobs[0] if blobs else b"")
    except OSError:
        pass
    outcomes: list[str | None] = []
    full = False
    for index, source in enumerate(header["cells"]):
        try:
            with _time_limit(step_seconds):
                result = shell.run_cell(source, store_history=False, silent=False)
            error = result.error_before_exec or result.error_in_exec
        except BaseException as exc:  # noqa: BLE001
            error = exc
        _end_if_a_copy()
        if not full and _output_full():
            # the cell printed past the output cap (RLIMIT_FSIZE): its write failed with EFBIG,
            # or whatever it did next failed, or it caught that and went on. Say the cause,
            # not the OSError it surfaced as, for the cell that reached the cap.
            full = True
            outcomes.append("OutputLimitExceeded: the notebook printed more output than allowed")
        else:
            outcomes.append(None if error is None else f"{_cell_error_name(error)}: {str(error)[:300]}")
    names = {}
    for n in header.get("names", []):
        if n not in shell.user_ns:
            names[n] = "missing"
        else:
            names[n] = "callable" if callable(shell.user_ns[n]) else "value"
    return {"ok": True, "cells": outcomes, "names": names}


def _target(ns: dict, name: str):
    target = ns.get(name)
    if target is None:
        raise NameError(f"name '{name}' is not defined")
    return target


def _arguments(header: dict, blobs: list[bytes]) -> tuple[list, dict]:
    return protocol.decode(header["args"], blobs), protocol.decode(header["kwargs"], blobs)


def _holds_data(value, depth: int = 0) -> bool:
    """An array, or a dict, list or tuple with one somewhere inside (what a call's arguments
    are made of, as the grader sent them)."""
    if depth > 32:
        return False
    if _is_array(value):
        return True
    if isinstance(value, dict):
        return any(_holds_data(v, depth + 1) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_data(v, depth + 1) for v in value)
    return False


def _call(ns: dict, header: dict, blobs: list[bytes]):
    fn = _target(ns, header["name"])
    args, kwargs = _arguments(header, blobs)
    # every argument that held data WHEN SENT comes back as it is after the call, containers
    # and all, whatever the call left in it: the grader compares it with what it sent (a write
    # into params["W_q"] counts, and so does a dict the call emptied or whose arrays it turned
    # into lists: an argument with no array left is still compared)
    compared = [_holds_data(a) for a in args]
    compared_kw = {k for k, v in kwargs.items() if _holds_data(v)}
    result = fn(*args, **kwargs)
    after = [a if c else None for a, c in zip(args, compared)]
    after_kw = {k: v for k, v in kwargs.items() if k in compared_kw}
    value, out = protocol.encode({"result": result, "args": after, "kwargs": after_kw})
    return {"ok": True, "value": value}, out


_PROBES_AT_START: dict = {}


def _capture_probes() -> None:
    """What autograder.probes is before any of the submission's code runs: the registry and
    the code of every function of the module (code objects cannot be changed)."""
    import types

    from autograder import probes

    import builtins

    probes.capture()          # what the module probe calls from torch and NumPy
    space = vars(probes)
    _PROBES_AT_START.update(
        trusted=dict(probes._TRUSTED), builtins=dict(vars(builtins)),
        registry=dict(probes.PROBES),
        functions={k: (v.__code__, v.__defaults__, v.__kwdefaults__) for k, v in space.items()
                   if isinstance(v, types.FunctionType) and v.__module__ == probes.__name__},
        others={k: v for k, v in space.items() if not isinstance(v, types.FunctionType)})


def _pristine_probe(name: str) -> tuple:
    """(the probe as it was before the submission's code ran, whether the submission changed
    autograder.probes, or what its probes call, since): the probe is rebuilt from the code
    objects captured then, over a fresh copy of the module's names and of the builtins, with
    the torch and NumPy functions captured then (probes.capture), so a registry replaced with
    PROBES.update, a function swapped for another, a function's __code__ reassigned or a torch
    function patched (torch.manual_seed, Module.double) has no effect on what it measures,
    and is reported."""
    import types

    from autograder import probes

    start = _PROBES_AT_START
    space: dict = dict(start["others"], _TRUSTED=dict(start["trusted"]), __builtins__=dict(start["builtins"]))
    for key, (code, defaults, kwdefaults) in start["functions"].items():
        fn = types.FunctionType(code, space, key, defaults)
        fn.__kwdefaults__ = kwdefaults
        space[key] = fn
    original = start["registry"].get(name)
    live = vars(probes)
    changed = (dict(probes.PROBES) != start["registry"]
               or any(not isinstance(live.get(k), types.FunctionType) or live[k].__code__ is not code
                      for k, (code, _, _) in start["functions"].items())
               or space["reachable_changed"](start["trusted"]))
    if original is None:
        raise KeyError(f"no probe named {name!r}")
    return space[original.__name__], changed


def _probe(ns: dict, header: dict, blobs: list[bytes]):
    target = _target(ns, header["target"])
    args, kwargs = _arguments(header, blobs)
    probe, changed = _pristine_probe(header["probe"])
    # a changed probe path earns nothing (the grader flags it): not run, whatever it would raise
    result = None if changed else probe(target, *args, **kwargs)
    value, out = protocol.encode({"result": result, "args": [], "kwargs": {}, "probes_changed": changed})
    return {"ok": True, "value": value}, out
