"""Where grades are kept: the grading workspace's files, nbgrader's gradebook, and the one CSV writer."""
