"""`make bench-grading`: what `autograder grade` costs, and how it compares with stock nbgrader.

Synthetic submissions of 02_similarity (a third right, a third wrong, a third half right;
its tests import torch), all measured in one run on this machine:

1. `autograder grade` (sandbox and every check on, one worker per core, a fresh workspace
   each time, after one untimed run that brings torch into the page cache) on classes of
   10, 40, 100 and 200, in three rounds (each round grades every size once, so a machine
   that speeds up or slows down during the bench weighs on every size alike): the
   least-squares line through each size's median wall time splits a run into its fixed
   cost (starting, opening the gradebook, writing the reports) and its marginal cost per
   submission; each round's own line shows the spread. The first 10-student run also
   prints when each phase ended (`AUTOGRADER_PHASES`). Beside it, the floor of the fixed
   cost that is torch's, not the grader's: `import torch` alone in a fresh interpreter
   (with the cycle collector paused, as the fork server imports it; median of three).
2. Stock, sequential `nbgrader autograde` on the same 40; the ratio of the two 40-runs; and
   whether both graders agree on every score.
3. The commands people type: `autograder --help`, and a student's `autograder check` of one
   notebook (median of three).
4. Every chapter's marginal cost (`--chapters`, also part of the full bench): its solution
   notebook graded as 3 and as 9 submissions, after one untimed run; (t9 - t3) / 6 per
   submission, beside the 1 s a chapter may cost.
5. The local fork server against a local Dask cluster (`--dask`, also part of the full bench):
   a `dask scheduler` and as many `dask worker --nthreads 1` processes as the local run has
   workers, on this machine; fixed and marginal cost of each on 02_similarity (classes of 10
   and 40, after one untimed run each), the scheduler's own cost per task (200 empty tasks),
   and the heaviest chapter graded on 1 and on 2 Dask workers.
6. What each start-up function saves (`--startup`, also part of the full bench): the
   statement it speeds up, timed in fresh interpreters without it and with it
   (autograder/startup.py).

A benchmark, not a test: it reports, it does not fail on slowness (it fails when the two
graders disagree).
"""
from __future__ import annotations

import argparse
import csv
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .course import ROOT, nbgrader_env

A = "02_similarity"
SIZES = (10, 40, 100, 200)


def make_submissions(folder: Path, n: int) -> dict[str, str]:
    from .startup import fast_nbformat

    nbformat = fast_nbformat()
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
        student = f"student{i:03d}"
        (folder / student).mkdir(parents=True)
        nbformat.write(nb, str(folder / student / f"{A}.ipynb"))
        kinds[student] = kind
    return kinds


def run(cmd, env=None, ok=(0,)) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode not in ok:
        sys.exit(f"bench: {' '.join(map(str, cmd[:4]))} failed:\n{proc.stderr[-2000:]}")
    return elapsed, proc


def fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """Least squares: wall time = fixed + marginal * n."""
    ns, ts = [p[0] for p in points], [p[1] for p in points]
    n_mean, t_mean = statistics.fmean(ns), statistics.fmean(ts)
    marginal = (sum((n - n_mean) * (t - t_mean) for n, t in points)
                / sum((n - n_mean) ** 2 for n in ns))
    return t_mean - marginal * n_mean, marginal


def medians(rounds: list[list[tuple[int, float]]]) -> list[tuple[int, float]]:
    """Per class size, the median wall time over the rounds: [(n, seconds)]."""
    sizes = sorted({n for points in rounds for n, _ in points})
    return [(n, statistics.median(t for points in rounds for m, t in points if m == n)) for n in sizes]


def torch_import_seconds() -> float:
    """`import torch` alone, in a fresh interpreter, as the fork server imports it (the cycle
    collector paused); the interpreter's teardown after it is not counted."""
    code = ("import gc, os, sys, time; gc.disable(); t = time.perf_counter(); import torch; "
            "sys.stdout.write(repr(time.perf_counter() - t)); sys.stdout.flush(); os._exit(0)")
    return float(run([sys.executable, "-c", code])[1].stdout)


