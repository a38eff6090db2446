"""IPython startup file (the book's build installs it for every chapter's kernel): measure the
smallest text of every matplotlib figure a cell displays, as the reader sees it.

For each figure shown as a PNG, every text matplotlib draws (tick labels, titles, legends,
colour-bar ticks, numbers written on cells) is recorded with its font size in pixels of the
image; that is turned into CSS pixels (a retina PNG has twice the pixels of its displayed
size) and scaled to the width the page shows it at, min(natural width, 688 px: the text
column on a desktop). The smallest, and the text that has it, go into the output's
metadata (`image/png` -> `text_min_px`, `text_min`, `css_width`), which the execution cache
keeps and tests/test_book.py reads from _build/jupyter_execute."""


def _install_figure_text_probe(column_px=688):
    import base64
    import struct

    try:
        import matplotlib.text as mtext
        from IPython import get_ipython
        from IPython.core.formatters import PNGFormatter
        from matplotlib.figure import Figure
    except ImportError:
        return
    if get_ipython() is None or getattr(PNGFormatter, "_text_probe", False):
        return
    drawn = {"sizes": None}
    text_draw = mtext.Text.draw

    def recording_draw(self, renderer, *args, **kwargs):
        sizes = drawn["sizes"]
        if sizes is not None and self.get_visible() and self.get_text().strip():
            sizes.append((self.get_fontsize() * renderer.dpi / 72, self.get_text().strip()))
        return text_draw(self, renderer, *args, **kwargs)

    mtext.Text.draw = recording_draw
    png_call = PNGFormatter.__call__

    def measuring_call(self, obj):
        if not isinstance(obj, Figure):
            return png_call(self, obj)
        drawn["sizes"] = []
        try:
            result = png_call(self, obj)
        finally:
            sizes, drawn["sizes"] = drawn["sizes"], None
        if result is None or not sizes:
            return result
        data, metadata = result if isinstance(result, tuple) else (result, None)
        try:
            raw = data if isinstance(data, bytes) else base64.b64decode(data)
            png_width = struct.unpack(">I", raw[16:20])[0]
        except Exception:  # noqa: BLE001 - not a PNG we can read: leave it unmeasured
            return result
        metadata = dict(metadata or {})
        css_width = metadata.get("width") or png_width
        shown = min(1.0, column_px / css_width)
        px, text = min(sizes)
        metadata.update(text_min_px=round(px * css_width / png_width * shown, 2),
                        text_min=text[:40], css_width=int(css_width))
        return data, metadata

    PNGFormatter.__call__ = measuring_call
    PNGFormatter._text_probe = True


_install_figure_text_probe()
del _install_figure_text_probe
