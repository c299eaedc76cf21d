r"""Training and evaluating translation models: progress bars, teacher forcing, BLEU, accuracy.

Shared by every chapter that trains an encoder-decoder. :func:`train_seq2seq` works with any
model whose ``forward(src, src_lengths, tgt_in)`` returns logits (B, L, V), or a tuple whose
first element is the logits; :func:`translate` works with any greedy decoder that has the
signature of :func:`attnlib.seq2seq.greedy_decode`.

Progress bars come from :mod:`attnlib.progress`: a reader sees them, stored outputs never hold them.
BLEU is computed by sacrebleu {Post 2018}, the standard implementation, never by hand.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlib._checks import check_floating, check_int, check_positive, check_tensor
from attnlib.data import BOS_ID, EOS, EOS_ID, PAD_ID, TokenPair, Vocab, batches, pad_batch
from attnlib.progress import progress

__all__ = [
    "GreedyDecoder",
    "History",
    "LengthAccuracy",
    "LengthBLEU",
    "LengthGroup",
    "Translation",
    "accuracy_by_length",
    "bleu",
    "bleu_by_length",
    "bleu_signature",
    "exact_match",
    "exact_match_any",
    "length_groups",
    "multi_reference_bleu",
    "train_seq2seq",
    "translate",
]

# ---------------------------------------------------------------------------------------------
# Teacher-forcing training
# ---------------------------------------------------------------------------------------------


@dataclass
class History:
    """What :func:`train_seq2seq` did.

    ``losses[k]`` is the mean cross-entropy per target token (nats) over epoch k + 1, computed
    on the fly during the epoch. ``seconds`` is the wall-clock training time, which differs
    between machines: print it only in cells whose output is not compared.
    """

    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def epochs(self) -> int:
        return len(self.losses)


def _logits_of(output: Tensor | tuple[Tensor, ...]) -> Tensor:
    return output[0] if isinstance(output, tuple) else output


def train_seq2seq(
    model: nn.Module,
    pairs: Sequence[TokenPair],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    *,
    epochs: int,
    batch_size: int = 64,
    lr: float = 3e-3,
    clip: float | None = 1.0,
    seed: int = 0,
    callback: Callable[[int, float], bool | None] | None = None,
    desc: str | None = None,
    by_length: bool = False,
    lr_schedule: str = "constant",
) -> History:
    r"""Train an encoder-decoder by teacher forcing with Adam.

    Each step minimises the cross-entropy of the next target word given the true previous ones,

    .. math::

        \mathcal L = -\frac{1}{N} \sum_{b} \sum_{t=1}^{n_b + 1} \log p(y_{b,t} \mid y_{b,<t}, \mathbf x_b),

    where :math:`y_{b, n_b+1}` is ``<eos>`` and N counts the real target tokens (``<pad>`` is
    ignored). Gradients are clipped to norm ``clip`` (None: no clipping). Epoch k (from 0) visits
    the pairs in the order shuffled by ``random.Random(seed + k)``, so a run is reproducible and
    each epoch has a new order.

    Args:
        model: maps ``(src, src_lengths, tgt_in)`` to logits (B, L, V) or a tuple starting with them.
        pairs: training pairs (anything with ``src`` and ``tgt`` token sequences).
        epochs: number of passes over ``pairs``.
        callback: called after each epoch as ``callback(epoch, loss)`` with epoch from 1;
            returning True stops training.
        desc: the progress bar's label.
        by_length: batch pairs of similar source length together (see
            :func:`attnlib.data.batches`), so a recurrent model runs few padded steps.
        lr_schedule: ``"constant"`` (``lr`` at every step) or ``"cosine"``: step k of T (from
            0, T = ``epochs`` times the batches per epoch) uses
            :math:`\mathrm{lr}\cdot\tfrac12\,(1 + \cos(\pi k / T))`, from ``lr`` down to
            almost 0 {Loshchilov 2017}.

    Returns:
        The :class:`History` of epoch losses and the training time.

    Raises:
        TypeError, ValueError: for an ``epochs`` or ``batch_size`` that is not an int >= 1, an
            ``lr`` or ``clip`` that is not finite and > 0, or bad ``pairs`` (see
            :func:`attnlib.data.batches`).
    """
    check_int("epochs", epochs, minimum=1)
    check_int("batch_size", batch_size, minimum=1)
    check_positive("lr", lr)
    if clip is not None:
        check_positive("clip", clip)
    if lr_schedule not in ("constant", "cosine"):
        raise ValueError(f"lr_schedule must be 'constant' or 'cosine', got {lr_schedule!r}")
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    total_steps = epochs * math.ceil(len(pairs) / batch_size)
    step = 0
    history = History()
    start = time.perf_counter()
    model.train()
    bar = progress(range(epochs), total=epochs, desc=desc or "training", unit="epoch")
    for epoch in bar:
        total_loss, total_tokens = 0.0, 0
        for batch in batches(pairs, src_vocab, tgt_vocab, batch_size, shuffle=True,
                             seed=seed + epoch, by_length=by_length):
            logits = _logits_of(model(batch.src, batch.src_lengths, batch.tgt_in))  # (B, L, V)
            loss = F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(),
                                   ignore_index=PAD_ID)
            optimizer.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            if clip is not None:
                nn.utils.clip_grad_norm_(model.parameters(), clip)
            if lr_schedule == "cosine":
                optimizer.param_groups[0]["lr"] = lr * 0.5 * (1 + math.cos(math.pi * step / total_steps))
            optimizer.step()
            step += 1
            tokens = int(batch.tgt_lengths.sum())
            total_loss += float(loss.detach()) * tokens
            total_tokens += tokens
        history.losses.append(total_loss / total_tokens)
        if hasattr(bar, "set_postfix"):
            bar.set_postfix(loss=f"{history.losses[-1]:.4f}")
        if callback is not None and callback(epoch + 1, history.losses[-1]):
            break
    history.seconds = time.perf_counter() - start
    model.eval()
    return history


# ---------------------------------------------------------------------------------------------
# Translation
# ---------------------------------------------------------------------------------------------


class GreedyDecoder(Protocol):
    """The signature of :func:`attnlib.seq2seq.greedy_decode`."""

    def __call__(
        self, model: Any, src: Tensor, src_lengths: Tensor, max_len: int, bos_id: int,
        eos_id: int,
    ) -> tuple[Tensor, Tensor]: ...


@dataclass(frozen=True)
class Translation:
    """One translated sentence and the attention weights that produced it.

    ``tokens`` are the words of the translation (what BLEU and exact match compare);
    ``output`` is every token the decoder produced, one per row of ``weights``: the words, then
    ``<eos>`` if the model stopped (and any special token it produced on the way).

    Shape:
        weights: (len(output), len(src)), one column per source word. For a model with several
        attention layers or heads, whatever (L, S) map its decoder returns.
    """

    src: tuple[str, ...]
    tokens: tuple[str, ...]
    output: tuple[str, ...]
    weights: Tensor

    @property
    def finished(self) -> bool:
        """Whether the decoder produced ``<eos>`` (rather than stopping at ``max_len``)."""
        return len(self.output) > 0 and self.output[-1] == EOS

    @property
    def text(self) -> str:
        return " ".join(self.tokens)


def _tokens_of(sentence: str | Sequence[str], i: int) -> tuple[str, ...]:
    tokens = tuple(sentence.split()) if isinstance(sentence, str) else tuple(sentence)
    if len(tokens) == 0:
        raise ValueError(f"sentences[{i}] is empty: every sentence needs at least one token")
    return tokens


def translate(
    model: nn.Module,
    sentences: Sequence[str | Sequence[str]],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    *,
    max_len: int | None = None,
    batch_size: int = 256,
    decode: GreedyDecoder | None = None,
) -> list[Translation]:
    """Translate source sentences greedily, in batches, keeping the attention weights.

    A sentence is a string of space-separated tokens (``"我 爱 机器学习"``) or a sequence of
    tokens. Tokens the source vocabulary does not hold become ``<unk>``. Decoding stops at
    ``<eos>`` or after ``max_len`` tokens (default: twice the longest source in the batch,
    plus 5).

    Args:
        decode: the greedy decoder, by default :func:`attnlib.seq2seq.greedy_decode`.

    Raises:
        ValueError: if ``sentences`` is empty or one sentence is empty; the errors of ``decode``
            for a sentence the model refuses (e.g. one longer than its ``max_src_len``).
    """
    if decode is None:
        from attnlib.seq2seq import greedy_decode

        decode = greedy_decode
    check_int("batch_size", batch_size, minimum=1)
    if max_len is not None:
        check_int("max_len", max_len, minimum=1)
    if len(sentences) == 0:
        raise ValueError("sentences is empty: translate needs at least one sentence")
    sources = [_tokens_of(s, i) for i, s in enumerate(sentences)]
    results: list[Translation] = []
    for start in range(0, len(sources), batch_size):
        chunk = sources[start : start + batch_size]
        src, src_lengths = pad_batch([src_vocab.encode(s) for s in chunk])  # (B, S)
        limit = max_len if max_len is not None else 2 * int(src_lengths.max()) + 5
        out, weights = decode(model, src, src_lengths, limit, BOS_ID, EOS_ID)  # (B, L), (B, L, S)
        for b, source in enumerate(chunk):
            ids = out[b].tolist()
            n_rows = ids.index(EOS_ID) + 1 if EOS_ID in ids else len(ids)
            results.append(Translation(
                src=source,
                tokens=tuple(tgt_vocab.decode(ids[:n_rows])),
                output=tuple(tgt_vocab.decode(ids[:n_rows], strip_special=False)),
                weights=weights[b, :n_rows, : len(source)].clone(),  # (len(output), len(src))
            ))
    return results


# ---------------------------------------------------------------------------------------------
# Scores
# ---------------------------------------------------------------------------------------------


def _as_text(sentence: str | Sequence[str]) -> str:
    return sentence if isinstance(sentence, str) else " ".join(sentence)


def _check_parallel(hypotheses: Sequence[object], references: Sequence[object]) -> None:
    if len(hypotheses) != len(references):
        raise ValueError(
            f"hypotheses and references must have the same length, got {len(hypotheses)} "
            f"hypotheses and {len(references)} references"
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

    _check_parallel(hypotheses, reference_sets)
    streams = _reference_streams(reference_sets)
    result = sacrebleu.corpus_bleu([_as_text(h) for h in hypotheses], streams)
    return float(result.score)


def _reference_streams(reference_sets: Sequence[Sequence[str | Sequence[str]]]) -> Any:
    """sacrebleu's reference streams: stream k holds reference k of every sentence, or None.

    Shared by :func:`multi_reference_bleu` and :class:`attnlib.comparison.ReferenceBLEU`.

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
    _check_parallel(hypotheses, reference_sets)
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
    if len(lengths) != n_items:
        raise ValueError(f"lengths must have one entry per hypothesis ({n_items}), got "
                         f"{len(lengths)}")
    if bins is None:
        edges = sorted(set(lengths))
    else:
        edges = list(bins)
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
    _check_parallel(hypotheses, reference_sets)
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