def grade_class(tmp: Path, n: int, phases: bool = False) -> tuple[float, Path, str]:
    subs = tmp / f"class{n}"
    if not subs.exists():
        make_submissions(subs, n)
    ws = tmp / f"ours{n}"
    env = dict(os.environ, AUTOGRADER_PHASES="1") if phases else None
    seconds, proc = run([sys.executable, "-m", "autograder", "grade", A, str(subs), "--workspace", str(ws),
                         "--quiet"], env)
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("phases:")]
    return seconds, ws, lines[0] if lines else ""


def command_times(tmp: Path) -> dict[str, float]:
    notebook = tmp / "class10" / "student000" / f"{A}.ipynb"      # a right answer
    times = {}
    for label, cmd, ok in (("autograder --help", [sys.executable, "-m", "autograder", "--help"], (0,)),
                           ("autograder check (one notebook)", [sys.executable, "-m", "autograder", "check",
                                                                 str(notebook)], (0,))):
        times[label] = statistics.median(run(cmd, ok=ok)[0] for _ in range(3))
    return times


# What each function of startup.py saves: (set-up, timed without it, timed with it), each in
# a fresh interpreter, after `from autograder import startup`.
STARTUP = {
    "import jsonschema (its format checkers' packages, the URI grammars)":
        ("pass", "import jsonschema", "startup.skip_uri_grammars()"),
    "nbformat's first validation (its version 4 validator)":
        ("startup.skip_uri_grammars(); import nbformat; nb = nbformat.from_dict({'cells': [], 'metadata': {}, "
         "'nbformat': 4, 'nbformat_minor': nbformat.v4.nbformat_minor})",
         "nbformat.validate(nb)", "startup.ready_validator(); nbformat.validate(nb)"),
    "import nbgrader.api (nbgrader's package __init__)":
        ("startup.skip_uri_grammars()", "import nbgrader.api", "startup.defer_nbgrader_init(); import nbgrader.api"),
    "a new gradebook (the schema's head revision)":
        ("startup.defer_nbgrader_init(); import nbgrader.api; url = 'sqlite:///' + sys.argv[1] + '/gradebook.db'",
         "nbgrader.api.Gradebook(url).close()", "startup.fast_nbgrader(); nbgrader.api.Gradebook(url).close()"),
}


