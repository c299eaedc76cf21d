r"""ALiBi {Press et al. 2022}: no position vectors, a penalty that grows with the distance.

Head h adds :math:`-m_h (i - j)` to the score of query position i and key position j
(:math:`j \le i`, causal), with the slopes a geometric sequence,
:math:`m_h = 2^{-8(h+1)/H}`. A far key can only lose; the head with the steepest slope looks
at the last few tokens, the gentlest one across the whole context. Since the bias is defined
for every distance, a model trained on short sequences can run on longer ones as it is.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlib._checks import (
    check_float_dtype,
    check_floating,
    check_int,
    check_mask,
    check_ndim,
    check_positions,
    shape_str,
)

__all__ = ["alibi_bias", "alibi_slopes"]


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
    q_pos: Tensor, k_pos: Tensor, slopes: Tensor, allowed: Tensor | None = None,
    dtype: torch.dtype = torch.float32,
) -> Tensor:
    r"""The float mask :math:`-m_h (i - j)`, and :math:`-\infty` where ``allowed`` is False.

    ``q_pos`` and ``k_pos`` are absolute positions, so the same call serves a whole sequence
    and a decoding step with a cache. Keys after the query (:math:`j > i`) get the bias
    :math:`-m_h |i - j|`; pass the causal mask as ``allowed`` to forbid them.

    Shape:
        - q_pos: (L,); k_pos: (S,); slopes: (H,); allowed: (L, S) bool or None
        - output: (H, L, S), to add to scores (B, H, L, S)

    Raises:
        TypeError: positions that are not integers, ``slopes`` not floating point, ``allowed``
            not bool, ``dtype`` not a floating-point dtype.
        ValueError: if a position tensor or ``slopes`` is not 1-D, a position is negative,
            ``allowed`` is not (L, S), or a tensor is on another device than ``slopes``.
    """
    slopes = check_floating("slopes", slopes)
    check_ndim("slopes", slopes, 1, "(H,)")
    check_positions("q_pos", q_pos, "(L,)", slopes.device, "slopes")
    check_positions("k_pos", k_pos, "(S,)", slopes.device, "slopes")
    check_float_dtype("dtype", dtype)
    distance = (q_pos[:, None] - k_pos[None, :]).abs().double()  # (L, S)
    bias = -slopes.double()[:, None, None] * distance  # (H, L, S)
    if allowed is not None:
        check_mask("allowed", allowed, distance.shape, expected="(L, S)",
                   device=slopes.device, bool_only=True)
        if allowed.shape != distance.shape:
            raise ValueError(f"allowed must have shape (L, S) = {shape_str(distance.shape)}, "
                             f"got {shape_str(allowed.shape)}")
        bias = bias.masked_fill(~allowed, float("-inf"))
    return bias.to(dtype)
