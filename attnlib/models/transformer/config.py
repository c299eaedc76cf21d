"""The Transformer's configuration: its sizes and choices, and the check of the ids it is given.

:class:`TransformerConfig` holds every size of a
:class:`~attnlib.models.transformer.model.Transformer` (the paper's base model by default) and
counts its parameters analytically; ``_check_ids`` checks a batch of token ids against it (the
vocabulary, ``max_len``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

from attnlib._checks import (
    check_choice,
    check_device,
    check_flag,
    check_int,
    check_probability,
    check_tensor,
    shape_str,
)
from attnlib.blocks.multihead import parameter_count as attention_parameter_count

__all__ = ["ACTIVATIONS", "CHAPTER7_SIZES", "TransformerConfig"]

ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"relu": F.relu, "gelu": F.gelu}
"""The feed-forward activations, by the names ``nn.TransformerEncoderLayer`` accepts."""


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
    """Sizes and choices of a :class:`~attnlib.models.transformer.model.Transformer`; the defaults are the paper's base model.

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
        for name in ("src_vocab_size", "tgt_vocab_size"):
            check_int(name, getattr(self, name), minimum=2)
        for name in ("d_model", "num_heads", "num_encoder_layers", "num_decoder_layers", "d_ff",
                     "max_len"):
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
            check_flag(name, getattr(self, name))
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

            \begin{aligned}
            N = {} & N_{enc}(A + F + 4D) + N_{dec}(2A + F + 6D) \\
                   & + [\text{pre-LN}]\, 4D + D\,(V_{src} + V_{tgt} + V_{tgt})
            \end{aligned}

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



def _check_ids(
    name: str, ids: Tensor, lengths: Tensor | None, vocab_size: int, vocab: str, max_len: int,
    device: torch.device | None = None, lengths_name: str | None = None,
    need_lengths: bool = False,
) -> None:
    """Check a padded (B, S) batch of token ids and, if given, its (B,) lengths (named
    ``lengths_name``, required with ``need_lengths``), both on a model's ``device``."""
    check_tensor(name, ids)
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer token ids, got dtype {ids.dtype}")
    lname = f"{name}_lengths" if lengths_name is None else lengths_name
    if lengths is not None or need_lengths:
        check_tensor(lname, lengths)
    if device is not None:
        check_device(name, ids, device, "the model")
        if lengths is not None:
            check_device(lname, lengths, device, "the model")
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
