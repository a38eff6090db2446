"""The hardened grader's pieces, one at a time: the wire format never trusts the other side,
notebooks are parsed in bounded time, inputs are seeded per student, flags are data, the
report indexes tests by grade_id, and student ids from LMS exports are kept."""
from __future__ import annotations

import collections
import os
import socket
import threading
import time

import numpy as np
import pytest

from autograder.jsontext import json_nesting
from autograder.sandbox import protocol
from autograder.report.feedback import instructor_report, student_feedback
from autograder.flags import exception_name, flag
from autograder.grade import student_salt
from autograder.grade.task import Task
from autograder.notebook import NotebookError, parse_notebook, read_regular_file, strip_hidden
from autograder.lms.submissions import collect, workspace_name
from tests.conftest import needs_sandbox


# ------------------------------------------------------------------ the wire format
def roundtrip(value):
    encoded, blobs = protocol.encode(value)
    return protocol.decode(encoded, blobs)


def test_tuple_subclasses_and_numpy_scalars_arrive_as_the_kernel_sees_them():
    Pair = collections.namedtuple("Pair", "out weights")
    got = roundtrip(Pair(np.ones(2), np.zeros((2, 2))))
    assert type(got) is tuple and len(got) == 2 and np.array_equal(got[0], np.ones(2))
    scalar = roundtrip(np.float32(1.5))
    assert type(scalar) is np.float32 and scalar == 1.5
    view = np.arange(12.0).reshape(3, 4).T[::2]           # non-contiguous
    view.setflags(write=False)
    assert np.array_equal(roundtrip(view), view)
    assert roundtrip(collections.OrderedDict(a=1)) == {"a": 1}


def test_lone_surrogates_are_replaced_not_fatal():
    text = roundtrip("bad " + chr(0xD800))
    assert text.encode("utf-8") == b"bad ?"


def test_a_trickling_reply_meets_its_absolute_deadline():
    ours, theirs = socket.socketpair()

    def trickle():
        try:
            theirs.sendall((1000).to_bytes(8, "big"))
            for _ in range(100):
                theirs.sendall(b" ")
                time.sleep(0.05)
        except OSError:
            pass

    threading.Thread(target=trickle, daemon=True).start()
    started = time.monotonic()
    with pytest.raises(socket.timeout):
        protocol.recv(ours, deadline=time.monotonic() + 1.0)
    assert time.monotonic() - started < 2.0
    ours.close()
    theirs.close()


@pytest.mark.parametrize("header", [b"[" * 200_000 + b"]" * 200_000, b"1" * 5000, b'{"blobs": 1e999999}'])
def test_hostile_headers_are_protocol_errors(header):
    ours, theirs = socket.socketpair()
    body = len(header).to_bytes(4, "big") + header
    # a writer of its own: a header larger than the socket's buffer blocks until it is read
    threading.Thread(target=lambda: theirs.sendall(len(body).to_bytes(8, "big") + body), daemon=True).start()
    with pytest.raises(protocol.ProtocolError):
        protocol.recv(ours, deadline=time.monotonic() + 5)
    ours.close()
    theirs.close()


def test_json_nesting_is_measured_outside_strings():
    assert json_nesting(b'{"a": ["[[[\\"", {}]}') == 3
    assert json_nesting(b"[" * 100_000 + b"]" * 100_000) == 100_000


# ------------------------------------------------------------------ notebooks
@pytest.mark.parametrize("raw, words", [
    (b"[" * 100_000 + b"]" * 100_000, "nests more than"),
    (b'{"cells": [], "x": ' + b"9" * 5000 + b"}", "invalid JSON"),
    (b"\xff\xfe", "not UTF-8"),
    (b'{"cells": 3}', "no list of cells"),
])
def test_broken_notebooks_are_one_clear_line(raw, words):
    started = time.monotonic()
    with pytest.raises(NotebookError, match=words):
        parse_notebook(raw, "nb.ipynb")
    assert time.monotonic() - started < 2


def test_only_regular_files_are_read(tmp_path):
    os.mkfifo(tmp_path / "fifo.ipynb")
    (tmp_path / "real.ipynb").write_text("{}")
    (tmp_path / "link.ipynb").symlink_to(tmp_path / "real.ipynb")
    for name in ("fifo.ipynb", "link.ipynb"):
        with pytest.raises(NotebookError):
            read_regular_file(tmp_path / name)          # never blocks, never follows
    assert read_regular_file(tmp_path / "real.ipynb") == b"{}"


