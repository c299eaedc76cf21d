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
  throughput (a time, so it differs between machines and runs);
- :class:`ReferenceBLEU` scores many systems, and groups of sentences, against one test set's
  references, preparing the references once: the same scores as
  :func:`attnlib.train.metrics.multi_reference_bleu`, without re-reading every reference at every
  call (which is most of that function's time on a test set with many references).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

import torch
from torch import nn

from attnlib._checks import check_int, check_ints, check_positive, check_sentences
from attnlib.data import TokenPair
from attnlib.train._arguments import check_pairs
from attnlib.train.metrics import LengthBLEU, _as_text, _reference_streams, length_groups

__all__ = [
    "ReferenceBLEU",
    "closest_width",
    "count_parameters",
    "tokens_per_second",
    "training_tokens",
]


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
    if not callable(build):
        raise TypeError(f"build must be callable as build(width), got {type(build).__name__}")
    if isinstance(widths, str) or not isinstance(widths, Iterable):
        raise TypeError(f"widths must be an iterable of ints, got {type(widths).__name__}")
    candidates = sorted(set(check_ints("widths", list(widths), minimum=1)))
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
    check_pairs("pairs", pairs)
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


class ReferenceBLEU:
    """Corpus BLEU against the references of one test set, the references prepared once.

    sacrebleu {Post 2018} computes corpus BLEU from per-sentence statistics (matched and total
    n-grams of orders 1 to 4, hypothesis and closest reference length) summed over the corpus.
    This class tokenises the references and counts their n-grams once, at construction; each
    call then only reads the hypotheses, and a group of sentences is scored by summing the
    statistics of its members. The scores equal :func:`attnlib.train.metrics.multi_reference_bleu`
    and :func:`attnlib.train.metrics.bleu_by_length` (sacrebleu's defaults; tested).

    Args:
        reference_sets: ``reference_sets[i]`` holds every correct translation of sentence i
            (strings or token sequences), at least one each.

    Raises:
        ValueError: if ``reference_sets`` is empty or one set is empty.
    """

    def __init__(self, reference_sets: Sequence[Sequence[str | Sequence[str]]]) -> None:
        from sacrebleu.metrics.bleu import BLEU

        if isinstance(reference_sets, str) or not isinstance(reference_sets, Sequence):
            raise TypeError(f"reference_sets must be a sequence of reference sets, got "
                            f"{type(reference_sets).__name__}")
        for i, refs in enumerate(reference_sets):
            check_sentences(f"reference_sets[{i}]", refs)
        if len(reference_sets) == 0:
            raise ValueError("reference_sets is empty: ReferenceBLEU needs at least one sentence")
        self._metric: Any = cast(Any, BLEU(references=_reference_streams(reference_sets)))
        self._info: list[Any] = list(self._metric._ref_cache)

    def __len__(self) -> int:
        return len(self._info)

    def _statistics(self, hypotheses: Sequence[str | Sequence[str]]) -> list[list[int]]:
        check_sentences("hypotheses", hypotheses)
        if len(hypotheses) != len(self._info):
            raise ValueError(f"hypotheses must have one sentence per reference set "
                             f"({len(self._info)}), got {len(hypotheses)}")
        metric = self._metric
        return [metric._compute_segment_statistics(metric._preprocess_segment(_as_text(h)), info)
                for h, info in zip(hypotheses, self._info, strict=True)]

    def bleu(self, hypotheses: Sequence[str | Sequence[str]]) -> float:
        """Corpus BLEU (0-100) of ``hypotheses``, one per reference set.

        Raises:
            ValueError: if the number of hypotheses differs from the number of reference sets.
        """
        return float(self._metric._aggregate_and_compute(self._statistics(hypotheses)).score)

    def bleu_by_length(
        self,
        hypotheses: Sequence[str | Sequence[str]],
        lengths: Sequence[int],
        bins: Sequence[int],
    ) -> list[LengthBLEU]:
        """Corpus BLEU of each group of sentences of similar length.

        The groups are those of :func:`attnlib.train.metrics.bleu_by_length`: ``bins`` are
        increasing lower edges, the last group is open-ended, lengths below the first edge
        join the first group.

        Returns:
            One :class:`attnlib.train.metrics.LengthBLEU` per non-empty group, shortest first.

        Raises:
            ValueError: if ``hypotheses`` or ``lengths`` does not have one entry per reference
                set, or ``bins`` is empty or not strictly increasing.
        """
        stats = self._statistics(hypotheses)
        return [LengthBLEU(min(lengths[i] for i in members), max(lengths[i] for i in members),
                           len(members),
                           float(self._metric._aggregate_and_compute(
                               [stats[i] for i in members]).score))
                for members in length_groups(lengths, bins, len(stats))]
