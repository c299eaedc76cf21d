"""Scores of translations: corpus BLEU (one or several references), exact match, by length.

BLEU is computed by sacrebleu {Post 2018}, the standard implementation, never by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from attnlib._checks import check_int, check_ints, check_sentences

__all__ = [
    "LengthAccuracy",
    "LengthBLEU",
    "LengthGroup",
    "accuracy_by_length",
    "bleu",
    "bleu_by_length",
    "bleu_signature",
    "exact_match",
    "exact_match_any",
    "length_groups",
    "multi_reference_bleu",
]


def _as_text(sentence: str | Sequence[str]) -> str:
    return sentence if isinstance(sentence, str) else " ".join(sentence)


def _check_parallel(hypotheses: Sequence[object], references: Sequence[object],
                    name: str = "references") -> None:
    """Hypotheses and one reference (``references``) or a set of references
    (``reference_sets``) per hypothesis, sentences as str or token sequences."""
    check_sentences("hypotheses", hypotheses)
    if name == "references":
        check_sentences(name, references)
    else:
        if isinstance(references, str) or not isinstance(references, Sequence):
            raise TypeError(f"{name} must be a sequence of reference sets, got "
                            f"{type(references).__name__}")
        for i, refs in enumerate(references):
            check_sentences(f"{name}[{i}]", refs)
    if len(hypotheses) != len(references):
        raise ValueError(
            f"hypotheses and {name} must have the same length, got {len(hypotheses)} "
            f"hypotheses and {len(references)} {name}"
        )
    if len(hypotheses) == 0:
        raise ValueError("hypotheses and references are empty: a score needs at least one pair")


def bleu(
    hypotheses: Sequence[str | Sequence[str]], references: Sequence[str | Sequence[str]]
) -> float:
    """Corpus BLEU {Papineni et al. 2002} on a 0-100 scale, by ``sacrebleu.corpus_bleu``.

    Each hypothesis has one reference. A sentence is a string or a sequence of tokens (joined
    with spaces). sacrebleu's defaults apply (13a tokenisation, exponential smoothing, mixed
    case); :func:`bleu_signature` returns the signature to report with the score.

    Raises:
        ValueError: if the two lists differ in length or are empty.
    """
    import sacrebleu

    _check_parallel(hypotheses, references)
    result = sacrebleu.corpus_bleu([_as_text(h) for h in hypotheses],
                                   [[_as_text(r) for r in references]])
    return float(result.score)


def bleu_signature() -> str:
    """sacrebleu's signature of the settings :func:`bleu` uses, e.g. ``nrefs:1|...|version:2.6.0``."""
    from sacrebleu.metrics.bleu import BLEU

    metric = BLEU()
    metric.corpus_score(["a"], [["a"]])  # the signature counts the references of a scored corpus
    return str(metric.get_signature())


def multi_reference_bleu(
    hypotheses: Sequence[str | Sequence[str]],
    reference_sets: Sequence[Sequence[str | Sequence[str]]],
) -> float:
    """Corpus BLEU on a 0-100 scale where each hypothesis has several references.

    ``reference_sets[i]`` holds every correct translation of sentence i (at least one; the
    sets may differ in size), e.g. ``pair.references`` of :class:`attnlib.data.Pair`. BLEU
    counts an n-gram as right if some reference has it, and takes the brevity penalty from the
    reference closest in length (sacrebleu's ``corpus_bleu`` with several reference streams,
    shorter sets padded with ``None``). With one reference each it equals :func:`bleu`.

    Raises:
        ValueError: if the lists differ in length or are empty, or a set is empty.
    """
    import sacrebleu

    _check_parallel(hypotheses, reference_sets, "reference_sets")
    streams = _reference_streams(reference_sets)
    result = sacrebleu.corpus_bleu([_as_text(h) for h in hypotheses], streams)
    return float(result.score)


def _reference_streams(reference_sets: Sequence[Sequence[str | Sequence[str]]]) -> Any:
    """sacrebleu's reference streams: stream k holds reference k of every sentence, or None.

    Shared by :func:`multi_reference_bleu` and :class:`attnlib.train.comparison.ReferenceBLEU`.

    Raises:
        ValueError: if a set is a string or empty.
    """
    for i, refs in enumerate(reference_sets):
        if isinstance(refs, str) or len(refs) == 0:
            raise ValueError(f"reference_sets[{i}] must be a non-empty sequence of sentences, "
                             f"got {refs!r}")
    width = max(len(refs) for refs in reference_sets)
    # sacrebleu skips a None reference (its type hints do not say so)
    return [[_as_text(refs[k]) if k < len(refs) else None for refs in reference_sets]
            for k in range(width)]