def test_stripping_hidden_regions_is_linear():
    hostile = "### BEGIN HIDDEN TESTS\n" * 50_000 + "x = 1\n"
    started = time.monotonic()
    assert strip_hidden(hostile) == ""
    assert strip_hidden("a\n### BEGIN HIDDEN TESTS\nb\n### END HIDDEN TESTS\nc\n") == "a\nc\n"
    assert time.monotonic() - started < 1


# ------------------------------------------------------------------ ids, seeds, flags
def test_inputs_are_seeded_per_student_and_reproducibly():
    a, b = student_salt("s3cret", "02_similarity", "alice"), student_salt("s3cret", "02_similarity", "bob")
    assert a != b and a == student_salt("s3cret", "02_similarity", "alice")
    assert a != student_salt("s3cret", "03_self_attention_basics", "alice")


def test_lms_folder_names_are_student_ids(tmp_path):
    for name in ("Doe, Jane_123_assignsubmission_file_", "bad\x01name", "plain"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "nb.ipynb").write_text("{}")
    subs = {s.student: s for s in collect(tmp_path, "02_similarity")}
    assert set(subs) == {"Doe, Jane_123_assignsubmission_file_", "bad?name", "plain"}
    assert subs["plain"].slug == "plain" and subs["Doe, Jane_123_assignsubmission_file_"].slug.startswith("Doe, Jane")
    assert "\x01" not in workspace_name("bad\x01name") and workspace_name("bad\x01name") != workspace_name("bad\x02name")


def test_a_students_own_exception_class_never_names_a_flag():
    assert exception_name("ValueError: x") == "ValueError"
    assert exception_name("LEAK_3x7: x").startswith("an exception")


def _result(student, order, flags=()):
    tests = {"t1": {"grade_id": "t1", "description": "one", "points": 1.0, "max_points": 1.0, "passed": True,
                    "message": "", "hidden": False},
             "t2": {"grade_id": "t2", "description": "two", "points": 0.0, "max_points": 2.0, "passed": False,
                    "message": "wrong axis", "hidden": True}}
    return {"student": student, "assignment": "A", "score": 1.0, "max_score": 3.0,
            "tests": [tests[g] for g in order], "flags": [f.to_dict() for f in flags]}


def test_the_report_counts_tests_by_grade_id_and_feedback_hides_instructor_flags():
    results = [_result("a", ["t1", "t2"]), _result("b", ["t2", "t1"], [flag("review", detail="opens files"),
                                                                      flag("no-notebook")])]
    report = instructor_report("A", results)
    assert report.count("<td>2 / 2</td>") == 1 and "opens files" in report     # t1 passed twice
    page = student_feedback(results[1])
    assert "no notebook" in page and "opens files" not in page


