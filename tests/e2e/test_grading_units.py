"""The grader's parts that need a process of their own: what a fresh interpreter imports, the fork
server and the sandbox, nbformat's validator as a worker loads it, a probe graded in the sandbox.
Their pure parts (the wire format, notebooks, seeds, reports) are tests/unit/test_grading_units.py."""
from __future__ import annotations

import os

from autograder.grade import student_salt
from autograder.grade.task import Task
from tests.conftest import ROOT, needs_sandbox
from tests.unit.test_grading_units import _similarity


def _modules_imported(code: str) -> set[str]:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                          cwd=str(ROOT))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}


HEAVY = {"torch", "nbformat", "nbgrader", "IPython", "matplotlib", "sqlalchemy", "jsonschema", "rfc3987_syntax"}


def test_the_command_line_imports_no_grading_machinery_to_answer_help():
    """`autograder --help` (and every sub-command's) answers like a command: none of the
    heavy packages is imported to build the parser."""
    loaded = _modules_imported("from autograder.cli import build_parser; build_parser().format_help()")
    assert not (HEAVY | {"numpy"}) & loaded, sorted((HEAVY | {"numpy"}) & loaded)


def test_the_grading_parent_never_imports_torch_nor_builds_uri_grammars(tmp_path):
    """The parent only reads, writes and waits: torch is for the workers (forked from a
    server that imports it once), and nbgrader's API comes without jsonschema's URI grammars."""
    code = ("import sys, autograder.grade.run, autograder.store.gradebook, autograder.report.feedback; "
            # what the parent's gradebook thread does: open (here create) the gradebook
            f"opened = autograder.store.gradebook.open_gradebook('sqlite:///{tmp_path}/gradebook.db'); "
            "opened.__enter__(); opened.__exit__(None, None, None); "
            "assert sys.modules['rfc3987_syntax'] is None, 'URI grammars built'; "
            # what the parent does with notebooks in a run: the source, each graded notebook
            "from autograder.notebook import load_source; from autograder.grade.run import _autograded; "
            "path = 'solutions/02_similarity/02_similarity.ipynb'; source = load_source(path); "
            "result = {'notebook': '02_similarity.ipynb', 'flags': [], 'tests': [{'grade_id': t.grade_id, "
            "'passed': False, 'message': 'no'} for t in source.tests]}; "
            "assert _autograded(source, result, open(path, 'rb').read())")
    loaded = _modules_imported(code)
    assert not {"torch", "numpy", "matplotlib", "IPython"} & loaded, \
        sorted({"torch", "numpy", "matplotlib", "IPython"} & loaded)
    assert "nbgrader.api" in loaded
    # nbgrader's package __init__ (its Jupyter server extensions) and nbconvert are not
    # needed to write a gradebook (startup.defer_nbgrader_init)
    unneeded = {"nbconvert", "nbgrader.server_extensions", "nbgrader.apps", "nbgrader.exchange"}
    assert not unneeded & loaded, sorted(unneeded & loaded)


def test_importing_the_grader_changes_no_other_package_until_startup_is_called():
    """The start-up tricks (startup.py) happen when the code that needs them calls them,
    never as a side effect of an import: after importing the gradebook, the notebook reader,
    the worker and release, nbgrader is not imported (nor registered in its place), no
    package is marked absent, nbformat has no validator; nbgrader imported then is its own,
    `get_alembic_version` included, until `startup.fast_nbgrader()` replaces that."""
    code = ("import sys; import autograder.store.gradebook, autograder.notebook, autograder.grade.worker, "
            "autograder.release, autograder.term.deadlines, autograder.grade.run; "
            "assert not [m for m in sys.modules if m.split('.')[0] in ('nbgrader', 'nbformat')], "
            "sorted(m for m in sys.modules if m.split('.')[0] in ('nbgrader', 'nbformat')); "
            "assert not [m for m, v in sys.modules.items() if v is None], [m for m, v in sys.modules.items() if v is None]; "
            "import nbgrader.api, nbgrader; "
            "assert nbgrader.api.get_alembic_version.__module__ == 'nbgrader.api', 'replaced at import'; "
            "assert nbgrader.__spec__.loader is not None and '__version__' in vars(nbgrader), 'a stand-in package'; "
            "own = nbgrader.api.get_alembic_version; "
            "from autograder import startup; assert startup.fast_nbgrader() is nbgrader.api; "
            "assert nbgrader.api.get_alembic_version is startup.alembic_head; "
            "assert startup.NBGRADERS_OWN['get_alembic_version'] is own")
    _modules_imported(code)


