"""What the fork server imports, once, before it forks a worker: the grading code, then the
modules the assignment's cells import (`AUTOGRADER_PRELOAD`, comma-separated, set by
`forkserver.start`), with Python's cycle collector paused and everything frozen after
(`sandbox.server.collector_paused`): every worker, and every sandbox's zygote forked from a
worker (sandbox/template.py), starts with them loaded and never scans them."""
from __future__ import annotations

import os

from ..sandbox.server import collector_paused

with collector_paused():
    from .worker import _warm

    _warm(tuple(filter(None, os.environ.get("AUTOGRADER_PRELOAD", "").split(","))))
