r"""The Transformer of "Attention Is All You Need": encoder, decoder, masks and decoding.

An encoder-decoder built from nothing but attention and position-wise feed-forward layers
{Vaswani et al. 2017}. For a source sentence :math:`\mathbf x` and a target prefix
:math:`\mathbf y_{<t}`:

.. math::

    \mathbf H^{(0)} &= \sqrt{D}\, E_{\text{src}}[\mathbf x] + \mathrm{PE}, \qquad
    \mathbf H^{(n)} = \mathrm{EncoderLayer}(\mathbf H^{(n-1)}), \\
    \mathbf G^{(0)} &= \sqrt{D}\, E_{\text{tgt}}[\mathbf y_{<t}] + \mathrm{PE}, \qquad
    \mathbf G^{(n)} = \mathrm{DecoderLayer}(\mathbf G^{(n-1)}, \mathbf H^{(N)}), \\
    p(y_t \mid \mathbf y_{<t}, \mathbf x) &= \mathrm{softmax}(\mathbf G^{(N)}_t W_{\text{out}}^\top).

Each sub-layer (self-attention, cross-attention, feed-forward) sits in a residual connection
with layer normalisation, after the sum as in the paper (post-LN,
:math:`\mathrm{LN}(x + \mathrm{Sublayer}(x))`) or before the sub-layer (pre-LN,
:math:`x + \mathrm{Sublayer}(\mathrm{LN}(x))`, with one more LayerNorm after the last layer).
The layers compute exactly what ``nn.TransformerEncoderLayer`` and ``nn.TransformerDecoderLayer``
compute (``batch_first=True``), with :class:`attnlib.multihead.MultiHeadAttention` inside.

Three masks, all boolean with True = may attend, all made by :func:`make_masks` from lengths,
the one place where this module turns lengths into masks (through
:func:`attnlib.masking.lengths_to_mask`):

- the source **padding mask**: no query attends to a padded source position (encoder
  self-attention and cross-attention);
- the **causal mask** ("sequence mask"): target position i sees positions 0..i only, so that
  teacher forcing on the whole target, shifted right, trains every position at once without
  letting a position see the word it must predict;
- the target padding mask, combined with the causal one in the decoder's self-attention.

At inference the decoder runs one token at a time: :meth:`Transformer.init_cache` and
:meth:`Transformer.decode_step` feed one token through the decoder with the key/value cache of
:mod:`attnlib.kv_cache`; the searches that call them, greedy and beam search, are in
:mod:`attnlib.decoding` (their names stay importable from here).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlib._checks import (
    check_choice,
    check_int,
    check_probability,
    check_tensor,
    shape_str,
)
from attnlib._checks import check_sequence as _check_input
from attnlib.kv_cache import DecoderCache, LayerCache, _attend_cached, _project_key_value
from attnlib.masking import causal_mask, lengths_to_mask
from attnlib.multihead import MultiHeadAttention, copy_from_torch
from attnlib.multihead import parameter_count as attention_parameter_count
from attnlib.positional import SinusoidalPositionalEncoding

__all__ = [
    "ACTIVATIONS",
    "AttentionWeights",
    "Decoder",
    "DecoderLayer",
    "DecoderOutput",
    "Encoded",
    "Encoder",
    "EncoderLayer",
    "FeedForward",
    "Masks",
    "StepOutput",
    "Transformer",
    "TransformerConfig",
    "make_masks",
]

ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"relu": F.relu, "gelu": F.gelu}
"""The feed-forward activations, by the names ``nn.TransformerEncoderLayer`` accepts."""

_Attend = Callable[[Tensor], tuple[Tensor, Tensor | None]]  # an attention sub-layer: h -> (out, weights)


# ---------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------


def _check_eps(value: object) -> None:
    """A finite float > 0, checked without tensors (so models build on the meta device)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"layer_norm_eps must be a float, got {type(value).__name__}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"layer_norm_eps must be finite and > 0, got {value}")


#: The sizes of the model chapter 7 trains (the chapter builds its config from these, and the
#: Transformer diagram takes its labels from them, so the picture follows the model).
CHAPTER7_SIZES: dict[str, int] = {"d_model": 64, "num_heads": 4, "num_encoder_layers": 2,
                                  "num_decoder_layers": 2, "d_ff": 128}