# ---------------------------------------------------------------------------------------------
# Training a Transformer: label smoothing, the warm-up schedule, the loop
# ---------------------------------------------------------------------------------------------

__all__ += [
    "LabelSmoothingLoss",
    "TransformerHistory",
    "noam_lr",
    "noam_schedule",
    "train_transformer",
]


class LabelSmoothingLoss(nn.Module):
    r"""Cross-entropy against a smoothed target distribution {Szegedy et al. 2016}.

    The paper trains with :math:`\varepsilon_{ls} = 0.1`: the target is not the one-hot vector
    of the right word y but puts :math:`\varepsilon` of its mass uniformly on all V words,

    .. math::

        q_c = (1 - \varepsilon)\,[c = y] + \frac{\varepsilon}{V}, \qquad
        \ell = -\sum_{c} q_c \log p_c
             = (1 - \varepsilon)\,(-\log p_y) + \varepsilon \cdot \frac{1}{V}\sum_c (-\log p_c),

    so the model is penalised for becoming over-confident; this hurts perplexity and helps
    BLEU. Tokens whose target is ``ignore_index`` (``<pad>``) count neither in the sum nor in
    the mean. The uniform part covers all V classes, ``<pad>`` included: exactly
    ``F.cross_entropy(logits, target, label_smoothing=smoothing, ignore_index=ignore_index)``.

    Args:
        smoothing: :math:`\varepsilon` in [0, 1); 0 is the ordinary cross-entropy.
        ignore_index: the target id that contributes nothing.
        reduction: ``"mean"`` over the counted tokens, ``"sum"``, or ``"none"``.

    Shape:
        - logits: (..., V), e.g. (B, L, V)
        - target: (...), e.g. (B, L), integer ids
        - output: scalar, or (...) for ``"none"`` (0 where ignored). With ``"mean"`` and every
          target ignored the loss is 0 (``F.cross_entropy`` returns NaN there).

    Raises:
        ValueError: if ``smoothing`` is not in [0, 1), ``reduction`` is unknown, the shapes
            of ``logits`` and ``target`` do not match, or a target id is outside [0, V) and
            not ``ignore_index``.
        TypeError: if ``logits`` is not floating point or ``target`` not integer.
    """

    def __init__(
        self, smoothing: float = 0.1, ignore_index: int = PAD_ID, reduction: str = "mean"
    ) -> None:
        super().__init__()
        if isinstance(smoothing, bool) or not isinstance(smoothing, int | float) or \
                not 0.0 <= smoothing < 1.0:
            raise ValueError(f"smoothing must be a float in [0, 1), got {smoothing!r}")
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        self.smoothing = float(smoothing)
        self.ignore_index = ignore_index
        self.reduction = reduction

    def extra_repr(self) -> str:
        return (f"smoothing={self.smoothing}, ignore_index={self.ignore_index}, "
                f"reduction={self.reduction!r}")

    def forward(self, logits: Tensor, target: Tensor) -> Tensor:
        self._check_inputs(logits, target)
        log_probs = F.log_softmax(logits, dim=-1)  # (..., V)
        counted = target != self.ignore_index  # (...)
        safe = target.masked_fill(~counted, 0)  # any valid index; masked out below
        nll = -log_probs.gather(-1, safe[..., None]).squeeze(-1)  # (...)
        uniform = -log_probs.mean(dim=-1)  # (...)
        loss = ((1.0 - self.smoothing) * nll + self.smoothing * uniform) * counted  # (...)
        if self.reduction == "none":
            return loss
        if self.reduction == "sum":
            return loss.sum()
        return loss.sum() / counted.sum().clamp(min=1)  # 0, not 0/0, if every target is ignored

    def _check_inputs(self, logits: Tensor, target: Tensor) -> None:
        logits = check_tensor("logits", logits)
        target = check_tensor("target", target)
        check_floating("logits", logits)
        if logits.ndim < 1 or logits.shape[:-1] != target.shape:
            raise ValueError(
                f"logits (..., V) and target (...) must agree in (...), got logits of shape "
                f"{tuple(logits.shape)} and target of shape {tuple(target.shape)}"
            )
        if target.is_floating_point() or target.is_complex() or target.dtype == torch.bool:
            raise TypeError(f"target must hold integer class ids, got dtype {target.dtype}")
        V = logits.shape[-1]
        outside = ((target < 0) | (target >= V)) & (target != self.ignore_index)
        if bool(outside.any()):
            raise ValueError(f"target must hold ids in [0, V) = [0, {V}) or ignore_index = "
                             f"{self.ignore_index}, got id {int(target[outside][0])}")


