"""Plug-ins for stock nbgrader, so that `nbgrader autograde` grades on results.

nbgrader scores a test cell 0 as soon as anything reaches stderr (utils.determine_grade),
and PyTorch writes warnings there. `StderrToStdout` runs right after execution and turns
stderr stream outputs into stdout ones, so a warning stays visible but costs nothing; a
failing test still fails, because failures are `error` outputs, not stderr text.
"""
from nbconvert.preprocessors import Preprocessor
from traitlets import Bool


class StderrToStdout(Preprocessor):
    """Re-label stderr stream outputs of executed code cells as stdout."""

    enabled = Bool(True).tag(config=True)   # nbconvert preprocessors are off unless enabled

    def preprocess_cell(self, cell, resources, index):
        if cell.cell_type == "code":
            for output in cell.get("outputs", []):
                if output.get("output_type") == "stream" and output.get("name") == "stderr":
                    output["name"] = "stdout"
        return cell, resources


def autograde_preprocessors():
    """nbgrader's own autograde pipeline with StderrToStdout inserted after Execute."""
    from nbgrader.converters.autograde import Autograde

    stock = list(Autograde.class_traits()["autograde_preprocessors"].default())
    names = [p.__name__ for p in stock]
    stock.insert(names.index("Execute") + 1, StderrToStdout)
    return stock
