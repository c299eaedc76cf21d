r"""Decoding a trained Transformer: greedy search and beam search.

Both run the encoder once and then the decoder one token at a time, each step reading the
tokens produced so far, by default through the key/value cache of :mod:`attnlib.models.kv_cache`
(``use_cache=False`` re-runs the decoder on the whole prefix instead, for comparison).

- :func:`greedy_decode` takes the most probable word at every step;
- :func:`beam_search` keeps the K best prefixes, ranked by log-probability divided by the GNMT
  length penalty (:func:`gnmt_length_penalty`) {Wu et al. 2016};
- :func:`sequence_log_prob` scores a given translation, :math:`\log p(\mathbf y \mid
  \mathbf x)`, so that the hypotheses of the two searches can be compared under the model.

Each search returns :class:`Decoded`, the ``(tokens, weights)`` pair that
:func:`attnlib.train.translation.translate` expects of a decoder.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

from attnlib._checks import (
    check_flag,
    check_int,
    check_not_meta,
    check_real,
    check_tensor,
    check_token_ids,
    shape_str,
)
from attnlib.models.transformer.model import Transformer
from attnlib.models.transformer.stacks import Encoded

__all__ = ["Decoded", "beam_search", "gnmt_length_penalty", "greedy_decode", "sequence_log_prob"]




class Decoded(NamedTuple):
    """Decoded token ids and, per produced token, the cross-attention over the source.

    A tuple ``(tokens, weights)``, as :func:`attnlib.train.translation.translate` expects of a decoder.

    Shape:
        - tokens: (B, L), L <= max_len; ``<eos>`` where produced, ``<pad>`` after it (with
          ``stop_at_eos=False``: L = max_len, and ``<eos>`` is a word like any other)
        - weights: (B, L, S), the last decoder layer's cross-attention averaged over heads,
          the weights with which each token was produced (zero rows after ``<eos>``). For every
          layer and head, rerun :meth:`~attnlib.models.transformer.model.Transformer.attention_weights` on the produced tokens.
    """

    tokens: Tensor
    weights: Tensor


class _Stepper:
    """One decoding step at a time, with a cache or by re-running the decoder on the prefix."""

    def __init__(self, model: Transformer, encoded: Encoded, bos_id: int, use_cache: bool) -> None:
        self.model, self.encoded, self.use_cache = model, encoded, use_cache
        B = encoded.memory.shape[0]
        self.prefix = torch.full((B, 1), bos_id, dtype=torch.long,
                                 device=encoded.memory.device)  # (B, 1)
        self.cache = model.init_cache(encoded) if use_cache else None

    def logits(self) -> tuple[Tensor, Tensor]:
        """Logits of the next token (B, V), and last-layer head-averaged cross weights (B, S)."""
        if self.cache is not None:
            logits, cross = self.model.decode_step(self.prefix[:, -1], self.cache,
                                                   need_weights=True)
            assert cross is not None
            return logits, cross[:, -1].mean(dim=1)  # (B, V), (B, S)
        out = self.model.decode(self.prefix, self.encoded, need_weights=True)
        assert out.cross_weights is not None
        return out.logits[:, -1], out.cross_weights[:, -1, :, -1].mean(dim=1)  # (B, V), (B, S)

    def push(self, tokens: Tensor, rows: Tensor | None = None) -> None:
        """Append ``tokens`` (B,) after keeping rows ``rows`` of the batch (beam search)."""
        if rows is not None:
            self.prefix = self.prefix.index_select(0, rows)  # (B, t)
            if self.cache is not None:
                self.cache.reorder(rows)
            else:
                memory, lengths = self.encoded
                self.encoded = Encoded(memory.index_select(0, rows), lengths.index_select(0, rows))
        self.prefix = torch.cat((self.prefix, tokens[:, None]), dim=1)  # (B, t + 1)


def _check_decode_args(model: object, max_len: int, bos_id: int | None = None,
                       eos_id: int | None = None, use_cache: bool = True,
                       stop_at_eos: bool = True) -> tuple[Transformer, int, int]:
    """The model, max_len, the ids (None: the config's) and the flags of a search; returns the
    model and the <bos> and <eos> ids to use."""
    if not isinstance(model, Transformer):
        raise TypeError(f"model must be an attnlib Transformer, got {type(model).__name__}")
    check_int("max_len", max_len, minimum=1)
    c = model.config
    if max_len > c.max_len:
        raise ValueError(f"max_len = {max_len} exceeds the model's max_len = "
                         f"{c.max_len} (the longest decoder input it accepts)")
    check_flag("use_cache", use_cache)
    check_flag("stop_at_eos", stop_at_eos)
    ids = []
    for name, given, default in (("bos_id", bos_id, c.bos_id), ("eos_id", eos_id, c.eos_id)):
        ids.append(default if given is None else check_int(
            name, given, minimum=0, maximum=c.tgt_vocab_size - 1))
    return model, ids[0], ids[1]


@torch.no_grad()
def greedy_decode(
    model: Transformer,
    src: Tensor,
    src_lengths: Tensor,
    max_len: int,
    bos_id: int | None = None,
    eos_id: int | None = None,
    *,
    use_cache: bool = True,
    stop_at_eos: bool = True,
) -> Decoded:
    r"""Translate a batch greedily, one token at a time.

    .. math::

        \hat y_t = \operatorname*{arg\,max}_y \, p(y \mid \hat y_{<t}, \mathbf x),

        \hat y_0 = \texttt{<bos>}

    The encoder runs once. With ``use_cache`` each step feeds only the newest token and reuses
    the cached keys and values (:class:`~attnlib.models.kv_cache.DecoderCache`); without, each step re-runs the decoder
    on the whole prefix. Both give the same tokens; the cache makes step t cost O(t) instead of
    O(t²). A sentence is finished once it has produced ``<eos>``; its row then holds ``<pad>``.
    Decoding stops when every sentence is finished or after ``max_len`` tokens. With
    ``stop_at_eos=False`` no sentence is ever finished: exactly ``max_len`` tokens are decoded,
    ``<eos>`` among them as a word like any other (a benchmark's fixed amount of work). The
    model is put in eval mode for the call and restored afterwards.

    Args:
        model: a :class:`~attnlib.models.transformer.model.Transformer`.
        src, src_lengths: the source batch.
        max_len: the most tokens to produce, <= ``model.config.max_len``.
        bos_id, eos_id: None: the config's.
        use_cache: use the key/value cache.
        stop_at_eos: finish a sentence at its ``<eos>`` (True), or decode ``max_len`` tokens
            whatever they are (False).

    Shape:
        - src: (B, S); src_lengths: (B,)
        - returns :class:`Decoded`, tokens (B, L) and weights (B, L, S), L <= ``max_len``
          (L = ``max_len`` with ``stop_at_eos=False``)

    Raises:
        TypeError, ValueError: if ``max_len`` is not an int in [1, ``model.config.max_len``], an
            id is outside the target vocabulary, a flag is not a bool, or the source is bad
            (see :class:`~attnlib.models.transformer.model.Transformer`).
    """
    model, bos, eos = _check_decode_args(model, max_len, bos_id, eos_id, use_cache, stop_at_eos)
    c = model.config
    was_training = model.training
    model.eval()
    try:
        encoded = model.encode(src, src_lengths)
        stepper = _Stepper(model, encoded, bos, use_cache)
        finished = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)  # (B,)
        tokens, weights = [], []
        for _ in range(max_len):
            logits, step_weights = stepper.logits()  # (B, V), (B, S)
            y = logits.argmax(dim=-1).masked_fill(finished, c.pad_id)  # (B,)
            tokens.append(y)
            weights.append(step_weights.masked_fill(finished[:, None], 0.0))
            if stop_at_eos:
                finished = finished | (y == eos)
            if bool(finished.all()):
                break
            stepper.push(y)
        return Decoded(torch.stack(tokens, dim=1), torch.stack(weights, dim=1))  # (B, L), (B, L, S)
    finally:
        model.train(was_training)


def gnmt_length_penalty(length: Tensor, alpha: float) -> Tensor:
    r"""GNMT's length normalisation {Wu et al. 2016}: divide a log-probability by it.

    .. math::

        \mathrm{lp}(n) = \left(\frac{5 + n}{6}\right)^{\alpha},

        \text{score}(\mathbf y) = \frac{\log p(\mathbf y \mid \mathbf x)}{\mathrm{lp}(|\mathbf y|)}

    A log-probability is a sum of negative terms, so without normalisation
    (:math:`\alpha = 0`, lp = 1) shorter hypotheses win; :math:`\alpha = 1` is close to the
    average log-probability per token (lp grows like n); the paper uses :math:`\alpha = 0.6`.
    :math:`|\mathbf y|` counts the produced tokens, ``<eos>`` included.

    Shape:
        - length: any shape; output: the same, floating point

    Raises:
        ValueError: if ``alpha`` or a length is negative.
        TypeError: if ``length`` is not a tensor.
    """
    check_real("alpha", alpha, minimum=0.0)
    length = check_tensor("length", length)
    if length.is_floating_point() or length.is_complex() or length.dtype == torch.bool:
        raise TypeError(f"length must hold integer lengths, got dtype {length.dtype}")
    check_not_meta("length", length, "lengths >= 0")
    if bool((length < 0).any()):
        raise ValueError(f"length must be >= 0 (a number of tokens), got {length.min().item()}")
    return ((5.0 + length.double()) / 6.0) ** alpha


@torch.no_grad()
def beam_search(
    model: Transformer,
    src: Tensor,
    src_lengths: Tensor,
    max_len: int,
    bos_id: int | None = None,
    eos_id: int | None = None,
    *,
    beam_size: int = 4,
    length_penalty: float = 0.6,
    use_cache: bool = True,
    stop_at_eos: bool = True,
) -> Decoded:
    r"""Translate a batch by beam search with GNMT length normalisation.

    Each sentence keeps ``beam_size`` = K hypotheses. At each step every hypothesis is extended
    by every word, and the K best of the K·V candidates survive, ranked by the normalised score

    .. math::

        \text{score}(\mathbf y) = \frac{\sum_t \log p(y_t \mid \mathbf y_{<t}, \mathbf x)}
                                       {\mathrm{lp}(|\mathbf y|)}

    (:func:`gnmt_length_penalty`, ``length_penalty`` = :math:`\alpha`). A hypothesis that has
    produced ``<eos>`` is finished: it stays a candidate with its score frozen (it is only
    "extended" by ``<pad>`` at log-probability 0), so a longer hypothesis must beat it to take
    its place. Search stops when all K hypotheses of every sentence are finished or after
    ``max_len`` tokens; the best-scoring hypothesis is returned. With K = 1 this is greedy
    decoding. The cache is reordered along with the hypotheses
    (:meth:`~attnlib.models.kv_cache.DecoderCache.reorder`). The model is in eval mode for the call.

    Args:
        model, src, src_lengths, max_len, bos_id, eos_id, use_cache, stop_at_eos: as
            :func:`greedy_decode` (with ``stop_at_eos=False`` no hypothesis is finished: every
            one has ``max_len`` tokens).
        beam_size: K >= 1.
        length_penalty: :math:`\alpha` >= 0; 0 ranks by raw log-probability.

    Shape:
        - src: (B, S); src_lengths: (B,)
        - returns :class:`Decoded`: the best hypothesis, tokens (B, L), and its weights (B, L, S)

    Raises:
        The errors of :func:`greedy_decode`; ValueError if ``beam_size`` < 1 or
        ``length_penalty`` < 0.
    """
    model, bos, eos = _check_decode_args(model, max_len, bos_id, eos_id, use_cache, stop_at_eos)
    K = check_int("beam_size", beam_size, minimum=1)
    alpha = check_real("length_penalty", length_penalty, minimum=0.0)
    c = model.config
    was_training = model.training
    model.eval()
    try:
        encoded = model.encode(src, src_lengths)
        B, S = src.shape
        memory, src_lengths = encoded
        beams = Encoded(memory.repeat_interleave(K, dim=0),
                        src_lengths.repeat_interleave(K, dim=0))  # (B K, S, D), (B K,)
        stepper = _Stepper(model, beams, bos, use_cache)
        device = src.device
        # At the start the K hypotheses of a sentence are the same <bos>: keep only the first
        # one alive, or the search would pick the same word K times.
        scores = torch.full((B, K), float("-inf"), dtype=torch.float64, device=device)
        scores[:, 0] = 0.0
        scores = scores.view(B * K)  # (B K,) summed log-probabilities
        lengths = torch.zeros(B * K, dtype=torch.long, device=device)  # (B K,)
        finished = torch.zeros(B * K, dtype=torch.bool, device=device)  # (B K,)
        tokens = torch.zeros(B * K, 0, dtype=torch.long, device=device)  # (B K, 0)
        weights = memory.new_zeros(B * K, 0, S)  # (B K, 0, S)
        offsets = torch.arange(B, device=device)[:, None] * K  # (B, 1)
        for _ in range(max_len):
            logits, step_weights = stepper.logits()  # (B K, V), (B K, S)
            log_probs = F.log_softmax(logits.double(), dim=-1)  # (B K, V)
            rows, words, scores, lengths = _beam_step(scores, lengths, finished, log_probs,
                                                      offsets, alpha, c.pad_id)
            was_finished = finished[rows]
            tokens = torch.cat((tokens[rows], words[:, None]), dim=1)  # (B K, t + 1)
            step_weights = step_weights[rows].masked_fill(was_finished[:, None], 0.0)  # (B K, S)
            weights = torch.cat((weights[rows], step_weights[:, None]), dim=1)  # (B K, t + 1, S)
            finished = was_finished | (words == eos) if stop_at_eos else was_finished
            if bool(finished.all()):
                break
            stepper.push(words, rows)
        final = (scores / gnmt_length_penalty(lengths, alpha)).view(B, K)  # (B, K)
        chosen = (offsets[:, 0] + final.argmax(dim=-1))  # (B,)
        return Decoded(tokens[chosen], weights[chosen])  # (B, L), (B, L, S)
    finally:
        model.train(was_training)


def _beam_step(
    scores: Tensor, lengths: Tensor, finished: Tensor, log_probs: Tensor,
    offsets: Tensor, alpha: float, pad_id: int,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """One step of :func:`beam_search`: the K best one-word extensions of each
    sentence's K hypotheses. Returns the row (hypothesis) each extends, its word,
    its summed log-probability and its length, each (B K,).
    Shape: scores, lengths, finished (B K,); log_probs (B K, V)."""
    B, V = offsets.shape[0], log_probs.shape[1]
    K = scores.shape[0] // B
    # (V,) a finished hypothesis can only be extended by <pad>, at no cost
    frozen = torch.full_like(log_probs[0], float("-inf"))
    frozen[pad_id] = 0.0
    log_probs = torch.where(finished[:, None], frozen, log_probs)  # (B K, V)
    # (B K, V): every hypothesis, every next word
    candidates = scores[:, None] + log_probs
    new_lengths = lengths + (~finished).long()  # (B K,)
    penalty = gnmt_length_penalty(new_lengths, alpha)[:, None]  # (B K, 1)
    normalised = candidates / penalty  # (B K, V)
    # (B, K) of the K V candidates
    _, best = normalised.view(B, K * V).topk(K, dim=-1)
    rows = (offsets + best // V).view(B * K)  # (B K,) the hypothesis extended
    words = (best % V).view(B * K)  # (B K,)
    scores = candidates.view(B, K * V).gather(1, best).view(B * K)  # (B K,)
    return rows, words, scores, new_lengths[rows]


@torch.no_grad()
def sequence_log_prob(
    model: Transformer,
    src: Tensor,
    src_lengths: Tensor,
    tokens: Tensor,
    bos_id: int | None = None,
    eos_id: int | None = None,
) -> Tensor:
    r"""The model's log-probability of given translations, in one teacher-forced pass.

    .. math::

        \log p(\mathbf y \mid \mathbf x) = \sum_{t=1}^{n} \log p(y_t \mid \mathbf y_{<t},
            \mathbf x)

    ``tokens`` are in the form the searches return: the words, then ``<eos>`` where the
    hypothesis ended, anything after it ignored (a row without ``<eos>`` counts all L tokens).
    The sum is what :func:`beam_search` maximises at ``length_penalty=0`` (up to rounding: the
    search sums step by step through the cache), so it compares the hypotheses of two searches
    on the model's own terms. The model is in eval mode for the call.

    Shape:
        - src: (B, S); src_lengths: (B,); tokens: (B, L)
        - returns: (B,) float64, the sum over the counted tokens (``<eos>`` included)

    Raises:
        TypeError: if ``model`` is not a :class:`~attnlib.models.transformer.model.Transformer`.
        ValueError: if ``tokens`` is not (B, L) with the batch size of ``src``, L = 0, or
            L + 1 exceeds the model's ``max_len``; the errors of the model for a bad source.
    """
    check_tensor("tokens", tokens)
    check_tensor("src", src)
    if tokens.dim() != 2 or tokens.shape[0] != src.shape[0] or tokens.shape[1] == 0:
        raise ValueError(f"tokens must have shape (B, L) = ({src.shape[0]}, L >= 1) like src, "
                         f"got {shape_str(tokens.shape)}")
    model, bos, eos = _check_decode_args(model, tokens.shape[1], bos_id, eos_id)
    c = model.config
    check_token_ids("tokens", tokens, c.tgt_vocab_size, device=model.src_embed.weight.device)
    B = tokens.shape[0]
    is_eos = tokens == eos  # (B, L)
    after_eos = (is_eos.long().cumsum(dim=1) - is_eos.long()) > 0  # (B, L) strictly after one
    counted = ~after_eos  # (B, L)
    safe = tokens.masked_fill(after_eos, c.pad_id)  # (B, L) ids the embedding accepts
    tgt_in = torch.cat((torch.full((B, 1), bos, dtype=safe.dtype, device=safe.device),
                        safe[:, :-1]), dim=1)  # (B, L)
    was_training = model.training
    model.eval()
    try:
        logits = model(src, src_lengths, tgt_in)  # (B, L, V)
    finally:
        model.train(was_training)
    log_probs = F.log_softmax(logits.double(), dim=-1).gather(-1, safe[..., None])[..., 0]
    return (log_probs * counted).sum(dim=1)  # (B,)

