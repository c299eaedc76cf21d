r"""A decoder-only language model whose layers may mix tokens in different ways.

Chapter 9's decoder (:mod:`attnlib.models.decoder_lm`) with one change: each block's attention is
any *token mixer*, a module called as ``mixer(x, state) -> (output, state)``:
:class:`~attnlib.blocks.gated_attention.CausalSelfAttention` (softmax attention, with or
without gates, sinks and windows), :class:`~attnlib.blocks.latent_attention.MultiHeadLatentAttention`,
or :class:`~attnlib.blocks.delta_rule.DeltaNet`. A stack may mix them, as the hybrid models of
2025 do (several DeltaNet-style layers to one attention layer). The state is what the layer
keeps between generation steps: a key/value cache that grows, a window of it, a latent cache,
or a memory of fixed size; :class:`MixerCache` holds one per layer and counts their bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

import torch
from torch import Tensor, nn

from attnlib._checks import check_int, check_token_ids
from attnlib.models.transformer.layers import FeedForward

__all__ = ["MixerBlock", "MixerCache", "MixerLM", "state_nbytes"]


def state_nbytes(state: object) -> int:
    """Bytes of every tensor inside a layer's state (tuples, lists and dataclasses walked)."""
    if isinstance(state, Tensor):
        return state.numel() * state.element_size()
    if isinstance(state, tuple | list):
        return sum(state_nbytes(s) for s in state)
    if is_dataclass(state) and not isinstance(state, type):
        return sum(state_nbytes(getattr(state, f.name)) for f in fields(state))
    return 0


@dataclass
class MixerCache:
    """Each layer's state after the tokens read so far."""

    states: list[Any] = field(default_factory=list)
    length: int = 0

    def nbytes(self) -> int:
        """Bytes held by the tensors of every layer's state."""
        return sum(state_nbytes(s) for s in self.states)


class MixerBlock(nn.Module):
    r"""Pre-LN block: :math:`z = x + \mathrm{Mix}(\mathrm{LN}_1 x)`, :math:`y = z + \mathrm{FFN}(\mathrm{LN}_2 z)`.

    Shape:
        - x: (B, L, D); output: (B, L, D), and the mixer's new state
    """

    def __init__(self, mixer: nn.Module, d_ff: int, *, dtype: torch.dtype | None = None
                 ) -> None:
        super().__init__()
        D = int(getattr(mixer, "embed_dim", 0))
        check_int("mixer.embed_dim", D, minimum=1)
        self.mixer = mixer
        self.feed_forward = FeedForward(D, d_ff, activation="gelu", dtype=dtype)
        self.norm1 = nn.LayerNorm(D, dtype=dtype)
        self.norm2 = nn.LayerNorm(D, dtype=dtype)

    def forward(self, x: Tensor, state: Any = None) -> tuple[Tensor, Any]:
        mixed, state = self.mixer(self.norm1(x), state)
        x = x + mixed
        return x + self.feed_forward(self.norm2(x)), state  # (B, L, D)


class MixerLM(nn.Module):
    """Embedding, one :class:`MixerBlock` per mixer, a final LayerNorm, the tied output.

    Shape:
        - tokens: (B, L) ids in [0, V); output: logits (B, L, V)

    Raises:
        ValueError: if ``mixers`` is empty or their sizes differ; in ``forward``, if
            ``tokens`` is not (B, L) with ids in [0, V).
    """

    def __init__(self, vocab_size: int, mixers: Sequence[nn.Module], *, d_ff: int,
                 dtype: torch.dtype | None = None) -> None:
        super().__init__()
        check_int("vocab_size", vocab_size, minimum=1)
        if not mixers:
            raise ValueError("mixers must hold at least one token mixer, got none")
        sizes = {int(getattr(m, "embed_dim", 0)) for m in mixers}
        if len(sizes) != 1:
            raise ValueError(f"mixers must share one embed_dim, got {sorted(sizes)}")
        D = sizes.pop()
        self.vocab_size = vocab_size
        self.embedding = nn.Embedding(vocab_size, D, dtype=dtype)
        nn.init.normal_(self.embedding.weight, std=D ** -0.5)
        self.blocks = nn.ModuleList(MixerBlock(m, d_ff, dtype=dtype) for m in mixers)
        self.norm = nn.LayerNorm(D, dtype=dtype)

    def parameter_count(self) -> int:
        """Learnable parameters (the tied embedding counted once)."""
        return sum(p.numel() for p in self.parameters())

    def forward(self, tokens: Tensor, cache: MixerCache | None = None) -> Tensor:
        tokens = check_token_ids("tokens", tokens, self.vocab_size)
        x = self.embedding(tokens)  # (B, L, D)
        for n, block in enumerate(self.blocks):
            state = cache.states[n] if cache is not None and n < len(cache.states) else None
            x, state = block(x, state)
            if cache is not None:
                if n < len(cache.states):
                    cache.states[n] = state
                else:
                    cache.states.append(state)
        if cache is not None:
            cache.length += tokens.shape[1]
        logits: Tensor = self.norm(x) @ self.embedding.weight.T  # (B, L, V)
        return logits