def exact_match_any(
    hypotheses: Sequence[str | Sequence[str]],
    reference_sets: Sequence[Sequence[str | Sequence[str]]],
) -> float:
    """The fraction of hypotheses equal, token for token, to one of their references.

    Raises:
        ValueError: if the lists differ in length or are empty.
    """
    _check_parallel(hypotheses, reference_sets, "reference_sets")
    hits = sum(any(_as_text(h).split() == _as_text(r).split() for r in refs)
               for h, refs in zip(hypotheses, reference_sets, strict=True))
    return hits / len(hypotheses)


@dataclass(frozen=True)
class LengthGroup:
    """The ``count`` sentences whose length lies in [low, high]; ``label`` is "low–high"."""

    low: int
    high: int
    count: int

    @property
    def label(self) -> str:
        return str(self.low) if self.low == self.high else f"{self.low}–{self.high}"


def length_groups(lengths: Sequence[int], bins: Sequence[int] | None,
                  n_items: int) -> list[list[int]]:
    """The indices of ``lengths`` grouped by length, shortest group first, empty groups left out.

    ``bins`` are increasing lower edges: a group holds the lengths from one edge up to the next
    edge minus one, the last group is open-ended, and lengths below the first edge join the
    first group. None: one group per length that occurs.

    Raises:
        ValueError: if ``lengths`` does not have ``n_items`` entries, or ``bins`` is empty or
            not strictly increasing.
    """
    check_int("n_items", n_items, minimum=0)
    check_ints("lengths", lengths, minimum=0)
    if len(lengths) != n_items:
        raise ValueError(f"lengths must have one entry per hypothesis ({n_items}), got "
                         f"{len(lengths)}")
    if bins is None:
        edges = sorted(set(lengths))
    else:
        edges = check_ints("bins", bins, minimum=0)
        if not edges or any(b >= a for a, b in zip(edges[1:], edges, strict=False)):
            raise ValueError(f"bins must be a non-empty, strictly increasing list, got {edges}")
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        groups.setdefault(max((k for k, e in enumerate(edges) if e <= n), default=0), []).append(i)
    return [members for _, members in sorted(groups.items())]


@dataclass(frozen=True)
class LengthBLEU(LengthGroup):
    """Corpus BLEU (several references) of the sentences whose length lies in [low, high]."""

    bleu: float


def bleu_by_length(
    hypotheses: Sequence[str | Sequence[str]],
    reference_sets: Sequence[Sequence[str | Sequence[str]]],
    lengths: Sequence[int],
    bins: Sequence[int],
) -> list[LengthBLEU]:
    """:func:`multi_reference_bleu` of each group of sentences of similar length.

    Args:
        lengths: one length per sentence (usually the source length).
        bins: increasing lower edges, as in :func:`accuracy_by_length`: a group holds the
            lengths from one edge up to the next edge minus one, the last group is open-ended.

    Returns:
        One :class:`LengthBLEU` per non-empty group, shortest first.

    Raises:
        ValueError: if the lists differ in length or are empty, or ``bins`` is empty or not
            strictly increasing.
    """
    _check_parallel(hypotheses, reference_sets, "reference_sets")
    return [LengthBLEU(min(lengths[i] for i in members), max(lengths[i] for i in members),
                       len(members),
                       multi_reference_bleu([hypotheses[i] for i in members],
                                            [reference_sets[i] for i in members]))
            for members in length_groups(lengths, bins, len(hypotheses))]


def exact_match(
    hypotheses: Sequence[str | Sequence[str]], references: Sequence[str | Sequence[str]]
) -> float:
    """The fraction of hypotheses identical to their reference, token for token.

    Raises:
        ValueError: if the two lists differ in length or are empty.
    """
    _check_parallel(hypotheses, references)
    return exact_match_any(hypotheses, [[r] for r in references])


@dataclass(frozen=True)
class LengthAccuracy(LengthGroup):
    """Exact-match accuracy of the sentences whose length lies in [low, high]."""

    accuracy: float


def accuracy_by_length(
    hypotheses: Sequence[str | Sequence[str]],
    references: Sequence[str | Sequence[str]],
    lengths: Sequence[int],
    bins: Sequence[int] | None = None,
) -> list[LengthAccuracy]:
    """Exact-match accuracy grouped by sentence length (usually the source length).

    Args:
        lengths: one length per pair.
        bins: increasing lower edges; a group holds the lengths from one edge up to the next
            edge minus one (the last group is open-ended, lengths below the first edge are
            counted in the first group). None: one group per length that occurs.

    Returns:
        One :class:`LengthAccuracy` per non-empty group, shortest first.

    Raises:
        ValueError: if the lists differ in length or are empty, or ``bins`` is empty or not
            strictly increasing.
    """
    _check_parallel(hypotheses, references)
    result = []
    for members in length_groups(lengths, bins, len(hypotheses)):
        hits = sum(_as_text(hypotheses[i]).split() == _as_text(references[i]).split()
                   for i in members)
        result.append(LengthAccuracy(min(lengths[i] for i in members),
                                     max(lengths[i] for i in members), len(members),
                                     hits / len(members)))
    return result
