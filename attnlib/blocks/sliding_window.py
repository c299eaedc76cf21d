r"""Sliding-window (local) attention: each query sees only the last w keys.

The "restricted self-attention" of Vaswani et al.'s Table 1, in the causal form that Longformer
{Beltagy et al. 2020}, the sparse Transformer's local pattern {Child et al. 2019} and Mistral 7B
use: query i attends to keys i - w + 1, ..., i, a band of width w below the diagonal,

.. math::

    \text{band}_{i,j} = [\, i - w < j \le i \,],

    \mathrm{out}_i = \sum_{j = i - w + 1}^{i} \mathrm{softmax}_j\!\left(
    \frac{q_i \cdot k_j}{\sqrt E}\right) v_j .

With the band as a mask (:func:`sliding_window_mask`) full attention computes it, but still
spends :math:`L \cdot S` time and memory on scores that are masked away.
:func:`sliding_window_attention` computes only the band: it cuts the sequence into blocks of w
queries, and block b needs only the keys of blocks b - 1 and b. Each block costs
:math:`w \times 2w` scores, so time and memory grow like :math:`n \cdot w`, linearly in the
length n for a fixed window.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from attnlib._checks import check_device_arg, check_int, check_qkv
from attnlib.blocks.attention import LOW_PRECISION
from attnlib.blocks.masking import masked_softmax

__all__ = ["sliding_window_attention", "sliding_window_mask", "window_reach"]


def sliding_window_mask(
    L: int, window: int, S: int | None = None, device: torch.device | str | None = None
) -> Tensor:
    r"""The causal band: query i may attend to key j iff :math:`i - w < j \le i`.

    Upper-left aligned like :func:`attnlib.blocks.masking.causal_mask` (query i is at position i). A
    window of at least L is the causal mask.

    Shape:
        - output: (L, S), bool, S = L if not given

    Raises:
        TypeError: if a size is not an int.
        ValueError: if ``L`` or ``S`` < 0, or ``window`` < 1.
    """
    check_int("L", L, minimum=0)
    check_int("window", window, minimum=1)
    S = L if S is None else check_int("S", S, minimum=0)
    check_device_arg("device", device)
    i = torch.arange(L, device=device)[:, None]  # (L, 1)
    j = torch.arange(S, device=device)[None, :]  # (1, S)
    return (j <= i) & (j > i - window)  # (L, S)


def window_reach(window: int, num_layers: int) -> int:
    r"""How far back the last of ``num_layers`` stacked window layers can see.

    Each layer looks :math:`w - 1` positions back, and a position it reads already summarises
    the :math:`w - 1` before it, so N layers reach :math:`N (w - 1)` positions back.

    Raises:
        ValueError: if ``window`` or ``num_layers`` < 1.
    """
    check_int("window", window, minimum=1)
    check_int("num_layers", num_layers, minimum=1)
    return num_layers * (window - 1)


def sliding_window_attention(
    query: Tensor, key: Tensor, value: Tensor, window: int
) -> Tensor:
    r"""Causal sliding-window self-attention computed block by block, in O(n w) time and memory.

    Queries are cut into blocks of w. Block b (queries bw, ..., bw + w - 1) sees keys from
    bw - w + 1 on, all inside blocks b - 1 and b; so the keys are laid out as pairs of
    neighbouring blocks, a (2w)-key window per query block, and the band is one fixed
    (w, 2w) mask, the same for every block:

    .. math::

        \begin{aligned}
        &\text{query } r \text{ of a block sees local key } c \iff r < c \le r + w \\
        &\quad (c \text{ counts from the start of the previous block}).
        \end{aligned}

    The sequence is padded with zeros at the front (one block: the "previous block" of block
    0) and at the end (to a multiple of w); the front padding is masked by the band's
    condition on real positions, the end padding only adds queries that are dropped. The result
    equals full attention with :func:`sliding_window_mask`.

    Shape:
        - query, key: (B, H, n, E); value: (B, H, n, Ev)
        - output: (B, H, n, Ev)

    Raises:
        ValueError: if the shapes differ (self-attention: key has the query's shape), a tensor
            is not 4-D, E = 0, the tensors are on different devices, or ``window`` < 1.
        TypeError: if an input is not a floating tensor, the dtypes differ, or ``window`` is
            not an int.

    A window longer than the sequence is causal attention: it is cut to n, so memory and time
    follow the sequence, not the window. float16 and bfloat16 are computed in float32.
    """
    w = _check_sliding_args(query, key, value, window)
    B, H, n, E = query.shape
    Ev = value.shape[-1]
    if n == 0 or query.dtype in LOW_PRECISION:  # empty; float16 in float32
        return _empty_or_float32(query, key, value, w)
    w = min(w, n)  # a window of n sees every earlier key: cost follows n
    blocks = -(-n // w)  # ceil(n / w)
    pad_end = blocks * w - n
    q = F.pad(query, (0, 0, 0, pad_end))  # (B, H, blocks w, E)
    k = F.pad(key, (0, 0, w, pad_end))  # (B, H, (blocks + 1) w, E)
    v = F.pad(value, (0, 0, w, pad_end))  # (B, H, (blocks + 1) w, Ev)
    q = q.view(B, H, blocks, w, E)  # (B, H, blocks, w, E)
    # Keys of blocks b - 1 and b for every block b: a strided view, no copy.
    k = k.unfold(2, 2 * w, w).transpose(-2, -1)  # (B, H, blocks, 2w, E)
    v = v.unfold(2, 2 * w, w).transpose(-2, -1)  # (B, H, blocks, 2w, Ev)
    r = torch.arange(w, device=query.device)[:, None]  # (w, 1): query in block
    c = torch.arange(2 * w, device=query.device)[None, :]  # (1, 2w): key
    band = (c > r) & (c <= r + w)  # (w, 2w)
    # The first block's "previous block" is padding, not keys: hide it there.
    real = torch.ones(blocks, 1, 2 * w, dtype=torch.bool, device=query.device)
    real[0, :, :w] = False  # (blocks, 1, 2w)
    mask = band & real  # (blocks, w, 2w)
    scores = q @ k.transpose(-2, -1) / math.sqrt(E)  # (B, H, blocks, w, 2w)
    weights = masked_softmax(scores, mask)  # (B, H, blocks, w, 2w)
    out = weights @ v  # (B, H, blocks, w, Ev)
    return out.reshape(B, H, blocks * w, Ev)[:, :, :n]  # (B, H, n, Ev)


def _check_sliding_args(query: Tensor, key: Tensor, value: Tensor, window: int) -> int:
    """The argument checks of :func:`sliding_window_attention`; returns the window."""
    check_qkv(query, key, value, layout="self")
    return check_int("window", window, minimum=1)


def _empty_or_float32(query: Tensor, key: Tensor, value: Tensor, window: int) -> Tensor:
    """No position: an empty output. float16 or bfloat16: the attention in float32."""
    if query.shape[2] == 0:
        return value.new_zeros(*value.shape)  # (B, H, 0, Ev)
    out = sliding_window_attention(query.float(), key.float(), value.float(), window)
    return out.to(query.dtype)