def noam_lr(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    r"""The learning rate of "Attention Is All You Need" at (1-based) step ``step``.

    .. math::

        \text{lr}(s) = \text{factor} \cdot d_{model}^{-0.5}
            \cdot \min\!\left(s^{-0.5},\; s \cdot \text{warmup}^{-1.5}\right)

    It grows linearly for the first ``warmup`` steps, peaks at s = ``warmup`` with
    :math:`\text{factor} / \sqrt{d_{model} \cdot \text{warmup}}`, then decays like
    :math:`1/\sqrt{s}`. The paper: d_model = 512, warmup = 4000, factor = 1.

    Raises:
        ValueError: if ``step``, ``d_model`` or ``warmup`` is < 1, or ``factor`` is not > 0.
    """
    check_int("step", step, minimum=1)
    check_int("d_model", d_model, minimum=1)
    check_int("warmup", warmup, minimum=1)
    check_positive("factor", factor)
    return float(factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5))


def noam_schedule(d_model: int, warmup: int, factor: float = 1.0) -> Callable[[int], float]:
    """The paper's schedule as a ``LambdaLR`` function: index i (from 0) gives ``noam_lr(i + 1)``.

    ``torch.optim.lr_scheduler.LambdaLR`` multiplies the optimiser's own learning rate by the
    function's value, so create the optimiser with ``lr=1.0``::

        optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, noam_schedule(512, 4000))
        # after each optimizer.step(): scheduler.step()

    Raises:
        The errors of :func:`noam_lr`.
    """
    noam_lr(1, d_model, warmup, factor)  # validates the arguments now, not at the first step

    def schedule(index: int) -> float:
        return noam_lr(index + 1, d_model, warmup, factor)

    return schedule


