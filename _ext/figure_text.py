"""IPython startup file (the book's build installs it for every chapter's kernel): measure the
smallest text of every matplotlib figure a cell displays, as the reader sees it, and draw a
phone version of each figure whose text a phone would shrink below 9 px.

For each figure shown as a PNG, every text matplotlib draws (tick labels, titles, legends,
colour-bar ticks, numbers written on cells) is recorded with its font size in pixels of the
image; that is turned into CSS pixels (a retina PNG has twice the pixels of its displayed
size) and scaled to the width the page shows it at, min(natural width, 688 px: the text
column on a desktop). The smallest, and the text that has it, go into the output's
metadata (`image/png` -> `text_min_px`, `text_min`, `css_width`), which the execution cache
keeps and tests/book/test_book.py reads from _build/jupyter_execute.

A phone's column is 358 px: a figure wider than that is shrunk to it, and its text with it.
Where that leaves the smallest text under PHONE_TARGET_PX, the figure is drawn a second time
for phones, into the same metadata (`image/png` -> `phone`: the PNG, its CSS size and its own
smallest text in CSS px at that size; a phone shows it at most 358 px wide). The phone version is
- the cell's own phone layout, when the cell sets `fig.phone_layout` to another Figure (panels
  stacked, say: `matplotlib.figure.Figure`, not pyplot, so it is not shown twice), or else
- the same figure drawn narrower, its fonts kept, its layout redone: at the width where its
  smallest text, shown at most 358 px wide, is PHONE_TARGET_PX.
The page serves one of the two by screen width (_ext/offline_book.py: a <picture>). A reader's
own Jupyter shows the figure as usual: the phone version is only metadata."""

PHONE_COLUMN_PX = 358
PHONE_TARGET_PX = 9.4


def _install_figure_text_probe(column_px=688, phone_px=PHONE_COLUMN_PX, target_px=PHONE_TARGET_PX):
    import base64
    import struct
    import textwrap
    import warnings

    try:
        import matplotlib.text as mtext
        from IPython import get_ipython
        from IPython.core.formatters import PNGFormatter
        from matplotlib.figure import Figure
        from matplotlib.layout_engine import ConstrainedLayoutEngine, TightLayoutEngine
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

    def render(formatter, fig):
        """The formatter's result, and (PNG bytes, the PNG data, its metadata, CSS width,
        smallest text in CSS px at the natural width, that text), or None for no PNG or no text."""
        drawn["sizes"] = []
        try:
            result = png_call(formatter, fig)
        finally:
            sizes, drawn["sizes"] = drawn["sizes"], None
        if result is None or not sizes:
            return result, None
        data, metadata = result if isinstance(result, tuple) else (result, None)
        try:
            raw = data if isinstance(data, bytes) else base64.b64decode(data)
            png_width = struct.unpack(">I", raw[16:20])[0]
        except Exception:  # noqa: BLE001 - not a PNG we can read: leave it unmeasured
            return result, None
        metadata = dict(metadata or {})
        css_width = metadata.get("width") or png_width
        px, text = min(sizes)
        return result, (raw, data, metadata, int(css_width), px * css_width / png_width, text[:40])

    def on_phone(natural_px, css_width):
        return natural_px * min(css_width, phone_px) / css_width

    def narrower(formatter, fig, natural_px, css_width):
        """The same figure drawn at the width where its text is target_px on a phone: fonts
        keep their size, the layout is redone; bbox "tight" may add width (text that sticks
        out), so the width is corrected from what each try measured, five tries at most."""
        size = fig.get_size_inches()
        engine = fig.get_layout_engine()
        scale, drawn_narrow = 1.0, None
        titles = {ax.title: ax.title.get_text() for ax in fig.axes if ax.title.get_text()}
        try:
            if not isinstance(engine, (ConstrainedLayoutEngine, TightLayoutEngine)):
                fig._layout_engine = TightLayoutEngine()  # redo the layout at each new size
            for _ in range(5):
                if drawn_narrow:  # (..., css width, smallest text at that width, text)
                    css_width, natural_px = drawn_narrow[3], drawn_narrow[4]
                shown_px = on_phone(natural_px, css_width)
                if shown_px >= target_px:
                    break
                scale = max(0.3, scale * shown_px / target_px * 0.98)
                fig.set_size_inches(size * scale, forward=False)
                wrap_titles(fig, titles)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    drawn_narrow = render(formatter, fig)[1] or drawn_narrow
            return drawn_narrow
        finally:
            fig._layout_engine = engine
            fig.set_size_inches(size, forward=False)
            for title, text in titles.items():
                title.set_text(text)

    def wrap_titles(fig, titles):
        """Each line of a title longer than its axes is wide breaks in two or more (not in a
        title with TeX in it)."""
        for title, text in titles.items():
            points = title.axes.get_position().width * fig.get_figwidth() * 72
            chars = max(12, int(points / (0.55 * title.get_fontsize())))
            lines = text.split("\n")
            title.set_text(text if "$" in text else "\n".join(textwrap.fill(line, chars) for line in lines))

    def measuring_call(self, obj):
        if not isinstance(obj, Figure):
            return png_call(self, obj)
        result, drawn_wide = render(self, obj)
        if drawn_wide is None:
            return result
        _, data, metadata, css_width, natural_px, text = drawn_wide
        shown = min(1.0, column_px / css_width)
        metadata.update(text_min_px=round(natural_px * shown, 2), text_min=text, css_width=css_width)
        if on_phone(natural_px, css_width) < target_px - 0.05:
            own = getattr(obj, "phone_layout", None)
            phone = render(self, own)[1] if isinstance(own, Figure) else narrower(self, obj, natural_px, css_width)
            if phone is not None:
                p_raw, _, p_meta, p_width, p_px, p_text = phone
                metadata["phone"] = {
                    "png": base64.b64encode(p_raw).decode("ascii"), "width": p_width,
                    "height": int(p_meta.get("height") or 0), "text_min_px": round(p_px, 2),
                    "text_min": p_text, "layout": "own" if isinstance(own, Figure) else "narrower"}
        return data, metadata

    PNGFormatter.__call__ = measuring_call
    PNGFormatter._text_probe = True


_install_figure_text_probe()
del _install_figure_text_probe