def test_reading_a_timestamp_needs_no_nbgrader_package_init():
    """nbgrader's `submitted/` folders hold a timestamp.txt per student, read with nbgrader's
    own parser (`nbgrader.utils`) by the grading parent: without nbgrader's package `__init__`
    (its server extensions, nbconvert), and with nbgrader's answer."""
    code = ("import sys; from datetime import datetime, timezone; "
            "from autograder.term.deadlines import parse_timestamp; "
            "got = parse_timestamp('2025-03-14 22:59:00.000000 UTC'); "
            "assert got == datetime(2025, 3, 14, 22, 59, tzinfo=timezone.utc), got; "
            "assert 'nbgrader.server_extensions' not in sys.modules and 'nbconvert' not in sys.modules")
    _modules_imported(code)


def test_nbgraders_package_is_whole_when_a_name_of_its_own_is_asked_for():
    """The deferred package runs its real __init__ the first time a name it defines is read;
    submodules and the stock plug-ins import as usual."""
    code = ("import importlib.metadata, sys; from autograder import startup; startup.fast_nbgrader(); "
            "import nbgrader; assert 'nbgrader.server_extensions' not in sys.modules; "
            "assert nbgrader.__version__ == importlib.metadata.version('nbgrader'); "
            "assert nbgrader._jupyter_server_extension_points() == [{'module': 'nbgrader'}]; "
            "assert 'nbgrader.server_extensions.formgrader' in sys.modules; "
            "from nbgrader.apps import NbGraderAPI; "
            "from autograder.nbgrader_plugins import StderrToStdout, autograde_preprocessors; "
            "assert StderrToStdout in autograde_preprocessors(); "
            "from traitlets.utils.importstring import import_item; "
            "assert import_item('autograder.nbgrader_plugins.StderrToStdout') is StderrToStdout")
    _modules_imported(code)


def test_nbformat_comes_without_the_packages_of_jsonschemas_format_checkers():
    """A grading worker (and a student's check) parses notebooks with nbformat, which validates
    with jsonschema, whose format checkers import idna, isoduration and others when installed
    (0.2 s; nbformat checks no format). They stay importable for whoever needs them."""
    code = ("import sys, autograder.grade.worker; "
            "from autograder.startup import fast_nbformat; fast_nbformat(); "
            "assert 'jsonschema' in sys.modules and 'nbformat.validator' in sys.modules; "
            "assert not {'idna', 'isoduration', 'webcolors', 'jsonpointer'} & set(sys.modules), "
            "{'idna', 'isoduration', 'webcolors', 'jsonpointer'} & set(sys.modules); "
            "import idna, isoduration")
    _modules_imported(code)


