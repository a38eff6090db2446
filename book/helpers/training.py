"""The book's training loop: one optimiser step per batch.

Every chapter that trains a model uses this loop, pulled into the page with
MyST-NB's `:load:`; the chapter says what a batch is and what the loss is.
"""
import torch
from torch import nn


def train(model, batches, loss_of, lr, *, optimiser=torch.optim.Adam,
          clip=None, schedule=None):
    """Train model with one optimiser step per batch; returns the losses.

    batches: an iterable of batches, each what loss_of takes.
    loss_of(model, batch): the batch's loss, a tensor with one number.
    optimiser: a torch.optim class, made with lr (else its defaults).
    clip: if given, the gradients' norm is clipped to it before a step.
    schedule(optimiser): if given, a learning-rate scheduler, stepped
        after every step.
    """
    opt = optimiser(model.parameters(), lr=lr)
    scheduler = None if schedule is None else schedule(opt)
    losses = []
    for batch in batches:
        loss = loss_of(model, batch)
        opt.zero_grad()
        loss.backward()
        if clip is not None:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if scheduler is not None:
            scheduler.step()
        losses.append(loss.item())
    return losses


def in_order(*tensors, batch, steps):
    """`steps` batches of `batch` rows of every tensor, taken in order:
    rows 0 .. batch - 1 first, then the next `batch` rows, and so on."""
    for step in range(steps):
        rows = slice(step * batch, (step + 1) * batch)
        yield tuple(t[rows] for t in tensors)


def shuffled(n, batch, epochs, gen):
    """Row numbers of `epochs` passes over n rows, each pass in a new random
    order (drawn from the torch.Generator gen), `batch` rows at a time."""
    for _ in range(epochs):
        yield from torch.randperm(n, generator=gen).split(batch)
