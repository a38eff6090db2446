"""Jupyter server configuration for the course (loaded through JUPYTER_CONFIG_PATH=autograder,
as `autograder formgrade` sets it): Formgrader's MathJax 2 is served by the server itself from
_vendor_formgrader/ (`make mathjax2`), not fetched from a CDN, so manual grading works offline.
Formgrader's pages (nbconvert's HTMLExporter, configured from the server's configuration) point
at it."""
import os

c = get_config()  # noqa: F821 (provided by traitlets when the server loads this file)

_vendor = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_vendor_formgrader")
if os.path.isfile(os.path.join(_vendor, "mathjax2", "MathJax.js")):
    c.ServerApp.extra_static_paths = [_vendor]
    c.HTMLExporter.mathjax_url = "/static/mathjax2/MathJax.js?config=TeX-AMS_CHTML-full,Safe"
    # (formgrader's pages ignore this address: autograder/jupyter_data's mathjax macro gives it)
