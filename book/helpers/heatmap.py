"""A matrix drawn as a labelled heatmap, each cell's number written in it.

Every chapter draws its heatmaps (attention weights, similarities, counts)
with this one function, pulled into the page with MyST-NB's `:load:`.
"""
import numpy as np
from matplotlib import colormaps
from matplotlib.colors import to_rgb


def text_colour(colour):
    """Black or white, whichever contrasts more with a cell of `colour`.

    Relative luminance (WCAG 2): black text wins above 0.179, where its
    contrast ratio with the cell equals white's.
    """
    c = np.array(to_rgb(colour))
    linear = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    luminance = linear @ [0.2126, 0.7152, 0.0722]
    return "black" if luminance > 0.179 else "white"


def heatmap(ax, M, row_labels, col_labels, title, *, cmap="viridis",
            vmin=0.0, vmax=1.0, fmt="{:.2f}", fontsize=10, write=None,
            blocked=None, rotation=45, aspect=None, colorbar=None,
            xlabel=None, ylabel=None, tick_size=None, label_size=None,
            title_size=None):
    """Draw the matrix M (rows x columns) on ax; returns the image.

    cmap, vmin, vmax: the colours; vmax=None is the largest |M|, and
        vmin=None is -vmax (a diverging map centred on 0).
    fmt: how each cell's number is written (None: nothing is written in
        the cells); write: a test of a value, only cells that pass it get
        their number.
    blocked: a boolean matrix of M's shape; True cells are light grey,
        with a dash (masked positions).
    colorbar: None for no colour bar, or its keywords (label=..., ...).
    rotation: of the column labels (0: upright); the sizes are in points
        (None: matplotlib's defaults).
    """
    M = np.asarray(M)
    vmax = np.abs(M).max() if vmax is None else vmax
    vmin = -vmax if vmin is None else vmin
    if blocked is not None:
        blocked = np.asarray(blocked, dtype=bool)
        cmap = colormaps[cmap].with_extremes(bad="0.85")
        M = np.ma.masked_array(M, blocked)
    image = ax.imshow(M, cmap=cmap, vmin=vmin, vmax=vmax, aspect=aspect)
    if colorbar is not None:
        ax.figure.colorbar(image, ax=ax, **colorbar)
    ticks = sized(tick_size)
    turned = dict(rotation=rotation, ha="right") if rotation else {}
    ax.set_xticks(range(len(col_labels)), col_labels, **ticks, **turned)
    ax.set_yticks(range(len(row_labels)), row_labels, **ticks)
    if fmt:
        write_numbers(ax, image, M, blocked, fmt, write, fontsize)
    if xlabel:
        ax.set_xlabel(xlabel, **sized(label_size))
    if ylabel:
        ax.set_ylabel(ylabel, **sized(label_size))
    ax.set_title(title, **sized(title_size))
    return image


def write_numbers(ax, image, M, blocked, fmt, write, fontsize):
    """Each cell's number (of the cells `write` passes) in black or white,
    whichever contrasts more with the cell's colour; a dash where blocked."""
    for i in range(M.shape[0]):
        for j in range(M.shape[1]):
            if blocked is not None and blocked[i, j]:
                ax.text(j, i, "–", ha="center", va="center",
                        fontsize=fontsize, color="0.3")
            elif write is None or write(M[i, j]):
                cell = image.cmap(image.norm(M[i, j]))   # the colour drawn
                ax.text(j, i, fmt.format(M[i, j]), ha="center",
                        va="center", fontsize=fontsize,
                        color=text_colour(cell))


def sized(fontsize):
    """The keywords for a font size; none for matplotlib's default."""
    return {} if fontsize is None else {"fontsize": fontsize}