def startup_costs(tmp: Path, repeat: int = 3) -> None:
    """Print what each start-up function saves: the median of `repeat` fresh interpreters
    without it and with it."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    for label, (setup, without, with_it) in STARTUP.items():
        medians_ms = []
        for timed in (without, with_it):
            code = (f"import os, sys, time; from autograder import startup; {setup}; t = time.perf_counter(); "
                    f"{timed}; sys.stdout.write(repr(time.perf_counter() - t)); sys.stdout.flush(); os._exit(0)")
            seconds = []
            for _ in range(repeat):
                folder = tempfile.mkdtemp(dir=tmp)
                seconds.append(float(run([sys.executable, "-c", code, folder], env)[1].stdout))
            medians_ms.append(1000 * statistics.median(seconds))
        print(f"  {label}: {medians_ms[0]:.0f} ms without, {medians_ms[1]:.0f} ms with "
              f"(median of {repeat})", flush=True)


CHAPTER_BUDGET = 1.0          # seconds per submission a chapter may cost on this machine


def chapter_costs(tmp: Path, small: int = 3, large: int = 9) -> list[tuple[str, float, float, float]]:
    """[(assignment, seconds for `small`, for `large`, marginal per submission)]: each chapter's
    solution notebook graded as `small` and `large` identical submissions."""
    from .course import assignments

    out = []
    for assignment in assignments():
        source = ROOT / "solutions" / assignment / f"{assignment}.ipynb"
        times = {}
        for n in (small, small, large):            # the first `small` is untimed: page cache, imports
            subs = tmp / f"{assignment}-{n}"
            if not subs.exists():
                for i in range(n):
                    (subs / f"s{i:02d}").mkdir(parents=True)
                    shutil.copy(source, subs / f"s{i:02d}" / f"{assignment}.ipynb")
            ws = tmp / f"{assignment}-ws{n}"
            shutil.rmtree(ws, ignore_errors=True)
            times[n], _ = run([sys.executable, "-m", "autograder", "grade", assignment, str(subs),
                               "--workspace", str(ws), "--quiet"])
        marginal = (times[large] - times[small]) / (large - small)
        out.append((assignment, times[small], times[large], marginal))
        print(f"  {assignment:<28} {small}: {times[small]:6.2f} s, {large}: {times[large]:6.2f} s, "
              f"marginal {marginal:.3f} s per submission" + ("  OVER 1 s" if marginal > CHAPTER_BUDGET else ""),
              flush=True)
    return out


HEAVIEST = "12_long_sequences"     # the chapter whose grading costs most per submission


class LocalCluster:
    """A `dask scheduler` and `workers` `dask worker` processes on this machine, stopped on exit."""

    def __init__(self, tmp: Path, workers: int):
        self.folder = Path(tempfile.mkdtemp(prefix="cluster-", dir=tmp))
        self.file = self.folder / "scheduler.json"
        env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
        dask = str(Path(sys.executable).parent / "dask")
        common: dict[str, Any] = dict(cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      start_new_session=True)
        self.procs = [subprocess.Popen([sys.executable, dask, "scheduler", "--no-dashboard", "--port", "0",
                                        "--host", "127.0.0.1", "--scheduler-file", str(self.file)], **common)]
        deadline = time.time() + 60
        while not self.file.exists() and time.time() < deadline:
            time.sleep(0.1)
        self.procs += [subprocess.Popen([sys.executable, dask, "worker", "--nthreads", "1", "--nworkers", "1",
                                         "--no-dashboard", "--host", "127.0.0.1", "--scheduler-file",
                                         str(self.file)], **common) for _ in range(workers)]
        from distributed import Client

        with Client(scheduler_file=str(self.file), set_as_default=False) as client:
            client.wait_for_workers(workers, timeout=120)

    def task_overhead(self, n: int = 200) -> float:
        """Seconds the scheduler adds per task: n empty tasks, submitted and gathered."""
        from distributed import Client

        with Client(scheduler_file=str(self.file), set_as_default=False) as client:
            client.gather(client.map(int, range(20), pure=False))           # warm
            start = time.perf_counter()
            client.gather(client.map(int, range(n), pure=False))
            return (time.perf_counter() - start) / n

    def stop(self) -> None:
        import signal

        for proc in self.procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()


def _grade_timed(tmp: Path, assignment: str, subs: Path, extra: list[str]) -> float:
    ws = Path(tempfile.mkdtemp(prefix="ws-", dir=tmp))
    seconds, _ = run([sys.executable, "-m", "autograder", "grade", assignment, str(subs), "--workspace", str(ws),
                      "--quiet", *extra])
    shutil.rmtree(ws, ignore_errors=True)
    return seconds


def _copies(tmp: Path, assignment: str, n: int) -> Path:
    subs = tmp / f"{assignment}-copies{n}"
    if not subs.exists():
        source = ROOT / "solutions" / assignment / f"{assignment}.ipynb"
        for i in range(n):
            (subs / f"s{i:02d}").mkdir(parents=True)
            shutil.copy(source, subs / f"s{i:02d}" / f"{assignment}.ipynb")
    return subs


def dask_comparison(tmp: Path, workers: int | None = None, sizes=(10, 100), rounds: int = 3) -> dict:
    """The local fork server and a local Dask cluster with the same number of workers, timed in
    turn (local, Dask, local, ...) so that the machine's load changing weighs on both alike."""
    workers = workers or os.cpu_count() or 1
    for n in sizes:
        if not (tmp / f"class{n}").exists():
            make_submissions(tmp / f"class{n}", n)
    cluster = LocalCluster(tmp, workers)
    out: dict[str, Any] = {}      # each way's (fixed, marginal) seconds; the heaviest chapter's seconds
    try:
        ways = {"local": ["--workers", str(workers)], "dask": ["--cluster", str(cluster.file)]}
        for extra in ways.values():
            _grade_timed(tmp, A, tmp / f"class{sizes[0]}", extra)                 # untimed: caches, warm sandboxes
        points: dict[str, list] = {way: [] for way in ways}
        for _ in range(rounds):
            for n in sizes:
                for way, extra in ways.items():
                    points[way].append((n, _grade_timed(tmp, A, tmp / f"class{n}", extra)))
        for way in ways:
            out[way] = fit(medians([points[way]]))
            print(f"  {way:<5} ({workers} workers): " + ", ".join(f"{n}: {t:.2f} s" for n, t in points[way])
                  + f"; fixed {out[way][0]:.2f} s, marginal {out[way][1]:.3f} s per submission", flush=True)
        ratio = out["dask"][1] / out["local"][1] if out["local"][1] > 0 else float("nan")
        print(f"Dask marginal / local marginal on {A}: {ratio:.2f} (target: at most 1.5)", flush=True)
        out["task_overhead"] = cluster.task_overhead()
        print(f"  the scheduler's cost per task (200 empty tasks): {out['task_overhead'] * 1000:.1f} ms", flush=True)
    finally:
        cluster.stop()
    subs = _copies(tmp, HEAVIEST, 6)
    for n in (1, 2):
        cluster = LocalCluster(tmp, n)
        try:
            # untimed: every worker's first sandbox (two tasks each, so that each worker gets some)
            _grade_timed(tmp, HEAVIEST, _copies(tmp, HEAVIEST, 2 * n), ["--cluster", str(cluster.file)])
            seconds = _grade_timed(tmp, HEAVIEST, subs, ["--cluster", str(cluster.file)])
        finally:
            cluster.stop()
        out[f"heaviest{n}"] = seconds
        print(f"  {HEAVIEST}, 6 submissions on {n} Dask worker{'s' if n > 1 else ''}: {seconds:.2f} s "
              f"({6 / seconds:.2f} submissions/s)", flush=True)
    return out


