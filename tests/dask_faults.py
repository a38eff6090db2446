"""Loaded into a test's `dask worker` with `--preload tests.dask_faults`: grading the student named
in AUTOGRADER_TEST_KILLS_WORKER kills the worker's process (SIGKILL), every time, as a grading
that brings its worker down would (the kernel's OOM killer, a crash in a library). Nothing a
submission does can do that from inside its sandbox, so the test makes the worker do it."""
from __future__ import annotations

import os
import signal

from autograder.grade import remote

_grade = remote.grade


def grade(assignment, version, limits, task):
    if task[0] == os.environ.get("AUTOGRADER_TEST_KILLS_WORKER"):
        os.kill(os.getpid(), signal.SIGKILL)
    return _grade(assignment, version, limits, task)


remote.grade = grade      # the task names remote.grade; a worker finds it here when it unpickles one
