r"""Multi-query and grouped-query attention: fewer key/value heads than query heads.

Multi-head attention gives each of its H heads its own keys and values. Multi-query attention
{Shazeer 2019} keeps H query heads but computes one key head and one value head, shared by all
of them; grouped-query attention {Ainslie et al. 2023} is the middle ground, with
:math:`H_{kv}` key/value heads, each shared by a group of :math:`G = H / H_{kv}` query heads.
Query head h reads key/value head :math:`\lfloor h / G \rfloor`:

.. math::

    \mathrm{head}_h = \mathrm{softmax}\!\left(\frac{Q_h K_{\lfloor h/G \rfloor}^\top}{\sqrt E}
    \right) V_{\lfloor h/G \rfloor},

    h = 0, \dots, H - 1.

:math:`H_{kv} = H` is multi-head attention, :math:`H_{kv} = 1` multi-query attention. The key
and value projections shrink from :math:`D \times D` to :math:`D \times H_{kv} E`, and so does
what a decoder must cache per token (:mod:`attnlib.models.kv_cache`). PyTorch computes the same thing
with ``F.scaled_dot_product_attention(..., enable_gqa=True)``, and it equals ordinary attention
after repeating each key/value head G times (:func:`repeat_kv`).
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from attnlib._checks import (
    check_device_arg,
    check_flag,
    check_float_dtype,
    check_floating,
    check_input,
    check_instance,
    check_int,
    check_ndim,
    check_qkv,
    shape_str,
)
from attnlib.blocks.attention import _scaled_dot_product_attention
from attnlib.blocks.masking import causal_mask
from attnlib.blocks.multihead import merge_heads, split_heads

__all__ = [
    "GroupedQueryAttention",
    "gqa_parameter_count",
    "grouped_query_attention",
    "mean_pool_kv",
    "repeat_kv",
]


def _check_groups(num_heads: int, num_kv_heads: int) -> None:
    check_int("num_heads", num_heads, minimum=1)
    check_int("num_kv_heads", num_kv_heads, minimum=1)
    if num_heads % num_kv_heads:
        raise ValueError(
            f"num_kv_heads must divide num_heads (each key/value head serves a group of "
            f"num_heads / num_kv_heads query heads), got num_heads = {num_heads} and "
            f"num_kv_heads = {num_kv_heads}"
        )


def repeat_kv(x: Tensor, groups: int) -> Tensor:
    r"""Repeat each key/value head ``groups`` times: head j becomes heads jG, ..., jG + G - 1.

    .. math::

        \mathrm{repeat}(K)_h = K_{\lfloor h / G \rfloor}

    Shape:
        - x: (B, H_kv, S, E)
        - output: (B, H_kv * G, S, E)

    Raises:
        TypeError: if ``x`` is not a tensor or ``groups`` not an int.
        ValueError: if ``x`` is not 4-D or ``groups`` < 1.
    """
    x = check_floating("x", x)
    check_ndim("x", x, 4, "(B, H_kv, S, E)")
    check_int("groups", groups, minimum=1)
    return x.repeat_interleave(groups, dim=1)  # (B, H_kv G, S, E)


def grouped_query_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    is_causal: bool = False,
) -> Tensor:
    r"""Scaled dot-product attention with H query heads over :math:`H_{kv}` key/value heads.

    .. math::

        \mathrm{out}_h = \mathrm{softmax}\!\left(\frac{Q_h K_{\lfloor h/G \rfloor}^\top}
        {\sqrt E} + \text{mask}\right) V_{\lfloor h/G \rfloor},

        G = H / H_{kv}

    The G query heads of a group are stacked as extra query rows of their shared key/value
    head, so the keys and values are read once per group and never copied (the result equals
    :func:`repeat_kv` followed by ordinary attention), and the product runs in
    :func:`attnlib.blocks.attention.scaled_dot_product_attention`, PyTorch's fused kernel. The mask
    is laid out the same way. A query whose keys are all masked gets zero output, as in
    PyTorch. The mask convention is the book's: True = may attend (a float mask is added).

    Shape:
        - query: (B, H, L, E); key: (B, H_kv, S, E); value: (B, H_kv, S, Ev)
        - attn_mask: bool or float, broadcastable to (B, H, L, S), or None
        - output: (B, H, L, Ev)

    Raises:
        ValueError: if the shapes do not fit (the message names the tensor, its shape and the
            shape expected), ``H_kv`` does not divide ``H``, or a mask is given with
            ``is_causal``.
        TypeError: if an input is not a floating tensor or the dtypes differ.
    """
    attn_mask = check_qkv(query, key, value, layout="grouped",
                          attn_mask=attn_mask, is_causal=is_causal)
    B, H, L, E = query.shape
    H_kv, S, Ev = key.shape[1], key.shape[2], value.shape[-1]
    G = H // H_kv
    if is_causal:
        attn_mask = causal_mask(L, S, device=query.device)  # (L, S)
    # Head h = j G + g of group j becomes rows g L, ..., g L + L - 1 of
    # key/value head j.
    q = query.reshape(B, H_kv, G * L, E)  # (B, H_kv, G L, E)
    mask = None
    if attn_mask is not None:
        lead = (1,) * (4 - attn_mask.ndim)
        m = attn_mask.reshape(lead + tuple(attn_mask.shape))  # 4-D
        B_m = m.shape[0]  # B or 1
        if m.shape[1] == 1:  # one mask for all heads: repeated for G queries
            mask = m.expand(B_m, 1, L, S).repeat(1, 1, G, 1)  # (B_m, 1, G L, S)
        else:
            mask = m.expand(B_m, H, L, S).reshape(B_m, H_kv, G * L, S)
    # one call for each key/value head and its G queries: (B, H_kv, G L, Ev)
    out, _ = _scaled_dot_product_attention(q, key, value, mask)  # checked above
    return out.reshape(B, H, L, Ev)  # (B, H, L, Ev)


def gqa_parameter_count(embed_dim: int, num_heads: int, num_kv_heads: int,
                        bias: bool = True) -> int:
    r"""Learnable parameters of :class:`GroupedQueryAttention`.

    With E = D / H, the query and output projections are D x D, the key and value projections
    D x :math:`H_{kv} E`:

    .. math::

        N = 2 D^2 + 2 D H_{kv} E + [\text{bias}]\,(2D + 2 H_{kv} E)

    Raises:
        ValueError: if a size is < 1 or the heads do not divide.
    """
    check_int("embed_dim", embed_dim, minimum=1)
    _check_groups(num_heads, num_kv_heads)
    check_flag("bias", bias)
    if embed_dim % num_heads:
        raise ValueError(f"num_heads must divide embed_dim, got embed_dim = {embed_dim} and "
                         f"num_heads = {num_heads}")
    D, kv = embed_dim, num_kv_heads * (embed_dim // num_heads)
    return 2 * D * D + 2 * D * kv + (2 * D + 2 * kv if bias else 0)


class GroupedQueryAttention(nn.Module):
    r"""Self-attention with ``num_heads`` query heads and ``num_kv_heads`` key/value heads.

    .. math::

        Q = x W^Q,\; K = x W^K,\; V = x W^V,

        \mathrm{out} = \mathrm{Concat}_h\big(\mathrm{head}_h\big)\, W^O

    with :math:`W^Q, W^O \in \mathbb R^{D \times D}` and
    :math:`W^K, W^V \in \mathbb R^{D \times H_{kv} E}`; the heads as in
    :func:`grouped_query_attention`. ``num_kv_heads = num_heads`` is multi-head attention,
    ``num_kv_heads = 1`` multi-query attention. An optional ``rope`` (a module taking
    (B, H, L, E) and ``offset``) rotates queries and keys after the projection.

    ``forward`` returns the output and the new keys and values (before any cache), so a caller
    that decodes can store them (:class:`attnlib.models.decoder_lm.LMCache`); with ``past`` = (keys,
    values) of earlier positions, the new queries attend to those too.

    Shape:
        - x: (B, L, D)
        - attn_mask: bool, broadcastable to (B, H, L, S) with S = past length + L, or None
        - past: two (B, H_kv, P, E) tensors, or None
        - output: (B, L, D); new keys and values: (B, H_kv, L, E) each

    Raises:
        ValueError: if ``num_kv_heads`` does not divide ``num_heads`` or ``num_heads`` does not
            divide ``embed_dim``; in ``forward``, if ``x`` is not (B, L, D).
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        num_kv_heads: int,
        bias: bool = True,
        rope: nn.Module | None = None,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        check_device_arg("device", device)
        check_float_dtype("dtype", dtype, optional=True)
        gqa_parameter_count(embed_dim, num_heads, num_kv_heads, bias)  # validates the sizes
        self.embed_dim, self.num_heads, self.num_kv_heads = embed_dim, num_heads, num_kv_heads
        self.head_dim = embed_dim // num_heads
        kv_dim = num_kv_heads * self.head_dim
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias, device=device, dtype=dtype)
        self.k_proj = nn.Linear(embed_dim, kv_dim, bias, device=device, dtype=dtype)
        self.v_proj = nn.Linear(embed_dim, kv_dim, bias, device=device, dtype=dtype)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias, device=device, dtype=dtype)
        self.rope = rope

    def extra_repr(self) -> str:
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, "
                f"num_kv_heads={self.num_kv_heads}")

    def _project(self, x: object, offset: int) -> tuple[Tensor, Tensor, Tensor]:
        """Queries (B, H, L, E), keys and values (B, H_kv, L, E) of ``x`` (B, L, D), with RoPE."""
        x = check_input("x", x, self.q_proj.weight, 3, "(B, L, D)")
        if x.shape[-1] != self.embed_dim:
            raise ValueError(f"x must have shape (B, L, D) with D = embed_dim = "
                             f"{self.embed_dim}, got shape {shape_str(x.shape)}")
        check_int("offset", offset, minimum=0)
        q = split_heads(self.q_proj(x), self.num_heads)  # (B, H, L, E)
        k = split_heads(self.k_proj(x), self.num_kv_heads)  # (B, H_kv, L, E)
        v = split_heads(self.v_proj(x), self.num_kv_heads)  # (B, H_kv, L, E)
        if self.rope is not None:
            q, k = self.rope(q, offset=offset), self.rope(k, offset=offset)
        return q, k, v

    def forward(
        self,
        x: Tensor,
        attn_mask: Tensor | None = None,
        past: tuple[Tensor, Tensor] | None = None,
        offset: int = 0,
    ) -> tuple[Tensor, Tensor, Tensor]:
        q, k, v = self._project(x, offset)  # (B, H, L, E), (B, H_kv, L, E) x 2
        self._check_past(past, q.shape[0])
        keys, values = k, v
        if past is not None:
            keys = torch.cat((past[0], k), dim=2)  # (B, H_kv, P + L, E)
            values = torch.cat((past[1], v), dim=2)  # (B, H_kv, P + L, E)
        heads = grouped_query_attention(q, keys, values, attn_mask)  # (B, H, L, E)
        return self.out_proj(merge_heads(heads)), k, v  # (B, L, D), (B, H_kv, L, E) x 2

    def _check_past(self, past: object, B: int) -> None:
        """``past`` must be None or a pair of (B, H_kv, P, E) tensors like the parameters."""
        if past is None:
            return
        want = f"(B, H_kv, P, E) = ({B}, {self.num_kv_heads}, P, {self.head_dim})"
        if not isinstance(past, tuple | list) or len(past) != 2:
            raise TypeError(f"past must be None or a pair (keys, values) of tensors {want}, "
                            f"got {type(past).__name__}")
        shapes = []
        for i, t in enumerate(past):
            t = check_input(f"past[{i}]", t, self.q_proj.weight, 4, want)
            _, H_kv, _, E = t.shape
            if (t.shape[0], H_kv, E) != (B, self.num_kv_heads, self.head_dim):
                raise ValueError(f"past[{i}] must have shape {want}, got {shape_str(t.shape)}")
            shapes.append(t.shape)
        if shapes[0] != shapes[1]:
            raise ValueError(f"past's keys and values must have one shape {want}, got "
                             f"{shape_str(shapes[0])} and {shape_str(shapes[1])}")