def class_rounds(tmp: Path, sizes: list[int], rounds: int) -> list[tuple[int, float]]:
    """`autograder grade` on every class size, `rounds` times, after one untimed run (after
    the machine has idled, the first run reads torch's libraries from disk: the disk's cost,
    not the grader's); each round's fit printed. The medians: [(n, seconds)]. The last round's
    40-student workspace is kept (`stock_comparison` compares its scores)."""
    grade_class(tmp, sizes[0])
    shutil.rmtree(tmp / f"ours{sizes[0]}")
    all_rounds = []
    for r in range(max(1, rounds)):
        points = []
        for n in sizes:
            seconds, ws, phases = grade_class(tmp, n, phases=(r == 0 and n == sizes[0]))
            points.append((n, seconds))
            if n != 40 or r < rounds - 1:
                shutil.rmtree(ws)
            if phases:
                print(f"    {phases}", flush=True)
        all_rounds.append(points)
        fixed, marginal = fit(points)
        print(f"  round {r + 1}: " + ", ".join(f"{n}: {t:.2f} s" for n, t in points)
              + f"; fixed {fixed:.2f} s, marginal {marginal:.3f} s", flush=True)
    return medians(all_rounds)


def stock_comparison(tmp: Path, ours40: float) -> int:
    """Stock, sequential `nbgrader autograde` on the 40 submissions `class_rounds` graded last:
    its time, the speed-up, and whether both graders give every submission the same score
    (0 when they do)."""
    subs, ws = tmp / "class40", tmp / "stock"
    env = nbgrader_env({"AUTOGRADER_WORKSPACE": str(ws)})
    for student in sorted(os.listdir(subs)):
        target = ws / "submitted" / student / A
        target.mkdir(parents=True)
        shutil.copy(subs / student / f"{A}.ipynb", target / f"{A}.ipynb")
    run([sys.executable, "-m", "nbgrader", "generate_assignment", A, "--force",
         f"--CourseDirectory.release_directory={tmp / 'release'}"], env)   # setup, not timed
    stock, _ = run([sys.executable, "-m", "nbgrader", "autograde", A, "--create"], env)
    print(f"  nbgrader autograde (stock, sequential), 40 submissions: {stock:6.1f} s", flush=True)
    print(f"speed-up on 40: {stock / ours40:.1f}x ({stock / 40:.2f} s vs {ours40 / 40:.3f} s per submission)")

    run([sys.executable, "-m", "nbgrader", "export", "--to", str(tmp / "stock.csv")], env)
    theirs = {r["student_id"]: float(r["score"]) for r in csv.DictReader(open(tmp / "stock.csv"))}
    mine = {r["student"]: float(r["score"]) for r in
            csv.DictReader(open(tmp / "ours40" / "reports" / A / "grades.csv"))}
    same = sum(1 for s in mine if mine[s] == theirs.get(s))
    print(f"scores agree for {same} of {len(mine)} submissions")
    return 0 if same == len(mine) else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.bench", description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help=f"class sizes for the fixed/marginal fit (default: {','.join(map(str, SIZES))})")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every class size (default: 3)")
    parser.add_argument("--no-stock", action="store_true", help="skip stock nbgrader (it takes minutes)")
    parser.add_argument("--chapters", action="store_true",
                        help="only every chapter's marginal cost (its solution graded as 3 and as 9 submissions)")
    parser.add_argument("--dask", action="store_true",
                        help="only the local fork server against a local Dask cluster (and 1 vs 2 Dask workers)")
    parser.add_argument("--startup", action="store_true",
                        help="only what each start-up function (autograder/startup.py) saves")
    args = parser.parse_args(argv)
    parts: dict[str, tuple[str, Callable[[Path], object]]] = {
        "dask": (f"local fork server against a local Dask cluster ({os.cpu_count()} cores)", dask_comparison),
        "chapters": (f"every chapter's marginal cost ({os.cpu_count()} cores; budget {CHAPTER_BUDGET:g} s per "
                     "submission)", chapter_costs),
        "startup": ("what each start-up function saves (autograder/startup.py)", startup_costs)}
    for flag, (title, part) in parts.items():
        if getattr(args, flag):
            tmp = Path(tempfile.mkdtemp(prefix=f"bench-{flag}-"))
            try:
                print(title, flush=True)
                part(tmp)
                return 0
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    sizes = sorted({int(s) for s in args.sizes.split(",")} | {40})
    tmp = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    try:
        print(f"{A}: synthetic classes (right/wrong/half-right), {os.cpu_count()} cores, one run "
              f"of {args.rounds} round{'s' if args.rounds != 1 else ''}", flush=True)
        points = class_rounds(tmp, sizes, args.rounds)
        fixed, marginal = fit(points)
        ours40 = dict(points)[40]
        print("  autograder grade, median of the rounds: " + ", ".join(f"{n}: {t:.2f} s" for n, t in points))
        print(f"fixed cost {fixed:.2f} s; marginal cost {marginal:.3f} s per submission "
              f"(least squares over the medians of {len(points)} class sizes)", flush=True)
        print(f"  import torch alone, as the fork server imports it: "
              f"{statistics.median(torch_import_seconds() for _ in range(3)):.2f} s (median of 3)", flush=True)

        for label, seconds in command_times(tmp).items():
            print(f"  {label}: {seconds:.2f} s (median of 3)", flush=True)
        print("what each start-up function saves (autograder/startup.py):", flush=True)
        startup_costs(tmp)
        print("every chapter's marginal cost (its solution graded as 3 and as 9 submissions):", flush=True)
        chapter_costs(tmp)
        print("the local fork server against a local Dask cluster:", flush=True)
        dask_comparison(tmp)

        return 0 if args.no_stock else stock_comparison(tmp, ours40)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