def test_a_failed_check_shows_the_student_its_message_not_the_checkers_traceback(capsys):
    """In the student's notebook (IPython), a failing test cell prints the message that names
    the bug, with no traceback through autograder/testing.py."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_cell("from autograder.testing import expect_array\nimport numpy as np\n"
                   "expect_array(np.zeros(3), np.ones(3), name='weights', like={'softmax over axis 0': np.zeros(3)})")
    shown = capsys.readouterr().out
    assert "softmax over axis 0" in shown
    assert "testing.py" not in shown and "Traceback" not in shown and "expect_array(" not in shown
    shell.run_cell("def f():\n    raise ValueError('my own bug')\nf()")
    assert "Traceback" in capsys.readouterr().out     # the student's own errors keep theirs


@pytest.mark.parametrize("max_score, scores", [(11.0, [0, 0.5, 3, 5.5, 11, 11, 10.99]), (2.5, [0, 1.25, 2.5, 2.4]),
                                               (40.0, [0, 1.9, 2.0, 39.99, 40, 17.3]), (0.0, [0.0, 0.0])])
def test_the_reports_histogram_bins_scores_as_numpy_does(max_score, scores):
    from autograder.report.feedback import _histogram_svg, histogram_counts

    counts, width = histogram_counts(scores, max_score)
    reference, edges = np.histogram(scores, bins=len(counts), range=(0, max_score or 1))
    assert counts == reference.tolist() and width == pytest.approx(edges[1] - edges[0])
    svg = _histogram_svg(scores, max_score)
    assert svg.count("<rect") == len(counts) and "score histogram" in svg


def _modules_imported(code: str) -> set[str]:
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}


HEAVY = {"torch", "nbformat", "nbgrader", "IPython", "matplotlib", "sqlalchemy", "jsonschema", "rfc3987_syntax"}


def test_the_command_line_imports_no_grading_machinery_to_answer_help():
    """`autograder --help` (and every sub-command's) answers like a command: none of the
    heavy packages is imported to build the parser."""
    loaded = _modules_imported("from autograder.cli import build_parser; build_parser().format_help()")
    assert not (HEAVY | {"numpy"}) & loaded, sorted((HEAVY | {"numpy"}) & loaded)


def test_the_grading_parent_never_imports_torch_nor_builds_uri_grammars():
    """The parent only reads, writes and waits: torch is for the workers (forked from a
    server that imports it once), and nbgrader's API comes without jsonschema's URI grammars."""
    code = ("import sys, autograder.grade.run, autograder.store.gradebook, autograder.report.feedback; "
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
    # needed to write a gradebook (gradebook._nbgrader_package_deferred)
    unneeded = {"nbconvert", "nbgrader.server_extensions", "nbgrader.apps", "nbgrader.exchange"}
    assert not unneeded & loaded, sorted(unneeded & loaded)


def test_nbgraders_package_is_whole_when_a_name_of_its_own_is_asked_for():
    """The deferred package runs its real __init__ the first time a name it defines is read;
    submodules and the stock plug-ins import as usual."""
    code = ("import importlib.metadata, sys, autograder.store.gradebook, nbgrader; "
            "assert 'nbgrader.server_extensions' not in sys.modules; "
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
            "from autograder.notebook import import_nbformat; import_nbformat(); "
            "assert 'jsonschema' in sys.modules and 'nbformat.validator' in sys.modules; "
            "assert not {'idna', 'isoduration', 'webcolors', 'jsonpointer'} & set(sys.modules), "
            "{'idna', 'isoduration', 'webcolors', 'jsonpointer'} & set(sys.modules); "
            "import idna, isoduration")
    _modules_imported(code)


_VALIDATOR_CHECK = r"""
import copy, glob, json, sys
from pathlib import Path
import fastjsonschema
from autograder import notebook
from autograder.notebook import ready_validator
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
                          text=True, cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))), timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]
    mine = subprocess.run([sys.executable, "-c", "from autograder.notebook import ready_validator; "
                           "print(ready_validator())"], capture_output=True, text=True, timeout=60)
    assert mine.stdout.strip() == "cached", (mine.stdout, mine.stderr[-2000:], "run `make bytecode`")


def test_the_autograded_notebook_is_valid_and_holds_the_instructors_tests():
    """Written as plain JSON for a version 4 notebook: nbformat must read and validate it, with
    every test cell's instructor source and a failed test's message as its error output."""
    import nbformat

    from autograder.grade.run import _autograded
    from autograder.notebook import load_source

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    source = load_source(os.path.join(root, "solutions", "02_similarity", "02_similarity.ipynb"))
    data = open(os.path.join(root, "exercises", "02_similarity", "02_similarity.ipynb"), "rb").read()
    failed = source.tests[1].grade_id
    result = {"notebook": "02_similarity.ipynb", "flags": [],
              "tests": [{"grade_id": t.grade_id, "passed": t.grade_id != failed, "message": "look at the axis"}
                        for t in source.tests]}
    nb = nbformat.reads(_autograded(source, result, data), as_version=4)
    nbformat.validate(nb)
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells}
    for test in source.tests:
        assert cells[test.grade_id].source == test.source
    assert [o.evalue for o in cells[failed].outputs] == ["look at the axis"]
    assert all(c.execution_count is None for c in nb.cells if c.cell_type == "code")
    assert _autograded(source, dict(result, flags=[{"code": "corrupt"}]), data) is None


