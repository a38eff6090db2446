"""Possible copying (autograder/report/similarity.py) and what the instructor's report says about it
and about the class (autograder/report/feedback.py): each way a copy used to hide (an added unused
line, two definitions swapped, the code moved into a new cell), each way an honest student
used to be listed (two untouched notebooks, answers close to the solution), groups rather
than pairs, names beside ids, and every student-controlled string escaped."""
from __future__ import annotations

import hashlib
import html
import json
import random
import time
from pathlib import Path


from autograder.notebook import load_source, nbgrader_meta

ROOT = Path(__file__).resolve().parents[2]
A = "02_similarity"
RELEASE = ROOT / "exercises" / A / f"{A}.ipynb"
SOURCE = ROOT / "solutions" / A / f"{A}.ipynb"


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _answer_cells(path: Path) -> dict[str, str]:
    return {nbgrader_meta(c)["grade_id"]: "".join(c["source"]) for c in _cells(path)
            if c["cell_type"] == "code" and nbgrader_meta(c).get("solution")}


TEMPLATES = _answer_cells(RELEASE)
SOLUTIONS = _answer_cells(SOURCE)

# ann's own answers: none of them the instructor's
ANN_DOT = '''def dot_similarity(A, B):
    """Dot products of every row of A with every row of B."""
    # one row of A against one row of B, for every pair
    rows = np.array(A, dtype=np.float64)
    cols = np.array(B, dtype=np.float64)
    product = np.einsum("id,jd->ij", rows, cols)
    return product
'''
ANN_SOFTMAX = '''def _shifted(values, axis):
    top = values.max(axis=axis, keepdims=True)
    top[~np.isfinite(top)] = 0
    return values - top


def softmax(x, axis=-1):
    """Softmax of x along `axis`."""
    arr = np.array(x, dtype=np.float64)
    ex = np.exp(_shifted(arr, axis))
    total = ex.sum(axis=axis, keepdims=True)
    return ex / total
'''
# ben's copy of it: other names, comments, spacing
BEN_DOT = '''def dot_similarity(A, B):
    # my answer
    left  = np.array(A,dtype = np.float64)
    right = np.array(B, dtype=np.float64)   # (n, d)
    s = np.einsum('id,jd->ij', left, right)

    return s
'''
BEN_SOFTMAX = '''def _minus_max(z, ax):
    m = z.max(axis=ax, keepdims=True)
    m[~np.isfinite(m)] = 0
    return z - m

def softmax(x, axis=-1):
    z = np.array(x, dtype=np.float64)
    e = np.exp(_minus_max(z, axis))
    s = e.sum(axis=axis, keepdims=True)  # the total
    return e / s
'''


def with_unused_line(code: str) -> str:
    """The same code with one statement nobody uses, and a print, after the first line of the body."""
    head, _, rest = code.partition("\n")
    return f"{head}\n    n_rows = len(A)\n    print('checking')\n{rest}"


def swapped(code: str) -> str:
    """The cell's two definitions in the other order."""
    first, second = code.split("\n\n\ndef softmax")
    return "def softmax" + second + "\n\n" + first


def notebook(dot=None, softmax=None, added=()) -> dict[str, str]:
    """A student's cells as notebook_code gives them: the three answer cells (the released
    stub unless given) and any cells the student added."""
    cells = dict(TEMPLATES)
    if dot is not None:
        cells["dot_similarity"] = dot
    if softmax is not None:
        cells["softmax"] = softmax
    cells.update({f"cell {30 + i}": code for i, code in enumerate(added)})
    return cells


def copying(answers: dict[str, dict[str, str]], digests=None):
    from autograder.report.similarity import possible_copying

    return possible_copying(digests or {s: hashlib.sha256(repr(c).encode()).hexdigest() for s, c in answers.items()},
                            answers, TEMPLATES, SOLUTIONS)


def reported(found) -> list[tuple[str, ...]]:
    return [g.students for g in found]


