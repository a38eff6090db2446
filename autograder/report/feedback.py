"""Feedback for students (one HTML page each) and the instructor's report (one per assignment).

Feedback shows, per test: its name, points earned of points possible, pass or fail, and
the message naming the likely bug. It never shows test code, and for hidden tests only
the test author's wording (see testcells.describe_failure). When the result carries its
standing in the term (`result["term"]`: see grade/run.py), feedback also shows the points
an instructor set by hand, when the notebook was submitted (and how that was known), the
deadline that applied and any late penalty.
"""
from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import course
from ..flags import messages
from ..records import Result

if TYPE_CHECKING:
    from .similarity import Group

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;width:100%;margin:1rem 0}
th,td{border-bottom:1px solid #ddd;padding:.4rem .5rem;text-align:left;vertical-align:top}
th{background:#f5f5f5}.pass{color:#1a7f37;font-weight:600}.fail{color:#cf222e;font-weight:600}
.score{font-size:1.4rem}.flags{background:#fff8c5;padding:.6rem 1rem;border-radius:6px}
.comments{background:#e8f1fb;padding:.6rem 1rem;border-radius:6px;margin:.6rem 0}.muted{color:#666}
code{background:#f3f3f3;padding:0 .2rem;border-radius:3px}
"""


def _page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>{body}</body></html>")


def _late_note(result: dict) -> str:
    from ..term.deadlines import duration

    term = Result.of(result).standing
    if not term.get("submitted_at"):
        return ""
    when = f"Submitted {html.escape(term['submitted_at_text'])} <span class='muted'>(time from " \
           f"{html.escape(term['time_source'])})</span>"
    if not term.get("due"):
        return f"<p>{when}.</p>"
    due = f"the deadline {html.escape(term['due_text'])}"
    if term.get("extension_hours"):
        due += f" <span class='muted'>(with your extension of {term['extension_hours']:g} h)</span>"
    if not term.late:
        return f"<p>{when}, before {due}.</p>"
    penalty = term.get("late_penalty") or 0
    cost = (f"Late penalty: <strong>&minus;{penalty:g}</strong> ({html.escape(term['late_policy'])}), "
            f"from {term['raw_score']:g} to {term['score']:g}." if penalty else
            f"No points were deducted ({html.escape(term['late_policy'])}).")
    if term.get("marked_late_by"):
        # the LMS said "late" and no time: the time in the gradebook is the rule's, not the student's
        lms = html.escape(term["marked_late_by"])
        return (f"<div class='flags'><p>{lms} marked this submission <strong>late</strong> (after {due}); "
                f"{lms} does not say by how much, so it counts as {duration(term['seconds_late'])} late.</p>"
                f"<p>{cost}</p></div>")
    return (f"<div class='flags'><p>{when}, <strong>{duration(term['seconds_late'])} after</strong> {due}.</p>"
            f"<p>{cost}</p></div>")


def student_feedback(result: dict) -> str:
    res = Result.of(result)
    term = res.standing
    manual = term.get("manual") or {}
    rows = []
    for t in result["tests"]:
        status = "<span class='pass'>pass</span>" if t["passed"] else "<span class='fail'>fail</span>"
        kind = " <span class='muted'>(includes hidden checks)</span>" if t["hidden"] else ""
        points = f"{t['points']:g} / {t['max_points']:g}"
        if t["grade_id"] in manual and manual[t["grade_id"]] != t["points"]:
            points = (f"{manual[t['grade_id']]:g} / {t['max_points']:g}<br><span class='muted'>set by your "
                      f"instructor (tests gave {t['points']:g})</span>")
        rows.append(f"<tr><td>{html.escape(t['description'])}{kind}<br><code>{html.escape(t['grade_id'])}</code></td>"
                    f"<td>{points}</td><td>{status}</td>"
                    f"<td>{html.escape(t['message'])}</td></tr>")
    comments = term.get("comments") or {}
    described = {t["grade_id"]: t["description"] for t in result["tests"]}
    said = ""
    if comments:
        items = "".join(f"<li><strong>{html.escape(described.get(cell, 'your answer'))}</strong> "
                        f"<code>{html.escape(cell)}</code><br>{_paragraphs(text)}</li>"
                        for cell, text in comments.items())
        said = f"<div class='comments'><strong>Comments from your instructor</strong><ul>{items}</ul></div>"
    flags = ""
    visible = messages(res.all_flags, student=True)
    if visible:
        items = "".join(f"<li>{html.escape(f)}</li>" for f in visible)
        flags = f"<div class='flags'><strong>Notes on your submission</strong><ul>{items}</ul></div>"
    score = res.final_score
    body = (f"<h1>{html.escape(result['assignment'])}: feedback for {html.escape(result['student'])}</h1>"
            f"<p class='score'>Score: <strong>{score:g} / {result['max_score']:g}</strong></p>"
            f"{_late_note(result)}{said}{flags}"
            "<table><tr><th>test</th><th>points</th><th>result</th><th>what to look at</th></tr>"
            + "".join(rows) + "</table><p class='muted'>Hidden tests check other shapes and edge cases; "
            "at grading time every test draws fresh inputs.</p>"
            f"<p class='muted'>Course version {html.escape(course.version())}.</p>")
    return _page(f"Feedback: {result['assignment']}", body)


def _paragraphs(text: str) -> str:
    """An instructor's comment (plain text, as formgrader stores it) as escaped HTML lines."""
    return "<br>".join(html.escape(line) for line in text.splitlines())


def histogram_counts(scores: list[float], max_score: float) -> tuple[list[int], float]:
    """Students per bin over [0, max_score]: one bin per point up to 20 bins, the last bin
    closed (a full score counts in it), as numpy.histogram bins them. Returns (counts, width)."""
    top = max_score if max_score else 1.0
    bins = max(1, min(int(max_score) + 1, 20))
    width = top / bins
    counts = [0] * bins
    for score in scores:
        if 0 <= score <= top:
            counts[min(int(score / width), bins - 1)] += 1
    return counts, width


def _histogram_svg(scores: list[float], max_score: float) -> str:
    """The score distribution as an inline SVG bar chart (no plotting library to import)."""
    counts, width = histogram_counts(scores, max_score)
    w, h, left, bottom, top_pad = 560, 220, 44, 36, 24
    plot_w, plot_h = w - left - 12, h - bottom - top_pad
    tallest = max(counts) or 1
    bar_w = plot_w / len(counts)
    bars, labels = [], []
    for i, count in enumerate(counts):
        bar_h = plot_h * count / tallest
        x, y = left + i * bar_w, top_pad + plot_h - bar_h
        low, high = i * width, (i + 1) * width
        bars.append(f"<rect x='{x + 1:.1f}' y='{y:.1f}' width='{max(bar_w - 2, 1):.1f}' height='{bar_h:.1f}' "
                    f"fill='#4c72b0'><title>{low:g} to {high:g}: {count} student{'s' if count != 1 else ''}"
                    "</title></rect>")
        if count:
            bars.append(f"<text x='{x + bar_w / 2:.1f}' y='{y - 4:.1f}' text-anchor='middle' "
                        f"font-size='11'>{count}</text>")
    for i in range(len(counts) + 1):
        if len(counts) <= 10 or i % 2 == 0 or i == len(counts):
            labels.append(f"<text x='{left + i * bar_w:.1f}' y='{top_pad + plot_h + 14}' text-anchor='middle' "
                          f"font-size='11'>{i * width:g}</text>")
    axis = (f"<line x1='{left}' y1='{top_pad + plot_h}' x2='{left + plot_w}' y2='{top_pad + plot_h}' stroke='#333'/>"
            f"<text x='{left + plot_w / 2}' y='{h - 4}' text-anchor='middle' font-size='12'>score</text>"
            f"<text x='12' y='{top_pad + plot_h / 2}' text-anchor='middle' font-size='12' "
            f"transform='rotate(-90 12 {top_pad + plot_h / 2})'>students</text>"
            f"<text x='{w / 2}' y='15' text-anchor='middle' font-size='13'>Score distribution</text>")
    summary = ", ".join(f"{i * width:g} to {(i + 1) * width:g}: {c}" for i, c in enumerate(counts) if c)
    return (f"<svg role='img' aria-label='score histogram ({html.escape(summary)})' width='{w}' height='{h}' "
            f"viewBox='0 0 {w} {h}' xmlns='http://www.w3.org/2000/svg'>" + "".join(bars) + "".join(labels)
            + axis + "</svg>")


def _who(student: str, names: dict) -> str:
    """A student's id and, when known, name, escaped: both come from the student's upload or
    the roster."""
    name = (names or {}).get(student) or ""
    return html.escape(student) + (f" <span class='muted'>({html.escape(name)})</span>" if name else "")


def _term_section(results: list[dict], missing: list[str], ungraded: list[str], deadline: str,
                  names: dict) -> str:
    late = [r for r in results if Result.of(r).standing.late]
    parts = [f"<p>{html.escape(deadline)}</p>"] if deadline else []
    if late:
        parts.append("<h2>Late submissions (" + str(len(late)) + ")</h2><table><tr><th>student</th>"
                     "<th>submitted</th><th>time from</th><th>late by</th><th>penalty</th></tr>" + "".join(
                         f"<tr><td>{_who(r['student'], names)}</td><td>{html.escape(r['term']['submitted_at_text'])}"
                         f"</td><td>{html.escape(r['term']['time_source'])}</td><td>"
                         f"{r['term']['seconds_late'] / 3600:.1f} h</td><td>{r['term']['late_penalty']:g}</td></tr>"
                         for r in late) + "</table>")
    if missing:            # every one of them: this is the list the instructor follows up
        parts.append(f"<h2>No submission ({len(missing)})</h2><table><tr><th>student</th><th>name</th></tr>"
                     + "".join(f"<tr><td>{html.escape(m)}</td><td>{html.escape((names or {}).get(m) or '')}</td></tr>"
                               for m in missing) + "</table>")
    if ungraded:
        parts.append(f"<h2>Submitted, never graded: not chosen by --student or --flagged ({len(ungraded)})</h2><p>"
                     + ", ".join(_who(m, names) for m in ungraded) + "</p>")
    return "".join(parts)


def _unmatched_section(results: list[dict], unmatched: list[str]) -> str:
    """What the download held that is nobody on the roster: files left out (an LMS download's),
    and submissions graded under an id the roster does not have."""
    strays = [r for r in results if not Result.of(r).standing.on_roster]
    if not unmatched and not strays:
        return ""
    rows = "".join(f"<tr><td><code>{html.escape(name)}</code></td><td>not graded</td></tr>" for name in unmatched)
    rows += "".join(f"<tr><td><code>{html.escape((r.get('submission') or {}).get('source') or r['student'])}</code>"
                    f"</td><td>graded as {html.escape(r['student'])}</td></tr>" for r in strays)
    return (f"<h2>Files that match nobody on the roster ({len(unmatched) + len(strays)})</h2>"
            "<table><tr><th>file or folder</th><th>what happened</th></tr>" + rows + "</table>")


PAIRS_SHOWN = 60          # per group of possible copying: its members are all listed above the pairs


def _copying_section(groups: Sequence[Group], names: dict) -> str:
    """Groups of students to look at (similarity.py): identical files, near-identical graded
    functions."""
    from .similarity import IDENTICAL

    intro = ("<p>For you to look at; no score was changed and no one was flagged. Each graded function is "
             "compared on its own, wherever the student wrote it, with comments, docstrings, unused "
             "statements, the order of definitions and the student's own names set aside; code as "
             "released and answers close to the solution are left out (see autograder/report/similarity.py).</p>")
    if not groups:
        return "<h2>Possible copying (0)</h2><p>No identical submissions and no near-identical answers.</p>" + intro
    parts = []
    for k, group in enumerate(groups, 1):
        linked: dict[tuple[str, str], list] = {}
        for p in group.pairs:
            linked.setdefault((p.a, p.b), []).append(p)
        rows = "".join(
            f"<tr><td>{_who(a, names)}</td><td>{_who(b, names)}</td><td>"
            + ", ".join(html.escape(p.what) if p.what == IDENTICAL else
                        f"<code>{html.escape(p.what)}</code> {p.similarity:.0%}" for p in found)
            + "</td></tr>" for (a, b), found in list(linked.items())[:PAIRS_SHOWN])
        if len(linked) > PAIRS_SHOWN:
            rows += f"<tr><td colspan='3'>... and {len(linked) - PAIRS_SHOWN} more pairs of this group</td></tr>"
        parts.append(f"<h3>Group {k}: {len(group.students)} students, up to {group.similarity:.0%} alike</h3><p>"
                     + ", ".join(_who(s, names) for s in group.students) + "</p><table><tr><th>student</th>"
                     "<th>student</th><th>alike in</th></tr>" + rows + "</table>")
    students = sum(len(g.students) for g in groups)
    return (f"<h2>Possible copying ({len(groups)} group{'s' if len(groups) != 1 else ''}, {students} students)</h2>"
            + intro + "".join(parts))


def instructor_report(assignment: str, results: list[dict], missing: Sequence[str] = (),
                      ungraded: Sequence[str] = (), deadline: str = "", copying: Sequence[Group] = (),
                      names: dict | None = None,
                      unmatched: Sequence[str] = ()) -> str:
    """The class's report: `results` are the graded submissions; `missing` the rostered students
    who submitted nothing, `ungraded` those a partial regrade did not reach; `copying` the
    groups similarity.py found; `names` {student id: name} (roster or LMS); `unmatched` the
    download's files that match nobody on the roster. Everything a student controls (ids,
    names, file names) is escaped."""
    names = {**{r["student"]: Result.of(r).standing.name for r in results}, **(names or {})}
    term = _term_section(results, list(missing), list(ungraded), deadline, names) \
        + _unmatched_section(results, list(unmatched))
    if not results:
        return _page(f"Report: {assignment}", f"<h1>{html.escape(assignment)}</h1><p>No submissions.</p>{term}")
    max_score = results[0]["max_score"]
    scores = [Result.of(r).final_score for r in results]
    mean = sum(scores) / len(scores)
    tests = results[0]["tests"]
    pass_rows = []
    for t in tests:
        passed = sum(1 for r in results for u in r["tests"] if u["grade_id"] == t["grade_id"] and u["passed"])
        rate = passed / len(results)
        pass_rows.append(f"<tr><td><code>{html.escape(t['grade_id'])}</code></td><td>{t['max_points']:g}</td>"
                         f"<td>{passed} / {len(results)}</td><td>{rate:.0%}</td></tr>")
    flagged = [res for res in map(Result.of, results) if res.all_flags]
    flag_rows = "".join(
        f"<tr><td>{_who(r['student'], names)}</td><td>{r.final_score:g}</td><td><ul>"
        + "".join(f"<li>{html.escape(m)}</li>" for m in messages(r.all_flags)) + "</ul></td></tr>" for r in flagged)
    body = (f"<h1>{html.escape(assignment)}: grading report</h1>"
            f"<p>{len(results)} submissions; mean score {mean:.2f} of {max_score:g}; "
            f"{sum(1 for s in scores if s == max_score)} with full marks; {len(flagged)} flagged.</p>"
            + _histogram_svg(scores, max_score) +
            "<h2>Pass rate per test</h2><table><tr><th>test</th><th>points</th><th>passed</th><th>rate</th></tr>"
            + "".join(pass_rows) + "</table>" + term +
            f"<h2>Flagged submissions ({len(flagged)})</h2>"
            + ("<table><tr><th>student</th><th>score</th><th>reasons</th></tr>" + flag_rows + "</table>"
               if flagged else "<p>None.</p>") + _copying_section(copying, names))
    return _page(f"Report: {assignment}", body)