def test_the_fork_server_keeps_no_secret_of_the_environment():
    """The sandboxes' zygotes descend from the fork server (sandbox/template.py): it keeps
    where things are and how to format them, and drops everything else."""
    from autograder.grade.forkserver import fork_server_env

    given = {"PATH": "/usr/bin", "HOME": "/home/t", "LC_ALL": "C.UTF-8", "OMP_NUM_THREADS": "1",
             "JUPYTER_CONFIG_PATH": "/c", "PGPASSWORD": "pw", "AWS_SECRET_ACCESS_KEY": "k",
             "JUPYTER_TOKEN": "tok", "GITHUB_TOKEN": "gh", "DATABASE_URL": "postgresql://u:pw@h/db"}
    env = fork_server_env(given)
    for kept in ("PATH", "HOME", "LC_ALL", "OMP_NUM_THREADS", "JUPYTER_CONFIG_PATH"):
        assert env[kept] == given[kept]
    assert not {"PGPASSWORD", "AWS_SECRET_ACCESS_KEY", "JUPYTER_TOKEN", "GITHUB_TOKEN", "DATABASE_URL"} & set(env)
    assert env["PYTHONMALLOC"] == "malloc"           # Python's objects in huge pages: cheap forks


def test_a_mistake_in_the_command_stops_the_fork_server_it_started_early(tmp_path):
    """`autograder grade` starts the fork server before it checks its command line (the
    server's imports are most of a run's fixed cost). A mistake found then is one clear line,
    and the server is stopped with the command, not left importing torch."""
    import subprocess
    import sys

    mark = "fork-server-" + os.urandom(6).hex()         # the fork server keeps AUTOGRADER_* names
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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


PLAIN_CELLS = ["\n\nx = 1\ny = 2", "x = 1\ny = 2", "def f():\n    return 1\n", "s = 'a'\r\nb = 2\r\n",
               "x = [1,\n     2]\n", "class A:\n    '''doc'''\n    pass\n"]
IPYTHON_CELLS = ["%time x = 1\ny = 2", "!ls\nx = 1", "x?\ny = 1", "%%time\nx = 1", ">>> x = 1\n>>> y = 2",
                 "    x = 1\n    y = 2", "pwd", "x = 1", "/f 1\nx = 2", "a = %time 1\nb = 2", "x != y\nz = 1",
                 "In [1]: x = 1\nIn [2]: y = 2", "...\nx = 1", "x = 1\n   ...: y = 2", "\n\n", ""]


def test_plain_python_cells_skip_ipythons_transforms_with_the_same_result():
    """A submission's cells run in IPython; one that none of IPython's input transforms would
    change is not tokenized for them (`child.plain_python`): what runs is exactly what
    IPython's own transform gives. Every code cell of the course's notebooks is checked,
    and cells with IPython syntax take IPython's path."""
    import glob
    import json

    from IPython.core.interactiveshell import InteractiveShell

    from autograder.sandbox.child import _shell, plain_python

    shell = _shell()
    ipython = InteractiveShell.transform_cell.__get__(shell)          # the unwrapped method
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cells = [cell for path in sorted(glob.glob(os.path.join(root, "solutions", "*", "*.ipynb"))
                                     + glob.glob(os.path.join(root, "exercises", "*", "*.ipynb")))
             for cell in ("".join(c["source"]) for c in json.load(open(path))["cells"] if c["cell_type"] == "code")]
    fast = 0
    for cell in cells + PLAIN_CELLS + IPYTHON_CELLS:
        plain = plain_python(cell)
        if plain is not None:
            assert plain == ipython(cell), cell
            assert shell.transform_cell(cell) == plain
            fast += cell in cells
        else:
            assert shell.transform_cell(cell) == ipython(cell), cell
    assert all(plain_python(cell) is not None for cell in PLAIN_CELLS)
    assert all(plain_python(cell) is None for cell in IPYTHON_CELLS)
    assert fast >= 0.8 * len(cells), (fast, len(cells))
    # a transform the notebook adds applies to every cell, as in IPython
    for added in (shell.input_transformers_cleanup, shell.input_transformers_post):
        added.append(lambda lines: [line.replace("1", "2") for line in lines])
        try:
            assert shell.transform_cell(PLAIN_CELLS[1]) == "x = 2\ny = 2\n"
        finally:
            added.pop()
    assert shell.transform_cell(PLAIN_CELLS[1]) == "x = 1\ny = 2\n"


ASYNC_CELLS = ["await f()", "x = await g()\ny = 1", "async for i in it():\n    pass", "async with c:\n    pass",
               "[i async for i in it()]", "async def f():\n    await g()", "s = 'await'\nt = 1",
               "# async\nx = 1", "def f():\n    await = 1", "lambda: (yield)"]


