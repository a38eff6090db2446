"""What the fork server imports, once, before it forks a worker: the grading code, then what
every submission's process needs and the modules the assignment's cells import
(`AUTOGRADER_PRELOAD`, comma-separated, set by `forkserver.start`), and the IPython shell a
submission's cells run in (`sandbox.server._warm_imports`), with Python's cycle collector
paused and everything frozen after (`sandbox.server.collector_paused`): every worker, and
every sandbox's zygote forked from a worker's template (sandbox/template.py), starts with
them loaded and never scans them. Built here once, the shell is ready in each worker's
template the moment it is forked (built in each template, it held back the first sandbox by
0.06-0.09 s, the two templates building at once on two cores with their workers). Nothing
here has read a solution, a submission or a salt."""
from __future__ import annotations

import os

from ..sandbox.server import _warm_imports, collector_paused

with collector_paused():
    from . import worker

    worker.warm()
    _warm_imports(os.environ.get("AUTOGRADER_PRELOAD", ""))
