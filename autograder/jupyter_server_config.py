"""Jupyter server configuration for the course (loaded through JUPYTER_CONFIG_PATH=autograder,
as `autograder formgrade` sets it): Formgrader's MathJax 2 is served by the server itself from
_vendor_formgrader/ (`make mathjax2`), not fetched from a CDN, so manual grading works offline;
so are the course's scripts for Formgrader's pages (jupyter_data/formgrade_static: the pages'
variables and handlers, which the server's policy does not allow inline; autograder/formgrade.py).
Formgrader's pages (nbconvert's HTMLExporter, configured from the server's configuration) point
at MathJax."""
import os
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:      # the type of what traitlets provides
    from traitlets.config import Config

    get_config: Callable[[], Config]

c = get_config()  # noqa: F821 (provided by traitlets when the server loads this file)

_here = os.path.dirname(os.path.abspath(__file__))
_vendor = os.path.join(os.path.dirname(_here), "_vendor_formgrader")
c.ServerApp.extra_static_paths = [os.path.join(_here, "jupyter_data", "formgrade_static")]
if os.path.isfile(os.path.join(_vendor, "mathjax2", "MathJax.js")):
    c.ServerApp.extra_static_paths.append(_vendor)
    c.HTMLExporter.mathjax_url = "/static/mathjax2/MathJax.js?config=TeX-AMS_CHTML-full,Safe"
    # (formgrader's pages ignore this address: autograder/jupyter_data's mathjax macro gives it)