_VALIDATOR_CHECK = r"""
import copy, glob, json, sys
from pathlib import Path
import fastjsonschema
from autograder import startup as notebook
from autograder.startup import ready_validator
folder = Path(sys.argv[1])
notebook._VALIDATOR["folder"] = folder
import nbformat
from nbformat import validator as nbvalidator
slot = ("fastjsonschema", 4, nbformat.v4.nbformat_minor, False)

def verdicts(validator, notebooks):
    return [[str(e) for e in validator.iter_errors(nb)] for nb in notebooks]

# nbformat's own validator, compiled by nbformat: the reference
assert ready_validator() == "compiled"
reference = nbvalidator.validators[slot]
good = [json.loads(Path(p).read_text()) for p in sorted(glob.glob("solutions/*/*.ipynb") + glob.glob("exercises/*/*.ipynb"))]
assert good
base = good[0]
def broken(edit):
    nb = copy.deepcopy(base); edit(nb); return nb
code = next(i for i, c in enumerate(base["cells"]) if c["cell_type"] == "code")
bad = [broken(lambda nb: nb["cells"][0].update(cell_type="bogus")),
       broken(lambda nb: nb["cells"][code].pop("outputs")),
       broken(lambda nb: nb["cells"][code].update(source=7)),
       broken(lambda nb: nb["cells"][code].update(execution_count="x")),
       broken(lambda nb: nb["cells"][code].update(outputs=[{"output_type": "nonsense"}])),
       broken(lambda nb: nb["cells"][0].update(id="a b")),
       broken(lambda nb: nb["cells"][0].update(metadata=[])),
       broken(lambda nb: nb.update(extra=1)),
       broken(lambda nb: nb.pop("metadata"))]
expected = verdicts(reference, good + bad)
assert not any(expected[:len(good)]) and all(expected[len(good):]), expected

# a stale or damaged file is never used, nor code that defines no validator
import marshal
header = notebook._validator_key(reference._schema).encode() + b"\n"
for blob in (b"garbage", b"0" * 64 + b"\n" + b"garbage", header + b"garbage",
             header + marshal.dumps(compile("x = 1", "<x>", "exec"))):
    del nbvalidator.validators[slot]
    folder.mkdir(exist_ok=True)
    for old in folder.glob("*.bin"): old.unlink()
    (folder / f"nbformat-v4.{slot[2]}-validator.{notebook._validator_key(reference._schema)[:32]}.bin").write_bytes(blob)
    assert ready_validator() == "compiled"
    assert verdicts(nbvalidator.validators[slot], good + bad) == expected
for old in folder.glob("*.bin"): old.unlink()
del nbvalidator.validators[slot]
assert ready_validator(write=True) == "written"
assert len(list(folder.glob("*.bin"))) == 1

# from the stored code: nothing generated, nothing compiled, the same verdicts
def refuse(*a, **k): raise AssertionError("the validator was generated again")
fastjsonschema.compile = fastjsonschema.compile_to_code = refuse
del nbvalidator.validators[slot]
assert ready_validator() == "cached"
assert nbvalidator.validators[slot] is not reference
assert verdicts(nbvalidator.validators[slot], good + bad) == expected
for nb, errors in zip(good + bad, expected):
    try:
        nbformat.validate(nbformat.from_dict(nb))
    except nbformat.ValidationError:
        assert errors
    else:
        assert not errors
print("ok")
"""


