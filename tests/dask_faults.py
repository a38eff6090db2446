"""Loaded into a test's `dask worker` with `--preload tests.dask_faults`: faults a worker meets that
no submission can cause from inside its sandbox, so the tests make the worker meet them.

- AUTOGRADER_TEST_KILLS_WORKER=student: grading that student kills the worker's process
  (SIGKILL), every time, as a grading that brings its worker down would (the kernel's OOM
  killer, a crash in a library).
- AUTOGRADER_TEST_REFUSES=1: the worker passes the survey but refuses every task, as one whose
  sandbox stopped working after the survey would."""
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
if os.environ.get("AUTOGRADER_TEST_REFUSES"):
    remote.refusal = lambda assignment, version: f"{remote.host()}: refused: its sandbox stopped working (a test's stand-in)"
