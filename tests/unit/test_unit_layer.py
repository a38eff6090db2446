"""The unit layer refuses a test that starts a process (tests/unit/conftest.py): every way of
starting one raises, naming the layer the test belongs in."""
from __future__ import annotations

import multiprocessing
import os
import subprocess

import pytest

from tests.unit.conftest import ProcessInAUnitTest, refuse


@pytest.mark.parametrize("start", [
    lambda: subprocess.run(["true"]),
    lambda: subprocess.check_output(["true"]),
    lambda: os.system("true"),
    lambda: os.posix_spawnp("true", ["true"], os.environ),
    lambda: multiprocessing.get_context("spawn").Process(target=print).start(),
], ids=["subprocess.run", "check_output", "os.system", "posix_spawnp", "multiprocessing"])
def test_a_unit_test_that_starts_a_process_fails_saying_where_it_belongs(start):
    with pytest.raises(ProcessInAUnitTest, match="belongs in tests/e2e/"):
        start()


def test_forking_is_refused_too():
    # not called: were the guard missing, a fork would copy this pytest run
    assert os.fork is refuse and os.forkpty is refuse
