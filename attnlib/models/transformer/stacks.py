r"""The encoder and the decoder: N layers each, and the named outputs of a Transformer.

.. math::

    \mathbf H^{(n)} = \mathrm{EncoderLayer}_n(\mathbf H^{(n-1)}),

    \mathbf G^{(n)} = \mathrm{DecoderLayer}_n(\mathbf G^{(n-1)}, \mathbf H^{(N)})
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor, nn

from attnlib._checks import check_device_arg, check_float_dtype, check_instance
from attnlib.models.kv_cache import DecoderCache
from attnlib.models.transformer.config import TransformerConfig
from attnlib.models.transformer.layers import DecoderLayer, EncoderLayer

__all__ = ["AttentionWeights", "Decoder", "DecoderOutput", "Encoded", "Encoder", "StepOutput"]

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
        check_device_arg("device", device)
        check_float_dtype("dtype", dtype, optional=True)
        check_instance("config", config, TransformerConfig, "a TransformerConfig")
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
        check_device_arg("device", device)
        check_float_dtype("dtype", dtype, optional=True)
        check_instance("config", config, TransformerConfig, "a TransformerConfig")
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
        if cache is not None:
            check_instance("cache", cache, DecoderCache, "a DecoderCache (from init_cache)")
            if len(cache.layers) != len(self.layers):
                raise ValueError(f"cache has {len(cache.layers)} layers, this decoder has "
                                 f"{len(self.layers)}")
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



class Encoded(NamedTuple):
    """The encoder's output and the source lengths that go with it.

    The lengths, not a mask, travel with the memory: the decoder's masks are all made from
    lengths by :func:`~attnlib.models.transformer.masks.make_masks`.

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
