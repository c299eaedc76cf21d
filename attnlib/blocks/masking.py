"""Masks and the masked softmax.

One convention everywhere, the one of :func:`torch.nn.functional.scaled_dot_product_attention`:
a boolean mask is True where a query **may attend** to a key and broadcasts to (B, H, L, S);
a float mask is added to the scores (0 = allowed, :math:`-\\infty` = forbidden).

Valid lengths become a mask in exactly one place, :func:`lengths_to_mask`; nothing downstream
takes lengths. :func:`padding_mask` only reshapes its result for (B, H, L, S) scores.

``torch.nn.MultiheadAttention``'s ``key_padding_mask`` uses the opposite convention
(True = ignore): pass it ``~mask``.
"""

from __future__ import annotations

import torch
from torch import Tensor

from attnlib._checks import (
    check_device_arg,
    check_floating,
    check_int,
    check_mask,
    check_not_meta,
    check_positive,
    check_tensor,
    shape_str,
)

__all__ = [
    "causal_mask",
    "float_mask",
    "lengths_to_mask",
    "masked_softmax",
    "padding_mask",
    "softmax_with_temperature",
]


def _check_size(name: str, value: object) -> int:
    """Raise unless ``value`` is a non-negative Python int (bool is refused) within int64."""
    return check_int(name, value, minimum=0)


def lengths_to_mask(lengths: Tensor, max_len: int) -> Tensor:
    r"""Turn valid lengths into a boolean mask: the one place where lengths become a mask.

    .. math::

        \text{mask}_{b, s} = [\, s < \text{lengths}_b \,]

    Args:
        lengths: the number of real (non-padding) tokens of each sequence, integer dtype.
        max_len: the padded length S.

    Returns:
        Bool tensor, True at real tokens and False at padding.

    Shape:
        - lengths: (B,)
        - output: (B, S) with S = ``max_len``

    Raises:
        TypeError: if ``lengths`` is not an integer tensor or ``max_len`` is not an int.
        ValueError: if ``lengths`` is not 1-D, holds a negative length or one longer than
            ``max_len``, or if ``max_len`` < 0.
    """
    lengths, max_len = _check_lengths(lengths, max_len)
    positions = torch.arange(max_len, device=lengths.device)  # (S,)
    return positions < lengths[:, None]  # (B, S)


def _check_lengths(lengths: Tensor, max_len: int) -> tuple[Tensor, int]:
    """The argument checks of :func:`lengths_to_mask`; returns the checked arguments."""
    lengths = check_tensor("lengths", lengths)
    if lengths.is_floating_point() or lengths.is_complex() or lengths.dtype == torch.bool:
        raise TypeError(
            f"lengths must have an integer dtype (e.g. torch.long), got {lengths.dtype}"
        )
    if lengths.ndim != 1:
        raise ValueError(
            f"lengths must have 1 dimension (B,), got shape {shape_str(lengths.shape)}"
        )
    max_len = _check_size("max_len", max_len)
    check_not_meta("lengths", lengths, f"lengths in [0, max_len = {max_len}]")
    if lengths.numel() > 0:
        lo, hi = int(lengths.min()), int(lengths.max())
        if lo < 0:
            raise ValueError(f"lengths must be >= 0, got a length of {lo} in {lengths.tolist()}")
        if hi > max_len:
            raise ValueError(
                f"lengths must be <= max_len = {max_len}, got a length of {hi} "
                f"in {lengths.tolist()}"
            )
    return lengths, max_len


def padding_mask(lengths: Tensor, max_len: int) -> Tensor:
    """Key padding mask from valid lengths, shaped to broadcast against (B, H, L, S) scores.

    A thin reshape of :func:`lengths_to_mask`; True = this key is a real token.

    Shape:
        - lengths: (B,)
        - output: (B, 1, 1, S) with S = ``max_len``

    Raises:
        The errors of :func:`lengths_to_mask`.
    """
    return lengths_to_mask(lengths, max_len)[:, None, None, :]  # (B, 1, 1, S)


def causal_mask(
    L: int, S: int | None = None, device: torch.device | str | None = None
) -> Tensor:
    r"""Causal mask, upper-left aligned exactly like PyTorch's ``is_causal=True``.

    .. math::

        \text{mask}_{i, j} = [\, j \le i \,]

    When L != S the diagonal starts at the upper-left corner (query i sees keys 0..i), which is
    ``torch.ones(L, S, dtype=torch.bool).tril()``.

    Args:
        L: number of queries.
        S: number of keys; ``None`` means S = L.
        device: where to create the mask.

    Shape:
        - output: (L, S), bool

    Raises:
        TypeError: if ``L`` or ``S`` is not an int.
        ValueError: if ``L`` or ``S`` is negative.
    """
    L = _check_size("L", L)
    S = L if S is None else _check_size("S", S)
    check_device_arg("device", device)
    return torch.ones(L, S, dtype=torch.bool, device=device).tril()  # (L, S)


def float_mask(mask: Tensor, dtype: torch.dtype = torch.float32) -> Tensor:
    r"""Boolean mask to additive float mask: 0 where allowed, :math:`-\infty` where not.

    Shape:
        - mask: any shape, bool
        - output: same shape as ``mask``, dtype ``dtype``

    Raises:
        TypeError: if ``mask`` is not a bool tensor or ``dtype`` is not a floating-point dtype.
    """
    mask = check_tensor("mask", mask)
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor (True = may attend), got dtype {mask.dtype}")
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating-point torch.dtype, got {dtype}")
    zeros = torch.zeros(mask.shape, dtype=dtype, device=mask.device)
    return zeros.masked_fill(~mask, float("-inf"))


