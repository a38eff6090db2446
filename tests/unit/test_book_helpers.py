"""The book's shared helpers (book/helpers/), which the chapters load with MyST-NB's `:load:`:
the cell-text colour against WCAG's contrast ratios, the heatmap's written cells, the training
loop against steps worked out by hand; and no chapter keeps a copy of its own."""
from __future__ import annotations

import importlib.util
import re

import matplotlib
import numpy as np
import pytest
import torch

from tests.conftest import ROOT

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

HELPERS = ROOT / "book" / "helpers"
CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.md"))


def helper(name: str):
    spec = importlib.util.spec_from_file_location(name, HELPERS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def contrast(rgb, text) -> float:
    """WCAG 2's contrast ratio of text (0 black, 1 white) on a cell of colour rgb."""
    def luminance(c):
        c = np.asarray(c, dtype=float)
        return float(np.dot(np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4),
                            [0.2126, 0.7152, 0.0722]))
    lighter, darker = sorted([luminance(rgb[:3]), luminance([text] * 3)], reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def test_cell_text_is_whichever_of_black_and_white_contrasts_more():
    text_colour = helper("heatmap").text_colour
    gen = np.random.default_rng(0)
    colours = [*gen.random((300, 3)), *(plt.get_cmap(m)(v) for m in ["viridis", "Blues", "RdBu_r", "Greens",
                                                                      "Oranges"] for v in np.linspace(0, 1, 41))]
    for rgb in colours:
        best = "black" if contrast(rgb, 0.0) >= contrast(rgb, 1.0) else "white"
        margin = abs(contrast(rgb, 0.0) - contrast(rgb, 1.0))
        assert text_colour(rgb) == best or margin < 1e-3, f"{rgb}: {text_colour(rgb)}, but {best} contrasts more"


def test_heatmap_writes_each_allowed_cell_once_and_a_dash_where_blocked():
    heatmap = helper("heatmap").heatmap
    M = np.array([[0.05, 0.5, 0.95], [0.2, 0.0, 0.8]])
    blocked = np.array([[False, False, True], [False, False, False]])
    fig, ax = plt.subplots()
    image = heatmap(ax, M, ["q0", "q1"], ["k0", "k1", "k2"], "t", blocked=blocked, write=lambda w: w >= 0.1,
                    colorbar=dict(label="weight"))
    texts = {(t.get_position()): (t.get_text(), t.get_color()) for t in ax.texts}
    assert texts[(2, 0)][0] == "–"
    written = {pos: text for pos, (text, _) in texts.items() if text != "–"}
    assert written == {(1, 0): "0.50", (0, 1): "0.20", (2, 1): "0.80"}   # (column, row)
    for (j, i), (text, colour) in texts.items():
        if text != "–":
            rgb = image.cmap(image.norm(M[i, j]))
            assert colour == ("black" if contrast(rgb, 0.0) >= contrast(rgb, 1.0) else "white")
    assert [t.get_text() for t in ax.get_xticklabels()] == ["k0", "k1", "k2"]
    assert fig.axes[1].get_ylabel() == "weight" and ax.get_title() == "t"
    bare = fig.add_subplot(2, 2, 4)
    heatmap(bare, M, ["q0", "q1"], ["k0", "k1", "k2"], "no numbers", blocked=blocked, fmt=None)
    assert not bare.texts, "fmt=None must leave every cell empty, blocked ones too"
    plt.close(fig)


def test_the_training_loop_takes_the_steps_worked_out_by_hand():
    """y = w x with loss (w x - t)^2: plain SGD moves w by lr * 2 x (w x - t) each step; clipped,
    by lr * clip against the gradient's sign; under a schedule halving the rate, by half as much
    at each step."""
    train = helper("training").train
    x, t, lr = 2.0, 3.0, 0.05
    cases = {"plain": dict(), "clipped": dict(clip=0.1),
             "halving": dict(schedule=lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda i: 0.5 ** i))}
    for name, options in cases.items():
        model = torch.nn.Linear(1, 1, bias=False)
        with torch.no_grad():
            model.weight.fill_(0.5)
        losses = train(model, [(x, t)] * 4, lambda m, b: (m(torch.tensor([[b[0]]]))[0, 0] - b[1]) ** 2, lr,
                       optimiser=torch.optim.SGD, **options)
        w, expected = 0.5, []
        for step in range(4):
            expected.append((w * x - t) ** 2)
            gradient = 2 * x * (w * x - t)
            if name == "clipped":
                gradient = np.sign(gradient) * min(abs(gradient), 0.1)
            w -= lr * (0.5 ** step if name == "halving" else 1) * gradient
        assert losses == pytest.approx(expected, rel=1e-6), name
        assert model.weight.item() == pytest.approx(w, rel=1e-6), name


def test_batches_in_order_and_shuffled_cover_the_rows_as_described():
    training = helper("training")
    X = torch.arange(10)
    assert [b[0].tolist() for b in training.in_order(X, batch=4, steps=2)] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    passes = list(training.shuffled(10, 4, 2, torch.Generator().manual_seed(0)))
    assert [len(b) for b in passes] == [4, 4, 2, 4, 4, 2]
    assert sorted(torch.cat(passes[:3]).tolist()) == list(range(10)) == sorted(torch.cat(passes[3:]).tolist())


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_no_chapter_keeps_its_own_copy_of_a_shared_helper(chapter):
    text = chapter.read_text()
    copies = re.findall(r"^def (text_colou?r|\w*heatmap|train)\(", text, re.M)
    assert not copies, f"{chapter.name} defines {copies}: load book/helpers/ instead"
    loaded = re.findall(r"^:load: (\S+)", text, re.M)
    for path in loaded:
        assert (chapter.parent / path).is_file(), f"{chapter.name} loads {path}, which is not there"
    for name, module in [("heatmap", "helpers/heatmap.py"), ("text_colour", "helpers/heatmap.py"),
                         ("train", "helpers/training.py")]:
        if re.search(rf"(?<![\w.]){name}\(", text.replace(f"def {name}(", "")):
            assert module in loaded, f"{chapter.name} calls {name}() without loading {module}"


def test_a_loaded_helper_is_the_cells_source_so_editing_it_executes_the_page_again(tmp_path):
    """MyST-NB reads `:load:` into the cell's source, which is what the execution cache hashes:
    a change to a helper changes the key of every page that loads it (an `import` would not)."""
    from jupyter_cache import get_cache
    from myst_nb.core.read import read_myst_markdown_notebook

    chapter = ROOT / "book" / "04_seq2seq_attention.md"
    notebook = read_myst_markdown_notebook(chapter.read_text(), path=chapter)
    sources = [cell.source.strip() for cell in notebook.cells if cell.cell_type == "code"]
    for name in ["heatmap", "training"]:
        assert (HELPERS / f"{name}.py").read_text().strip() in sources
    cache = get_cache(str(tmp_path))
    _, key = cache.create_hashed_notebook(notebook)
    loaded = next(c for c in notebook.cells if c.source.startswith('"""The book\'s training loop'))
    loaded.source += "\n# an edit"
    assert cache.create_hashed_notebook(notebook)[1] != key
