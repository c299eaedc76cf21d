r"""The encoder-decoder Transformer itself: embeddings, encoder, decoder, output projection."""

from __future__ import annotations

import math
from typing import cast

import torch
from torch import Tensor, nn

from attnlib._checks import (
    check_device_arg,
    check_flag,
    check_float_dtype,
    check_input,
    check_instance,
    check_int,
    check_tensor,
    shape_str,
)
from attnlib.blocks.positional import SinusoidalPositionalEncoding
from attnlib.models.kv_cache import DecoderCache
from attnlib.models.transformer.config import TransformerConfig, _check_ids
from attnlib.models.transformer.layers import DecoderLayer
from attnlib.models.transformer.masks import make_masks
from attnlib.models.transformer.stacks import (
    AttentionWeights,
    Decoder,
    DecoderOutput,
    Encoded,
    Encoder,
    StepOutput,
)

__all__ = ["Transformer"]

class Transformer(nn.Module):
    r"""The encoder-decoder Transformer, configured by one
    :class:`~attnlib.models.transformer.config.TransformerConfig`.

    .. math::

        \begin{aligned}
        \text{logits} = \mathrm{Decoder}\big(
            & \sqrt{D}\,E_{tgt}[\mathbf y_{in}] + \mathrm{PE}, \\
            & \mathrm{Encoder}(\sqrt{D}\,E_{src}[\mathbf x] + \mathrm{PE})\big)\, W_{out}^\top
        \end{aligned}

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
        check_device_arg("device", device)
        check_float_dtype("dtype", dtype, optional=True)
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

    def _embed(
        self, embedding: nn.Embedding, ids: Tensor, offset: int = 0
    ) -> Tensor:
        """Scaled embeddings plus positions, then dropout: (B, L) -> (B, L, D)."""
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
        self._check_ids("src", src, src_lengths)
        masks = make_masks(src_lengths, src.shape[1])
        x = self._embed(self.src_embed, src)  # (B, S, D)
        memory, _ = self.encoder(x, masks.src_key_padding)
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
        self._check_ids("tgt_in", tgt_in, tgt_lengths)
        memory, src_lengths = self._check_encoded(encoded, tgt_in)
        masks = make_masks(src_lengths, memory.shape[1], tgt_lengths,
                           tgt_in.shape[1])
        x, self_weights, cross_weights = self.decoder(
            self._embed(self.tgt_embed, tgt_in), memory,
            attn_mask=masks.decoder_self,
            memory_key_padding_mask=masks.src_key_padding,
            need_weights=need_weights,
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
            see :class:`~attnlib.models.transformer.stacks.AttentionWeights`.
        """
        self._check_ids("src", src, src_lengths)
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
        memory, src_lengths = self._check_encoded(encoded)
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
        self._check_cache(cache)
        B = cache.memory_key_padding_mask.shape[0]
        check_tensor("tokens", tokens)
        if tokens.shape != (B,):
            raise ValueError(f"tokens must have shape (B,) = ({B},), the cache's batch, got "
                             f"{shape_str(tokens.shape)}")
        ids = tokens[:, None]  # (B, 1)
        self._check_ids("tokens", ids, None)
        check_flag("need_weights", need_weights)
        x = self._embed(self.tgt_embed, ids, offset=cache.length)  # (B, 1, D)
        x, _, cross_weights = self.decoder(
            x, None, memory_key_padding_mask=cache.memory_key_padding_mask, cache=cache,
            need_weights=need_weights,
        )  # (B, 1, D), (B, N, H, 1, S)
        cache.length += 1
        logits = self.output_projection(x[:, 0])  # (B, V)
        return StepOutput(logits, None if cross_weights is None else cross_weights[:, :, :, 0])

    # -----------------------------------------------------------------------------------------
    # Argument checks: token ids, the encoder's output and the cache, once at the entry
    # -----------------------------------------------------------------------------------------

    def _check_ids(self, name: str, ids: Tensor, lengths: Tensor | None) -> None:
        """Source ids (``src``, with ``src_lengths``) or target ids (``tgt_in`` with
        ``tgt_lengths``, or ``tokens``) of this model's vocabularies, on its device."""
        c = self.config
        source = name == "src"
        _check_ids(name, ids, lengths, c.src_vocab_size if source else c.tgt_vocab_size,
                   "source" if source else "target", c.max_len, self.src_embed.weight.device,
                   "src_lengths" if source else "tgt_lengths", need_lengths=source)

    def _check_encoded(self, encoded: object, tgt_in: Tensor | None = None
                       ) -> tuple[Tensor, Tensor]:
        """``encoded`` as :meth:`encode` returns it, for ``tgt_in``'s batch if given."""
        if not isinstance(encoded, tuple) or len(encoded) != 2:
            raise TypeError(f"encoded must be what Transformer.encode returns (memory, "
                            f"src_lengths), got {type(encoded).__name__}")
        memory, src_lengths = encoded
        memory = check_input("encoded.memory", memory, self.src_embed.weight, 3, "(B, S, D)")
        B = memory.shape[0] if tgt_in is None else tgt_in.shape[0]
        if memory.shape[0] != B or memory.shape[2] != self.config.d_model:
            raise ValueError(f"encoded.memory must have shape (B, S, D) = ({B}, S, "
                             f"{self.config.d_model}) for tgt_in of shape "
                             f"{shape_str(tgt_in.shape) if tgt_in is not None else '?'}, got "
                             f"{shape_str(memory.shape)}")
        S = memory.shape[1]
        _check_ids("encoded.memory", torch.zeros(B, S, dtype=torch.long, device=memory.device),
                   src_lengths, 1, "source", max(S, 1), memory.device, "encoded.src_lengths",
                   need_lengths=True)
        return memory, src_lengths

    def _check_cache(self, cache: object) -> None:
        """A :class:`DecoderCache` from :meth:`init_cache` of a model like this one, not full."""
        check_instance("cache", cache, DecoderCache, "a DecoderCache (from init_cache)")
        assert isinstance(cache, DecoderCache)
        layers = self.decoder.layers
        if len(cache.layers) != len(layers):
            raise ValueError(f"cache has {len(cache.layers)} layers, this model's decoder has "
                             f"{len(layers)}: use this model's init_cache")
        check_int("cache.length", cache.length, minimum=0)
        if cache.length >= self.config.max_len:
            raise ValueError(f"the cache holds {cache.length} tokens: another step would go past "
                             f"max_len = {self.config.max_len}")
        for n, (layer, layer_cache) in enumerate(zip(layers, cache.layers, strict=True)):
            cast(DecoderLayer, layer)._check_cache(layer_cache, f"cache.layers[{n}]")
