"""`make bench-grading`: `autograder grade` against stock `nbgrader autograde`, same machine, same run.

Forty synthetic submissions of 02_similarity (a third right, a third wrong, a third half
right; its tests import torch) are graded twice from scratch: by `autograder grade` with
the sandbox and every check on (default workers: one per core), and by stock, sequential
`nbgrader autograde`. Prints both wall times and their ratio, and checks that both graders
agree on every score. A benchmark, not a test: it reports, it does not fail on slowness.
"""
from __future__ import annotations

import argparse
import csv
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from .course import ROOT, nbgrader_env

A = "02_similarity"


def make_submissions(folder: Path, n: int) -> dict[str, str]:
    source = nbformat.read(str(ROOT / "solutions" / A / f"{A}.ipynb"), as_version=4)
    kinds = {}
    for i in range(n):
        nb = nbformat.from_dict(source)
        kind = ("right", "wrong", "half")[i % 3]
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            if not meta.get("solution"):
                continue
            if kind == "wrong" or (kind == "half" and meta["grade_id"] == "softmax"):
                cell.source = re.sub(r"### BEGIN SOLUTION.*?### END SOLUTION", "return np.zeros(1)  # a wrong answer",
                                     cell.source, flags=re.S)
        student = f"student{i:02d}"
        (folder / student).mkdir(parents=True)
        nbformat.write(nb, str(folder / student / f"{A}.ipynb"))
        kinds[student] = kind
    return kinds


def run(cmd, env=None) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd[:4])} failed:\n{proc.stderr[-2000:]}")
    return elapsed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.bench", description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=40, help="number of submissions (default: 40)")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    try:
        subs = tmp / "submissions"
        make_submissions(subs, args.n)
        print(f"{args.n} submissions of {A} (right/wrong/half-right), {os.cpu_count()} cores", flush=True)

        ours = run([sys.executable, "-m", "autograder", "grade", A, str(subs), "--workspace", str(tmp / "ours"),
                    "--quiet"])
        print(f"autograder grade (sandboxed, parallel): {ours:7.1f} s", flush=True)

        ws = tmp / "stock"
        env = nbgrader_env({"AUTOGRADER_WORKSPACE": str(ws)})
        for student in sorted(os.listdir(subs)):
            target = ws / "submitted" / student / A
            target.mkdir(parents=True)
            shutil.copy(subs / student / f"{A}.ipynb", target / f"{A}.ipynb")
        run([sys.executable, "-m", "nbgrader", "generate_assignment", A, "--force",
             f"--CourseDirectory.release_directory={tmp / 'release'}"], env)   # setup, not timed
        stock = run([sys.executable, "-m", "nbgrader", "autograde", A, "--create"], env)
        print(f"nbgrader autograde (stock, sequential): {stock:7.1f} s", flush=True)
        print(f"speed-up: {stock / ours:.1f}x ({stock / args.n:.2f} s vs {ours / args.n:.2f} s per submission)")

        run([sys.executable, "-m", "nbgrader", "export", "--to", str(tmp / "stock.csv")], env)
        theirs = {r["student_id"]: float(r["score"]) for r in csv.DictReader(open(tmp / "stock.csv"))}
        mine = {r["student"]: float(r["score"]) for r in
                csv.DictReader(open(tmp / "ours" / "reports" / A / "grades.csv"))}
        same = sum(1 for s in mine if mine[s] == theirs.get(s))
        print(f"scores agree for {same} of {len(mine)} submissions")
        return 0 if same == len(mine) else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
