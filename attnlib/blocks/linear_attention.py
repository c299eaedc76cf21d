r"""Linear attention {Katharopoulos et al. 2020}: a kernel instead of the softmax, O(n) in length.

Softmax attention weighs value j for query i by :math:`\exp(q_i \cdot k_j / \sqrt E)`. Replace
that similarity by a kernel :math:`\phi(q_i) \cdot \phi(k_j)` with a positive feature map, here
:math:`\phi(x) = \mathrm{elu}(x) + 1`, and the sums can be regrouped:

.. math::

    \begin{aligned}
    \mathrm{out}_i &= \frac{\sum_j \phi(q_i)^\top \phi(k_j)\, v_j^\top}
                           {\sum_j \phi(q_i)^\top \phi(k_j)} \\
                   &= \frac{\phi(q_i)^\top \big(\sum_j \phi(k_j) v_j^\top\big)}
                           {\phi(q_i)^\top \sum_j \phi(k_j)} .
    \end{aligned}

The (E, Ev) matrix :math:`\sum_j \phi(k_j) v_j^\top` is computed once for all queries, so the
cost is :math:`O(n E E_v)` instead of :math:`O(n^2 E)`. With the causal mask the sums run over
:math:`j \le i`: a running (E, Ev) state, updated once per token when generating, and
computed chunk by chunk when training. It is a different model, not a faster softmax: the weights are not those of
softmax attention.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from attnlib._checks import check_floating, check_int, check_qkv
from attnlib.blocks.attention import LOW_PRECISION, _in_float32
from attnlib.blocks.gqa import GroupedQueryAttention, repeat_kv
from attnlib.blocks.multihead import merge_heads

__all__ = [
    "LinearSelfAttention",
    "elu_feature_map",
    "linear_attention",
    "linear_attention_quadratic",
    "linear_attention_recurrent",
]


def elu_feature_map(x: Tensor) -> Tensor:
    r"""Katharopoulos et al.'s feature map :math:`\phi(x) = \mathrm{elu}(x) + 1 > 0`.

    Computed as :math:`x + 1` for :math:`x > 0` and :math:`e^x` otherwise, the same function
    without the cancellation of :math:`(e^x - 1) + 1`, which rounds :math:`\phi(-20)` to 0 in
    float32 (:math:`e^x` itself reaches 0 only below -87 in float32, -745 in float64).
    """
    x = check_floating("x", x)
    return torch.where(x > 0, x + 1.0, torch.exp(x.clamp(max=0.0)))


def _features(query: Tensor, key: Tensor) -> tuple[Tensor, Tensor]:
    r""":math:`\phi(q_i)` and :math:`\phi(k_j)`, each divided by a positive constant.

    A query whose entries are all negative is shifted so that its largest entry is 0 (one
    feature is 1); so are the keys of a head, all by the same amount. Dividing
    :math:`\phi(q_i)` by a constant, or every :math:`\phi(k_j)` by one constant, leaves the
    weights :math:`\phi(q_i)^\top \phi(k_j) / \sum_{j'} \phi(q_i)^\top \phi(k_{j'})` as
    they are, and keeps a row of features from underflowing to zeros (0 / 0). Entries with a
    positive maximum are not shifted.

    Shape:
        - query: (B, H, L, E); key: (B, H, S, E); outputs: the same
    """
    shift_q = query.detach().amax(-1, keepdim=True).clamp(max=0.0)  # (B, H, L, 1)
    if key.shape[-2] == 0:
        return elu_feature_map(query - shift_q), elu_feature_map(key)
    shift_k = key.detach().amax((-2, -1), keepdim=True).clamp(max=0.0)  # (B, H, 1, 1)
    return elu_feature_map(query - shift_q), elu_feature_map(key - shift_k)


def _safe(denominator: Tensor) -> Tensor:
    """The normaliser, at least the dtype's smallest normal number (its ε).

    It is below that only where every product :math:`\\phi(q_i)^\top \\phi(k_j)` underflows
    (or there is no key): the numerator is then at most the normaliser times the largest
    value, so the output stays within the values' range (0 where the numerator is 0 too)
    instead of 0 / 0 = NaN. Any other normaliser is left exactly as it is.
    """
    return denominator.clamp_min(torch.finfo(denominator.dtype).tiny)


def linear_attention(
    query: Tensor, key: Tensor, value: Tensor, is_causal: bool = False,
    chunk_size: int = 64,
) -> Tensor:
    r"""Linear attention with :math:`\phi = \mathrm{elu} + 1`, in time and memory linear in n.

    Without a mask: one (E, Ev) summary :math:`\sum_j \phi(k_j) v_j^\top` for all queries.
    Causal (L = S), in chunks of ``chunk_size`` positions: a query sees the summary of all
    earlier chunks (an exclusive prefix sum over chunks, one (E, Ev) state each) plus the
    keys of its own chunk up to itself, computed as a masked C x C product. The keys and
    values are padded at the end with zeros (after the feature map, so they add nothing),
    and the padded queries' rows are dropped. Memory: :math:`O(n C + (n / C) E E_v)`.

    The normaliser is numerically safe: the features are scaled so that no row underflows
    (``_features``, the weights unchanged) and a normaliser below the dtype's smallest
    normal number is raised to it (``_safe``, the ε), so finite input gives a finite
    output. float16 and bfloat16 are computed in float32 (their sums overflow at
    :math:`|x| \approx 250`).

    Shape:
        - query: (B, H, L, E); key: (B, H, S, E); value: (B, H, S, Ev)
        - output: (B, H, L, Ev)

    Raises:
        ValueError: if the shapes do not fit, E = 0, the tensors are on different devices,
            ``is_causal`` with L != S, or ``chunk_size`` < 1.
        TypeError: if an input is not a floating tensor, ``is_causal`` is not a bool or
            ``chunk_size`` is not an int.
    """
    check_qkv(query, key, value, layout="heads", is_causal=is_causal,
              causal_needs_l_eq_s=True)
    C = check_int("chunk_size", chunk_size, minimum=1)
    if query.dtype in LOW_PRECISION:  # float16: computed in float32
        return _in_float32(linear_attention, query, key, value, is_causal, C)
    q, k = _features(query, key)  # (B, H, L, E), (B, H, S, E)
    if not is_causal:
        summary = k.transpose(-2, -1) @ value  # (B, H, E, Ev)
        normaliser = k.sum(dim=-2)  # (B, H, E)
        numerator = q @ summary  # (B, H, L, Ev)
        weighted = q * normaliser[:, :, None, :]  # (B, H, L, E)
        return numerator / _safe(weighted.sum(-1, keepdim=True))
    B, H, n, E = q.shape
    Ev = value.shape[-1]
    if n == 0:
        return value.new_zeros(B, H, 0, Ev)
    C = min(C, n)
    chunks = -(-n // C)
    pad = chunks * C - n
    # Padded queries are ones, not zeros: their rows are dropped, but 0/0 there
    # would put NaN into the gradients of the real rows. Padded keys and values
    # are zeros and add nothing. Each is (B, H, chunks, C, E or Ev).
    q_c = F.pad(q, (0, 0, 0, pad), value=1.0).view(B, H, chunks, C, E)
    k_c = F.pad(k, (0, 0, 0, pad)).view(B, H, chunks, C, E)
    v_c = F.pad(value, (0, 0, 0, pad)).view(B, H, chunks, C, Ev)
    # Across chunks: the state of all earlier chunks, the sum of phi(k) v^T
    # (an exclusive prefix sum).
    per_chunk = k_c.transpose(-2, -1) @ v_c  # (B, H, chunks, E, Ev)
    states = torch.cumsum(per_chunk, dim=2) - per_chunk  # (..., chunks, E, Ev)
    key_sums = k_c.sum(-2)  # (B, H, chunks, E)
    sums = torch.cumsum(key_sums, dim=2) - key_sums  # (B, H, chunks, E)
    # Within a chunk: the quadratic form with the causal mask, C x C.
    scores = (q_c @ k_c.transpose(-2, -1)).tril()  # (B, H, chunks, C, C)
    numerator = scores @ v_c + q_c @ states  # (B, H, chunks, C, Ev)
    past = (q_c * sums[..., None, :]).sum(-1, keepdim=True)  # (..., C, 1)
    denominator = scores.sum(-1, keepdim=True) + past  # (B, H, chunks, C, 1)
    out = (numerator / _safe(denominator)).view(B, H, chunks * C, Ev)
    return out[:, :, :n]  # (B, H, n, Ev): the padded rows dropped



def linear_attention_quadratic(
    query: Tensor, key: Tensor, value: Tensor, is_causal: bool = False
) -> Tensor:
    r"""The same model written with its (L, S) weights, for checking: O(n²).

    .. math::

        A_{ij} = \frac{\phi(q_i)^\top \phi(k_j)}{\sum_{j'} \phi(q_i)^\top \phi(k_{j'})},

        \mathrm{out} = A V

    With the same scaled features and safe normaliser as :func:`linear_attention`.

    Shape:
        as :func:`linear_attention`.

    Raises:
        as :func:`linear_attention`.
    """
    check_qkv(query, key, value, layout="heads", is_causal=is_causal)
    if query.dtype in LOW_PRECISION:
        return _in_float32(linear_attention_quadratic, query, key, value, is_causal)
    q, k = _features(query, key)
    scores = q @ k.transpose(-2, -1)  # (B, H, L, S)
    if is_causal:
        scores = scores.tril()
    return scores / _safe(scores.sum(-1, keepdim=True)) @ value  # (B, H, L, Ev)


def linear_attention_recurrent(query: Tensor, key: Tensor, value: Tensor) -> Tensor:
    r"""Causal linear attention as a decoder generates with it: one state, updated per token.

    .. math::

        S_i = S_{i-1} + \phi(k_i) v_i^\top, \quad z_i = z_{i-1} + \phi(k_i),

        \mathrm{out}_i = \frac{\phi(q_i)^\top S_i}{\phi(q_i)^\top z_i}

    The state :math:`(S, z)` has E (Ev + 1) numbers per head, whatever the length: what a
    softmax decoder keeps in its key/value cache, grown to every token, is here one fixed
    matrix. A Python loop over the positions, for checking and for the picture, not for speed.

    The features and the normaliser are the numerically safe ones of :func:`linear_attention`.

    Shape:
        - query, key: (B, H, n, E); value: (B, H, n, Ev); output: (B, H, n, Ev)

    Raises:
        as :func:`linear_attention` with ``is_causal=True``.
    """
    check_qkv(query, key, value, layout="heads", is_causal=True, causal_needs_l_eq_s=True)
    if query.dtype in LOW_PRECISION:
        return _in_float32(linear_attention_recurrent, query, key, value)
    q, k = _features(query, key)  # (B, H, n, E), scaled as in linear_attention
    B, H, n, E = q.shape
    state = q.new_zeros(B, H, E, value.shape[-1])  # S: (B, H, E, Ev)
    normaliser = q.new_zeros(B, H, E)  # z: (B, H, E)
    if n == 0:
        return value.new_zeros(B, H, 0, value.shape[-1])
    outputs = []
    for i in range(n):
        state = state + k[:, :, i, :, None] * value[:, :, i, None, :]  # + phi(k_i) v_i^T
        normaliser = normaliser + k[:, :, i]
        numerator = (q[:, :, i, None, :] @ state)[:, :, 0]  # (B, H, Ev)
        denominator = (q[:, :, i] * normaliser).sum(-1, keepdim=True)  # (B, H, 1)
        outputs.append(numerator / _safe(denominator))
    return torch.stack(outputs, dim=2)  # (B, H, n, Ev)


class LinearSelfAttention(GroupedQueryAttention):
    """:class:`~attnlib.blocks.gqa.GroupedQueryAttention` with causal linear attention.

    The same projections (and RoPE, applied to queries and keys before the feature map); the
    key/value heads are repeated for their query groups and :func:`linear_attention` replaces
    the softmax, always causal. It keeps a state, not a cache: ``past`` must be None, and
    ``attn_mask`` is not read (the attention is causal by construction).

    Shape:
        as :class:`~attnlib.blocks.gqa.GroupedQueryAttention`.

    Raises:
        ValueError: as the parent, or if ``past`` is given.
    """

    def forward(
        self,
        x: Tensor,
        attn_mask: Tensor | None = None,
        past: tuple[Tensor, Tensor] | None = None,
        offset: int = 0,
    ) -> tuple[Tensor, Tensor, Tensor]:
        if past is not None:
            raise ValueError("past must be None: linear attention keeps a running state, not a "
                             "key/value cache; run the model without a cache")
        q, k, v = self._project(x, offset)  # (B, H, L, E), (B, H_kv, L, E) x 2
        G = self.num_heads // self.num_kv_heads
        heads = linear_attention(q, repeat_kv(k, G), repeat_kv(v, G), True)  # (B, H, L, E)
        return self.out_proj(merge_heads(heads)), k, v
