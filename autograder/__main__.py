"""`python -m autograder`: the command line (cli/).

A finished command leaves with `os._exit`: the interpreter's own teardown (freeing every
module that nbgrader, SQLAlchemy and the rest loaded) took 0.7 s of each grading run, and a
finished command needs none of it. What a normal exit does that matters happens first:
the other threads finish, the atexit handlers run (multiprocessing removes its temporary
folder, logging flushes), and the output is flushed. An exception still ends the normal way.
"""
import atexit
import os
import sys
import threading

from .cli import main

code = main()
for thread in threading.enumerate():
    if thread is not threading.main_thread() and not thread.daemon:
        thread.join()
atexit._run_exitfuncs()
for stream in (sys.stdout, sys.stderr):
    try:
        stream.flush()
    except (OSError, ValueError):   # a closed pipe (`... | head`): nothing more to say
        pass
os._exit(code)
