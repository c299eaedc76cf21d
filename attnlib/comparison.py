r"""Comparing two models fairly: the same number of parameters, the same training budget.

A comparison of two architectures says something only when neither has an advantage that is
not the architecture: more parameters, more training, more data. Chapter 7 compares the
Transformer with the GRU encoder-decoder with additive attention:

- :func:`closest_width` picks the width of one model whose parameter count is closest to a
  target (the other model's count), building candidates on PyTorch's ``meta`` device, which
  allocates no memory;
- the training budget is counted in optimiser steps on the same batches, which makes the
  number of training tokens equal too: :func:`training_tokens` counts the target tokens one
  pass over the pairs predicts, and :func:`tokens_per_second` turns a training time into a
  throughput (a time, so it differs between machines and runs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import torch
from torch import nn

from attnlib._checks import check_int, check_positive
from attnlib.data import TokenPair

__all__ = ["closest_width", "count_parameters", "tokens_per_second", "training_tokens"]


def count_parameters(model: nn.Module) -> int:
    """The number of trainable numbers in ``model``; a tensor shared by two layers counts once.

    Raises:
        TypeError: if ``model`` is not an ``nn.Module``.
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def closest_width(
    build: Callable[[int], nn.Module], target: int, widths: Iterable[int]
) -> tuple[int, int]:
    """The width whose model has the parameter count closest to ``target``.

    ``build(width)`` is called once per candidate under ``torch.device("meta")``, so the
    candidates cost no memory and no initialisation time. Ties go to the smaller width.

    Args:
        build: makes a model of the given width (for instance a hidden size).
        target: the parameter count to match, >= 1.
        widths: the candidate widths, at least one.

    Returns:
        ``(width, count)``: the chosen width and its model's parameter count.

    Raises:
        ValueError: if ``target`` < 1 or ``widths`` is empty; TypeError if ``build`` does not
            return an ``nn.Module``.
    """
    check_int("target", target, minimum=1)
    candidates = sorted(set(widths))
    if not candidates:
        raise ValueError("widths is empty: closest_width needs at least one candidate width")
    best: tuple[int, int] | None = None
    for width in candidates:
        with torch.device("meta"):
            count = count_parameters(build(width))
        if best is None or abs(count - target) < abs(best[1] - target):
            best = (width, count)
    assert best is not None
    return best


def training_tokens(pairs: Sequence[TokenPair]) -> int:
    """The target tokens one pass of teacher forcing over ``pairs`` predicts: words + ``<eos>``.

    Raises:
        ValueError: if ``pairs`` is empty.
    """
    if len(pairs) == 0:
        raise ValueError("pairs is empty: training_tokens needs at least one pair")
    return sum(len(p.tgt) + 1 for p in pairs)


def tokens_per_second(pairs: Sequence[TokenPair], epochs: int, seconds: float) -> float:
    """Training throughput: ``epochs`` passes over ``pairs`` in ``seconds`` of wall-clock time.

    Raises:
        ValueError: if ``pairs`` is empty, ``epochs`` < 1, or ``seconds`` is not finite and > 0.
        TypeError: if ``epochs`` is not an int or ``seconds`` not a number.
    """
    check_int("epochs", epochs, minimum=1)
    check_positive("seconds", seconds)
    return epochs * training_tokens(pairs) / seconds