def test_a_copy_with_other_names_comments_and_spacing_is_one_group():
    found = copying({"ann": notebook(ANN_DOT, ANN_SOFTMAX), "ben": notebook(BEN_DOT, BEN_SOFTMAX)})
    assert reported(found) == [("ann", "ben")]
    assert {(p.what, p.similarity) for p in found[0].pairs} == {("dot_similarity", 1.0), ("softmax", 1.0)}


def test_an_added_unused_line_hides_nothing():
    found = copying({"ann": notebook(ANN_DOT), "ben": notebook(with_unused_line(BEN_DOT))})
    assert reported(found) == [("ann", "ben")]
    assert [(p.what, p.similarity) for p in found[0].pairs] == [("dot_similarity", 1.0)]


def test_two_definitions_swapped_in_a_cell_hide_nothing():
    assert swapped(ANN_SOFTMAX).startswith("def softmax") and "def _shifted" in swapped(ANN_SOFTMAX)
    found = copying({"ann": notebook(softmax=ANN_SOFTMAX), "ben": notebook(softmax=swapped(ANN_SOFTMAX))})
    assert reported(found) == [("ann", "ben")]
    assert [(p.what, p.similarity) for p in found[0].pairs] == [("softmax", 1.0)]


def test_code_moved_into_a_new_cell_hides_nothing():
    # ben leaves the answer cells as released and writes both functions in a cell of his own
    found = copying({"ann": notebook(ANN_DOT, ANN_SOFTMAX),
                     "ben": notebook(added=["import numpy as np\n\n" + BEN_SOFTMAX + "\n" + BEN_DOT])})
    assert reported(found) == [("ann", "ben")]
    assert {p.what for p in found[0].pairs} == {"dot_similarity", "softmax"}


def test_untouched_released_notebooks_are_not_copying():
    same = hashlib.sha256(RELEASE.read_bytes()).hexdigest()
    found = copying({"ann": notebook(), "ben": notebook(), "cy": notebook(ANN_DOT)},
                    digests={"ann": same, "ben": same, "cy": "other"})
    assert reported(found) == []
    # a released notebook with a line or two added to a stub is no more a copy
    nearly = TEMPLATES["softmax"].replace("    # YOUR CODE HERE\n", "    x = np.asarray(x)\n")
    assert copying({"ann": notebook(softmax=nearly), "ben": notebook(softmax=nearly)}) == []


def test_identical_files_with_work_in_them_are_reported_as_such():
    from autograder.report.similarity import IDENTICAL

    found = copying({"ann": notebook(ANN_DOT), "ben": notebook(ANN_DOT)}, digests={"ann": "d", "ben": "d"})
    assert reported(found) == [("ann", "ben")]
    assert [p.what for p in found[0].pairs] == [IDENTICAL, "dot_similarity"]


def test_three_students_linked_by_copies_are_one_group():
    # ben copies ann's dot_similarity, cy copies ben's softmax (with an unused line): one group
    # of three, though ann and cy share no function; dee wrote her own
    found = copying({"ann": notebook(ANN_DOT, HONEST_SOFTMAX[0]), "ben": notebook(BEN_DOT, ANN_SOFTMAX),
                     "cy": notebook(HONEST_DOT[1], with_unused_line(BEN_SOFTMAX).replace("len(A)", "len(x)")),
                     "dee": notebook(HONEST_DOT[0], HONEST_SOFTMAX[1])})
    assert reported(found) == [("ann", "ben", "cy")]
    assert {(p.a, p.b, p.what) for p in found[0].pairs} == {("ann", "ben", "dot_similarity"),
                                                             ("ben", "cy", "softmax")}


