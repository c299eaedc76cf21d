r"""Attention logits at a high learning rate: a small decoder with and without the stabilisers.

Wortsman et al. ("Small-scale proxies for large-scale Transformer training instabilities",
2023, section 3.1) train small Transformers at growing learning rates and find that, without
qk-layernorm, the largest attention logit grows with the rate until the attention weights
collapse onto one key (near one-hot, their entropy near 0) and the loss diverges; with the
queries and keys normalised (Dehghani et al. 2023), the same models train at rates ten times
higher. :class:`StabilityLM` is a small decoder of
:class:`~attnlib.blocks.stable_attention.StableSelfAttention` layers with the stabiliser as
a switch (:data:`VARIANTS`):

* ``"plain"``: no stabiliser;
* ``"qk-norm"``: RMSNorm of each head's queries and keys (Qwen3, OLMo 2 norms all heads);
* ``"softcap"``: the logits capped at ``cap`` by :math:`c \tanh(s / c)` (Gemma 2);
* ``"qk-clip"``: after each step, each head whose largest logit passed :math:`\tau` has its
  query and key weights scaled down to bring it back (Kimi K2's QK-clip,
  :func:`~attnlib.blocks.stable_attention.qk_clip`).

:func:`train_stability` trains one on :func:`~attnlib.experiments.lm_tasks.echo_text` (every
letter is the one ``period`` places back: a head must attend there) with AdamW at a constant
rate and records, for every step, the loss and the largest logit of any head (before any
cap); :func:`count_spikes` counts the loss spikes and :func:`stability_summary` sums a run up.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlib._checks import (
    check_choice,
    check_instance,
    check_int,
    check_ints,
    check_positive,
    check_token_ids,
    shape_str,
)
from attnlib.blocks.stable_attention import StableSelfAttention, qk_clip
from attnlib.experiments.lm_tasks import ALPHABET, IGNORE_INDEX, echo_targets, echo_text
from attnlib.train.runs import Run

VARIANTS = ("plain", "qk-norm", "softcap", "qk-clip")
"""The attention of :class:`StabilityLM`: no stabiliser, QK-norm, soft-capping, QK-clip."""

__all__ = ["VARIANTS", "StabilityConfig", "StabilityLM", "StabilitySummary", "count_spikes",
           "stability_runs", "stability_summary", "train_stability"]


class StabilityLM(nn.Module):
    """Embedding, ``layers`` pre-LN blocks (attention, then a GELU feed-forward of 4 D), a final
    LayerNorm and an output layer; RoPE in every attention layer.

    ``variant`` chooses the attention (:data:`VARIANTS`; ``"qk-clip"`` is plain attention
    that :func:`train_stability` clips at ``tau``); ``cap`` is the soft cap of ``"softcap"``.
    After training, the buffers ``loss_history`` and ``logit_history`` (``steps``,) hold the
    loss and the largest logit of every step.

    Shape:
        tokens (B, L) ids in [0, vocab_size); returns logits (B, L, vocab_size).

    Raises:
        ValueError: an unknown variant, a size < 1, ``heads`` not dividing ``dim``, a
            ``cap`` or ``tau`` not > 0.
    """

    loss_history: Tensor
    logit_history: Tensor

    def __init__(self, variant: str = "plain", vocab_size: int = len(ALPHABET), dim: int = 32,
                 heads: int = 2, layers: int = 2, steps: int = 1, cap: float = 30.0,
                 tau: float = 30.0) -> None:
        super().__init__()
        check_choice("variant", variant, VARIANTS)
        for name, v in (("vocab_size", vocab_size), ("dim", dim), ("heads", heads),
                        ("layers", layers), ("steps", steps)):
            check_int(name, v, minimum=1)
        check_positive("cap", cap)
        check_positive("tau", tau)
        self.variant, self.tau, self.vocab_size = variant, float(tau), vocab_size
        self.embedding = nn.Embedding(vocab_size, dim)
        self.attention = nn.ModuleList(StableSelfAttention(
            dim, heads, qk_norm="head" if variant == "qk-norm" else "none",
            softcap=cap if variant == "softcap" else None) for _ in range(layers))
        self.norms = nn.ModuleList(nn.LayerNorm(dim) for _ in range(2 * layers + 1))
        self.feed_forward = nn.ModuleList(nn.Sequential(
            nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim)) for _ in range(layers))
        self.out = nn.Linear(dim, vocab_size)
        self.register_buffer("loss_history", torch.zeros(steps, dtype=torch.float64))
        self.register_buffer("logit_history", torch.zeros(steps, dtype=torch.float64))

    def forward(self, tokens: Tensor) -> Tensor:
        tokens = check_token_ids("tokens", tokens, self.vocab_size,
                                 device=self.embedding.weight.device)
        x = self.embedding(tokens)
        for n, (attention, ff) in enumerate(zip(self.attention, self.feed_forward,
                                                strict=True)):
            x = x + attention(self.norms[2 * n](x))
            x = x + ff(self.norms[2 * n + 1](x))
        logits: Tensor = self.out(self.norms[-1](x))
        return logits

    @property
    def attention_layers(self) -> list[StableSelfAttention]:
        """The attention layers, first to last."""
        return [cast(StableSelfAttention, a) for a in self.attention]

    @property
    def max_logit(self) -> float:
        """The largest logit of any head in the last forward pass (before any cap)."""
        found = [float(a.last_max_logits.max()) for a in self.attention_layers
                 if a.last_max_logits is not None]
        if not found:
            raise RuntimeError("max_logit needs a forward pass of the model first")
        return max(found)


@dataclass(frozen=True)
class StabilityConfig:
    """A :class:`StabilityLM` for :func:`~attnlib.train.runs.train_runs` (a Trainable).

    Raises:
        ValueError: as :class:`StabilityLM`.
    """

    variant: str
    steps: int = 150
    dim: int = 32
    heads: int = 2
    layers: int = 2

    def __post_init__(self) -> None:
        check_choice("variant", self.variant, VARIANTS)
        for name in ("steps", "dim", "heads", "layers"):
            check_int(name, getattr(self, name), minimum=1)

    def build(self) -> StabilityLM:
        return StabilityLM(self.variant, dim=self.dim, heads=self.heads, layers=self.layers,
                           steps=self.steps)

    def fit(self, model: nn.Module, **options: Any) -> list[float]:
        check_instance("model", model, StabilityLM, "a StabilityLM")
        assert isinstance(model, StabilityLM)
        return train_stability(model, steps=self.steps, **options)


def train_stability(model: StabilityLM, steps: int = 150, lr: float = 0.1, batch: int = 16,
                    length: int = 32, period: int = 8, seed: int = 0) -> list[float]:
    """Train on echo text (:func:`~attnlib.experiments.lm_tasks.echo_text`: a random word of
    ``period`` letters repeated to ``length``) with AdamW at a constant ``lr``
    (weight decay 0.1, no warm-up: the rate that breaks plain attention at once); return the
    loss of every step, and keep it and the largest logit in the model's buffers.

    For ``"qk-clip"``, after every optimizer step each attention layer's query and key
    weights pass through :func:`~attnlib.blocks.stable_attention.qk_clip` with the model's
    ``tau`` and the step's largest logits (the clip acts on the next step's logits).

    Raises:
        TypeError: ``model`` not a :class:`StabilityLM`, a size not an int. ValueError: a size
            < 1, ``steps`` not the model's history length, ``lr`` <= 0.
    """
    check_instance("model", model, StabilityLM, "a StabilityLM")
    for name, v in (("steps", steps), ("batch", batch), ("length", length)):
        check_int(name, v, minimum=1)
    check_int("seed", seed, minimum=0)
    check_positive("lr", lr)
    history = model.loss_history
    if steps != history.shape[0]:
        raise ValueError(f"steps must be the model's history length, {history.shape[0]}, "
                         f"got {steps}")
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.1)
    model.train()
    losses: list[float] = []
    for step in range(steps):
        tokens = echo_text(batch, length, period, seed=seed * 100000 + step)
        targets = echo_targets(tokens, period)
        loss = F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten(),
                               ignore_index=IGNORE_INDEX)
        optimizer.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]  # untyped in torch 2.13
        optimizer.step()
        model.loss_history[step] = loss.item()
        model.logit_history[step] = model.max_logit
        if model.variant == "qk-clip":
            with torch.no_grad():
                for attention in model.attention_layers:
                    assert attention.last_max_logits is not None
                    w_q, w_k, _ = qk_clip(attention.q_proj.weight, attention.k_proj.weight,
                                          attention.last_max_logits, model.tau)
                    attention.q_proj.weight.copy_(w_q)
                    attention.k_proj.weight.copy_(w_k)
        losses.append(loss.item())
    model.eval()
    return losses


def count_spikes(losses: Sequence[float] | Tensor, jump: float = 1.0) -> int:
    """Loss spikes: the steps whose loss exceeds the lowest loss of all earlier steps by more
    than ``jump`` nats, counted once per run of such steps.

    Raises:
        TypeError, ValueError: ``losses`` not a sequence of numbers, ``jump`` not > 0.
    """
    check_positive("jump", jump)
    if isinstance(losses, Tensor):
        if losses.ndim != 1 or not losses.is_floating_point():
            raise ValueError(f"losses must be a 1-D floating-point tensor, got dtype "
                             f"{losses.dtype} and shape {shape_str(losses.shape)}")
        values = [float(x) for x in losses.tolist()]
    else:
        if isinstance(losses, str) or not isinstance(losses, Sequence):
            raise TypeError(f"losses must be a sequence of numbers, got "
                            f"{type(losses).__name__}")
        for i, x in enumerate(losses):
            if isinstance(x, bool) or not isinstance(x, int | float):
                raise TypeError(f"losses[{i}] must be a number, got {type(x).__name__}")
        values = [float(x) for x in losses]
    spikes, lowest, inside = 0, float("inf"), False
    for value in values:
        high = value > lowest + jump or value != value  # NaN counts as a spike
        spikes += high and not inside
        inside = high
        lowest = min(lowest, value)
    return spikes


def stability_runs(seeds: Sequence[int] = (0, 1, 2), variants: Sequence[str] = VARIANTS,
                   steps: int = 150, **options: Any) -> list[Run]:
    """The runs of the experiment for :func:`~attnlib.train.runs.train_runs`: each variant at
    each seed (named by its variant), with :func:`train_stability`'s ``options``.

    Raises:
        TypeError, ValueError: seeds not ints >= 0, an unknown variant, ``steps`` < 1.
    """
    seeds = check_ints("seeds", seeds, minimum=0)
    if isinstance(variants, str) or not isinstance(variants, Sequence):
        raise TypeError(f"variants must be a sequence of names, got {type(variants).__name__}")
    for i, variant in enumerate(variants):
        check_choice(f"variants[{i}]", variant, VARIANTS)
    return [Run(variant, StabilityConfig(variant, steps), seed, {"seed": seed, **options})
            for seed in seeds for variant in variants]


@dataclass(frozen=True)
class StabilitySummary:
    """A trained :class:`StabilityLM` in four numbers: the largest logit of any step, the
    mean loss of the last steps, the loss spikes (:func:`count_spikes`), and the lowest loss
    of any step (a run may fall and then diverge back)."""

    max_logit: float
    final_loss: float
    spikes: int
    lowest_loss: float = math.nan


def stability_summary(model: StabilityLM, last: int = 10, jump: float = 1.0
                      ) -> StabilitySummary:
    """The largest logit over training, the mean loss of the ``last`` steps, the spikes, the
    lowest loss of any step.

    Raises:
        TypeError: ``model`` not a :class:`StabilityLM`. ValueError: ``last`` < 1 or more
            than the steps, ``jump`` not > 0.
    """
    check_instance("model", model, StabilityLM, "a StabilityLM")
    losses = model.loss_history
    check_int("last", last, minimum=1, maximum=losses.shape[0])
    return StabilitySummary(float(model.logit_history.max()), float(losses[-last:].mean()),
                            count_spikes(losses, jump), float(losses.min()))