def test_a_cell_without_await_or_async_runs_as_ipython_would_run_it():
    """IPython compiles each cell once more to see whether it awaits at top level; the shell
    a submission runs in answers "no" without compiling for a cell whose text has neither
    `await` nor `async`, and asks IPython otherwise: the same answer for every code cell of
    the course and for cells that do or only seem to await."""
    import glob
    import json

    from IPython.core.interactiveshell import InteractiveShell

    from autograder.sandbox.child import _shell

    shell = _shell()
    ipython = InteractiveShell.should_run_async.__get__(shell)         # the unwrapped method
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cells = [cell for path in sorted(glob.glob(os.path.join(root, "solutions", "*", "*.ipynb")))
             for cell in ("".join(c["source"]) for c in json.load(open(path))["cells"] if c["cell_type"] == "code")]
    answers = []
    for cell in cells + PLAIN_CELLS + ASYNC_CELLS:
        transformed = shell.transform_cell(cell)
        answer = shell.should_run_async(cell, transformed_cell=transformed)
        assert answer == ipython(cell, transformed_cell=transformed), cell
        answers.append(answer)
    assert answers[-len(ASYNC_CELLS):] == [True] * 5 + [False] * 5
    assert shell.should_run_async("x", transformed_cell="x", preprocessing_exc_tuple=(None,)) is False
    assert shell.run_cell("import asyncio\nasync def f():\n    return 7\nr = await f()",
                          store_history=False, silent=True).success and shell.user_ns["r"] == 7


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


def _similarity():
    from autograder.notebook import load_source

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(root, "solutions", "02_similarity", "02_similarity.ipynb")
    return path, load_source(path), root


def test_a_worker_compiles_every_cell_grading_runs_before_its_first_submission():
    """`compile_tests` (run by a worker while its sandbox's zygote starts) leaves nothing for
    grading to compile: neither for a submission that passes everything nor for one that
    fails everything (whose visible tests run again, for the hard-coding check)."""
    from tests.conftest import SANDBOX

    from autograder.grade.submission import compile_tests, grade_submission
    from autograder.sandbox.host import Limits, Sandbox
    from autograder.testcells import compile_cell

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


def test_rehearsing_the_gradebooks_queries_writes_nothing(tmp_path):
    """`rehearse` makes a batch's queries for no student (SQLAlchemy compiles each statement
    the first time): a gradebook with a student's scores, late penalty and a manual score is
    byte for byte the same after it, and reads back the same."""
    import sqlite3
    from datetime import datetime, timedelta, timezone

    from autograder.term.deadlines import LatePolicy
    from autograder.store.gradebook import (apply_late_policy, ensure_assignment, open_gradebook, record_many,
                                      rehearse, standings)

    _, source, _ = _similarity()
    url, due = f"sqlite:///{tmp_path / 'gb.db'}", datetime(2026, 1, 5, tzinfo=timezone.utc)
    policy = LatePolicy.parse("per-hour:10", None, source.max_score)
    result = {"student": "s1", "flags": [], "tests": [{"grade_id": t.grade_id, "points": t.points}
                                                      for t in source.tests]}
    with open_gradebook(url) as gb:
        ensure_assignment(gb, "a1", source, due)
        record_many(gb, "a1", "02_similarity", [(result, True)])
        applied = apply_late_policy(gb, "a1", "02_similarity", {"s1": (due + timedelta(hours=2), None)}, policy)
        grade = gb.find_grade(source.tests[0].grade_id, "02_similarity", "a1", "s1")
        grade.manual_score = 0.25
        gb.db.commit()
        held = standings(gb, "a1")
    assert applied["s1"]["penalty"] > 0 and held["s1"]["tests"]

    def dump():
        with sqlite3.connect(tmp_path / "gb.db") as db:
            return list(db.iterdump())

    before = dump()
    with open_gradebook(url) as gb:
        rehearse(gb, "a1", "02_similarity", policy)
        assert standings(gb, "a1") == held
    assert dump() == before


