r"""Multi-head attention, numerically the same as ``torch.nn.MultiheadAttention(batch_first=True)``.

.. math::

    \mathrm{MultiHead}(Q, K, V) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_H)\, W^O,

    \mathrm{head}_i = \mathrm{Attention}(Q W_i^Q, K W_i^K, V W_i^V)

(the Transformer paper writes h for the number of heads H). The H heads are not H separate
modules: one ``nn.Linear`` per projection computes all heads at once, and :func:`split_heads`
cuts its D outputs into H slices of size E = D / H. Heads get their own dimension,
(B, H, L, E); they are never folded into the batch dimension.

The numbers are PyTorch's once the arguments are translated. The differences from PyTorch's
module, all on purpose (tests/test_chapter5_equivalence.py checks each, PyTorch's side too):

- Boolean masks are True = **may attend**, the book's one convention: ``key_padding_mask`` is
  True at real tokens, ``attn_mask`` True where query i may attend to key j.
  ``torch.nn.MultiheadAttention`` reads both as True = ignore: pass it ``~mask`` for either.
- ``attn_mask`` may be (L, S), (B, L, S) or (B, H, L, S); PyTorch's wants (L, S) or
  (B * H, L, S).
- ``is_causal=True`` applies the causal mask here and may not be combined with ``attn_mask``.
  In PyTorch it is only a hint that ``attn_mask`` is causal: ``attn_mask`` is required, and
  some of its code paths apply the causal pattern instead of the mask given.
- ``need_weights`` and ``average_attn_weights`` default to False (PyTorch: True).
- A query that may attend to no key gets zero weights, and ``out_proj``'s bias as output;
  PyTorch's module gives NaN there (in eval mode, and whenever it returns weights).
- Batch first only; no ``add_bias_kv`` or ``add_zero_attn``.
- Everything after ``value`` is keyword-only, since PyTorch's positional order
  (``key_padding_mask`` fourth) would silently mean something else here.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from attnlib._checks import (
    check_device,
    check_device_arg,
    check_flag,
    check_float_dtype,
    check_floating,
    check_input,
    check_int,
    check_mask,
    check_ndim,
    check_probability,
    check_tensor,
    shape_str,
)
from attnlib.blocks.attention import _scaled_dot_product_attention
from attnlib.blocks.masking import causal_mask, float_mask

__all__ = [
    "MultiHeadAttention",
    "copy_from_torch",
    "merge_heads",
    "parameter_count",
    "split_heads",
]


def _check_heads(embed_dim: int, num_heads: int, name: str = "embed_dim") -> None:
    """embed_dim and num_heads must be positive ints, and num_heads must divide embed_dim."""
    check_int(name, embed_dim, minimum=1)
    check_int("num_heads", num_heads, minimum=1)
    if embed_dim % num_heads != 0:
        raise ValueError(
            f"{name} must be divisible by num_heads, got {name} = {embed_dim} and "
            f"num_heads = {num_heads} ({name} / num_heads = {embed_dim / num_heads:g} "
            f"would be the size E of each head)"
        )


def _check_split_heads(x: Tensor, num_heads: int) -> None:
    check_floating("x", x)
    check_ndim("x", x, 3, "(B, L, D)")
    check_int("num_heads", num_heads, minimum=1)
    _check_heads(x.shape[-1], num_heads, name="x's last size D")


def _check_merge_heads(x: Tensor) -> None:
    check_floating("x", x)
    check_ndim("x", x, 4, "(B, H, L, E)")


def split_heads(x: Tensor, num_heads: int) -> Tensor:
    r"""Cut the last dimension into ``num_heads`` heads and give the heads their own dimension.

    .. math::

        x \in \mathbb R^{B \times L \times D} \;\mapsto\;
        \mathbb R^{B \times H \times L \times E},

        E = D / H

    Head i holds features :math:`iE, \dots, (i + 1)E - 1` of every position. The inverse is
    :func:`merge_heads`.

    Shape:
        - x: (B, L, D)
        - output: (B, H, L, E) with H = ``num_heads`` and E = D / H

    Raises:
        TypeError: if ``x`` is not a tensor or ``num_heads`` is not an int.
        ValueError: if ``x`` is not 3-D, ``num_heads`` < 1 or D is not divisible by it.
    """
    _check_split_heads(x, num_heads)
    B, L, D = x.shape
    x = x.view(B, L, num_heads, D // num_heads)  # (B, L, H, E)
    return x.transpose(1, 2)  # (B, H, L, E)


def merge_heads(x: Tensor) -> Tensor:
    r"""Concatenate the heads back into one feature dimension; the inverse of :func:`split_heads`.

    .. math::

        \mathbb R^{B \times H \times L \times E} \;\mapsto\; \mathbb R^{B \times L \times HE}

    Shape:
        - x: (B, H, L, E)
        - output: (B, L, H * E)

    Raises:
        TypeError: if ``x`` is not a tensor.
        ValueError: if ``x`` is not 4-D.
    """
    _check_merge_heads(x)
    B, H, L, E = x.shape
    x = x.transpose(1, 2)  # (B, L, H, E)
    return x.reshape(B, L, H * E)  # (B, L, D)


def parameter_count(
    embed_dim: int,
    num_heads: int,
    kdim: int | None = None,
    vdim: int | None = None,
    bias: bool = True,
) -> int:
    r"""The number of learnable parameters of :class:`MultiHeadAttention`.

    Four projections: :math:`W^Q \in \mathbb R^{D \times D}`,
    :math:`W^K \in \mathbb R^{D \times D_k}`, :math:`W^V \in \mathbb R^{D \times D_v}`,
    :math:`W^O \in \mathbb R^{D \times D}`, each with a bias of size D if ``bias``:

    .. math::

        N = D (2D + D_k + D_v) + 4D \;[\text{bias}]
        \;\overset{D_k = D_v = D}{=}\; 4D^2 + 4D

    The number of heads does not appear: splitting D features into H heads of size D / H
    only regroups the same projections (H heads of :math:`D \times D/H` each are one
    :math:`D \times D` matrix). ``num_heads`` is only checked to divide ``embed_dim``.

    Raises:
        TypeError: if a size is not an int.
        ValueError: if a size is < 1 or ``num_heads`` does not divide ``embed_dim``.
    """
    _check_heads(embed_dim, num_heads)
    check_flag("bias", bias)
    D = embed_dim
    Dk = D if kdim is None else check_int("kdim", kdim, minimum=1)
    Dv = D if vdim is None else check_int("vdim", vdim, minimum=1)
    return D * (2 * D + Dk + Dv) + (4 * D if bias else 0)


class MultiHeadAttention(nn.Module):
    r"""Multi-head attention, batch first, with the parameters of ``nn.MultiheadAttention``.

    .. math::

        \mathrm{MultiHead}(Q, K, V) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_H)
            W^O + b^O,

        \mathrm{head}_i = \mathrm{softmax}\!\left(
            \frac{(Q W_i^Q)(K W_i^K)^\top}{\sqrt{E}} + M \right) V W_i^V

    with E = ``embed_dim`` / ``num_heads`` (``head_dim``) and M the mask (0 = may attend,
    :math:`-\infty` = may not). ``q_proj``, ``k_proj``, ``v_proj`` and ``out_proj`` are four
    ``nn.Linear``; PyTorch packs the first three into ``in_proj_weight`` when
    ``kdim == vdim == embed_dim``. The initialisation is PyTorch's, draw for draw: under the same
    seed this module starts with exactly the weights of
    ``nn.MultiheadAttention(embed_dim, num_heads, bias=bias, kdim=kdim, vdim=vdim)`` (Xavier
    uniform on the packed :math:`3D \times D` matrix, or on each of the three when the sizes
    differ; ``out_proj`` keeps ``nn.Linear``'s initialisation; all biases 0).

    Masks, all optional and combined with a logical and:

    - ``attn_mask``: bool, True = query i may attend to key j, or float, added to the scores;
      shape (L, S) (the same for every sequence and head), (B, L, S) (the same for every head)
      or anything broadcastable to (B, H, L, S). (PyTorch wants (L, S) or (B * H, L, S), and
      its boolean ``attn_mask`` is True = **forbidden**.)
    - ``key_padding_mask``: bool (B, S), **True = real token, may be attended to**. This is the
      opposite of ``torch.nn.MultiheadAttention``'s ``key_padding_mask`` (True = ignore): pass
      PyTorch ``~key_padding_mask``. Build it with :func:`attnlib.blocks.masking.lengths_to_mask`.
    - ``is_causal``: apply :func:`attnlib.blocks.masking.causal_mask` (L, S) here. Unlike PyTorch,
      where ``is_causal`` is only a hint that ``attn_mask`` is causal and ``attn_mask`` is
      required (some of its code paths then apply the causal pattern instead of the mask),
      here it *is* the mask, and may not be given with ``attn_mask``.

    A query that may attend to no key gets zero attention weights, so its output is
    ``out_proj``'s bias (PyTorch's module gives NaN there in eval mode, and whenever it
    returns weights).

    Dropout on the attention weights acts only in training mode.

    Args:
        embed_dim: D, the size of a query and of the output.
        num_heads: H; must divide ``embed_dim``.
        dropout: dropout probability on the attention weights, in [0, 1).
        bias: whether the four projections have biases.
        kdim: the size of a key; ``None`` means ``embed_dim``.
        vdim: the size of a value; ``None`` means ``embed_dim``.
        device: where to create the parameters.
        dtype: the parameters' dtype.

    Shape:
        - query: (B, L, D)
        - key: (B, S, kdim)
        - value: (B, S, vdim)
        - attn_mask: (L, S), (B, L, S) or broadcastable to (B, H, L, S)
        - key_padding_mask: (B, S)
        - output: (B, L, D)
        - weights: (B, H, L, S) per head, (B, L, S) if ``average_attn_weights``, or ``None``
          unless ``need_weights``

    Raises:
        ValueError: at construction, if ``embed_dim`` is not divisible by ``num_heads``, a
            size is < 1 or ``dropout`` is not in [0, 1); in ``forward``, if an input has the
            wrong rank, batch size, feature size (``embed_dim``, ``kdim``, ``vdim``) or length
            (key and value must share S), if a mask does not fit (B, H, L, S), or if
            ``attn_mask`` and ``is_causal`` are both given.
        TypeError: if an argument has the wrong type: a non-float input, an input whose dtype
            is not the parameters', an integer mask, a non-bool ``key_padding_mask``.
    """

    batch_first = True  # always; the attribute is here for code written against PyTorch's

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        kdim: int | None = None,
        vdim: int | None = None,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        check_device_arg("device", device)
        check_float_dtype("dtype", dtype, optional=True)
        _check_heads(embed_dim, num_heads)
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.kdim = embed_dim if kdim is None else check_int("kdim", kdim, minimum=1)
        self.vdim = embed_dim if vdim is None else check_int("vdim", vdim, minimum=1)
        self.dropout = check_probability("dropout", dropout)
        if not isinstance(bias, bool):
            raise TypeError(f"bias must be a bool, got {type(bias).__name__}")
        # Created on the meta device, so that nn.Linear's own initialisation draws no random
        # numbers: _reset_parameters then draws exactly what PyTorch's module draws.
        checked = check_device_arg("device", device)
        target = checked if checked is not None else torch.get_default_device()

        def linear(in_features: int) -> nn.Linear:
            meta = nn.Linear(in_features, embed_dim, bias=bias, device="meta", dtype=dtype)
            return meta.to_empty(device=target)

        self.q_proj = linear(embed_dim)
        self.k_proj = linear(self.kdim)
        self.v_proj = linear(self.vdim)
        self.out_proj = linear(embed_dim)
        self._reset_parameters()

    @torch.no_grad()
    def _reset_parameters(self) -> None:
        """PyTorch's initialisation, in PyTorch's order of random draws."""
        self.out_proj.reset_parameters()  # nn.Linear's: Kaiming uniform weight, uniform bias
        projections = (self.q_proj, self.k_proj, self.v_proj)
        if self.kdim == self.embed_dim and self.vdim == self.embed_dim:
            # PyTorch initialises the packed (3D, D) in_proj_weight as one matrix, so the
            # Xavier bound is sqrt(6 / (D + 3D)), not sqrt(6 / (D + D)).
            w = self.q_proj.weight
            packed = w.new_empty(3 * self.embed_dim, self.embed_dim)  # (3D, D)
            nn.init.xavier_uniform_(packed)
            for proj, part in zip(projections, packed.chunk(3), strict=True):
                proj.weight.copy_(part)
        else:
            for proj in projections:
                nn.init.xavier_uniform_(proj.weight)
        for proj in (*projections, self.out_proj):
            if proj.bias is not None:
                nn.init.zeros_(proj.bias)

    @classmethod
    def from_torch(cls, ref: nn.MultiheadAttention) -> MultiHeadAttention:
        """A :class:`MultiHeadAttention` with ``ref``'s configuration and a copy of its weights.

        Call ``ref`` with ``batch_first=True`` layout (B, L, D) to compare outputs; the weights
        themselves do not depend on the layout. See :func:`copy_from_torch`.

        Raises:
            The errors of :func:`copy_from_torch`.
        """
        if not isinstance(ref, nn.MultiheadAttention):
            raise TypeError(f"ref must be a torch.nn.MultiheadAttention, got {type(ref).__name__}")
        weight = ref.out_proj.weight
        mha = cls(
            ref.embed_dim,
            ref.num_heads,
            dropout=ref.dropout,
            bias=ref.in_proj_bias is not None,
            kdim=ref.kdim,
            vdim=ref.vdim,
            device=weight.device,
            dtype=weight.dtype,
        )
        return copy_from_torch(mha, ref)

    def extra_repr(self) -> str:
        return (
            f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, head_dim={self.head_dim}, "
            f"kdim={self.kdim}, vdim={self.vdim}, dropout={self.dropout}"
        )

    def _check_inputs(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        need_weights: object = False,
        average_attn_weights: object = False,
    ) -> None:
        for name, t, size, letters in (
            ("query", query, self.embed_dim, "(B, L, embed_dim)"),
            ("key", key, self.kdim, "(B, S, kdim)"),
            ("value", value, self.vdim, "(B, S, vdim)"),
        ):
            check_input(name, t, self.q_proj.weight, 3, letters)
            if t.shape[-1] != size:
                letter = letters.split(", ")[-1].rstrip(")")
                raise ValueError(
                    f"{name} must have shape {letters} with {letter} = {size}, "
                    f"got shape {shape_str(t.shape)}"
                )
        if not query.shape[0] == key.shape[0] == value.shape[0]:
            raise ValueError(
                f"query, key and value must have the same batch size B, got query of shape "
                f"{shape_str(query.shape)}, key of shape {shape_str(key.shape)} and value of "
                f"shape {shape_str(value.shape)}"
            )
        if key.shape[1] != value.shape[1]:
            raise ValueError(
                f"key (B, S, kdim) and value (B, S, vdim) must have the same length S, got key "
                f"of shape {shape_str(key.shape)} and value of shape {shape_str(value.shape)}"
            )
        check_flag("need_weights", need_weights)
        check_flag("average_attn_weights", average_attn_weights)

    def _merge_masks(
        self,
        attn_mask: Tensor | None,
        key_padding_mask: Tensor | None,
        is_causal: bool,
        B: int,
        L: int,
        S: int,
        dtype: torch.dtype,
    ) -> tuple[Tensor | None, bool]:
        """One mask broadcastable to (B, H, L, S), and whether to ask SDPA for is_causal."""
        H = self.num_heads
        device = self.q_proj.weight.device
        check_flag("is_causal", is_causal)
        if attn_mask is not None and is_causal:
            raise ValueError(
                "attn_mask and is_causal=True cannot both be given: is_causal=True applies the "
                "causal mask itself (torch.nn.MultiheadAttention instead needs attn_mask and "
                "reads is_causal as a hint); pass causal_mask(L, S) & attn_mask as attn_mask"
            )
        parts: list[Tensor] = []
        if attn_mask is not None:
            attn_mask = check_tensor("attn_mask", attn_mask)
            if attn_mask.ndim <= 2:  # (L, S), or a (S,) or 0-d mask that broadcasts to it
                parts.append(check_mask("attn_mask", attn_mask, (L, S), dtype=dtype,
                                        expected="(L, S)", device=device))
            elif attn_mask.ndim == 3:
                attn_mask = check_mask("attn_mask", attn_mask, (B, L, S), dtype=dtype,
                                       expected="(B, L, S)", device=device)
                parts.append(attn_mask[:, None])  # (B, 1, L, S)
            elif attn_mask.ndim == 4:
                parts.append(check_mask("attn_mask", attn_mask, (B, H, L, S), dtype=dtype,
                                        expected="(B, H, L, S)", device=device))
            else:
                raise ValueError(
                    f"attn_mask must have 2, 3 or 4 dimensions (L, S), (B, L, S) or "
                    f"(B, H, L, S), got shape {shape_str(attn_mask.shape)}"
                )
        if key_padding_mask is not None:
            kpm = check_tensor("key_padding_mask", key_padding_mask)
            if kpm.dtype != torch.bool:
                raise TypeError(
                    f"key_padding_mask must be a bool tensor, True = real token (the opposite "
                    f"of torch.nn.MultiheadAttention's, where True = ignore), got dtype "
                    f"{kpm.dtype}"
                )
            if kpm.shape != (B, S):
                raise ValueError(
                    f"key_padding_mask must have shape (B, S) = {shape_str((B, S))}, "
                    f"got shape {shape_str(kpm.shape)}"
                )
            check_device("key_padding_mask", kpm, device, "the parameters")
            if is_causal:
                # SDPA takes is_causal or a mask, not both: fold the causal mask in.
                parts.append(causal_mask(L, S, device=kpm.device))  # (L, S)
                is_causal = False
            parts.append(kpm[:, None, None, :])  # (B, 1, 1, S)
        if not parts:
            return None, is_causal
        mask = parts[0]
        for part in parts[1:]:
            if mask.dtype == torch.bool and part.dtype == torch.bool:
                mask = mask & part
            else:
                # A float mask is involved: add, with the bool ones as 0 / -inf.
                first, second = (
                    m if m.is_floating_point() else float_mask(m, dtype) for m in (mask, part)
                )
                mask = first + second
        return mask, is_causal

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        *,
        attn_mask: Tensor | None = None,
        key_padding_mask: Tensor | None = None,
        is_causal: bool = False,
        need_weights: bool = False,
        average_attn_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        r"""Attend from each query to the keys; see the class docstring for the masks.

        Returns:
            ``(output, weights)``; ``weights`` is ``None`` unless ``need_weights``, per head
            (B, H, L, S) unless ``average_attn_weights``, then averaged over heads (B, L, S).
            With dropout in training, the weights are the dropped-out ones (as in PyTorch).
        """
        self._check_inputs(query, key, value, need_weights, average_attn_weights)
        B, L, _ = query.shape
        S = key.shape[1]
        mask, causal = self._merge_masks(
            attn_mask, key_padding_mask, is_causal, B, L, S, query.dtype
        )
        H = self.num_heads
        q = split_heads(self.q_proj(query), H)  # (B, H, L, E)
        k = split_heads(self.k_proj(key), H)  # (B, H, S, E)
        v = split_heads(self.v_proj(value), H)  # (B, H, S, E)
        dropout_p = self.dropout if self.training else 0.0
        # chapter 3's attention; the masks were checked above, not again
        heads, weights = _scaled_dot_product_attention(
            q, k, v, mask, causal, dropout_p, need_weights=need_weights
        )  # (B, H, L, E), and (B, H, L, S) if need_weights
        if weights is not None and average_attn_weights:
            weights = weights.mean(dim=1)  # (B, L, S)
        output = self.out_proj(merge_heads(heads))  # (B, L, D)
        return output, weights


def _torch_weights(ref: nn.MultiheadAttention) -> dict[str, Tensor | None]:
    """``ref``'s parameters under this module's names; the packed ones split into views."""
    packed = ref.in_proj_weight
    if packed is not None:
        wq, wk, wv = packed.chunk(3)  # 3 x (D, D)
    else:
        wq, wk, wv = ref.q_proj_weight, ref.k_proj_weight, ref.v_proj_weight
    bias = ref.in_proj_bias
    bq, bk, bv = bias.chunk(3) if bias is not None else (None, None, None)  # 3 x (D,)
    return {
        "q_proj.weight": wq,
        "k_proj.weight": wk,
        "v_proj.weight": wv,
        "out_proj.weight": ref.out_proj.weight,
        "q_proj.bias": bq,
        "k_proj.bias": bk,
        "v_proj.bias": bv,
        "out_proj.bias": ref.out_proj.bias,
    }


def copy_from_torch(mha: MultiHeadAttention, ref: nn.MultiheadAttention) -> MultiHeadAttention:
    r"""Copy the weights of ``torch.nn.MultiheadAttention`` into ``mha``, in place.

    PyTorch stores :math:`W^Q, W^K, W^V` packed as rows of ``in_proj_weight`` (3D, D) and
    their biases as ``in_proj_bias`` (3D,) when ``kdim == vdim == embed_dim``, and as
    ``q_proj_weight``, ``k_proj_weight``, ``v_proj_weight`` otherwise (the biases stay packed).
    Both layouts are handled. ``mha.dropout`` is left alone. After the copy, ``mha(q, k, v)``
    equals ``ref(q, k, v)`` for ``ref`` built with ``batch_first=True`` (the weights do not
    depend on the layout), with masks translated as the class docstring says.

    Returns:
        ``mha``.

    Raises:
        TypeError: if ``mha`` or ``ref`` has the wrong type.
        ValueError: if their ``embed_dim``, ``num_heads``, ``kdim``, ``vdim`` or bias differ,
            or ``ref`` uses ``add_bias_kv`` or ``add_zero_attn`` (not supported here).
    """
    if not isinstance(mha, MultiHeadAttention):
        raise TypeError(f"mha must be an attnlib MultiHeadAttention, got {type(mha).__name__}")
    if not isinstance(ref, nn.MultiheadAttention):
        raise TypeError(f"ref must be a torch.nn.MultiheadAttention, got {type(ref).__name__}")
    if ref.bias_k is not None or ref.add_zero_attn:
        raise ValueError("ref uses add_bias_kv or add_zero_attn, which MultiHeadAttention lacks")
    for name in ("embed_dim", "num_heads", "kdim", "vdim"):
        ours, theirs = getattr(mha, name), getattr(ref, name)
        if ours != theirs:
            raise ValueError(f"{name} differs: mha has {name} = {ours}, ref has {name} = {theirs}")
    has_bias = ref.in_proj_bias is not None
    if (mha.q_proj.bias is not None) != has_bias:
        raise ValueError(
            f"bias differs: mha has bias = {mha.q_proj.bias is not None}, ref has bias = {has_bias}"
        )
    ours_params = dict(mha.named_parameters())
    with torch.no_grad():
        for name, source in _torch_weights(ref).items():
            if source is not None:
                ours_params[name].copy_(source)
    return mha