# two students' own work, each pair written independently
HONEST_DOT = ['''def dot_similarity(A, B):
    A = np.asarray(A, dtype=float)
    B = np.asarray(B, dtype=float)
    out = np.zeros((A.shape[0], B.shape[0]))
    for i in range(A.shape[0]):
        for j in range(B.shape[0]):
            out[i, j] = np.sum(A[i] * B[j])
    return out
''', '''def dot_similarity(A, B):
    a = torch.as_tensor(np.asarray(A, dtype=np.float64))
    b = torch.as_tensor(np.asarray(B, dtype=np.float64))
    return torch.matmul(a, b.transpose(0, 1)).numpy()
''']
HONEST_SOFTMAX = ['''def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    finite = np.where(np.isfinite(x), x, -np.inf)
    peak = np.nanmax(finite, axis=axis, keepdims=True)
    peak = np.nan_to_num(peak, neginf=0.0)
    w = np.exp(x - peak)
    return w / w.sum(axis=axis, keepdims=True)
''', '''def softmax(x, axis=-1):
    t = torch.tensor(np.array(x, dtype=np.float64))
    return torch.softmax(t, dim=axis).numpy()
''']
# what most students write, following the docstring: the instructor's solution in other words
NEAR_SOLUTION = '''def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    shift = np.max(x, axis=axis, keepdims=True)
    shift = np.where(np.isfinite(shift), shift, 0.0)
    e = np.exp(x - shift)
    return e / np.sum(e, axis=axis, keepdims=True)
'''


def test_two_students_who_both_wrote_close_to_the_solution_copied_nobody():
    ann, ben = NEAR_SOLUTION, NEAR_SOLUTION.replace("shift", "m")
    assert copying({"ann": notebook(softmax=ann), "ben": notebook(softmax=ben)}) == []


def test_honest_independent_answers_are_not_reported():
    honest = {"ann": notebook(HONEST_DOT[0], HONEST_SOFTMAX[0]), "ben": notebook(HONEST_DOT[1], HONEST_SOFTMAX[1])}
    assert copying(honest) == []
    # the same answers, copied, are found: they are long enough to be compared
    assert reported(copying({**honest, "cy": notebook(HONEST_DOT[1], HONEST_SOFTMAX[0])})) == [("ann", "ben", "cy")]


def test_code_that_defeats_the_parser_leaves_only_its_author_out():
    deep = "def dot_similarity(A, B):\n    return " + "(" * 5000 + "A" + ")" * 5000 + "\n"
    broken = ANN_DOT.replace("return product", "return product +")
    found = copying({"ann": notebook(ANN_DOT), "ben": notebook(BEN_DOT), "cy": notebook(deep),
                     "dee": notebook(broken), "eve": notebook(broken.replace("rows", "r"))})
    assert reported(found) == [("ann", "ben"), ("dee", "eve")]


def test_a_released_cell_that_does_not_parse_still_lets_copies_be_found():
    """The instructor's released answer cell with a syntax error: that cell gives no template
    statements to set aside, and the copies are found as with a clean release."""
    from autograder.report.similarity import possible_copying

    gid = next(iter(TEMPLATES))
    broken = dict(TEMPLATES, **{gid: TEMPLATES[gid] + "\n    def (:\n"})
    answers = {"ann": notebook(ANN_DOT, ANN_SOFTMAX), "ben": notebook(BEN_DOT, BEN_SOFTMAX), "cy": notebook()}
    found = possible_copying({s: s for s in answers}, answers, broken, SOLUTIONS)
    assert reported(found) == [("ann", "ben")]


def test_a_notebook_that_defeats_the_json_parser_is_no_code(tmp_path):
    from autograder.report.similarity import notebook_code

    (tmp_path / "deep.ipynb").write_text('{"cells": ' + "[" * 100_000 + "]" * 100_000 + "}")
    (tmp_path / "binary.ipynb").write_bytes(b"\xff\xfe" * 10)
    assert notebook_code(tmp_path / "deep.ipynb", TEMPLATES) == {}
    assert notebook_code(tmp_path / "binary.ipynb", TEMPLATES) == {}
    assert notebook_code(tmp_path / "absent.ipynb", TEMPLATES) == {}


def test_without_a_released_notebook_the_stub_comes_from_the_solution():
    from autograder.report.similarity import possible_copying, stub

    stubs = {gid: stub(code) for gid, code in SOLUTIONS.items()}
    assert all("raise NotImplementedError()" in code and "BEGIN SOLUTION" not in code for code in stubs.values())
    assert all(stubs[gid].split("raise")[0] == TEMPLATES[gid].split("# YOUR CODE HERE")[0] for gid in stubs)
    answers = {"ann": notebook(ANN_DOT, ANN_SOFTMAX), "ben": notebook(BEN_DOT), "cy": notebook(), "dee": notebook()}
    assert [g.students for g in possible_copying({}, answers, stubs, SOLUTIONS)] == [("ann", "ben")]