def masked_softmax(scores: Tensor, mask: Tensor | None = None, dim: int = -1) -> Tensor:
    r"""Softmax over ``dim`` that ignores masked entries; a pure function.

    .. math::

        \alpha_{i} = \frac{m_i \exp(s_i)}{\sum_j m_j \exp(s_j)},

        \alpha = 0 \text{ if every } m_j = 0

    A bool ``mask`` keeps the entries where it is True (the others are filled with
    :math:`-\infty`, never with -1e9, which overflows float16 and gives uniform weights over a
    fully masked row); a float ``mask`` is added to the scores. A row in which every entry is
    :math:`-\infty` after masking gets all-zero weights, and zero gradient, never NaN, as in
    PyTorch's ``scaled_dot_product_attention``. Only :math:`-\infty` marks a masked entry: a
    float mask with finite large negatives (say -1e9) is accepted and added like any other, and
    a row that it fills entirely gets positive weights that sum to one, not zeros. The input
    tensors are never written to.

    Args:
        scores: unnormalised scores, floating point.
        mask: ``None``, a bool tensor or a float tensor with ``scores``' dtype, broadcastable
            to ``scores``.
        dim: the dimension to normalise over (the keys).

    Shape:
        - scores: (..., S) with S along ``dim``, e.g. (B, H, L, S)
        - mask: broadcastable to ``scores``, e.g. (B, 1, 1, S) or (L, S)
        - output: same as ``scores``

    Raises:
        TypeError: if ``scores`` is not floating point, or ``mask`` has an integer dtype or a
            float dtype other than ``scores``'.
        ValueError: if ``mask`` does not broadcast to ``scores``, or ``dim`` is out of range.
    """
    scores, mask = _check_softmax_args(scores, mask, dim)
    return _masked_softmax(scores, mask, dim)


def _masked_softmax(
    scores: Tensor, mask: Tensor | None, dim: int = -1
) -> Tensor:
    """:func:`masked_softmax` without its argument checks (made by the caller)."""
    if mask is None:
        masked = scores
    elif mask.dtype == torch.bool:
        masked = torch.where(mask, scores, float("-inf"))  # True = may attend
    else:
        masked = scores + mask  # a float mask is added: 0 or -inf
    # A row with no allowed key would be softmax(-inf, ..., -inf) = NaN, and
    # NaN * 0 in the backward pass would poison the gradients of the other rows
    # too; give it finite dummy scores first, then zero its weights.
    dead = torch.isneginf(masked).all(dim=dim, keepdim=True)
    weights = torch.softmax(masked.masked_fill(dead, 0.0), dim=dim)
    return weights.masked_fill(dead, 0.0)


def _check_softmax_args(
    scores: Tensor, mask: Tensor | None, dim: int
) -> tuple[Tensor, Tensor | None]:
    """The argument checks of :func:`masked_softmax`; returns scores and the checked mask."""
    scores = check_floating("scores", scores)
    check_int("dim", dim)
    if scores.ndim == 0 or not -scores.ndim <= dim < scores.ndim:
        raise ValueError(
            f"dim must index a dimension of scores of shape {shape_str(scores.shape)}, got {dim}"
        )
    if mask is not None:
        mask = check_mask("mask", mask, scores.shape, dtype=scores.dtype, device=scores.device)
    return scores, mask


def softmax_with_temperature(
    scores: Tensor, temperature: float, mask: Tensor | None = None,
    dim: int = -1,
) -> Tensor:
    r"""Masked softmax of ``scores / temperature``.

    .. math::

        \alpha_i = \frac{\exp(s_i / \tau)}{\sum_j \exp(s_j / \tau)}

    :math:`\tau \to 0` approaches a one-hot argmax (hard attention),
    :math:`\tau \to \infty` the uniform distribution over the allowed keys.

    Shape:
        - scores: (..., S); mask: broadcastable to ``scores``; output: same as
          ``scores``

    Raises:
        ValueError: if ``temperature`` is not finite and > 0, or so small that a
            finite score divided by it overflows (to infinity, where the softmax
            would be NaN), and as :func:`masked_softmax`.
        TypeError: as :func:`masked_softmax`.
    """
    check_positive("temperature", temperature)
    scores = check_tensor("scores", scores)
    scaled = _divide_by_temperature(scores, temperature)
    return masked_softmax(scaled, mask, dim=dim)


def _divide_by_temperature(scores: Tensor, temperature: float) -> Tensor:
    """``scores / temperature``, refusing a temperature so small that a finite score overflows."""
    check_floating("scores", scores)
    scaled = scores / temperature
    if scaled.device.type == "meta":  # no numbers to check (the mask's device is checked next)
        return scaled
    finite = torch.isfinite(scores)
    if not bool(torch.isfinite(scaled[finite]).all()):
        largest = scores[finite].abs().max().item()
        raise ValueError(
            f"temperature must be large enough that scores / temperature stays finite in "
            f"{scaled.dtype}, got {temperature!r} with a largest |score| of {largest:.4g}"
        )
    return scaled
