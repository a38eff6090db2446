"""`autograder grade`: the class's run (`run`: watched parallel workers, resume) and
the grading of one submission in a trusted worker (`submission`: proxies, tests)."""
