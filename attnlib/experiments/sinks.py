r"""Attention sinks: a task that makes one, where the weight goes, and two cache policies.

Guo et al.'s Bigram-Backcopy text {Guo et al. 2024}: a start token (BOS), then letters from a
fixed bigram table (each letter is followed by one of 3 letters, equally likely), except that
after a *trigger* letter (a, b or c) comes a copy of the letter before the trigger:

.. math::

    x_{t+1} = x_{t-1} \text{ if } x_t \in \{a, b, c\},

    x_{t+1} \sim \text{bigram}(x_t) \text{ otherwise}.

A head that copies is needed at the triggers only; everywhere else it must add nothing, and
a softmax head cannot attend to nothing. :func:`first_token_mass` measures how much of its
weight goes to the first token; :func:`loss_by_position` measures what happens when a cache
of ``window`` tokens drops that token (a rolling window) or keeps it (StreamingLLM's sinks).
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlib._checks import (
    check_device,
    check_instance,
    check_int,
    check_tensor,
    check_token_ids,
    shape_str,
)
from attnlib.blocks.gated_attention import CausalSelfAttention
from attnlib.models.decoder_lm import DecoderLM, train_lm
from attnlib.models.mixer_lm import MixerBlock, MixerCache, MixerLM

__all__ = ["BOS", "TRIGGERS", "BackcopyModel", "backcopy_targets", "backcopy_text",
           "first_token_mass", "is_trigger", "loss_by_position", "train"]

BOS = 26
"""The start token's id, after the 26 letters."""

TRIGGERS = (0, 1, 2)
"""The ids of the trigger letters a, b and c (the letter after one copies the letter before it)."""


@functools.lru_cache(maxsize=4)
def _bigram_table(seed: int = 0, successors: int = 3) -> Tensor:  # read only: cached
    generator = torch.Generator().manual_seed(seed)
    table = torch.zeros(26, 26, dtype=torch.float64)
    for letter in range(26):
        table[letter, torch.randperm(26, generator=generator)[:successors]] = 1 / successors
    return table  # (26, 26), rows sum to 1


def backcopy_text(n: int, length: int, seed: int = 0) -> Tensor:
    """``n`` lines of Bigram-Backcopy text, each BOS and ``length - 1`` letters.

    Shape:
        - output: (n, length), long, ids in [0, 27)

    Raises:
        TypeError: if an argument is not an int. ValueError: if ``n`` < 1, ``length`` < 2
            or ``seed`` < 0.
    """
    check_int("n", n, minimum=1)
    check_int("length", length, minimum=2)
    check_int("seed", seed, minimum=0)
    table, trigger = _bigram_table(), torch.zeros(27, dtype=torch.bool)
    trigger[list(TRIGGERS)] = True
    generator = torch.Generator().manual_seed(seed)
    x = torch.full((n, length), BOS)
    others = (~trigger[:26]).nonzero().flatten()  # the first letter is no trigger
    x[:, 1] = others[torch.randint(0, len(others), (n,), generator=generator)]
    for t in range(1, length - 1):
        drawn = torch.multinomial(table[x[:, t]], 1, generator=generator)[:, 0]  # (n,)
        copied = trigger[x[:, t]] & (t > 1)
        x[:, t + 1] = torch.where(copied, x[:, t - 1], drawn)
    return x


def backcopy_targets(tokens: Tensor) -> Tensor:
    """Next-token targets: token t + 1 at t, -100 at the last position.

    Shape:
        - tokens: (B, L); output: (B, L)

    Raises:
        TypeError, ValueError: unless ``tokens`` is a (B, L) tensor of ids in [0, 27).
    """
    tokens = check_token_ids("tokens", tokens, BOS + 1)
    targets = torch.full_like(tokens, -100)
    targets[:, :-1] = tokens[:, 1:]
    return targets


def is_trigger(tokens: Tensor) -> Tensor:
    """True where the token is a trigger letter. Shape: (B, L) -> (B, L) bool.

    Raises:
        TypeError, ValueError: unless ``tokens`` is a (B, L) tensor of ids in [0, 27).
    """
    tokens = check_token_ids("tokens", tokens, BOS + 1)
    return torch.isin(tokens, torch.tensor(TRIGGERS))


_BATCHES: dict[tuple[int, int, int], tuple[Tensor, Tensor]] = {}
"""Training batches by (batch, length, step): drawn once per process (:func:`train`)."""


def train(model: MixerLM, length: int, steps: int, lr: float = 0.01, batch: int = 16
          ) -> list[float]:
    """Train on fresh Bigram-Backcopy batches (seed = step) with chapter 9's ``train_lm``.

    Raises:
        TypeError: if ``model`` is not a MixerLM; ValueError: if it does not read the 27 ids;
            as ``train_lm`` and :func:`backcopy_text` for the others (``batch`` is its ``n``).
    """
    check_instance("model", model, MixerLM, "a MixerLM")
    if model.vocab_size != BOS + 1:
        raise ValueError(f"model must read the {BOS + 1} ids of the letters and BOS, got "
                         f"vocab_size = {model.vocab_size}")
    check_int("batch", batch, minimum=1)
    check_int("length", length, minimum=2)
    def draw(step: int) -> tuple[Tensor, Tensor]:
        key = (batch, length, step)
        if key not in _BATCHES:  # the same lines for every model trained in this process
            if len(_BATCHES) >= 4096:
                _BATCHES.clear()
            tokens = backcopy_text(batch, length, seed=step)
            _BATCHES[key] = tokens, backcopy_targets(tokens)
        tokens, targets = _BATCHES[key]
        return tokens.clone(), targets.clone()

    # train_lm only calls the model on tokens: any decoder with that forward will do
    return train_lm(cast(DecoderLM, model), draw, steps=steps, lr=lr)