# ------------------------------------------------------------------ through the graded notebooks
def _write(path: Path, cells: list[dict]) -> None:
    nb = json.loads(RELEASE.read_text())
    nb["cells"] = cells
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb))


def _with(cells: list[dict], answers: dict[str, str], added: list[tuple[int, str]] = ()) -> list[dict]:
    out = [dict(c, source=answers[nbgrader_meta(c).get("grade_id")]) if nbgrader_meta(c).get("grade_id") in answers
           else c for c in cells]
    for at, code in sorted(added, reverse=True):
        out.insert(at, {"cell_type": "code", "metadata": {}, "source": code, "outputs": [], "execution_count": None})
    return out


def test_the_run_reads_every_cell_of_the_graded_notebooks(tmp_path):
    """grade/run.py's _copying on the autograded notebooks of the workspace: added cells count,
    the instructor's test cells and released cells do not."""
    from autograder.grade.run import _copying
    from autograder.store.workspace import Workspace

    cells = _cells(RELEASE)
    tests = next(i for i, c in enumerate(cells) if nbgrader_meta(c).get("grade_id") == "test_softmax_torch")
    notebooks = {
        "ann": _with(cells, {"dot_similarity": ANN_DOT, "softmax": ANN_SOFTMAX}),
        "ben": _with(cells, {}, [(tests, BEN_SOFTMAX), (len(cells), BEN_DOT)]),   # in two cells of his own
        "cy": cells, "dee": cells,                                                  # untouched
    }
    ws = Workspace(tmp_path, A)
    for student, nb_cells in notebooks.items():
        _write(ws.autograded_notebook(student, A), nb_cells)
    # graded in this run: its autograded notebook is read from memory, not from the workspace
    this_run = {"ann": ws.autograded_notebook("ann", A).read_text()}
    ws.autograded_notebook("ann", A).unlink()
    submitted = {s: {"digest": "same" if s in ("cy", "dee") else s} for s in notebooks}
    found = _copying(ws, load_source(SOURCE), A, A, submitted, this_run)
    assert [(g.students, sorted(p.what for p in g.pairs)) for g in found] == [
        (("ann", "ben"), ["dot_similarity", "softmax"])]


def test_a_class_of_200_takes_seconds(tmp_path, capsys):
    """200 notebooks with varied answers, five of them copies: read and compared in seconds."""
    from autograder.report.similarity import notebook_code

    rnd = random.Random(7)
    functions = ["np.sqrt", "np.abs", "np.exp", "np.log1p", "np.tanh", "np.square", "np.cos", "np.sin",
                 "np.negative", "np.cumsum", "np.sort", "np.flip", "np.round", "np.ravel", "np.sign"]

    def own(first: str, lines: int) -> str:
        """Code nobody else wrote: a random chain of numpy calls and constants."""
        body, last = [], first
        for j in range(lines):
            body.append(f"    t{j} = {rnd.choice(functions)}({last} {rnd.choice('+-*/')} {rnd.randrange(2, 999)})")
            last = f"t{j}"
        return "\n".join(body) + f"\n    return {last}\n"

    cells = _cells(RELEASE)
    for k in range(200):
        dot = "def dot_similarity(A, B):\n    A = np.asarray(A) @ np.asarray(B).T\n" + own("A", rnd.randrange(3, 7))
        soft = "def softmax(x, axis=-1):\n" + own("x", rnd.randrange(3, 7))
        if k >= 195:
            dot, soft = ANN_DOT.replace("rows", f"r{k}"), ANN_SOFTMAX
        _write(tmp_path / f"s{k:03}.ipynb", _with(cells, {"dot_similarity": dot, "softmax": soft}))
    from autograder.report.similarity import possible_copying

    start = time.perf_counter()
    source = load_source(SOURCE)
    tests = {t.grade_id for t in source.tests}
    released = [code for code in (''.join(c["source"]) for c in cells if c["cell_type"] == "code")]
    answers = {f"s{k:03}": notebook_code(tmp_path / f"s{k:03}.ipynb", TEMPLATES, tests, released) for k in range(200)}
    read = time.perf_counter() - start
    found = possible_copying({s: s for s in answers}, answers, TEMPLATES, SOLUTIONS)
    took = time.perf_counter() - start
    with capsys.disabled():
        print(f"\npossible copying, a class of 200: {read:.2f} s reading the notebooks, "
              f"{took - read:.2f} s comparing, {took:.2f} s in all; {len(found)} groups: "
              + "; ".join(",".join(g.students) for g in found))
    assert [g.students for g in found] == [("s195", "s196", "s197", "s198", "s199")]
    assert took < 30, took


