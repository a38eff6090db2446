"""The unit layer's rule, kept by the layer itself (CONTRIBUTING.md, "Tests in layers"): a test
here starts no process. While a test of this folder is set up, run and torn down (its fixtures
of every scope included), whatever would start a process raises instead: subprocess (its own
name for _posixsubprocess.fork_exec, or os.posix_spawn), multiprocessing (fork_exec or os.fork),
os.forkpty, os.posix_spawnp and os.system. Such a test belongs in tests/e2e/."""
from __future__ import annotations

import _posixsubprocess
import contextlib
import os
import subprocess

import pytest

STARTERS = [(subprocess, "_fork_exec"), (_posixsubprocess, "fork_exec"), (os, "fork"), (os, "forkpty"),
            (os, "posix_spawn"), (os, "posix_spawnp"), (os, "system")]


class ProcessInAUnitTest(BaseException):
    """Not an Exception: code under test that catches Exception (or OSError) cannot hide it."""


def refuse(*args, **kwargs):
    raise ProcessInAUnitTest("a test in tests/unit started a process: it belongs in tests/e2e/ "
                             "(CONTRIBUTING.md, \"Tests in layers\")")


@contextlib.contextmanager
def no_process():
    saved = [(module, name, getattr(module, name)) for module, name in STARTERS if hasattr(module, name)]
    for module, name, _ in saved:
        setattr(module, name, refuse)
    try:
        yield
    finally:
        for module, name, original in saved:
            setattr(module, name, original)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    with no_process():
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    with no_process():
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    with no_process():
        yield