def _check_model(model: object, tokens: object) -> Tensor:
    """A MixerLM; and ``tokens``, (B, L) ids of its vocabulary on its device."""
    check_instance("model", model, MixerLM, "a MixerLM")
    assert isinstance(model, MixerLM)
    return check_token_ids("tokens", tokens, model.vocab_size,
                           device=model.embedding.weight.device)


@torch.no_grad()
def first_token_mass(model: MixerLM, tokens: Tensor, where: Tensor) -> Tensor:
    """Mean attention weight on position 0, per layer and head, over the queries in ``where``.

    Shape:
        - tokens: (B, L); where: (B, L) bool; output: (N, H)

    Raises:
        TypeError: if ``model`` is not a MixerLM of
            :class:`~attnlib.blocks.gated_attention.CausalSelfAttention` layers, ``tokens``
            not integer or ``where`` not bool.
        ValueError: if ``tokens`` is not (B, L) with ids in [0, V) on the model's device, or
            ``where`` not of its shape or selecting no query.
    """
    tokens = _check_model(model, tokens)
    where = check_tensor("where", where)
    if where.dtype != torch.bool:
        raise TypeError(f"where must be a bool tensor (True = a query to average over), got "
                        f"dtype {where.dtype}")
    check_device("where", where, tokens.device, "tokens")
    if where.shape != tokens.shape:
        raise ValueError(f"where must have tokens' shape (B, L) = {shape_str(tokens.shape)}, "
                         f"got {shape_str(where.shape)}")
    if not bool(where.any()):
        raise ValueError("where must select at least one query (the mean over none is "
                         "undefined), got all False")
    masses = []
    x = model.embedding(tokens)
    for block in model.blocks:
        assert isinstance(block, MixerBlock)
        mixer = block.mixer
        if not isinstance(mixer, CausalSelfAttention):
            raise TypeError(f"model's mixers must be CausalSelfAttention layers, got "
                            f"{type(mixer).__name__}")
        weights = mixer.attention_weights(block.norm1(x))  # (B, H, L, L)
        masses.append(weights[..., 0].transpose(1, 2)[where].mean(0))  # (H,)
        x, _ = block(x)
    return torch.stack(masses)  # (N, H)


@torch.no_grad()
def loss_by_position(model: MixerLM, tokens: Tensor, window: int | None = None,
                     sink_tokens: int = 0) -> Tensor:
    """Next-token loss at every position when generating with a cache of ``window`` tokens.

    The text is fed one token at a time. ``window=None`` keeps every token; otherwise the
    attention layers keep the last ``window`` tokens, of which the first ``sink_tokens`` are
    the text's first tokens (StreamingLLM) and the rest the most recent. A layer's own window
    is part of the model: a layer whose own window is no wider than ``window`` keeps it (and
    its own ``sink_tokens``), so the cache changes only the layers that see more than it
    holds. ``model`` itself is left as it was.

    Shape:
        - tokens: (B, T); output: (B, T - 1), the loss of predicting token t + 1 at t

    Raises:
        TypeError: if ``model`` is not a MixerLM, or ``window`` or ``sink_tokens`` not an int.
        ValueError: if ``tokens`` is not (B, T), T >= 2, with ids in [0, V) on the model's
            device, ``window`` < 1, or ``sink_tokens`` not below ``window``.
    """
    tokens = _check_model(model, tokens).long()
    if tokens.shape[1] < 2:
        raise ValueError(f"tokens must hold T >= 2 tokens (a next token to predict), got "
                         f"shape {shape_str(tokens.shape)}")
    if window is not None:
        check_int("window", window, minimum=1)
    check_int("sink_tokens", sink_tokens, minimum=0)
    if sink_tokens and (window is None or sink_tokens >= window):
        raise ValueError(f"sink_tokens must be below window (the sinks are part of it), got "
                         f"sink_tokens = {sink_tokens} and window = {window}")
    streamed = copy.deepcopy(model)
    for block in streamed.blocks:
        assert isinstance(block, MixerBlock)
        mixer = block.mixer
        # the tighter of the layer's own window and the cache's
        if isinstance(mixer, CausalSelfAttention) and window is not None and (
                mixer.window is None or window < mixer.window):
            mixer.window, mixer.sink_tokens = window, sink_tokens
    cache, losses = MixerCache(), []
    for t in range(tokens.shape[1] - 1):
        logits = streamed(tokens[:, t:t + 1], cache)[:, 0]  # (B, V)
        losses.append(F.cross_entropy(logits, tokens[:, t + 1], reduction="none"))
    return torch.stack(losses, dim=1)  # (B, T - 1)


@dataclass(frozen=True)
class BackcopyModel:
    """Chapter 10's Bigram-Backcopy models, described for
    :func:`~attnlib.train.runs.train_runs` (a :class:`~attnlib.train.runs.Trainable`).

    ``blocks`` holds, per block, the keyword arguments of its
    :class:`~attnlib.blocks.gated_attention.CausalSelfAttention` (``gate``, ``window``,
    ``learned_sink``) as (name, value) pairs: one entry for the one-block models, two for the
    layouts; D = 32, 2 heads, a feed-forward layer of 8, float32. ``fit`` is :func:`train`
    with the run's options.
    """

    blocks: tuple[tuple[tuple[str, Any], ...], ...]

    def build(self) -> MixerLM:
        return MixerLM(BOS + 1, [CausalSelfAttention(32, 2, dtype=torch.float32, **dict(b))
                                 for b in self.blocks], d_ff=8, dtype=torch.float32)

    def fit(self, model: nn.Module, **options: Any) -> list[float]:
        check_instance("model", model, MixerLM, "a MixerLM")
        return train(cast(MixerLM, model), **options)
