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

from attnlib._checks import (
    check_float_dtype,
    check_input,
    check_instance,
    check_int,
    check_token_ids,
    shape_str,
)
from attnlib.models.transformer.layers import FeedForward

__all__ = ["MixerBlock", "MixerCache", "MixerLM", "state_nbytes"]


def state_nbytes(state: object) -> int:
    """Bytes of every tensor inside a layer's state (tuples, lists and dataclasses walked).

    None and int counters (a cache's ``seen``) hold no tensor and count 0.

    Raises:
        TypeError: if the state holds anything else (a string, a module, a float).
    """
    if isinstance(state, Tensor):
        return state.numel() * state.element_size()
    if isinstance(state, tuple | list):
        return sum(state_nbytes(s) for s in state)
    if is_dataclass(state) and not isinstance(state, type):
        return sum(state_nbytes(getattr(state, f.name)) for f in fields(state))
    if state is None or (isinstance(state, int) and not isinstance(state, bool)):
        return 0
    raise TypeError(f"state must hold tensors (in tuples, lists or dataclasses), None or int "
                    f"counters, got {type(state).__name__}")


@dataclass
class MixerCache:
    """Each layer's state after the tokens read so far."""

    states: list[Any] = field(default_factory=list)
    length: int = 0

    def __post_init__(self) -> None:
        check_instance("states", self.states, list, "a list of the layers' states")
        check_int("length", self.length, minimum=0)

    def nbytes(self) -> int:
        """Bytes held by the tensors of every layer's state."""
        return sum(state_nbytes(s) for s in self.states)


class MixerBlock(nn.Module):
    r"""Pre-LN block: :math:`z = x + \mathrm{Mix}(\mathrm{LN}_1 x)`, :math:`y = z + \mathrm{FFN}(\mathrm{LN}_2 z)`.

    Shape:
        - x: (B, L, D); output: (B, L, D), and the mixer's new state

    Raises:
        TypeError: if ``mixer`` is not a module with an ``embed_dim``; in ``forward``, ``x``
            not a tensor of the parameters' dtype. ValueError: ``x`` not (B, L, D).
    """

    def __init__(self, mixer: nn.Module, d_ff: int, *, dtype: torch.dtype | None = None
                 ) -> None:
        super().__init__()
        check_float_dtype("dtype", dtype, optional=True)
        check_instance("mixer", mixer, nn.Module, "a token mixer (an nn.Module)")
        D = getattr(mixer, "embed_dim", 0)
        check_int("mixer.embed_dim", D, minimum=1)
        self.mixer = mixer
        self.feed_forward = FeedForward(D, d_ff, activation="gelu", dtype=dtype)
        self.norm1 = nn.LayerNorm(D, dtype=dtype)
        self.norm2 = nn.LayerNorm(D, dtype=dtype)

    def forward(self, x: Tensor, state: Any = None) -> tuple[Tensor, Any]:
        x = check_input("x", x, self.norm1.weight, 3, "(B, L, D)")
        if x.shape[-1] != self.norm1.weight.shape[0]:
            raise ValueError(f"x must have shape (B, L, D) with D = {self.norm1.weight.shape[0]}, "
                             f"the mixer's embed_dim, got shape {shape_str(x.shape)}")
        mixed, state = self.mixer(self.norm1(x), state)
        x = x + mixed
        return x + self.feed_forward(self.norm2(x)), state  # (B, L, D)


class MixerLM(nn.Module):
    """Embedding, one :class:`MixerBlock` per mixer, a final LayerNorm, the tied output.

    Shape:
        - tokens: (B, L) ids in [0, V); output: logits (B, L, V)

    Raises:
        ValueError: if ``mixers`` is empty or their sizes differ; in ``forward``, if
            ``tokens`` is not (B, L) with ids in [0, V) on the model's device, or ``cache``
            does not hold a state of each layer for a batch of ``tokens``' size.
        TypeError: if ``mixers`` is not a sequence of modules; in ``forward``, if ``cache`` is
            not a :class:`MixerCache`.
    """

    def __init__(self, vocab_size: int, mixers: Sequence[nn.Module], *, d_ff: int,
                 dtype: torch.dtype | None = None) -> None:
        super().__init__()
        check_float_dtype("dtype", dtype, optional=True)
        check_int("vocab_size", vocab_size, minimum=1)
        if not isinstance(mixers, Sequence) or isinstance(mixers, str):
            raise TypeError(f"mixers must be a sequence of token mixers (modules), got "
                            f"{type(mixers).__name__}")
        for i, m in enumerate(mixers):
            check_instance(f"mixers[{i}]", m, nn.Module, "a token mixer (an nn.Module)")
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
        tokens = check_token_ids("tokens", tokens, self.vocab_size,
                                 device=self.embedding.weight.device)
        x = self.embedding(tokens)  # (B, L, D)
        if cache is not None:
            self._check_cache(cache, x)
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

    def _check_cache(self, cache: object, x: Tensor) -> None:
        """Every state in ``cache`` one its layer could have returned for ``x``'s batch."""
        check_instance("cache", cache, MixerCache, "a MixerCache or None")
        assert isinstance(cache, MixerCache)
        if cache.states and len(cache.states) != len(self.blocks):
            raise ValueError(f"cache holds {len(cache.states)} layer states, this model has "
                             f"{len(self.blocks)} layers")
        for n, (block, state) in enumerate(zip(self.blocks, cache.states, strict=False)):
            check = getattr(block.mixer, "_check_state", None)
            if check is None or state is None:
                continue
            try:
                check(state, x)
            except (TypeError, ValueError) as error:
                raise type(error)(f"cache.states[{n}] is not a state of layer {n} for tokens "
                                  f"of batch size {x.shape[0]}: {error}") from None