@dataclass(frozen=True)
class TransformerConfig:
    """Sizes and choices of a :class:`Transformer`; the defaults are the paper's base model.

    Args:
        src_vocab_size: number of source token ids.
        tgt_vocab_size: number of target token ids.
        d_model: D, the size of every token representation between layers.
        num_heads: h, the attention heads per attention layer; must divide ``d_model``.
        num_encoder_layers: N of the encoder.
        num_decoder_layers: N of the decoder.
        d_ff: the hidden size of the feed-forward layers.
        dropout: dropout probability on the embeddings + positions, the attention weights,
            every sub-layer's output and the feed-forward hidden layer (training only).
        max_len: the longest source and the longest decoder input accepted; the sinusoidal
            table is precomputed for this many positions.
        norm_first: False: post-LN, :math:`\\mathrm{LN}(x + f(x))`, as in the paper; True:
            pre-LN, :math:`x + f(\\mathrm{LN}(x))`, plus a final LayerNorm in encoder and decoder.
        tie_embeddings: the decoder's input embedding and the output projection share one
            weight matrix (the paper does).
        share_all_embeddings: the source and target embeddings are one matrix too; needs
            ``src_vocab_size == tgt_vocab_size`` (a shared vocabulary, as the paper's BPE).
        activation: the feed-forward activation, ``"relu"`` (the paper) or ``"gelu"``.
        layer_norm_eps: the epsilon of every LayerNorm.
        pad_id: the id of ``<pad>`` in both vocabularies.
        bos_id: the id of ``<bos>``, the decoder's first input.
        eos_id: the id of ``<eos>``, where decoding stops.

    Raises:
        ValueError: if ``d_model`` is not divisible by ``num_heads`` (naming both), or is odd
            (the sinusoidal encoding pairs features), if a size is < 1, ``dropout`` is not in
            [0, 1), ``share_all_embeddings`` is asked for with different vocabulary sizes,
            ``activation`` is unknown or a special id is outside its vocabulary.
        TypeError: if a size is not an int or a flag not a bool.
    """

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 512
    num_heads: int = 8
    num_encoder_layers: int = 6
    num_decoder_layers: int = 6
    d_ff: int = 2048
    dropout: float = 0.1
    max_len: int = 256
    norm_first: bool = False
    tie_embeddings: bool = True
    share_all_embeddings: bool = False
    activation: str = "relu"
    layer_norm_eps: float = 1e-5
    pad_id: int = 0
    bos_id: int = 1
    eos_id: int = 2

    def __post_init__(self) -> None:
        for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "num_heads",
                     "num_encoder_layers", "num_decoder_layers", "d_ff", "max_len"):
            check_int(name, getattr(self, name), minimum=1)
        if self.d_model % self.num_heads != 0:
            raise ValueError(
                f"d_model must be divisible by num_heads, got d_model = {self.d_model} and "
                f"num_heads = {self.num_heads} (d_model / num_heads = "
                f"{self.d_model / self.num_heads:g} would be the size of each head)"
            )
        if self.d_model % 2 != 0:
            raise ValueError(
                f"d_model must be even (the sinusoidal encoding comes in sin/cos pairs), "
                f"got d_model = {self.d_model}"
            )
        check_probability("dropout", self.dropout)
        _check_eps(self.layer_norm_eps)
        check_choice("activation", self.activation, tuple(ACTIVATIONS))
        for name in ("norm_first", "tie_embeddings", "share_all_embeddings"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {type(getattr(self, name)).__name__}")
        if self.share_all_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError(
                f"share_all_embeddings needs one shared vocabulary, got src_vocab_size = "
                f"{self.src_vocab_size} and tgt_vocab_size = {self.tgt_vocab_size}"
            )
        check_int("pad_id", self.pad_id, minimum=0)
        if self.pad_id >= min(self.src_vocab_size, self.tgt_vocab_size):
            raise ValueError(
                f"pad_id = {self.pad_id} must be an id of both vocabularies (src_vocab_size = "
                f"{self.src_vocab_size}, tgt_vocab_size = {self.tgt_vocab_size})"
            )
        for name in ("bos_id", "eos_id"):
            value = check_int(name, getattr(self, name), minimum=0)
            if value >= self.tgt_vocab_size:
                raise ValueError(
                    f"{name} = {value} must be an id of the target vocabulary "
                    f"[0, {self.tgt_vocab_size})"
                )

    @property
    def head_dim(self) -> int:
        """E = D / h, the size of a query, key and value per head."""
        return self.d_model // self.num_heads

    def parameter_count(self) -> int:
        r"""The number of learnable parameters of ``Transformer(self)``, computed analytically.

        With :math:`A = 4D^2 + 4D` per attention layer (four D x D projections with biases),
        :math:`F = 2 D d_{ff} + d_{ff} + D` per feed-forward layer and :math:`2D` per LayerNorm:

        .. math::

            N = N_{enc}(A + F + 4D) + N_{dec}(2A + F + 6D) + [\text{pre-LN}]\, 4D
                + D\,(V_{src} + V_{tgt} + V_{tgt})

        where a shared matrix is counted once: tying drops the output projection's
        :math:`D V_{tgt}`, sharing all embeddings drops the target embedding's too. The output
        projection has no bias. The sinusoidal table is a buffer, not a parameter.
        """
        D, d_ff = self.d_model, self.d_ff
        attention = attention_parameter_count(D, self.num_heads)  # 4D^2 + 4D
        feed_forward = D * d_ff + d_ff + d_ff * D + D
        norm = 2 * D
        encoder = self.num_encoder_layers * (attention + feed_forward + 2 * norm)
        decoder = self.num_decoder_layers * (2 * attention + feed_forward + 3 * norm)
        final_norms = 2 * norm if self.norm_first else 0
        embeddings = D * self.src_vocab_size
        if not self.share_all_embeddings:
            embeddings += D * self.tgt_vocab_size
        if not self.tie_embeddings:
            embeddings += D * self.tgt_vocab_size  # the output projection
        return encoder + decoder + final_norms + embeddings


# ---------------------------------------------------------------------------------------------
# Masks
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Masks:
    """The masks of one batch, all boolean, True = may attend.

    ``src_key_padding`` and ``tgt_key_padding`` are True at real tokens; ``causal`` is the
    lower triangle. The properties combine them into the mask each attention uses, expanded to
    one (L, S) matrix per sentence so the book can draw it.

    Shape:
        - src_key_padding: (B, S)
        - tgt_key_padding: (B, L), or None (no target, or no target padding)
        - causal: (L, L), or None (no target)
    """

    src_key_padding: Tensor
    tgt_key_padding: Tensor | None = None
    causal: Tensor | None = None

    @property
    def encoder_self(self) -> Tensor:
        """The encoder self-attention mask; every query sees the real source tokens.

        Shape:
            (B, S, S)
        """
        B, S = self.src_key_padding.shape
        return self.src_key_padding[:, None, :].expand(B, S, S)  # (B, S, S)

    @property
    def decoder_self(self) -> Tensor:
        """The decoder self-attention mask; causal, and real target tokens only.

        Shape:
            (B, L, L)

        Raises:
            ValueError: if the masks were made without a target.
        """
        if self.causal is None:
            raise ValueError("these masks were made without a target (L is None)")
        B, L = self.src_key_padding.shape[0], self.causal.shape[0]
        if self.tgt_key_padding is None:
            return self.causal.expand(B, L, L)  # (B, L, L)
        return self.causal & self.tgt_key_padding[:, None, :]  # (B, L, L)

    @property
    def cross(self) -> Tensor:
        """The cross-attention mask; every target query sees the real source tokens.

        Shape:
            (B, L, S)

        Raises:
            ValueError: if the masks were made without a target.
        """
        if self.causal is None:
            raise ValueError("these masks were made without a target (L is None)")
        (B, S), L = self.src_key_padding.shape, self.causal.shape[0]
        return self.src_key_padding[:, None, :].expand(B, L, S)  # (B, L, S)


def make_masks(
    src_lengths: Tensor,
    S: int,
    tgt_lengths: Tensor | None = None,
    L: int | None = None,
) -> Masks:
    r"""All the masks of a batch, from its lengths: the one place this module makes masks.

    .. math::

        \text{src}_{b,j} = [\, j < n^{src}_b \,], \qquad
        \text{tgt}_{b,j} = [\, j < n^{tgt}_b \,], \qquad
        \text{causal}_{i,j} = [\, j \le i \,]

    Args:
        src_lengths: the number of real source tokens of each sentence.
        S: the padded source length.
        tgt_lengths: the number of real decoder inputs of each sentence; None: no target
            padding (decoding, or a batch of equal lengths).
        L: the decoder input length; None: no target (encoding only).

    Shape:
        - src_lengths: (B,); tgt_lengths: (B,)
        - returns :class:`Masks` with src_key_padding (B, S), tgt_key_padding (B, L) and
          causal (L, L)

    Raises:
        ValueError: if ``tgt_lengths`` is given without ``L``, or a length is outside [0, S]
            (or [0, L]); the errors of :func:`attnlib.masking.lengths_to_mask`.
    """
    src_key_padding = lengths_to_mask(src_lengths, S)  # (B, S)
    if L is None:
        if tgt_lengths is not None:
            raise ValueError(f"L (the decoder input length) must be given with tgt_lengths, "
                             f"got L = None and tgt_lengths {tgt_lengths.tolist()}")
        return Masks(src_key_padding)
    tgt_key_padding = None if tgt_lengths is None else lengths_to_mask(tgt_lengths, L)  # (B, L)
    causal = causal_mask(L, device=src_lengths.device)  # (L, L)
    return Masks(src_key_padding, tgt_key_padding, causal)


# ---------------------------------------------------------------------------------------------
# Layers
# ---------------------------------------------------------------------------------------------


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
        _check_input("x", x, self.linear1.in_features)
        hidden = ACTIVATIONS[self.activation](self.linear1(x))  # (B, L, d_ff)
        hidden = F.dropout(hidden, p=self.dropout, training=self.training)
        out: Tensor = self.linear2(hidden)  # (B, L, D)
        return out


def _check_layer_args(d_model: int, num_heads: int, d_ff: int, layer_norm_eps: float) -> None:
    check_int("d_model", d_model, minimum=1)
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

        z = \mathrm{LN}_1(x + \mathrm{Dropout}(\mathrm{MultiHead}(x, x, x))), \qquad
        y = \mathrm{LN}_2(z + \mathrm{Dropout}(\mathrm{FFN}(z)))

    Pre-LN (``norm_first=True``):

    .. math::

        z = x + \mathrm{Dropout}(\mathrm{MultiHead}(\mathrm{LN}_1(x), \cdot, \cdot)), \qquad
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
        _check_layer_args(d_model, num_heads, d_ff, layer_norm_eps)
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
        self, x: Tensor, key_padding_mask: Tensor | None = None, *, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        """Encode ``x``; returns ``(output, weights)``, see the class docstring."""
        _check_input("x", x, self.d_model)

        def attend(h: Tensor) -> tuple[Tensor, Tensor | None]:
            out, w = self.self_attn(h, h, h, key_padding_mask=key_padding_mask,
                                    need_weights=need_weights)  # (B, S, D), (B, H, S, S)
            return F.dropout(out, self.dropout, self.training), w

        if self.norm_first:
            attended, weights = attend(self.norm1(x))
            x = x + attended
            x = x + F.dropout(self.feed_forward(self.norm2(x)), self.dropout, self.training)
        else:
            attended, weights = attend(x)
            x = self.norm1(x + attended)
            x = self.norm2(x + F.dropout(self.feed_forward(x), self.dropout, self.training))
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
        - attn_mask: broadcastable to (B, H, L, L), e.g. :attr:`Masks.decoder_self` (B, L, L)
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
        _check_layer_args(d_model, num_heads, d_ff, layer_norm_eps)
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
        _check_input("memory", memory, self.d_model)
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
        _check_input("x", x, self.d_model)
        if cache is None and memory is None:
            raise ValueError("memory is None: give the encoder output, or a cache")
        if cache is not None and x.shape[1] != 1:
            raise ValueError(
                f"a cached step takes one token, x of shape (B, 1, D), got {shape_str(x.shape)}"
            )
        if cache is None:
            assert memory is not None
            return self._layer(x, memory, attn_mask, memory_key_padding_mask, need_weights)
        return self._cached_step(x, cache, attn_mask, memory_key_padding_mask, need_weights)

    def _layer(
        self, x: Tensor, memory: Tensor, attn_mask: Tensor | None,
        memory_key_padding_mask: Tensor | None, need_weights: bool,
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """The layer on a whole target prefix: its two attentions, then :meth:`_sublayers`."""
        def self_attend(h: Tensor) -> tuple[Tensor, Tensor | None]:
            out, w = self.self_attn(h, h, h, attn_mask=attn_mask,  # causal and target padding
                                    need_weights=need_weights)  # (B, L, D), (B, H, L, L)
            return F.dropout(out, self.dropout, self.training), w

        def cross_attend(h: Tensor) -> tuple[Tensor, Tensor | None]:
            out, w = self.multihead_attn(h, memory, memory,  # keys and values: the encoder's
                                         key_padding_mask=memory_key_padding_mask,
                                         need_weights=need_weights)  # (B, L, D), (B, H, L, S)
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
        """Self-attention, cross-attention, feed-forward: each a residual with a LayerNorm."""
        if self.norm_first:
            attended, self_weights = self_attend(self.norm1(x))
            x = x + attended
            attended, cross_weights = cross_attend(self.norm2(x))
            x = x + attended
            x = x + F.dropout(self.feed_forward(self.norm3(x)), self.dropout, self.training)
        else:
            attended, self_weights = self_attend(x)
            x = self.norm1(x + attended)
            attended, cross_weights = cross_attend(x)
            x = self.norm2(x + attended)
            x = self.norm3(x + F.dropout(self.feed_forward(x), self.dropout, self.training))
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


# ---------------------------------------------------------------------------------------------
# Stacks
# ---------------------------------------------------------------------------------------------


def _stack(weights: list[Tensor | None]) -> Tensor | None:
    """Per-layer weights (B, H, L, S) into one tensor (B, N, H, L, S), or None."""
    if not weights or any(w is None for w in weights):
        return None
    return torch.stack([w for w in weights if w is not None], dim=1)  # (B, N, H, L, S)


class Encoder(nn.Module):
    r"""N encoder layers, and for pre-LN a final LayerNorm (``nn.TransformerEncoder(norm=...)``).

    .. math::

        \mathbf H^{(n)} = \mathrm{EncoderLayer}_n(\mathbf H^{(n-1)}), \quad n = 1..N

    Shape:
        - x: (B, S, D); key_padding_mask: (B, S), True at real tokens
        - output: (B, S, D); weights: (B, N, H, S, S) if ``need_weights``, else None
    """

    def __init__(
        self,
        config: TransformerConfig,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        c = config
        self.layers = nn.ModuleList(
            EncoderLayer(c.d_model, c.num_heads, c.d_ff, c.dropout, c.activation, c.norm_first,
                         c.layer_norm_eps, device=device, dtype=dtype)
            for _ in range(c.num_encoder_layers)
        )
        self.norm = (
            nn.LayerNorm(c.d_model, eps=c.layer_norm_eps, device=device, dtype=dtype)
            if c.norm_first else None
        )

    def forward(
        self, x: Tensor, key_padding_mask: Tensor | None = None, *, need_weights: bool = False
    ) -> tuple[Tensor, Tensor | None]:
        weights: list[Tensor | None] = []
        for layer in self.layers:
            x, w = layer(x, key_padding_mask, need_weights=need_weights)  # (B, S, D)
            weights.append(w)
        if self.norm is not None:
            x = self.norm(x)
        return x, _stack(weights)


class Decoder(nn.Module):
    r"""N decoder layers, and for pre-LN a final LayerNorm (``nn.TransformerDecoder(norm=...)``).

    .. math::

        \mathbf G^{(n)} = \mathrm{DecoderLayer}_n(\mathbf G^{(n-1)}, \mathbf m), \quad n = 1..N

    Shape:
        - x: (B, L, D); memory: (B, S, D)
        - attn_mask: broadcastable to (B, H, L, L); memory_key_padding_mask: (B, S)
        - output: (B, L, D); self weights (B, N, H, L, L) and cross weights (B, N, H, L, S)
          if ``need_weights``, else None
    """

    def __init__(
        self,
        config: TransformerConfig,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        c = config
        self.layers = nn.ModuleList(
            DecoderLayer(c.d_model, c.num_heads, c.d_ff, c.dropout, c.activation, c.norm_first,
                         c.layer_norm_eps, device=device, dtype=dtype)
            for _ in range(c.num_decoder_layers)
        )
        self.norm = (
            nn.LayerNorm(c.d_model, eps=c.layer_norm_eps, device=device, dtype=dtype)
            if c.norm_first else None
        )

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None,
        *,
        attn_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        cache: DecoderCache | None = None,
        need_weights: bool = False,
    ) -> tuple[Tensor, Tensor | None, Tensor | None]:
        self_weights: list[Tensor | None] = []
        cross_weights: list[Tensor | None] = []
        for n, layer in enumerate(self.layers):
            x, w_self, w_cross = layer(
                x, memory, attn_mask=attn_mask, memory_key_padding_mask=memory_key_padding_mask,
                cache=None if cache is None else cache.layers[n], need_weights=need_weights,
            )  # (B, L, D)
            self_weights.append(w_self)
            cross_weights.append(w_cross)
        if self.norm is not None:
            x = self.norm(x)
        return x, _stack(self_weights), _stack(cross_weights)


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------


class Encoded(NamedTuple):
    """The encoder's output and the source lengths that go with it.

    The lengths, not a mask, travel with the memory: the decoder's masks are all made from
    lengths by :func:`make_masks`.

    Shape:
        - memory: (B, S, D)
        - src_lengths: (B,)
    """

    memory: Tensor
    src_lengths: Tensor


class DecoderOutput(NamedTuple):
    """Logits for every decoder position, and the attention weights if asked for.

    Shape:
        - logits: (B, L, V)
        - self_weights: (B, N, H, L, L) or None
        - cross_weights: (B, N, H, L, S) or None
    """

    logits: Tensor
    self_weights: Tensor | None
    cross_weights: Tensor | None


class StepOutput(NamedTuple):
    """One cached decoding step: the next token's logits and the cross-attention weights.

    Shape:
        - logits: (B, V)
        - cross_weights: (B, N, H, S), every layer and head, or None
    """

    logits: Tensor
    cross_weights: Tensor | None


class AttentionWeights(NamedTuple):
    """Every attention map of a teacher-forced pass, for heatmaps.

    Shape:
        - encoder: (B, N_enc, H, S, S), encoder self-attention
        - decoder_self: (B, N_dec, H, L, L), masked decoder self-attention
        - cross: (B, N_dec, H, L, S), decoder queries on the source
    """

    encoder: Tensor
    decoder_self: Tensor
    cross: Tensor


def _check_ids(
    name: str, ids: Tensor, lengths: Tensor | None, vocab_size: int, vocab: str, max_len: int
) -> None:
    """Check a padded (B, S) batch of token ids and, if given, its (B,) lengths."""
    check_tensor(name, ids)
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer token ids, got dtype {ids.dtype}")
    if ids.ndim != 2:
        raise ValueError(f"{name} must have 2 dimensions (B, length), got shape "
                         f"{shape_str(ids.shape)}")
    B, length = ids.shape
    if B == 0 or length == 0:
        raise ValueError(f"{name} is empty: got shape {shape_str(ids.shape)}, need B >= 1 and a "
                         f"length >= 1")
    if length > max_len:
        raise ValueError(f"{name} has length {length} (shape {shape_str(ids.shape)}), longer than "
                         f"the model's max_len = {max_len}")
    bad = (ids < 0) | (ids >= vocab_size)
    if bool(bad.any()):
        raise ValueError(f"{name} holds token id {int(ids[bad][0])}, outside the {vocab} "
                         f"vocabulary [0, {vocab_size}) ({vocab}_vocab_size = {vocab_size})")
    if lengths is None:
        return
    lname = f"{name}_lengths"
    check_tensor(lname, lengths)
    if lengths.shape != (B,):
        raise ValueError(f"{lname} must have shape (B,) = ({B},) for {name} of shape "
                         f"{shape_str(ids.shape)}, got shape {shape_str(lengths.shape)}")
    if lengths.is_floating_point() or lengths.is_complex() or lengths.dtype == torch.bool:
        raise TypeError(f"{lname} must have an integer dtype, got {lengths.dtype}")
    if bool((lengths < 1).any()):
        i = int((lengths < 1).nonzero()[0, 0])
        raise ValueError(f"{lname}[{i}] = {int(lengths[i])}: sentence {i} is empty, every "
                         f"sentence needs at least one token")
    if bool((lengths > length).any()):
        raise ValueError(f"{lname} holds a length {int(lengths.max())} greater than the length "
                         f"{length} of {name} of shape {shape_str(ids.shape)}")


class Transformer(nn.Module):
    r"""The encoder-decoder Transformer, configured by one :class:`TransformerConfig`.

    .. math::

        \text{logits} = \mathrm{Decoder}\big(\sqrt{D}\,E_{tgt}[\mathbf y_{in}] + \mathrm{PE},\;
            \mathrm{Encoder}(\sqrt{D}\,E_{src}[\mathbf x] + \mathrm{PE})\big)\, W_{out}^\top

    Embeddings are scaled by :math:`\sqrt{D}` and initialised from
    :math:`\mathcal N(0, D^{-1})`, so a scaled embedding has entries of size about 1, like the
    sinusoidal positions added to it; ``<pad>``'s row starts at zero and gets no gradient from
    the lookup. Dropout follows the sum. With ``tie_embeddings`` the output projection *is* the
    target embedding matrix (one parameter); with ``share_all_embeddings`` the source uses it
    too. The output projection has no bias.

    ``forward`` is teacher forcing: the decoder reads ``tgt_in`` = ``<bos>`` + target (the
    target shifted right) and its logits at position t predict ``tgt_out[t]``, the target's
    word t (``<eos>`` last). The causal mask keeps position t from seeing inputs after t.

    Shape:
        - src: (B, S) ids; src_lengths: (B,)
        - tgt_in: (B, L) ids; tgt_lengths: (B,) or None (no target padding)
        - output: (B, L, V) logits, V = ``tgt_vocab_size``

    Raises:
        TypeError: if ids or lengths are not integer tensors.
        ValueError: if a batch is empty or not 2-D, a sentence has length 0, a length exceeds
            its tensor or ``max_len``, or a token id is outside its vocabulary (the message
            names ``src`` or ``tgt_in`` and the vocabulary size).
    """

    def __init__(
        self,
        config: TransformerConfig,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        if not isinstance(config, TransformerConfig):
            raise TypeError(f"config must be a TransformerConfig, got {type(config).__name__}")
        self.config = c = config
        self.src_embed = nn.Embedding(c.src_vocab_size, c.d_model, padding_idx=c.pad_id,
                                      device=device, dtype=dtype)
        self.tgt_embed = (
            self.src_embed if c.share_all_embeddings
            else nn.Embedding(c.tgt_vocab_size, c.d_model, padding_idx=c.pad_id, device=device,
                              dtype=dtype)
        )
        self.positional = SinusoidalPositionalEncoding(
            c.d_model, c.max_len, c.dropout, device=device, dtype=dtype or torch.float32
        )
        self.encoder = Encoder(c, device=device, dtype=dtype)
        self.decoder = Decoder(c, device=device, dtype=dtype)
        self.output_projection = nn.Linear(c.d_model, c.tgt_vocab_size, bias=False,
                                           device=device, dtype=dtype)
        self._reset_embeddings()
        if c.tie_embeddings:
            self.output_projection.weight = self.tgt_embed.weight

    @torch.no_grad()
    def _reset_embeddings(self) -> None:
        std = self.config.d_model ** -0.5
        for embed in (self.src_embed, self.tgt_embed):
            nn.init.normal_(embed.weight, mean=0.0, std=std)
            embed.weight[self.config.pad_id].zero_()

    def extra_repr(self) -> str:
        return f"tie_embeddings={self.config.tie_embeddings}, " \
               f"share_all_embeddings={self.config.share_all_embeddings}"

    def _embed(self, embedding: nn.Embedding, ids: Tensor, offset: int = 0) -> Tensor:
        """Scaled embeddings plus positions, then dropout. Shape: (B, L) -> (B, L, D)."""
        x = embedding(ids) * math.sqrt(self.config.d_model)  # (B, L, D)
        out: Tensor = self.positional(x, offset)  # (B, L, D)
        return out

    def encode(self, src: Tensor, src_lengths: Tensor) -> Encoded:
        """Run the encoder over a padded source batch.

        Shape:
            - src: (B, S); src_lengths: (B,)
            - returns memory (B, S, D) and src_lengths (B,)

        Raises:
            TypeError, ValueError: for a bad ``src`` or ``src_lengths``, see the class.
        """
        c = self.config
        _check_ids("src", src, src_lengths, c.src_vocab_size, "source", c.max_len)
        masks = make_masks(src_lengths, src.shape[1])
        memory, _ = self.encoder(self._embed(self.src_embed, src), masks.src_key_padding)
        return Encoded(memory, src_lengths)

    def decode(
        self,
        tgt_in: Tensor,
        encoded: Encoded,
        tgt_lengths: Tensor | None = None,
        *,
        need_weights: bool = False,
    ) -> DecoderOutput:
        """Run the decoder over whole target prefixes (teacher forcing), no cache.

        Shape:
            - tgt_in: (B, L); tgt_lengths: (B,) or None
            - returns logits (B, L, V) and, if ``need_weights``, self weights (B, N, H, L, L)
              and cross weights (B, N, H, L, S)

        Raises:
            TypeError, ValueError: for a bad ``tgt_in`` or ``tgt_lengths``, see the class.
        """
        c = self.config
        _check_ids("tgt_in", tgt_in, tgt_lengths, c.tgt_vocab_size, "target", c.max_len)
        memory, src_lengths = encoded
        if tgt_in.shape[0] != memory.shape[0]:
            raise ValueError(f"tgt_in of shape {shape_str(tgt_in.shape)} and the memory of shape "
                             f"{shape_str(memory.shape)} have different batch sizes B")
        masks = make_masks(src_lengths, memory.shape[1], tgt_lengths, tgt_in.shape[1])
        x, self_weights, cross_weights = self.decoder(
            self._embed(self.tgt_embed, tgt_in), memory, attn_mask=masks.decoder_self,
            memory_key_padding_mask=masks.src_key_padding, need_weights=need_weights,
        )  # (B, L, D)
        return DecoderOutput(self.output_projection(x), self_weights, cross_weights)

    def forward(
        self,
        src: Tensor,
        src_lengths: Tensor,
        tgt_in: Tensor,
        tgt_lengths: Tensor | None = None,
    ) -> Tensor:
        """Teacher-forced logits for every target position; see the class docstring."""
        logits: Tensor = self.decode(tgt_in, self.encode(src, src_lengths), tgt_lengths).logits
        return logits  # (B, L, V)

    def attention_weights(
        self,
        src: Tensor,
        src_lengths: Tensor,
        tgt_in: Tensor,
        tgt_lengths: Tensor | None = None,
    ) -> AttentionWeights:
        """Every attention map of a teacher-forced pass, per layer and head, for heatmaps.

        Run it in eval mode (with dropout the weights are the dropped-out ones).

        Shape:
            see :class:`AttentionWeights`.
        """
        c = self.config
        _check_ids("src", src, src_lengths, c.src_vocab_size, "source", c.max_len)
        masks = make_masks(src_lengths, src.shape[1])
        memory, encoder_weights = self.encoder(
            self._embed(self.src_embed, src), masks.src_key_padding, need_weights=True
        )
        out = self.decode(tgt_in, Encoded(memory, src_lengths), tgt_lengths,
                          need_weights=True)
        assert encoder_weights is not None
        assert out.self_weights is not None and out.cross_weights is not None
        return AttentionWeights(encoder_weights, out.self_weights, out.cross_weights)

    def init_cache(self, encoded: Encoded) -> DecoderCache:
        """An empty decoding cache: the cross-attention keys and values of ``encoded``.

        Every decoder layer projects the encoder output to its keys and values once, here;
        :meth:`decode_step` then reuses them at every step.
        """
        memory, src_lengths = encoded
        layers = [cast(DecoderLayer, layer).init_cache(memory) for layer in self.decoder.layers]
        return DecoderCache(layers, make_masks(src_lengths, memory.shape[1]).src_key_padding)

    def decode_step(
        self, tokens: Tensor, cache: DecoderCache, *, need_weights: bool = False
    ) -> StepOutput:
        """Feed one token per sentence; returns the next token's logits. Updates ``cache``.

        The token is at position ``cache.length`` (the first step feeds ``<bos>`` at 0).

        Shape:
            - tokens: (B,)
            - returns logits (B, V) and cross weights (B, N, H, S) if ``need_weights``

        Raises:
            ValueError: if ``tokens`` is not (B,) with the cache's B, holds an id outside the
                target vocabulary, or the step would go past ``max_len``.
        """
        c = self.config
        B = cache.memory_key_padding_mask.shape[0]
        check_tensor("tokens", tokens)
        if tokens.shape != (B,):
            raise ValueError(f"tokens must have shape (B,) = ({B},), got "
                             f"{shape_str(tokens.shape)}")
        if cache.length >= c.max_len:
            raise ValueError(f"the cache holds {cache.length} tokens: another step would go past "
                             f"max_len = {c.max_len}")
        ids = tokens[:, None]  # (B, 1)
        _check_ids("tokens", ids, None, c.tgt_vocab_size, "target", c.max_len)
        x = self._embed(self.tgt_embed, ids, offset=cache.length)  # (B, 1, D)
        x, _, cross_weights = self.decoder(
            x, None, memory_key_padding_mask=cache.memory_key_padding_mask, cache=cache,
            need_weights=need_weights,
        )  # (B, 1, D), (B, N, H, 1, S)
        cache.length += 1
        logits = self.output_projection(x[:, 0])  # (B, V)
        return StepOutput(logits, None if cross_weights is None else cross_weights[:, :, :, 0])


# The searches moved to attnlib.decoding, which imports this module; they are looked up lazily
# (PEP 562) so that ``from attnlib.transformer import greedy_decode`` keeps working.
_MOVED_TO_DECODING = ("Decoded", "beam_search", "gnmt_length_penalty", "greedy_decode")


def __getattr__(name: str) -> Any:
    if name in _MOVED_TO_DECODING:
        from attnlib import decoding

        return getattr(decoding, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
