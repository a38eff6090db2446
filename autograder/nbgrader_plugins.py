"""Plug-ins for stock nbgrader: `nbgrader autograde` grades on results, and the course's
late policy is an nbgrader late-submission plugin.

nbgrader scores a test cell 0 as soon as anything reaches stderr (utils.determine_grade),
and PyTorch writes warnings there. `StderrToStdout` runs right after execution and turns
stderr stream outputs into stdout ones, so a warning stays visible but costs nothing; a
failing test still fails, because failures are `error` outputs, not stderr text.
"""
import functools

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Bool, Enum, Float

from .term.deadlines import POLICIES, LatePolicy


@functools.cache
def _stderr_to_stdout():
    from nbconvert.preprocessors import Preprocessor

    class StderrToStdout(Preprocessor):
        """Re-label stderr stream outputs of executed code cells as stdout."""

        enabled = Bool(True).tag(config=True)   # nbconvert preprocessors are off unless enabled

        def preprocess_cell(self, cell, resources, index):
            if cell.cell_type == "code":
                for output in cell.get("outputs", []):
                    if output.get("output_type") == "stream" and output.get("name") == "stderr":
                        output["name"] = "stdout"
            return cell, resources

    StderrToStdout.__qualname__ = "StderrToStdout"
    return StderrToStdout


def __getattr__(name: str):
    """`StderrToStdout` is defined when first asked for: it needs nbconvert (0.3 s to import),
    which `LatePenalty`, all the grading parent takes from here, does not."""
    if name == "StderrToStdout":
        return _stderr_to_stdout()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def autograde_preprocessors():
    """nbgrader's own autograde pipeline with StderrToStdout inserted after Execute."""
    from nbgrader.converters.autograde import Autograde

    stock = list(Autograde.class_traits()["autograde_preprocessors"].default())
    names = [p.__name__ for p in stock]
    stock.insert(names.index("Execute") + 1, _stderr_to_stdout())
    return stock


class LatePenalty(LateSubmissionPlugin):
    """nbgrader's LateSubmissionPlugin with the course's policies (`deadlines.LatePolicy`):
    none, zero, or P percent of the maximum score per started hour or day, never below a
    floor. The grader records every late penalty through it, as AssignLatePenalties would."""

    penalty_method = Enum(POLICIES, default_value="none",
                          help="none, zero, per-hour or per-day").tag(config=True)
    percent = Float(0.0, help="percent of the maximum score deducted per started unit").tag(config=True)
    floor = Float(0.0, help="percent of the maximum score a deduction never goes below").tag(config=True)
    max_score = Float(0.0, help="the assignment's maximum score").tag(config=True)

    @classmethod
    def of(cls, policy: LatePolicy) -> "LatePenalty":
        return cls(penalty_method=policy.method, percent=policy.percent, floor=policy.floor,
                   max_score=policy.max_score)

    @classmethod
    def parse(cls, policy: str | None, floor=None, max_score: float = 0.0) -> "LatePenalty":
        return cls.of(LatePolicy.parse(policy, floor, max_score))

    @property
    def policy(self) -> LatePolicy:
        return LatePolicy(self.penalty_method, self.percent, self.floor, self.max_score)

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float | None:
        return self.policy.penalty(score, total_seconds_late)
