"""Scaled dot-product attention with PyTorch's semantics, and optionally its weights.

:func:`scaled_dot_product_attention` takes the same arguments as
:func:`torch.nn.functional.scaled_dot_product_attention` and means the same by them. By default
it validates its input and then calls PyTorch's fused kernel; with ``need_weights=True`` it
computes the attention explicitly, as the formula reads, and also returns the weights.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal, overload

import torch
import torch.nn.functional as F
from torch import Tensor

from attnlib._checks import check_flag, check_qkv
from attnlib.blocks.masking import _masked_softmax, causal_mask

__all__ = ["scaled_dot_product_attention"]

#: Dtypes whose scores and softmax are computed in float32 (as PyTorch's fused CPU kernel does):
#: a score of 4 * 300² overflows float16, whose largest number is 65504.
LOW_PRECISION = (torch.float16, torch.bfloat16)


def _in_float32(fn: Callable[..., Tensor], query: Tensor, key: Tensor, value: Tensor,
                *args: object) -> Tensor:
    """``fn`` on float32 copies of float16 or bfloat16 inputs, the result in their dtype."""
    return fn(query.float(), key.float(), value.float(), *args).to(query.dtype)


@overload
def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    is_causal: bool = False,
    dropout_p: float = 0.0,
    scale: float | None = None,
    *,
    need_weights: Literal[False] = False,
) -> Tensor: ...


@overload
def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    is_causal: bool = False,
    dropout_p: float = 0.0,
    scale: float | None = None,
    *,
    need_weights: Literal[True],
) -> tuple[Tensor, Tensor]: ...


@overload
def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    is_causal: bool = False,
    dropout_p: float = 0.0,
    scale: float | None = None,
    *,
    need_weights: bool,
) -> Tensor | tuple[Tensor, Tensor]: ...


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    is_causal: bool = False,
    dropout_p: float = 0.0,
    scale: float | None = None,
    *,
    need_weights: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    r"""Scaled dot-product attention, with PyTorch's semantics.

    .. math::

        \mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{E}} + M\right) V

    where :math:`M_{ij} = 0` if query i may attend to key j and :math:`-\infty` otherwise. A
    query that may attend to no key gets zero weights and a zero output (not NaN).

    Reference implementation (the ``need_weights=True`` path)::

        scale = 1 / math.sqrt(query.size(-1)) if scale is None else scale
        if is_causal:
            attn_mask = causal_mask(L, S)               # (L, S), upper-left
        scores = query @ key.transpose(-2, -1) * scale  # (..., L, S)
        weights = masked_softmax(scores, attn_mask)     # (..., L, S)
        weights = F.dropout(weights, dropout_p)         # if dropout_p > 0
        output = weights @ value                        # (..., L, Ev)

    With ``need_weights=False`` the arguments are validated and passed to
    :func:`torch.nn.functional.scaled_dot_product_attention` (the fused kernel); both paths
    agree to rounding. Dropout is applied whenever ``dropout_p > 0`` (this is a function; a
    module passes ``dropout_p = self.dropout if self.training else 0.0``). With dropout the
    returned weights are the dropped-out ones, so ``output == weights @ value``.

    Args:
        query: queries.
        key: keys.
        value: values.
        attn_mask: bool (True = may attend) or float with ``query``'s dtype (added to the
            scores), broadcastable to (..., L, S).
        is_causal: apply the causal mask ``torch.ones(L, S, dtype=torch.bool).tril()``
            (upper-left aligned when L != S, like PyTorch). Not together with ``attn_mask``.
        dropout_p: dropout probability on the attention weights, in [0, 1).
        scale: the factor multiplying :math:`QK^\top`; ``None`` means :math:`1/\sqrt{E}`.
        need_weights: also return the attention weights (explicit computation).

    Returns:
        ``output``, or ``(output, weights)`` if ``need_weights``.

    Shape:
        - query: (..., L, E), e.g. (B, H, L, E)
        - key: (..., S, E)
        - value: (..., S, Ev)
        - attn_mask: broadcastable to (..., L, S), e.g. (B, 1, 1, S) or (L, S), where ``...``
          are the batch dimensions of query and key broadcast together
        - output: (..., L, Ev), the batch dimensions of query, key and value broadcast
        - weights: (..., L, S), the batch dimensions of query and key broadcast

    float16 and bfloat16 inputs: the explicit path computes the scores and the softmax in
    float32, as PyTorch's fused CPU kernel does, and returns the input's dtype.

    Raises:
        TypeError: if an input is not a floating-point tensor, key or value differ in dtype from
            query, ``attn_mask`` is neither bool nor query's float dtype, ``is_causal`` or
            ``need_weights`` is not a bool or ``dropout_p`` is not a number.
        ValueError: if an input has fewer than 2 dimensions, query and key differ in E or E is
            0, key and value differ in S, the batch dimensions do not broadcast, a tensor is on
            another device than query, ``attn_mask`` does not broadcast to (..., L, S) or holds
            NaN or +inf, both ``attn_mask`` and ``is_causal`` are given, ``dropout_p`` is not in
            [0, 1) or ``scale`` is not finite and > 0.
    """
    attn_mask = check_qkv(query, key, value, attn_mask=attn_mask, is_causal=is_causal,
                          scale=scale, dropout_p=dropout_p)
    check_flag("need_weights", need_weights)
    output, weights = _scaled_dot_product_attention(
        query, key, value, attn_mask, is_causal, dropout_p, scale, need_weights
    )
    if not need_weights:
        return output
    assert weights is not None
    return output, weights


def _scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    is_causal: bool = False,
    dropout_p: float = 0.0,
    scale: float | None = None,
    need_weights: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """:func:`scaled_dot_product_attention` after its checks, for a caller that made them.

    PyTorch's fused kernel, or with ``need_weights`` the explicit :func:`_attend`. Returns
    ``(output, weights)``, the weights None unless ``need_weights``. The arguments are not
    checked again: a module that checked its own (:class:`~attnlib.blocks.multihead.MultiHeadAttention`)
    calls this, so a mask is checked once per call.
    """
    if attn_mask is not None and attn_mask.ndim < 2:
        # a 0-d or (S,) mask broadcasts, but PyTorch's kernels index its dimension -2
        attn_mask = attn_mask.reshape((1,) * (2 - attn_mask.ndim) + tuple(attn_mask.shape))
    if not need_weights:
        # torch 2.13's CPU kernels (fused and math) already return zero output, and zero
        # gradients, for a query whose row of the mask is all False (or all -inf): they use a
        # "safe" softmax. So no fix-up is needed here; tests/test_attention.py pins this down.
        output = F.scaled_dot_product_attention(
            query,
            key,
            value,
            attn_mask=attn_mask,
            dropout_p=dropout_p,
            is_causal=is_causal,
            scale=scale,
        )
        return output, None
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    if is_causal:
        attn_mask = causal_mask(query.shape[-2], key.shape[-2], device=query.device)  # (L, S)
    if query.dtype in LOW_PRECISION:  # scores and softmax in float32, as the fused kernel
        if attn_mask is not None and attn_mask.is_floating_point():
            attn_mask = attn_mask.float()
        output, weights = _attend(query.float(), key.float(), value.float(), attn_mask, scale,
                                  dropout_p)
        return output.to(query.dtype), weights.to(query.dtype)
    return _attend(query, key, value, attn_mask, scale, dropout_p)


def _attend(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None,
    scale: float,
    dropout_p: float,
) -> tuple[Tensor, Tensor]:
    r"""The explicit path of :func:`scaled_dot_product_attention`, without its argument checks.

    :math:`\mathrm{softmax}(Q K^\top \cdot \text{scale} + M)\, V` as the formula reads, and
    the weights. ``attn_mask`` is bool (True = may attend), float (added) or None; a query
    whose row of the mask allows no key gets zero weights and a zero output.

    Shape:
        query (..., L, E), key (..., S, E), value (..., S, Ev), attn_mask broadcastable to
        (..., L, S). Returns the output (..., L, Ev) and the weights (..., L, S).
    """
    scores = query @ key.transpose(-2, -1) * scale  # (..., L, S)
    weights = _masked_softmax(scores, attn_mask)  # (..., L, S), 0 where masked
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)  # a module passes 0.0 in eval
    return weights @ value, weights  # (..., L, Ev), (..., L, S)
