"""The sandbox student code runs in. The grader's side: `host` (the limits, a sandbox's
lifecycle), `bwrap` (bubblewrap's command line), `cgroups` and `session` (one submission's
requests). Inside bubblewrap: `server` (a warm zygote, started by bubblewrap or forked
from a worker's `template`), `confine` (each submission's process confined before its
first cell), `meter` (what a measured call used, read from outside), `child` (one per
submission: its cells and calls) and `processes`. Between them, the wire format
(`protocol`) and `errors`. Kept free of imports: the sandbox imports its parts one by one."""