# ------------------------------------------------------------------ the instructor's report
HOSTILE = "<img src=x onerror=alert(1)>"


def _result(student: str, name: str = "", flags=(), source: str = "") -> dict:
    return {"student": student, "assignment": A, "score": 1.0, "max_score": 2.0, "flags": [],
            "tests": [{"grade_id": "t1", "description": "one", "points": 1.0, "max_points": 2.0, "passed": False,
                       "message": "", "hidden": False}],
            "submission": {"source": source},
            "term": {"name": name, "score": 1.0, "flags": list(flags)}}


def test_the_report_names_students_and_lists_everyone_missing_and_every_unmatched_file():
    from autograder.report.feedback import instructor_report
    from autograder.report.similarity import Group, Pair

    missing = [f"s{k:03}" for k in range(40)]
    names = {"ann": "Lee, Ann", "ben": "Ng, Ben", **{s: f"Student {s}" for s in missing}}
    unmatched = [f"stranger{k}_4000{k}_67892{k}_{A}.ipynb" for k in range(8)]
    stray = _result("zed", flags=[{"code": "not-on-roster", "message": "not on the roster", "student": "zed"}],
                    source=f"subs: zed_{A}.ipynb")
    report = instructor_report(A, [_result("ann", "Lee, Ann"), _result("ben", "Ng, Ben"), stray], missing,
                               copying=[Group(("ann", "ben"), (Pair("ann", "ben", "softmax", 1.0),))],
                               names=names, unmatched=unmatched)
    section = report.split("No submission (40)")[1]
    assert all(f"{s}" in section and f"Student {s}" in section for s in missing)
    assert all(u in report for u in unmatched)
    assert "zed" in report.split("match nobody on the roster")[1]
    copied = report.split("Possible copying")[1]
    assert "Lee, Ann" in copied and "Ng, Ben" in copied and "softmax" in copied and "100%" in copied


def test_the_report_escapes_every_name_id_and_file_name():
    from autograder.report.feedback import instructor_report
    from autograder.report.similarity import Group, Pair

    evil = f"{HOSTILE}_{A}.ipynb"
    report = instructor_report(A, [_result(HOSTILE, HOSTILE), _result("ben", HOSTILE)], [HOSTILE],
                               copying=[Group((HOSTILE, "ben"), (Pair(HOSTILE, "ben", "softmax", 1.0),))],
                               names={HOSTILE: HOSTILE, "ben": HOSTILE}, unmatched=[evil])
    assert "<img" not in report
    assert report.count(html.escape(HOSTILE)) >= 6, report
    assert html.escape(evil) in report


def test_a_large_group_lists_every_member_and_a_bounded_number_of_pairs():
    from autograder.report.feedback import PAIRS_SHOWN, instructor_report
    from autograder.report.similarity import Group, Pair

    members = tuple(f"s{k:02}" for k in range(30))
    pairs = tuple(Pair(a, b, "softmax", 1.0) for i, a in enumerate(members) for b in members[i + 1:])
    report = instructor_report(A, [_result(s) for s in members], copying=[Group(members, pairs)])
    copied = report.split("Possible copying (1 group, 30 students)")[1]
    assert all(s in copied for s in members)
    assert copied.count("<tr><td>") == PAIRS_SHOWN and f"{len(pairs) - PAIRS_SHOWN} more pairs" in copied