def test_nbformats_validator_comes_stored_and_judges_as_nbformats_own(tmp_path):
    """`make bytecode` stores the code fastjsonschema generates from nbformat's schema; a
    process that reads notebooks loads it instead of generating and compiling it (75-80 ms).
    It must judge every notebook as the validator nbformat compiles itself: the course's
    notebooks valid, nine broken ones invalid with the same messages. A damaged or stale
    file is never used, nor code that defines no validator; and the package's own file is
    current (this process's parse found it)."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _VALIDATOR_CHECK, str(tmp_path / "cache")], capture_output=True,
                          text=True, cwd=str(ROOT), timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
    mine = subprocess.run([sys.executable, "-c", "from autograder.startup import ready_validator; "
                           "print(ready_validator())"], capture_output=True, text=True, timeout=60)
    assert mine.stdout.strip() == "cached", (mine.stdout, mine.stderr[-2000:], "run `make bytecode`")


def test_a_mistake_in_the_command_stops_the_fork_server_it_started_early(tmp_path):
    """`autograder grade` starts the fork server before it checks its command line (the
    server's imports are most of a run's fixed cost). A mistake found then is one clear line,
    and the server is stopped with the command, not left importing torch."""
    import subprocess
    import sys

    mark = "fork-server-" + os.urandom(6).hex()         # the fork server keeps AUTOGRADER_* names
    root = str(ROOT)
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", "02_similarity", str(tmp_path / "absent"),
                           "--workspace", str(tmp_path / "ws")],
                          cwd=root, env=dict(os.environ, AUTOGRADER_TEST_MARK=mark),
                          stdout=subprocess.DEVNULL, stderr=open(tmp_path / "err", "w"), timeout=60)
    assert proc.returncode == 2
    err = (tmp_path / "err").read_text()
    assert err.startswith("autograder: error:") and len(err.strip().splitlines()) == 1, err
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if f"AUTOGRADER_TEST_MARK={mark}".encode() in open(f"/proc/{pid}/environ", "rb").read() \
                    and b"forkserver" in open(f"/proc/{pid}/cmdline", "rb").read():
                left.append(pid)
        except OSError:
            continue
    assert not left, f"the finished command's fork server still runs: {left}"


def test_a_worker_lost_with_a_submission_sent_ahead_costs_only_the_one_it_was_grading():
    """A worker is sent its next submission while it grades one (`_Worker.give_ahead`). When
    it dies, the submission it was grading is flagged; the one waiting in its pipe was never
    started, and another worker grades it like any other."""
    import signal

    from tests.conftest import SANDBOX

    from autograder.grade.pool_local import LocalPool as _Pool
    from autograder.notebook import load_source, source_imports
    from autograder.sandbox.host import Limits

    root = str(ROOT)
    path = os.path.join(root, "solutions", "02_similarity", "02_similarity.ipynb")
    source, data = load_source(path), open(path, "rb").read()        # the solution: full marks
    tasks = [Task(f"s{i}", "02_similarity", data, "02_similarity.ipynb", None, student_salt("k", "02_similarity", f"s{i}"))
             for i in range(6)]
    pool = _Pool(1, path, Limits(wall_seconds=20), unsafe=not SANDBOX, warm=source_imports(path))
    results, killed = [], []

    def on_result(result):
        results.append(result)
        for w in pool.workers:
            if not killed and w.queued is not None:
                killed.append({w.task[0], w.queued[0]})
                os.kill(w.proc.pid, signal.SIGKILL)

    try:
        pool.run(tasks, on_result)
    finally:
        pool.close()
    assert killed, "no submission was ever sent ahead"
    by_student = {r["student"]: r for r in results}
    assert sorted(by_student) == [t[0] for t in tasks] and len(results) == len(tasks)
    lost = [s for s, r in by_student.items() if "abandoned" in r]
    assert len(lost) == 1 and lost[0] in killed[0], (lost, killed)
    assert by_student[lost[0]]["abandoned"]["code"] == "internal"
    for student, result in by_student.items():
        if student not in lost:
            assert result["score"] == source.max_score and not result["flags"], (student, result)


def test_the_fork_servers_imports_run_with_the_cycle_collector_paused_then_frozen():
    """Importing torch ran Python's cycle collector hundreds of times (0.3-0.5 s of the fork
    server's start). The fork server imports the grading code and the assignment's modules
    with it paused, freezes them, and leaves it enabled for the workers it forks."""
    code = ("import gc, os, sys; os.environ['AUTOGRADER_PRELOAD'] = 'numpy,no_such_module_here,torch'; "
            "from autograder.sandbox.server import collector_paused; "
            "exec('with collector_paused():\\n    inside = gc.isenabled()'); "
            "assert inside is False and gc.isenabled(), 'paused inside, enabled after'; "
            "gc.disable(); exec('with collector_paused():\\n    pass'); "
            "assert not gc.isenabled(), 'a collector that was off stays off'; gc.enable(); "
            "runs = lambda: sum(g['collections'] for g in gc.get_stats()); before, frozen = runs(), gc.get_freeze_count(); "
            "import autograder.grade.preload; "
            "assert {'torch', 'autograder.grade.worker'} <= set(sys.modules); "
            "assert gc.isenabled() and runs() == before, ('collections while importing', runs() - before); "
            "assert gc.get_freeze_count() > frozen + 100000, gc.get_freeze_count(); "
            # the shell a submission's cells run in, built once here for every worker's template
            "from IPython.core.interactiveshell import InteractiveShell; "
            "assert InteractiveShell.initialized() and 'numpy.random' in sys.modules")
    _modules_imported(code)


def test_a_sandboxed_command_joins_its_cgroups_before_it_starts(tmp_path):
    """`Cgroup.command` (sandbox/cgroups.py): the command's own process is in every cgroup folder before its first
    instruction (it inherits that into everything it starts); a folder it may not join is
    skipped quietly; the command's arguments arrive unchanged, "--" and spaces included."""
    import subprocess

    from autograder.sandbox.cgroups import Cgroup as _Cgroup

    folders = [tmp_path / "memory", tmp_path / "pids", tmp_path / "gone"]
    for folder in folders[:2]:
        folder.mkdir()
        (folder / "cgroup.procs").write_text("")
    cgroup = _Cgroup.__new__(_Cgroup)
    cgroup.dirs = [str(f) for f in folders]
    cmd = ["/bin/sh", "-c", 'echo "$$|$1|$2|$#"', "sh", "a b", "--"]
    out = subprocess.run(cgroup.command(cmd), capture_output=True, text=True, check=True)
    pid, first, second, count = out.stdout.strip().split("|")
    assert (first, second, count) == ("a b", "--", "2")
    assert out.stderr == ""
    for folder in folders[:2]:
        assert (folder / "cgroup.procs").read_text().split() == [pid]
    cgroup.dirs = []
    assert cgroup.command(cmd) == cmd


