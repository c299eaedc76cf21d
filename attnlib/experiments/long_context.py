r"""Reading past the training length: RoPE position interpolation, NTK-aware scaling, ALiBi.

A RoPE model trained on sequences of :math:`L_{train}` tokens has met offsets
:math:`|m - n| < L_{train}` only; on longer sequences the rotation angles
:math:`(m - n)\theta_i` of the slow pairs reach values training never produced
(chapter 6). Two cheap remedies change the angles, not the weights:

- **Position interpolation** {Chen et al. 2023}: divide every position by
  :math:`s = L_{test} / L_{train}`, so the angles :math:`m\theta_i / s` stay in the trained
  range. Every frequency is slowed down, the fast ones too: neighbours are now
  :math:`1/s` apart, which the model has never seen; a short fine-tuning teaches it.
- **NTK-aware scaling** {bloc97 2023}: enlarge the base instead,
  :math:`b' = b\, s^{E/(E-2)}`. The fastest pair (:math:`\theta_0 = 1`) is unchanged, the
  slowest is slowed down by exactly :math:`s`, and the ones between by a factor growing
  geometrically: local offsets keep their resolution, far ones are interpolated.

ALiBi {Press et al. 2022} uses no position vectors at all: head h subtracts
:math:`m_h (i - j)` from the score of query i and key j, with slopes
:math:`m_h = 2^{-8(h + 1)/H}`; a far key can only lose.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlib._checks import (
    check_flag,
    check_float_dtype,
    check_floating,
    check_instance,
    check_int,
    check_ndim,
    check_positive,
)
from attnlib.blocks.attention import scaled_dot_product_attention
from attnlib.blocks.multihead import merge_heads
from attnlib.blocks.positional import RotaryPositionalEmbedding, _frequencies
from attnlib.experiments.extrapolation import LookbackConfig, LookbackModel

__all__ = [
    "AlibiLookbackModel",
    "ScaledRotaryEmbedding",
    "alibi_bias",
    "alibi_slopes",
    "ntk_base",
    "rescale_rope",
]


def ntk_base(base: float, scale: float, head_dim: int) -> float:
    r"""The NTK-aware base :math:`b' = b\, s^{E / (E - 2)}` for a context ``scale`` times longer.

    With it the slowest pair's frequency :math:`b'^{-(E-2)/E} = b^{-(E-2)/E} / s` is the old
    one divided by s, while the fastest, :math:`b'^0 = 1`, is unchanged.

    Raises:
        ValueError: if ``base`` or ``scale`` is not > 0, or ``head_dim`` is not an even int >= 4.
    """
    check_positive("base", base)
    check_positive("scale", scale)
    check_int("head_dim", head_dim, minimum=4)
    if head_dim % 2:
        raise ValueError(f"head_dim must be even (RoPE rotates pairs), got {head_dim}")
    factor: float = float(scale) ** (head_dim / (head_dim - 2))
    return float(base) * factor


class ScaledRotaryEmbedding(RotaryPositionalEmbedding):
    r"""RoPE with interpolated positions and/or an enlarged base.

    .. math::

        x'_{\text{pair } i} = R\big((m / s)\, \theta'_i\big)\, x_{\text{pair } i}, \qquad
        \theta'_i = b'^{-2i/E}

    ``interpolation`` is s (1: none), ``base`` is :math:`b'` (use :func:`ntk_base` for the
    NTK-aware choice). With s = 1 and the original base this is
    :class:`attnlib.blocks.positional.RotaryPositionalEmbedding`.

    Shape:
        as :class:`attnlib.blocks.positional.RotaryPositionalEmbedding`.

    Raises:
        ValueError: as the parent, or if ``interpolation`` is not > 0.
    """

    def __init__(self, head_dim: int, base: float = 10000.0, interpolation: float = 1.0) -> None:
        super().__init__(head_dim, base)
        check_positive("interpolation", interpolation)
        self.interpolation = float(interpolation)

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, interpolation={self.interpolation}"

    def forward(
        self, x: Tensor, positions: Tensor | None = None, offset: int = 0
    ) -> Tensor:
        pos = self._check_forward_args(x, positions, offset)  # (L,) or (B, L)
        pos = pos / self.interpolation  # position interpolation: m / s
        theta = _frequencies(self.head_dim, self.base, x.device)  # (E/2,)
        angles = pos[..., None] * theta  # (L, E/2) or (B, L, E/2)
        if x.ndim == 4 and angles.ndim == 3:
            angles = angles[:, None]  # (B, 1, L, E/2)
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
        x_even, x_odd = x[..., 0::2], x[..., 1::2]  # (..., L, E/2) each
        rotated = torch.stack(
            (x_even * cos - x_odd * sin, x_even * sin + x_odd * cos), dim=-1
        )  # (..., L, E/2, 2)
        return rotated.flatten(-2)  # (..., L, E)


def rescale_rope(model: LookbackModel, method: str, scale: float) -> LookbackModel:
    """Give a trained RoPE :class:`~attnlib.experiments.extrapolation.LookbackModel` scaled positions, in place.

    ``method`` is ``"rope"`` (plain RoPE again), ``"pi"`` (position interpolation by
    ``scale``) or ``"ntk"`` (the NTK-aware base for ``scale``). The learned weights are kept;
    only the rotation changes. Returns ``model``.

    Raises:
        ValueError: if the model does not use RoPE, ``method`` is unknown or ``scale`` <= 0.
    """
    check_instance("model", model, LookbackModel, "a LookbackModel")
    if model.rope is None:
        raise ValueError(f"model must use RoPE, got encoding = {model.config.encoding!r}")
    check_positive("scale", scale)
    E, base = model.rope.head_dim, model.config.base
    if method == "rope":
        model.rope = ScaledRotaryEmbedding(E, base)
    elif method == "pi":
        model.rope = ScaledRotaryEmbedding(E, base, interpolation=scale)
    elif method == "ntk":
        model.rope = ScaledRotaryEmbedding(E, ntk_base(base, scale, E))
    else:
        raise ValueError(f"method must be one of 'rope', 'pi', 'ntk', got {method!r}")
    return model


def alibi_slopes(num_heads: int) -> Tensor:
    r"""ALiBi's head slopes: the geometric sequence :math:`m_h = 2^{-8(h+1)/H}`.

    For H a power of two this is Press et al.'s rule; otherwise their extension: the slopes of
    the largest power of two :math:`n < H`, then every other slope of :math:`2n` heads.

    Shape:
        - output: (H,), float64

    Raises:
        ValueError: if ``num_heads`` < 1.
    """
    H = check_int("num_heads", num_heads, minimum=1)

    def powers(n: int) -> list[float]:
        return [2.0 ** (-8.0 * (h + 1) / n) for h in range(n)]

    n = 2 ** math.floor(math.log2(H))
    slopes = powers(n) + powers(2 * n)[0::2][: H - n]
    return torch.tensor(slopes, dtype=torch.float64)  # (H,)


def alibi_bias(
    L: int, slopes: Tensor, *, causal: bool = True, dtype: torch.dtype = torch.float32
) -> Tensor:
    r"""ALiBi's additive score bias: :math:`-m_h (i - j)`, a float mask.

    Causal: :math:`-m_h (i - j)` for :math:`j \le i` and :math:`-\infty` above the diagonal.
    Not causal: :math:`-m_h |i - j|` everywhere (Press et al. define only the causal form;
    without the mask the bias cannot tell a key before the query from one after it).

    Shape:
        - slopes: (H,)
        - output: (H, L, L), to add to scores (B, H, L, L)

    Raises:
        ValueError: if ``L`` < 1 or ``slopes`` is not 1-D.
    """
    check_int("L", L, minimum=1)
    slopes = check_floating("slopes", slopes)
    check_ndim("slopes", slopes, 1, "(H,)")
    check_flag("causal", causal)
    check_float_dtype("dtype", dtype)
    i = torch.arange(L, dtype=torch.float64)[:, None]  # (L, 1)
    j = torch.arange(L, dtype=torch.float64)[None, :]  # (1, L)
    distance = (i - j) if causal else (i - j).abs()  # (L, L)
    bias = -slopes.double()[:, None, None] * distance  # (H, L, L)
    if causal:
        bias = bias.masked_fill(j > i, float("-inf"))
    return bias.to(dtype)


class AlibiLookbackModel(LookbackModel):
    """Chapter 6's lookback model with ALiBi biases instead of position vectors.

    The model of :class:`~attnlib.experiments.extrapolation.LookbackModel` with ``encoding="none"`` (no
    position vectors), each head's scores biased by :func:`alibi_bias`.

    Shape:
        as :class:`~attnlib.experiments.extrapolation.LookbackModel`.
    """

    def __init__(self, config: LookbackConfig, *, causal: bool = True,
                 dtype: torch.dtype = torch.float32) -> None:
        check_instance("config", config, LookbackConfig, "a LookbackConfig")
        check_flag("causal", causal)
        if config.encoding != "none":
            raise ValueError(f"an ALiBi model has no position vectors: config.encoding must be "
                             f"'none', got {config.encoding!r}")
        super().__init__(config, dtype=dtype)
        self.causal = causal

    def forward(
        self, tokens: Tensor, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        check_flag("need_weights", need_weights)
        q, k, v = self._qkv(tokens)  # (B, H, L, E) each
        slopes = alibi_slopes(self.config.num_heads)  # (H,)
        bias = alibi_bias(q.shape[2], slopes, causal=self.causal, dtype=q.dtype)  # (H, L, L)
        weights: Tensor | None = None
        if need_weights:
            heads, weights = scaled_dot_product_attention(q, k, v, bias, need_weights=True)
        else:
            heads = scaled_dot_product_attention(q, k, v, bias)  # (B, H, L, E)
        logits = self.classifier(self.out_proj(merge_heads(heads)))  # (B, L, V)
        return logits, weights