def test_a_first_submission_is_written_as_nbgraders_add_submission_writes_it(tmp_path):
    """`record_many` writes students' first submissions as multi-row INSERTs: the gradebook
    must then hold exactly what nbgrader's own `add_submission` makes, with the scores written
    into it as for a submission that already existed (`_write_scores`). Compared row by row
    (ids aside) and through nbgrader's computed scores, for an assignment with a second
    notebook (not graded now) holding a grade, a solution and a task cell; with a flagged
    result, and a student graded twice in one batch (the last result counts)."""
    from nbgrader.api import MissingEntry

    from autograder.store.gradebook import _cell_names, _write_scores, ensure_assignment, open_gradebook, record_many

    _, source, _ = _similarity()

    def result(student, passed, flags=()):
        return {"student": student, "flags": [{"code": f} for f in flags],
                "tests": [{"grade_id": t.grade_id, "points": t.points if i < passed else 0.0}
                          for i, t in enumerate(source.tests)]}

    batch = [result("s1", len(source.tests)), result("s2", 3, ["hardcoded"]), result("s3", 0),
             result("s2", 5), result("s4", 1, ["cell-error"])]

    def dump(gb):
        out = {}
        for sub in gb.find_assignment("a1").submissions:
            out[sub.student.id] = (
                sub.timestamp, sub.extension, float(sub.score), float(sub.max_score), sub.needs_manual_grade,
                sorted((nb.name, nb.flagged, nb.late_submission_penalty, float(nb.score),
                        sorted((g.cell.name, g.auto_score, g.manual_score, g.extra_credit, g.needs_manual_grade)
                               for g in nb.grades),
                        sorted((c.cell.name, c.auto_comment, c.manual_comment) for c in nb.comments))
                       for nb in sub.notebooks))
        return out

    dumps = []
    for ours in (True, False):
        with open_gradebook(f"sqlite:///{tmp_path / f'{ours}.db'}") as gb:
            ensure_assignment(gb, "a1", source)
            gb.update_or_create_notebook("extra", "a1")
            gb.update_or_create_grade_cell("extra_test", "extra", "a1", max_score=2.0, cell_type="code")
            gb.update_or_create_solution_cell("extra_answer", "extra", "a1")
            gb.update_or_create_task_cell("extra_task", "extra", "a1", max_score=1.0, cell_type="markdown")
            gb.add_student("s3")                     # known already, with no submission
            if ours:
                record_many(gb, "a1", "02_similarity", [(r, True) for r in batch])
            else:
                _, names = _cell_names(gb, "a1")
                for r in batch:
                    try:
                        submission = gb.find_submission("a1", r["student"])
                    except MissingEntry:
                        if r["student"] != "s3":
                            gb.add_student(r["student"])
                        with gb.db.no_autoflush:
                            submission = gb.add_submission("a1", r["student"])
                    _write_scores(submission, "02_similarity", names, r, True)
                gb.db.commit()
        with open_gradebook(f"sqlite:///{tmp_path / f'{ours}.db'}") as gb:
            dumps.append(dump(gb))
    ours, nbgraders = dumps
    assert sorted(ours) == ["s1", "s2", "s3", "s4"]
    assert ours["s2"][2] == sum(t.points for t in source.tests[:5]) and ours["s1"][2] == source.max_score
    assert [nb[1] for nb in ours["s4"][5]] == [True, False]    # 02_similarity flagged, extra not
    assert ours == nbgraders


def test_the_bench_fits_its_line_through_each_class_sizes_median():
    """`make bench-grading` grades every class size in each of its rounds: one slow run (the
    machine's speed moves) moves a size's median only if most rounds were slow too."""
    from autograder.bench import fit, medians

    line = [(10, 3.0), (40, 4.5), (100, 7.5), (200, 12.5)]          # 2.5 s + 0.05 s per submission
    rounds = [line, [(10, 9.0)] + line[1:], [(10, 3.0), (40, 4.6), (100, 7.4), (200, 12.5)]]
    assert medians(rounds) == line
    fixed, marginal = fit(medians(rounds))
    assert abs(fixed - 2.5) < 1e-9 and abs(marginal - 0.05) < 1e-12


@needs_sandbox
def test_a_write_into_an_array_inside_an_argument_is_caught(tmp_path):
    """Issue 27, item 4: an encoder_block that answers right, then writes into params["W_q"]
    (an array inside a dict argument) is flagged and loses the points of every test that
    calls it; only top-level array arguments were compared before."""
    import nbformat

    from autograder.testcells import AFTER_HIDDEN
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