def test_a_worker_compiles_every_cell_grading_runs_before_its_first_submission():
    """`compile_tests` (run by a worker while its sandbox's zygote starts) leaves nothing for
    grading to compile: neither for a submission that passes everything nor for one that
    fails everything (whose visible tests run again, for the hard-coding check)."""
    from tests.conftest import SANDBOX

    from autograder.grade.submission import compile_tests, grade_submission
    from autograder.sandbox.host import Limits, Sandbox
    from autograder.grade.testcells import compile_cell

    path, source, root = _similarity()
    blank = open(os.path.join(root, "exercises", "02_similarity", "02_similarity.ipynb"), "rb").read()
    compile_cell.cache_clear()
    compile_tests(source)
    compiled = compile_cell.cache_info().misses
    assert compiled >= 2 * len(source.tests)
    box = Sandbox(limits=Limits(wall_seconds=30), unsafe=not SANDBOX, warm=("numpy", "torch"))
    try:
        box.start()
        for data, expected in ((open(path, "rb").read(), source.max_score), (blank, 0.0)):
            result = grade_submission(source, "s", "02_similarity", data, "02_similarity.ipynb", box,
                                      student_salt("k", "02_similarity", "s"))
            assert result["score"] == expected, result
            assert compile_cell.cache_info().misses == compiled, "grading compiled a cell again"
    finally:
        box.close()


@needs_sandbox
def test_a_write_into_an_array_inside_an_argument_is_caught(tmp_path):
    """Issue 27, item 4: an encoder_block that answers right, then writes into params["W_q"]
    (an array inside a dict argument) is flagged and loses the points of every test that
    calls it; only top-level array arguments were compared before."""
    import nbformat

    from autograder.grade.testcells import AFTER_HIDDEN
    from tests.conftest import read_results, run_grade, source_path

    chapter = "10_transformer_block"
    nb = nbformat.read(str(source_path(chapter)), as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "encoder_block")
    cell.source = cell.source.replace("def encoder_block(", "def _encoder_block(", 1) + '''

def encoder_block(x, params, num_heads, norm_first=False, mask=None):
    y = _encoder_block(x, params, num_heads, norm_first, mask)
    params["W_q"] *= 2.0          # folds something into the caller's weights, after answering
    return y
'''
    for name, notebook in {"writer": nb, "honest": nbformat.read(str(source_path(chapter)), as_version=4)}.items():
        (tmp_path / "subs" / name).mkdir(parents=True)
        nbformat.write(notebook, str(tmp_path / "subs" / name / f"{chapter}.ipynb"))
    run_grade(chapter, tmp_path / "subs", tmp_path / "ws")
    results = read_results(tmp_path / "ws", chapter)
    assert results["honest"]["score"] == results["honest"]["max_score"] and not results["honest"]["flags"]
    writer = results["writer"]
    assert any(f["code"] == "inputs-modified" for f in writer["flags"]), writer["flags"]
    failed = [t for t in writer["tests"] if not t["passed"]]
    # the encoder's tests run after hidden inputs (issue 37): their feedback and the flag say no more
    # than that they failed, on the student's page; the instructor's flag names the write
    assert failed and all(t["message"] == AFTER_HIDDEN for t in failed if "encoder" in t["grade_id"])
    assert [f["after_hidden"] for f in writer["flags"] if f["code"] == "inputs-modified"] == [True]
    assert writer["score"] < writer["max_score"]


