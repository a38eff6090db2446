"""Plausible wrong (and correct-but-different) implementations of each graded function.

One module per chapter, named after it (m02_similarity.py for 02_similarity). Each defines
    WRONG   = {function_name: {what is wrong: source defining the function}}
    CORRECT = {function_name: {how it differs: source defining the function}}
tests/book/test_the_tests.py runs the chapter's visible and hidden tests against each: every
WRONG implementation must lose points, every CORRECT one must keep full marks.
"""
