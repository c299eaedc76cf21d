r"""The Transformer's layers: the feed-forward network, the encoder layer and the decoder layer.

Each sub-layer (self-attention, cross-attention, feed-forward) sits in a residual connection
with layer normalisation, after the sum as in the paper (post-LN) or before the sub-layer
(pre-LN). The layers compute exactly what ``nn.TransformerEncoderLayer`` and
``nn.TransformerDecoderLayer`` compute (``batch_first=True``), with
:class:`attnlib.blocks.multihead.MultiHeadAttention` inside; ``from_torch`` copies their weights.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlib._checks import (
    check_choice,
    check_device_arg,
    check_flag,
    check_float_dtype,
    check_input,
    check_instance,
    check_int,
    check_mask,
    check_probability,
    shape_str,
)
from attnlib._checks import check_sequence as _check_input
from attnlib.blocks.multihead import MultiHeadAttention, copy_from_torch
from attnlib.models.kv_cache import LayerCache, _attend_cached, _project_key_value
from attnlib.models.transformer.config import ACTIVATIONS, _check_eps

__all__ = ["DecoderLayer", "EncoderLayer", "FeedForward"]

_Attend = Callable[[Tensor], tuple[Tensor, Tensor | None]]  # an attention sub-layer: h -> (out, weights)


class FeedForward(nn.Module):
    r"""The position-wise feed-forward network, the same two layers at every position.

    .. math::

        \mathrm{FFN}(x) = \max(0,\, x W_1 + b_1)\, W_2 + b_2

    (with ``activation="gelu"``, GELU instead of the ReLU :math:`\max(0, \cdot)`). Dropout acts
    on the hidden layer, as in ``nn.TransformerEncoderLayer``, and only in training.

    Shape:
        - x: (B, L, D)
        - output: (B, L, D)

    Raises:
        ValueError: if a size is < 1, ``dropout`` is not in [0, 1) or ``activation`` unknown.
    """

    def __init__(
        self,
        d_model: int,
        d_ff: int,
        dropout: float = 0.0,
        activation: str = "relu",
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        check_device_arg("device", device)
        check_float_dtype("dtype", dtype, optional=True)
        check_int("d_model", d_model, minimum=1)
        check_int("d_ff", d_ff, minimum=1)
        check_choice("activation", activation, tuple(ACTIVATIONS))
        self.dropout = check_probability("dropout", dropout)
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff, device=device, dtype=dtype)
        self.linear2 = nn.Linear(d_ff, d_model, device=device, dtype=dtype)

    def extra_repr(self) -> str:
        return f"activation={self.activation!r}, dropout={self.dropout}"

    def forward(self, x: Tensor) -> Tensor:
        _check_input("x", x, self.linear1.in_features, self.linear1.weight)
        hidden = ACTIVATIONS[self.activation](self.linear1(x))  # (B, L, d_ff)
        hidden = F.dropout(hidden, p=self.dropout, training=self.training)
        out: Tensor = self.linear2(hidden)  # (B, L, D)
        return out


def _check_layer_args(d_model: int, num_heads: int, d_ff: int, layer_norm_eps: float,
                      norm_first: bool) -> None:
    check_int("d_model", d_model, minimum=1)
    check_flag("norm_first", norm_first)
    check_int("num_heads", num_heads, minimum=1)
    if d_model % num_heads:
        raise ValueError(f"num_heads must divide d_model (each head gets d_model / num_heads "
                         f"dimensions), got d_model = {d_model} and num_heads = {num_heads}")
    check_int("d_ff", d_ff, minimum=1)
    _check_eps(layer_norm_eps)


class EncoderLayer(nn.Module):
    r"""One encoder layer: self-attention and a feed-forward network, each with residual + LN.

    Post-LN (``norm_first=False``, the paper):

    .. math::

        z = \mathrm{LN}_1(x + \mathrm{Dropout}(\mathrm{MultiHead}(x, x, x))),

        y = \mathrm{LN}_2(z + \mathrm{Dropout}(\mathrm{FFN}(z)))

    Pre-LN (``norm_first=True``):

    .. math::

        z = x + \mathrm{Dropout}(\mathrm{MultiHead}(\mathrm{LN}_1(x), \cdot, \cdot)),

        y = z + \mathrm{Dropout}(\mathrm{FFN}(\mathrm{LN}_2(z)))

    The same computation as ``nn.TransformerEncoderLayer(d_model, nhead=num_heads,
    dim_feedforward=d_ff, batch_first=True)``; :meth:`from_torch` copies one's weights. Dropout
    acts only in training.

    Args:
        d_model: D.
        num_heads: h; must divide D.
        d_ff: the feed-forward hidden size (PyTorch's ``dim_feedforward``).
        dropout: the dropout probability everywhere in the layer.
        activation: ``"relu"`` or ``"gelu"``.
        norm_first: pre-LN (True) or post-LN (False).
        layer_norm_eps: the LayerNorms' epsilon.

    Shape:
        - x: (B, S, D)
        - key_padding_mask: (B, S), True at real tokens (PyTorch's ``src_key_padding_mask``
          is True at padding: it is ``~key_padding_mask``)
        - output: (B, S, D); weights: (B, H, S, S) if ``need_weights``, else None

    Raises:
        ValueError: if ``num_heads`` does not divide ``d_model``, a size is < 1, ``dropout``
            is not in [0, 1); in ``forward``, if ``x`` is not (B, S, D) or a mask does not fit.
        TypeError: if ``x`` is not a floating-point tensor or a mask not a bool tensor.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        activation: str = "relu",
        norm_first: bool = False,
        layer_norm_eps: float = 1e-5,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        check_device_arg("device", device)
        check_float_dtype("dtype", dtype, optional=True)
        _check_layer_args(d_model, num_heads, d_ff, layer_norm_eps, norm_first)
        self.d_model = d_model
        self.norm_first = norm_first
        self.dropout = check_probability("dropout", dropout)
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout, device=device,
                                            dtype=dtype)
        self.feed_forward = FeedForward(d_model, d_ff, dropout, activation, device=device,
                                        dtype=dtype)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps, device=device, dtype=dtype)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps, device=device, dtype=dtype)

    @classmethod
    def from_torch(cls, ref: nn.TransformerEncoderLayer) -> EncoderLayer:
        """An :class:`EncoderLayer` configured like ``ref`` (``batch_first=True``), its weights copied.

        Raises:
            TypeError: if ``ref`` is not an ``nn.TransformerEncoderLayer``.
            ValueError: if ``ref``'s activation is not ReLU or GELU.
        """
        if not isinstance(ref, nn.TransformerEncoderLayer):
            raise TypeError(f"ref must be an nn.TransformerEncoderLayer, got {type(ref).__name__}")
        weight = ref.linear1.weight
        layer = cls(
            ref.self_attn.embed_dim, ref.self_attn.num_heads, ref.linear1.out_features,
            dropout=ref.dropout.p, activation=_torch_activation(ref.activation),
            norm_first=ref.norm_first, layer_norm_eps=ref.norm1.eps,
            device=weight.device, dtype=weight.dtype,
        )
        _copy_layer(layer, ref)
        return layer

    def forward(
        self, x: Tensor, key_padding_mask: Tensor | None = None, *,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Encode ``x``; returns ``(output, weights)``, see the class docstring."""
        _check_input("x", x, self.d_model, self.norm1.weight)
        p, training = self.dropout, self.training

        def attend(h: Tensor) -> tuple[Tensor, Tensor | None]:
            # (B, S, D), (B, H, S, S)
            out, w = self.self_attn(h, h, h, key_padding_mask=key_padding_mask,
                                    need_weights=need_weights)
            return F.dropout(out, p, training), w

        if self.norm_first:
            attended, weights = attend(self.norm1(x))
            x = x + attended
            x = x + F.dropout(self.feed_forward(self.norm2(x)), p, training)
        else:
            attended, weights = attend(x)
            x = self.norm1(x + attended)
            x = self.norm2(x + F.dropout(self.feed_forward(x), p, training))
        return x, weights


class DecoderLayer(nn.Module):
    r"""One decoder layer: masked self-attention, cross-attention, feed-forward; residual + LN.

    Post-LN (``norm_first=False``, the paper), with :math:`\mathbf m` the encoder output:

    .. math::

        z_1 &= \mathrm{LN}_1(x + \mathrm{Dropout}(\mathrm{MultiHead}(x, x, x;\ \text{causal}))), \\
        z_2 &= \mathrm{LN}_2(z_1 + \mathrm{Dropout}(\mathrm{MultiHead}(z_1, \mathbf m,
               \mathbf m;\ \text{source padding}))), \\
        y &= \mathrm{LN}_3(z_2 + \mathrm{Dropout}(\mathrm{FFN}(z_2)))

    Pre-LN applies :math:`\mathrm{LN}_k` to each sub-layer's input instead. The same computation
    as ``nn.TransformerDecoderLayer(..., batch_first=True)``; :meth:`from_torch` copies one's
    weights. In cross-attention the queries come from the target (L of them) and the keys and
    values from the source (S): L != S in general.

    With a ``cache``, ``x`` holds the next token only (L = 1): its self-attention keys and
    values are appended to the cache and it attends to every cached position (no causal mask is
    needed, the future is not there yet); the cross-attention uses the cached keys and values of
    the encoder output, and ``memory`` is not read.

    The arguments are those of :class:`EncoderLayer`.

    Shape:
        - x: (B, L, D)
        - memory: (B, S, D), the encoder output
        - attn_mask: broadcastable to (B, H, L, L), e.g. :attr:`~attnlib.models.transformer.masks.Masks.decoder_self` (B, L, L)
          (PyTorch's ``tgt_mask`` and ``tgt_key_padding_mask`` combined, both negated)
        - memory_key_padding_mask: (B, S), True at real source tokens (PyTorch's
          ``memory_key_padding_mask`` is its negation)
        - output: (B, L, D); self weights (B, H, L, L) (L = t + 1 keys with a cache) and cross
          weights (B, H, L, S) if ``need_weights``, else None

    Raises:
        The errors of :class:`EncoderLayer`, and ValueError for a cached step with L != 1.
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        activation: str = "relu",
        norm_first: bool = False,
        layer_norm_eps: float = 1e-5,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        check_device_arg("device", device)
        check_float_dtype("dtype", dtype, optional=True)
        _check_layer_args(d_model, num_heads, d_ff, layer_norm_eps, norm_first)
        self.d_model = d_model
        self.norm_first = norm_first
        self.dropout = check_probability("dropout", dropout)
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout, device=device,
                                            dtype=dtype)
        self.multihead_attn = MultiHeadAttention(d_model, num_heads, dropout, device=device,
                                                 dtype=dtype)
        self.feed_forward = FeedForward(d_model, d_ff, dropout, activation, device=device,
                                        dtype=dtype)
        self.norm1 = nn.LayerNorm(d_model, eps=layer_norm_eps, device=device, dtype=dtype)
        self.norm2 = nn.LayerNorm(d_model, eps=layer_norm_eps, device=device, dtype=dtype)
        self.norm3 = nn.LayerNorm(d_model, eps=layer_norm_eps, device=device, dtype=dtype)

    @classmethod
    def from_torch(cls, ref: nn.TransformerDecoderLayer) -> DecoderLayer:
        """A :class:`DecoderLayer` configured like ``ref`` (``batch_first=True``), its weights copied.

        Raises:
            TypeError: if ``ref`` is not an ``nn.TransformerDecoderLayer``.
            ValueError: if ``ref``'s activation is not ReLU or GELU.
        """
        if not isinstance(ref, nn.TransformerDecoderLayer):
            raise TypeError(f"ref must be an nn.TransformerDecoderLayer, got {type(ref).__name__}")
        weight = ref.linear1.weight
        layer = cls(
            ref.self_attn.embed_dim, ref.self_attn.num_heads, ref.linear1.out_features,
            dropout=ref.dropout.p, activation=_torch_activation(ref.activation),
            norm_first=ref.norm_first, layer_norm_eps=ref.norm1.eps,
            device=weight.device, dtype=weight.dtype,
        )
        _copy_layer(layer, ref)
        return layer

    def init_cache(self, memory: Tensor) -> LayerCache:
        """An empty cache for this layer: no target token yet, the memory's keys and values.

        Shape:
            - memory: (B, S, D)
        """
        _check_input("memory", memory, self.d_model, self.norm1.weight)
        memory_key, memory_value = _project_key_value(self.multihead_attn, memory)
        B, H, _, E = memory_key.shape
        empty = memory_key.new_zeros(B, H, 0, E)  # (B, H, 0, E)
        return LayerCache(empty, empty, memory_key, memory_value)

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None,
        *,
        attn_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        cache: LayerCache | None = None,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """Decode ``x`` against ``memory``; returns ``(output, self weights, cross weights)``."""
        self._check_forward_args(x, memory, memory_key_padding_mask, cache)
        if cache is None:
            assert memory is not None
            return self._layer(x, memory, attn_mask, memory_key_padding_mask, need_weights)
        return self._cached_step(x, cache, attn_mask, memory_key_padding_mask, need_weights)

    def _check_forward_args(self, x: Tensor, memory: Tensor | None,
                            memory_key_padding_mask: Tensor | None,
                            cache: LayerCache | None) -> None:
        """Once per call: ``x``, ``memory`` or ``cache``, and the memory's padding mask, which
        the full and the cached step both read as bool (True = real token)."""
        x = _check_input("x", x, self.d_model, self.norm1.weight)
        B = x.shape[0]
        if cache is None and memory is None:
            raise ValueError("memory is None: give the encoder output, or a cache")
        if cache is not None:
            if x.shape[1] != 1:
                raise ValueError(f"a cached step takes one token, x of shape (B, 1, D), got "
                                 f"{shape_str(x.shape)}")
            self._check_cache(cache, "cache", B)
            S = cache.memory_key.shape[2]
        else:
            memory = _check_input("memory", memory, self.d_model, self.norm1.weight)
            if memory.shape[0] != B:
                raise ValueError(f"memory must have shape (B, S, D) with x's B = {B}, got "
                                 f"{shape_str(memory.shape)}")
            S = memory.shape[1]
        if memory_key_padding_mask is not None:
            mask = check_mask("memory_key_padding_mask", memory_key_padding_mask, (B, S),
                              expected="(B, S)", device=x.device, bool_only=True)
            if mask.shape != (B, S):
                raise ValueError(f"memory_key_padding_mask must have shape (B, S) = ({B}, {S}), "
                                 f"got {shape_str(mask.shape)}")

    def _check_cache(self, cache: object, name: str, B: int | None = None) -> None:
        """A :class:`LayerCache` made by this layer's :meth:`init_cache`, for B sentences."""
        check_instance(name, cache, LayerCache, "a LayerCache (from init_cache)")
        assert isinstance(cache, LayerCache)
        heads = self.multihead_attn.num_heads
        like = self.norm1.weight
        for part in ("self_key", "self_value", "memory_key", "memory_value"):
            t = check_input(f"{name}.{part}", getattr(cache, part), like, 4, "(B, H, t, E)")
            want = (cache.memory_key.shape[0] if B is None else B, heads, self.d_model // heads)
            if (t.shape[0], t.shape[1], t.shape[3]) != want:
                raise ValueError(f"{name}.{part} must have shape (B, H, t, E) = ({want[0]}, "
                                 f"{want[1]}, t, {want[2]}) for this layer and x's batch B = "
                                 f"{want[0]}, got {shape_str(t.shape)}: use init_cache of this "
                                 f"layer on the memory of x's sentences")

    def _layer(
        self, x: Tensor, memory: Tensor, attn_mask: Tensor | None,
        memory_key_padding_mask: Tensor | None, need_weights: bool,
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """The layer on a whole target prefix: its two attentions, then the rest."""
        def self_attend(h: Tensor) -> tuple[Tensor, Tensor | None]:
            # attn_mask: causal and target padding; (B, L, D), (B, H, L, L)
            out, w = self.self_attn(h, h, h, attn_mask=attn_mask,
                                    need_weights=need_weights)
            return F.dropout(out, self.dropout, self.training), w

        def cross_attend(h: Tensor) -> tuple[Tensor, Tensor | None]:
            # keys and values: the encoder's; (B, L, D), (B, H, L, S)
            out, w = self.multihead_attn(h, memory, memory,
                                         key_padding_mask=memory_key_padding_mask,
                                         need_weights=need_weights)
            return F.dropout(out, self.dropout, self.training), w

        return self._sublayers(x, self_attend, cross_attend)

    def _cached_step(
        self, x: Tensor, cache: LayerCache, attn_mask: Tensor | None,
        memory_key_padding_mask: Tensor | None, need_weights: bool,
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """The layer on the next token alone, with the keys and values of ``cache``."""
        def self_attend(h: Tensor) -> tuple[Tensor, Tensor | None]:
            key, value = _project_key_value(self.self_attn, h)  # (B, H, 1, E) x 2
            cache.self_key = torch.cat((cache.self_key, key), dim=2)  # (B, H, t + 1, E)
            cache.self_value = torch.cat((cache.self_value, value), dim=2)  # (B, H, t + 1, E)
            out, w = _attend_cached(self.self_attn, h, cache.self_key, cache.self_value,
                                    attn_mask, need_weights)  # (B, 1, D), (B, H, 1, t + 1)
            return F.dropout(out, self.dropout, self.training), w

        def cross_attend(h: Tensor) -> tuple[Tensor, Tensor | None]:
            mask = None
            if memory_key_padding_mask is not None:
                mask = memory_key_padding_mask[:, None, None, :]  # (B, 1, 1, S)
            out, w = _attend_cached(self.multihead_attn, h, cache.memory_key,
                                    cache.memory_value, mask, need_weights)  # (B, 1, D)
            return F.dropout(out, self.dropout, self.training), w

        return self._sublayers(x, self_attend, cross_attend)

    def _sublayers(
        self, x: Tensor, self_attend: _Attend, cross_attend: _Attend
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """Self-attention, cross-attention, feed-forward: each residual, with LN."""
        p, training = self.dropout, self.training
        if self.norm_first:
            attended, self_weights = self_attend(self.norm1(x))
            x = x + attended
            attended, cross_weights = cross_attend(self.norm2(x))
            x = x + attended
            x = x + F.dropout(self.feed_forward(self.norm3(x)), p, training)
        else:
            attended, self_weights = self_attend(x)
            x = self.norm1(x + attended)
            attended, cross_weights = cross_attend(x)
            x = self.norm2(x + attended)
            x = self.norm3(x + F.dropout(self.feed_forward(x), p, training))
        return x, self_weights, cross_weights


def _torch_activation(activation: object) -> str:
    """The name of a PyTorch layer's activation (a function, a module or a string)."""
    for name, function in ACTIVATIONS.items():
        if activation is function or activation == name:
            return name
    if isinstance(activation, nn.ReLU):
        return "relu"
    if isinstance(activation, nn.GELU) and activation.approximate == "none":
        return "gelu"
    raise ValueError(f"activation must be ReLU or (exact) GELU, got {activation!r}")


def _copy_layer(
    layer: EncoderLayer | DecoderLayer,
    ref: nn.TransformerEncoderLayer | nn.TransformerDecoderLayer,
) -> None:
    """Copy PyTorch's layer weights into ours: attention via copy_from_torch, the rest by name."""
    copy_from_torch(layer.self_attn, ref.self_attn)
    if isinstance(layer, DecoderLayer) and isinstance(ref, nn.TransformerDecoderLayer):
        copy_from_torch(layer.multihead_attn, ref.multihead_attn)
    pairs: list[tuple[nn.Module, nn.Module]] = [
        (layer.feed_forward.linear1, ref.linear1),
        (layer.feed_forward.linear2, ref.linear2),
        (layer.norm1, ref.norm1),
        (layer.norm2, ref.norm2),
    ]
    if isinstance(layer, DecoderLayer) and isinstance(ref, nn.TransformerDecoderLayer):
        pairs.append((layer.norm3, ref.norm3))
    with torch.no_grad():
        for ours, theirs in pairs:
            for name, param in ours.named_parameters():
                param.copy_(theirs.get_parameter(name))