@needs_sandbox
def test_a_probe_swapped_by_the_notebook_measures_nothing_of_it(tmp_path):
    """Issue 27, item 1: a full-attention chunked_attention whose notebook swaps the
    peak-memory probe (PROBES.update) for one that reports no memory scored full marks. The
    probe now runs as it was before the notebook's code, and the change is flagged and costs
    every test that measures through a probe."""
    import nbformat

    from tests.conftest import read_results, run_grade, source_path

    chapter = "12_long_sequences"
    nb = nbformat.read(str(source_path(chapter)), as_version=4)
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "chunked_attention")
    cell.source = '''
def chunked_attention(Q, K, V, chunk_size):
    if int(chunk_size) < 1:
        raise ValueError("chunk_size must be at least 1")
    Q, K, V = (np.asarray(a) for a in (Q, K, V))
    Q = Q.astype(np.result_type(Q, np.float32)); K = K.astype(Q.dtype); V = V.astype(Q.dtype)
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])      # every score at once
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return (w / w.sum(axis=-1, keepdims=True)) @ V

import autograder.probes as _P
_real = _P.PROBES["peak_memory"]
def _no_memory(fn, *args, **kwargs):
    out = _real(fn, *args, **kwargs)
    out["peak_bytes"] = 0
    return out
_P.PROBES.update(peak_memory=_no_memory)
'''
    (tmp_path / "subs" / "swapper").mkdir(parents=True)
    nbformat.write(nb, str(tmp_path / "subs" / "swapper" / f"{chapter}.ipynb"))
    run_grade(chapter, tmp_path / "subs", tmp_path / "ws")
    result = read_results(tmp_path / "ws", chapter)["swapper"]
    assert any(f["code"] == "probes-changed" for f in result["flags"]), result["flags"]
    memory = next(t for t in result["tests"] if t["grade_id"] == "test_chunked_memory")
    assert not memory["passed"] and memory["points"] == 0
    assert result["score"] < result["max_score"]


@needs_sandbox
def test_a_course_written_cell_never_costs_the_student(tmp_path):
    """Issue 27: a student must never lose points or get a flag because of a cell the course
    wrote. Chapter 12's closing demonstration (a course cell without nbgrader metadata) times
    chunked_attention on (1024, 64) inputs; here that call raises. Left as the course wrote it,
    the cell is not run: full marks, no flag. Edited, it is the student's code: it runs, and its
    error flags it. (The call once looped for ever under `--timeout 5`: on a loaded machine the
    honest cells then met that 1.25 s limit too; an error shows the cell ran without a clock.)"""
    import nbformat

    from tests.conftest import read_results, run_grade, source_path

    chapter = "12_long_sequences"
    for name, edit_demo in {"untouched_demo": False, "edited_demo": True}.items():
        nb = nbformat.read(str(source_path(chapter)), as_version=4)
        cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "chunked_attention")
        cell.source = cell.source.replace("def chunked_attention(", "def _chunked_attention(", 1) + '''

def chunked_attention(Q, K, V, chunk_size):
    if np.shape(Q) == (1024, 64):       # the course's demonstration
        raise RuntimeError("the demonstration ran")
    return _chunked_attention(Q, K, V, chunk_size)
'''
        demo = next(c for c in nb.cells if c.cell_type == "code" and "tracemalloc.start()" in c.source
                    and not c.metadata.get("nbgrader"))
        if edit_demo:
            demo.source += "\nprint('my own line')\n"
        (tmp_path / "subs" / name).mkdir(parents=True)
        nbformat.write(nb, str(tmp_path / "subs" / name / f"{chapter}.ipynb"))
    run_grade(chapter, tmp_path / "subs", tmp_path / "ws")
    results = read_results(tmp_path / "ws", chapter)
    untouched, edited = results["untouched_demo"], results["edited_demo"]
    assert untouched["score"] == untouched["max_score"] and untouched["flags"] == [], untouched["flags"]
    assert any(f["code"] == "cell-error" and "RuntimeError" in f["message"] for f in edited["flags"]), edited["flags"]
