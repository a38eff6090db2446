"""The sandbox student code runs in: the grader's side (`host`), the process inside
bubblewrap (`server`, a warm zygote, and `child`, one per submission), and the wire
format between them (`protocol`). Kept free of imports: the sandbox imports its parts
one by one."""