def mean_pool_kv(
    attention: GroupedQueryAttention, num_kv_heads: int
) -> GroupedQueryAttention:
    r"""A copy of ``attention`` with fewer key/value heads, each the mean of a group's heads.

    Ainslie et al.'s conversion of a multi-head checkpoint: the key (and value) projection of
    new head j is the mean of the projections of old heads :math:`jR, \dots, jR + R - 1`,
    :math:`R = H_{kv}^{old} / H_{kv}^{new}`,

    .. math::

        W^K_j \leftarrow \frac{1}{R} \sum_{r=0}^{R-1} W^K_{jR + r},

    then a short "uptraining" lets the model adapt. Query and output projections are copied.

    Raises:
        ValueError: if ``num_kv_heads`` does not divide the current key/value head count.
    """
    old = _check_pooling(attention, num_kv_heads)
    w = attention.q_proj.weight
    pooled = GroupedQueryAttention(
        attention.embed_dim, attention.num_heads, num_kv_heads,
        attention.q_proj.bias is not None, attention.rope,
        device=w.device, dtype=w.dtype)
    R, E, D = old // num_kv_heads, attention.head_dim, attention.embed_dim
    with torch.no_grad():
        for name in ("q_proj", "out_proj"):  # copied unchanged
            state = attention.get_submodule(name).state_dict()
            pooled.get_submodule(name).load_state_dict(state)
        for name in ("k_proj", "v_proj"):  # each group's heads averaged
            src, dst = attention.get_submodule(name), pooled.get_submodule(name)
            assert isinstance(src, nn.Linear) and isinstance(dst, nn.Linear)
            groups = src.weight.view(num_kv_heads, R, E, D)  # (H_kv, R, E, D)
            dst.weight.copy_(groups.mean(1).reshape(-1, D))  # (H_kv E, D)
            if src.bias is not None and dst.bias is not None:
                bias = src.bias.view(num_kv_heads, R, E)  # (H_kv, R, E)
                dst.bias.copy_(bias.mean(1).reshape(-1))  # (H_kv E,)
    return pooled


def _check_pooling(attention: GroupedQueryAttention, num_kv_heads: int) -> int:
    """A GroupedQueryAttention, and an int ``num_kv_heads`` >= 1 that divides its current
    key/value heads; returns that current count."""
    check_instance("attention", attention, GroupedQueryAttention, "a GroupedQueryAttention")
    old = attention.num_kv_heads
    check_int("num_kv_heads", num_kv_heads, minimum=1)
    if old % num_kv_heads:
        raise ValueError(f"num_kv_heads must divide the current {old} key/value heads, got "
                         f"{num_kv_heads}")
    return old
