r"""Length extrapolation: train on short sequences, test on long ones, for each position encoding.

The task, :func:`lookback_task`, asks at every position for the token ``shift`` positions back:

.. math::

    y_i = x_{i - \text{shift}} \quad (i \ge \text{shift}),

    y_i \text{ ignored} \quad (i < \text{shift}).

It is defined for every length, and it cannot be solved without positions: the answer is one of
the tokens in the sequence, and only its position says which. :class:`LookbackModel` is one
layer of self-attention between a token embedding and a classifier, with the position encoding
chosen by ``LookbackConfig.encoding``:

- ``"none"``: no positions (the model is permutation-equivariant and cannot solve the task);
- ``"sinusoidal"``: :class:`~attnlib.blocks.positional.SinusoidalPositionalEncoding` added to the input;
- ``"learned"``: :class:`~attnlib.blocks.positional.LearnedPositionalEmbedding` added to the input; it
  has ``max_len`` rows and refuses longer sequences;
- ``"rope"``: :class:`~attnlib.blocks.positional.RotaryPositionalEmbedding` on queries and keys.

:func:`train_lookback` trains on sequences of one length; :func:`lookback_accuracy` then
measures the accuracy at any length.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlib._checks import (
    check_choice,
    check_flag,
    check_float_dtype,
    check_instance,
    check_int,
    check_positive,
    check_token_ids,
)
from attnlib.blocks.attention import scaled_dot_product_attention
from attnlib.blocks.multihead import merge_heads, split_heads
from attnlib.blocks.positional import (
    LearnedPositionalEmbedding,
    RotaryPositionalEmbedding,
    SinusoidalPositionalEncoding,
)

__all__ = [
    "ENCODINGS",
    "IGNORE_INDEX",
    "LookbackConfig",
    "LookbackModel",
    "lookback_accuracy",
    "lookback_accuracy_by_position",
    "lookback_task",
    "mean_score_by_offset",
    "train_lookback",
]

ENCODINGS = ("none", "sinusoidal", "learned", "rope")
IGNORE_INDEX = -100  # the target of positions without an answer; F.cross_entropy's default


def lookback_task(
    n: int, length: int, shift: int = 3, num_symbols: int = 16, seed: int = 0
) -> tuple[Tensor, Tensor]:
    r"""Random token sequences whose target at position i is the token at i - ``shift``.

    Tokens are drawn uniformly from 0, ..., ``num_symbols`` - 1 with a private
    ``torch.Generator`` seeded with ``seed`` (the global random state is untouched). The first
    ``shift`` positions have no token to look back at; their target is :data:`IGNORE_INDEX`.

    Shape:
        Returns ``(tokens, targets)``, both (n, length) long, with
        ``targets[:, shift:] == tokens[:, :-shift]``.

    Raises:
        TypeError: if an argument is not an int.
        ValueError: if ``n``, ``length`` or ``num_symbols`` < 1, or ``shift`` is not in
            [1, ``length``).
    """
    check_int("n", n, minimum=1)
    check_int("length", length, minimum=1)
    check_int("num_symbols", num_symbols, minimum=1)
    check_int("shift", shift, minimum=1)
    if shift >= length:
        raise ValueError(f"shift must be < length (some position needs a target), "
                         f"got shift = {shift} and length = {length}")
    generator = torch.Generator().manual_seed(check_int("seed", seed, minimum=0))
    tokens = torch.randint(0, num_symbols, (n, length), generator=generator)  # (n, L)
    targets = torch.full_like(tokens, IGNORE_INDEX)  # (n, L)
    targets[:, shift:] = tokens[:, :-shift]
    return tokens, targets


@dataclass(frozen=True)
class LookbackConfig:
    """The configuration of :class:`LookbackModel`.

    Args:
        encoding: one of :data:`ENCODINGS`.
        num_symbols: the vocabulary size V.
        d_model: D.
        num_heads: H; must divide ``d_model``, and E = D / H must be even for ``"rope"``.
        max_len: the rows of the learned table (``"learned"`` only; the other encodings take
            any length).
        base: the base of the wavelengths (``"sinusoidal"`` and ``"rope"``).
    """

    encoding: str = "sinusoidal"
    num_symbols: int = 16
    d_model: int = 32
    num_heads: int = 1
    max_len: int = 16
    base: float = 10000.0

    def __post_init__(self) -> None:
        check_choice("encoding", self.encoding, ENCODINGS)
        for name in ("num_symbols", "d_model", "num_heads", "max_len"):
            check_int(name, getattr(self, name), minimum=1)
        check_positive("base", self.base)


class LookbackModel(nn.Module):
    r"""Token embedding, one layer of self-attention, a linear classifier.

    .. math::

        X = \mathrm{Embed}(x) \,[+\, P],

        \mathrm{head} = \mathrm{softmax}\!\left(\frac{\rho(X W^Q)\,\rho(X W^K)^\top}{\sqrt E}
        \right) X W^V,

        \mathrm{logits} = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h) W^O W^C

    where P is the sinusoidal or learned table (added) and :math:`\rho` is the RoPE rotation
    (for ``"rope"``; the identity otherwise). No mask: every position sees every other, so the
    position encoding is the model's only source of order. No residual connection: the output
    at position i is the attention's weighted average of values, so the model must *attend* to
    position i - shift to answer.

    Shape:
        - tokens: (B, L) long, in [0, V)
        - output: logits (B, L, V), and with ``need_weights`` the weights (B, H, L, L)

    Raises:
        ValueError: at construction, for an unknown encoding or bad sizes; in ``forward``, for
            tokens that are not (B, L) or hold an id outside [0, V), or a sequence longer
            than ``max_len`` with ``"learned"`` (the learned table has no row for it).
        TypeError: if tokens is not an integer tensor.
    """

    def __init__(self, config: LookbackConfig, *, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        check_float_dtype("dtype", dtype, optional=True)
        check_instance("config", config, LookbackConfig, "a LookbackConfig")
        if config.d_model % config.num_heads:
            raise ValueError(f"num_heads must divide d_model, got d_model = {config.d_model} "
                             f"and num_heads = {config.num_heads}")
        self.config = config
        D, H = config.d_model, config.num_heads
        self.embedding = nn.Embedding(config.num_symbols, D, dtype=dtype)
        self.position: nn.Module | None = None
        self.rope: RotaryPositionalEmbedding | None = None
        if config.encoding == "sinusoidal":
            self.position = SinusoidalPositionalEncoding(D, max_len=config.max_len,
                                                         base=config.base, dtype=dtype)
        elif config.encoding == "learned":
            self.position = LearnedPositionalEmbedding(config.max_len, D, dtype=dtype)
        elif config.encoding == "rope":
            self.rope = RotaryPositionalEmbedding(D // H, base=config.base)
        self.q_proj = nn.Linear(D, D, dtype=dtype)
        self.k_proj = nn.Linear(D, D, dtype=dtype)
        self.v_proj = nn.Linear(D, D, dtype=dtype)
        self.out_proj = nn.Linear(D, D, dtype=dtype)
        self.classifier = nn.Linear(D, config.num_symbols, dtype=dtype)

    def _check_tokens(self, tokens: Tensor) -> Tensor:
        return check_token_ids("tokens", tokens, self.config.num_symbols,
                               device=self.embedding.weight.device)

    def _qkv(self, tokens: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Queries, keys and values per head, with the positions put in."""
        x = self.embedding(self._check_tokens(tokens))  # (B, L, D)
        if self.position is not None:
            x = self.position(x)  # (B, L, D)
        H = self.config.num_heads
        q = split_heads(self.q_proj(x), H)  # (B, H, L, E)
        k = split_heads(self.k_proj(x), H)  # (B, H, L, E)
        v = split_heads(self.v_proj(x), H)  # (B, H, L, E)
        if self.rope is not None:
            # Rotate after the projection: the biases of q_proj and k_proj
            # then give a score term that depends on the offset alone,
            # whatever the tokens.
            q, k = self.rope(q), self.rope(k)  # (B, H, L, E) each
        return q, k, v

    def scores(self, tokens: Tensor) -> Tensor:
        r"""The attention scores :math:`q_i \cdot k_j / \sqrt E` before the softmax.

        Shape:
            - tokens: (B, L)
            - output: (B, H, L, L), queries × keys
        """
        q, k, _ = self._qkv(tokens)
        return q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, H, L, L)

    def forward(
        self, tokens: Tensor, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """Logits for every position, and the attention weights if ``need_weights``."""
        check_flag("need_weights", need_weights)
        q, k, v = self._qkv(tokens)
        weights: Tensor | None = None
        if need_weights:
            heads, weights = scaled_dot_product_attention(q, k, v, need_weights=True)
        else:
            heads = scaled_dot_product_attention(q, k, v)  # (B, H, L, E)
        logits = self.classifier(self.out_proj(merge_heads(heads)))  # (B, L, V)
        return logits, weights


def train_lookback(
    model: LookbackModel,
    *,
    length: int,
    shift: int = 3,
    steps: int = 400,
    batch_size: int = 64,
    lr: float = 1e-2,
    seed: int = 0,
) -> list[float]:
    """Train ``model`` with Adam on fresh batches of :func:`lookback_task` sequences.

    Every step draws a new batch of ``batch_size`` sequences of one ``length`` (seed
    ``seed + step``), so the model never sees the same batch twice and cannot memorise. The
    batches are drawn in the model's parameter dtype's device; train in float64 for results that
    do not depend on the CPU's thread count or vector width.

    Returns:
        The training loss (mean cross-entropy over positions with a target) of every step.

    Raises:
        ValueError: if ``steps`` or ``batch_size`` < 1, ``lr`` <= 0, or the task's arguments
            are invalid (see :func:`lookback_task`).
    """
    check_instance("model", model, LookbackModel, "a LookbackModel")
    check_int("steps", steps, minimum=1)
    check_int("batch_size", batch_size, minimum=1)
    check_positive("lr", lr)
    check_int("seed", seed, minimum=0)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    # Decaying the rate to zero lets training settle: the final weights, and so the accuracies
    # printed from them, do not hinge on where the last few noisy steps happened to land.
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps)
    model.train()
    losses: list[float] = []
    for step in range(steps):
        tokens, targets = lookback_task(batch_size, length, shift,
                                        model.config.num_symbols, seed=seed + step)
        logits, _ = model(tokens)  # (B, L, V)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE_INDEX)
        optimizer.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]  # untyped in torch 2.13
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
    model.eval()
    return losses