@dataclass
class TransformerHistory(History):
    """What :func:`train_transformer` did.

    ``losses[k]`` is the mean cross-entropy per target token (nats, *without* label smoothing,
    so comparable across smoothing settings) over epoch k + 1; ``learning_rates[k]`` the
    learning rate of the last step of that epoch; ``steps`` the optimiser steps taken.
    """

    learning_rates: list[float] = field(default_factory=list)
    steps: int = 0


def train_transformer(
    model: nn.Module,
    pairs: Sequence[TokenPair],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    *,
    epochs: int,
    batch_size: int = 64,
    warmup: int = 400,
    lr_factor: float = 1.0,
    label_smoothing: float = 0.1,
    clip: float | None = 1.0,
    seed: int = 0,
    by_length: bool = False,
    callback: Callable[[int, float], bool | None] | None = None,
    desc: str | None = None,
) -> TransformerHistory:
    r"""Train an :class:`attnlib.transformer.Transformer` as the paper does, on a small scale.

    Teacher forcing: the decoder reads ``tgt_in`` = ``<bos>`` y (the target shifted right) and
    learns to predict ``tgt_out`` = y ``<eos>`` at every position at once, the causal mask
    keeping each position from seeing its answer. The loss is :class:`LabelSmoothingLoss`
    (``label_smoothing``, ``<pad>`` ignored); Adam with :math:`\beta_1 = 0.9`,
    :math:`\beta_2 = 0.98`, :math:`\epsilon = 10^{-9}`; the learning rate of :func:`noam_lr`
    (``d_model`` from ``model.config``, ``warmup`` steps, times ``lr_factor``), updated every
    step; gradients clipped to norm ``clip`` (None: no clipping).

    Deterministic given ``seed`` and the model's initial weights: epoch k visits the pairs in
    the order of ``random.Random(seed + k)`` and dropout draws from ``torch.manual_seed(seed)``
    inside ``torch.random.fork_rng``, so the caller's global random state is left as it was
    (on CPU). Progress is shown with :func:`~attnlib.progress.progress` (silent when ``ATTNLIB_PROGRESS=0``).
    The model is left in eval mode.

    Args:
        model: a Transformer (``model(src, src_lengths, tgt_in, tgt_lengths)`` gives logits
            (B, L, V) and ``model.config.d_model`` exists).
        pairs: training pairs (anything with ``src`` and ``tgt`` token sequences).
        epochs: passes over ``pairs``.
        by_length: batches of pairs of similar source length (``batches(by_length=True)``),
            so that little of each batch is padding.
        callback: called after each epoch as ``callback(epoch, loss)``, epoch from 1;
            returning True stops training (e.g. once a validation score is reached).
        desc: the progress bar's label.

    Returns:
        The :class:`TransformerHistory`.

    Raises:
        TypeError, ValueError: for an ``epochs``, ``batch_size`` or ``warmup`` that is not an
            int >= 1, an ``lr_factor`` or ``clip`` not finite and > 0, a ``label_smoothing``
            not in [0, 1), a model without ``config.d_model``, or bad ``pairs`` (see
            :func:`attnlib.data.batches`; sentences longer than the model's ``max_len``).
    """
    check_int("epochs", epochs, minimum=1)
    check_int("batch_size", batch_size, minimum=1)
    if clip is not None:
        check_positive("clip", clip)
    config = getattr(model, "config", None)
    d_model = getattr(config, "d_model", None)
    if not isinstance(d_model, int):
        raise TypeError(f"model must have config.d_model (a Transformer), got "
                        f"{type(model).__name__}")
    max_len = getattr(config, "max_len", None)
    criterion = LabelSmoothingLoss(label_smoothing, ignore_index=PAD_ID)
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, noam_schedule(d_model, warmup, lr_factor)
    )
    device = next(model.parameters()).device
    history = TransformerHistory()
    start = time.perf_counter()
    model.train()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        bar = progress(range(epochs), total=epochs, desc=desc or "training", unit="epoch")
        for epoch in bar:
            total_loss, total_tokens = 0.0, 0
            for batch in batches(pairs, src_vocab, tgt_vocab, batch_size, shuffle=True,
                                 seed=seed + epoch, max_len=max_len, by_length=by_length):
                src, tgt_out = batch.src.to(device), batch.tgt_out.to(device)
                logits = model(src, batch.src_lengths.to(device), batch.tgt_in.to(device),
                               batch.tgt_lengths.to(device))  # (B, L, V)
                loss = criterion(logits, tgt_out)
                optimizer.zero_grad()
                loss.backward()
                if clip is not None:
                    nn.utils.clip_grad_norm_(model.parameters(), clip)
                optimizer.step()
                lr = float(optimizer.param_groups[0]["lr"])  # the rate this step used
                scheduler.step()
                history.steps += 1
                with torch.no_grad():
                    ce = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(),
                                         ignore_index=PAD_ID, reduction="sum")
                total_loss += float(ce)
                total_tokens += int(batch.tgt_lengths.sum())
            history.losses.append(total_loss / total_tokens)
            history.learning_rates.append(lr)
            if hasattr(bar, "set_postfix"):
                bar.set_postfix(loss=f"{history.losses[-1]:.4f}")
            if callback is not None and callback(epoch + 1, history.losses[-1]):
                break
    history.seconds = time.perf_counter() - start
    model.eval()
    return history