@torch.no_grad()
def lookback_accuracy_by_position(
    model: LookbackModel, length: int, shift: int = 3, n: int = 500, seed: int = 10**6
) -> Tensor:
    """The accuracy at each position with a target: the fraction of ``n`` sequences right there.

    Evaluated on ``n`` fresh sequences of ``length`` (seed ``seed``, far from the training
    seeds), in evaluation mode. The first ``shift`` positions have no target (nothing to look
    back to) and are left out: element i is the accuracy at position ``shift + i``.

    Shape:
        - output: (length - shift,), float64, for positions shift, ..., length - 1

    Raises:
        ValueError: as :func:`lookback_task`, or as the model's ``forward`` (a ``"learned"``
            model and ``length`` > ``max_len``).
    """
    check_instance("model", model, LookbackModel, "a LookbackModel")
    tokens, targets = lookback_task(n, length, shift, model.config.num_symbols, seed=seed)
    model.eval()
    logits, _ = model(tokens)  # (n, L, V)
    right: Tensor = (logits.argmax(-1) == targets).double().mean(0)  # (L,)
    return right[shift:]  # (L - shift,)


def lookback_accuracy(
    model: LookbackModel, length: int, shift: int = 3, n: int = 500, seed: int = 10**6
) -> float:
    """The fraction of all positions with a target (in ``n`` sequences) answered right.

    The mean of :func:`lookback_accuracy_by_position` over the positions with a target.

    Raises:
        As :func:`lookback_accuracy_by_position`.
    """
    by_position = lookback_accuracy_by_position(model, length, shift, n, seed)  # (L - shift,)
    return float(by_position.mean())


@torch.no_grad()
def mean_score_by_offset(
    model: LookbackModel, length: int, n: int = 200, seed: int = 10**6
) -> tuple[Tensor, Tensor]:
    r"""The attention score averaged over all query-key pairs at each offset j - i.

    For a RoPE model every score is a function of the two tokens and the offset only, so this
    average is a function of the offset alone: the position part of the score.

    Shape:
        - output: ``(offsets, mean)``, both (2 * length - 1,): offsets -(L - 1), ..., L - 1
          (long) and the mean score of head 0 at each (float64)

    Raises:
        ValueError: as :func:`lookback_task` (with ``shift`` = 1), or as the model's
            ``forward``.
    """
    check_instance("model", model, LookbackModel, "a LookbackModel")
    tokens, _ = lookback_task(n, length, 1, model.config.num_symbols, seed=seed)
    model.eval()
    scores = model.scores(tokens)[:, 0].double()  # (n, L, L), head 0
    offsets = torch.arange(-(length - 1), length)  # (2L - 1,)
    mean = torch.stack([scores.diagonal(int(d), dim1=1, dim2=2).mean() for d in offsets])
    return offsets, mean  # (2L - 1,), (2L - 1,)
