r"""The memory wall: what generating one token reads from memory, and what it computes.

A decoder that generates reads, for every new token, every weight of the model and the whole
key/value cache of its sequence, and does two floating-point operations (a multiply and an
add) per weight and token. For a batch of B sequences at context t, per decoding step,

.. math::

    \text{FLOPs} = B \big(2 W + 4 N H E\, t\big),

    \text{bytes} = b\, W + B \cdot 2 N H_{kv} E\, t\, b,

with W the weights of the matrix products (every layer's projections and feed-forward, and
the output layer), b bytes per number, and the cache term as in
:mod:`attnlib.experiments.cache_memory` (the new token's key and value included). Their ratio,
the **arithmetic intensity**, is about 2B / b FLOPs per byte for the weights: at B = 1 and
16-bit numbers (b = 2), one FLOP per byte, far below what a processor can compute per byte it
reads (an H100 SXM GPU: about 989 dense bfloat16 TFLOP/s against 3.35 TB/s, some 300 FLOPs per
byte). With a sliding window of w positions, t is replaced by min(t, w) in both terms.
Prefilling T prompt tokens reads the weights once for all T: its intensity grows with T.
The attention term reads each sequence's cache for that sequence alone; its intensity,
:math:`2 (H / H_{kv}) / b`, does not grow with the batch, only with the group size of
grouped-query attention.

:class:`ModelShape` holds what the formulas need; :data:`PUBLISHED` lists models whose papers
give every size. :func:`decode_step_times` measures a step's time against the batch size.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial

import torch

from attnlib._checks import check_flag, check_instance, check_int, check_ints
from attnlib.blocks.efficient import median_times
from attnlib.experiments.cache_memory import kv_cache_bytes
from attnlib.models.decoder_lm import DecoderLM, DecoderLMConfig, LMCache

__all__ = [
    "PUBLISHED",
    "ModelShape",
    "StepCost",
    "decode_cost",
    "decode_step_times",
    "prefill_cost",
]


@dataclass(frozen=True)
class ModelShape:
    """The sizes of a decoder-only model that decide what a step reads and computes.

    Args:
        name: the model.
        num_layers, d_model, num_heads, num_kv_heads, head_dim: N, D, H, H_kv, E.
        d_ff: the feed-forward hidden size.
        vocab_size: V.
        gated_ffn: three feed-forward matrices (SwiGLU) instead of two.
        tied: the output layer is the token embedding.
        source: the bibliography key of the sizes.
        window: the sliding window w (each query attends to, and the cache keeps, the last w
            positions), or None.

    Raises:
        TypeError: a size that is not an int, a flag that is not a bool, or a name or source
            that is not a str. ValueError: a size (or the window) < 1, or H_kv not dividing H.
    """

    name: str
    num_layers: int
    d_model: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    d_ff: int
    vocab_size: int
    gated_ffn: bool = True
    tied: bool = False
    source: str = ""
    window: int | None = None

    def __post_init__(self) -> None:
        for name in ("name", "source"):
            check_instance(name, getattr(self, name), str, "a str")
        for name in ("num_layers", "d_model", "num_heads", "num_kv_heads", "head_dim", "d_ff",
                     "vocab_size"):
            check_int(name, getattr(self, name), minimum=1)
        check_flag("gated_ffn", self.gated_ffn)
        check_flag("tied", self.tied)
        if self.window is not None:
            check_int("window", self.window, minimum=1)
        if self.num_heads % self.num_kv_heads:
            raise ValueError(f"num_kv_heads must divide num_heads, got {self.num_kv_heads} and "
                             f"{self.num_heads}")

    @classmethod
    def from_config(cls, config: DecoderLMConfig, name: str = "this chapter's model") -> ModelShape:
        """The shape of a :class:`~attnlib.models.decoder_lm.DecoderLM` (GELU, tied, its window).

        Raises:
            TypeError: if ``config`` is not a DecoderLMConfig or ``name`` not a str.
        """
        check_instance("config", config, DecoderLMConfig, "a DecoderLMConfig")
        return cls(name, config.num_layers, config.d_model, config.num_heads,
                   config.num_kv_heads, config.head_dim, config.d_ff, config.vocab_size,
                   gated_ffn=False, tied=True, window=config.window)

    def matmul_weights(self) -> int:
        """W: the entries of every matrix a token is multiplied by (biases, norms left out)."""
        D, HE, KE = self.d_model, self.num_heads * self.head_dim, self.num_kv_heads * self.head_dim
        attention = D * HE + 2 * D * KE + HE * D  # W_Q, W_K, W_V, W_O
        feed_forward = (3 if self.gated_ffn else 2) * D * self.d_ff
        return self.num_layers * (attention + feed_forward) + self.vocab_size * D  # + output

    def parameters(self) -> int:
        """Matrix entries plus the input embedding when untied (biases, norms left out)."""
        return self.matmul_weights() + (0 if self.tied else self.vocab_size * self.d_model)


@dataclass(frozen=True)
class StepCost:
    """FLOPs and bytes read of a forward pass; ``intensity`` is FLOPs per byte."""

    flops: int
    weight_bytes: int
    cache_bytes: int

    @property
    def bytes(self) -> int:
        return self.weight_bytes + self.cache_bytes

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes


def decode_cost(shape: ModelShape, context: int, batch: int = 1,
                bytes_per_number: int = 2) -> StepCost:
    r"""One decoding step of ``batch`` sequences, each attending to ``context`` positions.

    FLOPs :math:`B (2 W + 4 N H E t)`; bytes: the W weights once, and each sequence's cache
    of t positions (:func:`~attnlib.experiments.cache_memory.kv_cache_bytes`). With the
    shape's ``window`` w, t is :math:`\min(t, w)` in both.

    Raises:
        TypeError: if ``shape`` is not a ModelShape. ValueError: if ``context`` or ``batch``
            < 1.
    """
    check_instance("shape", shape, ModelShape, "a ModelShape")
    t = check_int("context", context, minimum=1)
    B = check_int("batch", batch, minimum=1)
    # the positions attended: all t, or the window's last w
    seen = t if shape.window is None else min(t, shape.window)
    # q.k and p.v: two products of t numbers per head dimension, 2 FLOPs each
    attention = 4 * shape.num_layers * shape.num_heads * shape.head_dim * seen
    flops = B * (2 * shape.matmul_weights() + attention)
    cache = kv_cache_bytes(shape.num_layers, shape.num_kv_heads, shape.head_dim,
                           t, B, bytes_per_number, shape.window)
    return StepCost(flops, shape.matmul_weights() * bytes_per_number, cache)


def prefill_cost(shape: ModelShape, tokens: int, batch: int = 1,
                 bytes_per_number: int = 2) -> StepCost:
    r"""Reading a prompt of T ``tokens`` in one pass: the weights read once for all T.

    FLOPs :math:`B (2 W T + 4 N H E \cdot T (T + 1) / 2)` (token i attends to i positions;
    with the shape's ``window`` w, to :math:`\min(i, w)`); bytes: the weights, and the cache
    the pass writes (with a window, its last w positions).

    Raises:
        TypeError: if ``shape`` is not a ModelShape. ValueError: if ``tokens`` or ``batch``
            < 1.
    """
    check_instance("shape", shape, ModelShape, "a ModelShape")
    T = check_int("tokens", tokens, minimum=1)
    B = check_int("batch", batch, minimum=1)
    w = T if shape.window is None else min(T, shape.window)
    # token i attends to min(i, w) positions: w (w + 1) / 2 for i <= w, then w each
    attended = w * (w + 1) // 2 + (T - w) * w
    attention = 4 * shape.num_layers * shape.num_heads * shape.head_dim * attended
    flops = B * (2 * shape.matmul_weights() * T + attention)
    cache = kv_cache_bytes(shape.num_layers, shape.num_kv_heads, shape.head_dim, T, B,
                           bytes_per_number, shape.window)
    return StepCost(flops, shape.matmul_weights() * bytes_per_number, cache)


PUBLISHED: dict[str, ModelShape] = {
    # Jiang et al. 2023, Table 1 (Mistral 7B v0.1): dim 4096, n_layers 32, head_dim 128,
    # hidden_dim 14336, n_heads 32, n_kv_heads 8, window_size 4096, vocab_size 32000 (SwiGLU
    # feed-forward, as in Llama). v0.2 and v0.3 drop the window (and have a 32K context).
    "Mistral 7B": ModelShape("Mistral 7B v0.1", 32, 4096, 32, 8, 128, 14336, 32000,
                                  source="jiang2023mistral", window=4096),
    # Grattafiori et al. 2024, Table 3: layers 32 / 80 / 126, model dimension 4,096 / 8,192 /
    # 16,384, FFN dimension 14,336 / 28,672 / 53,248, attention heads 32 / 64 / 128,
    # key/value heads 8, vocabulary size 128,000, SwiGLU. The table covers Llama 3.1: a 405B
    # model was released only as Llama 3.1, and all three are named so: Llama 3 8B (April
    # 2024) has the same sizes as 3.1 8B but a context of 8,192 tokens, 3.1 one of 128K.
    "Llama 3.1 8B": ModelShape("Llama 3.1 8B", 32, 4096, 32, 8, 128, 14336, 128000,
                               source="grattafiori2024llama3"),
    "Llama 3.1 70B": ModelShape("Llama 3.1 70B", 80, 8192, 64, 8, 128, 28672, 128000,
                                source="grattafiori2024llama3"),
    "Llama 3.1 405B": ModelShape("Llama 3.1 405B", 126, 16384, 128, 8, 128, 53248, 128000,
                                 source="grattafiori2024llama3"),
}
"""Decoder shapes whose papers give every size the formulas need (see each ``source``)."""


def decode_step_times(model: DecoderLM, batch_sizes: Sequence[int], context: int = 64,
                      new_tokens: int = 1, repeats: int = 3, seed: int = 0,
                      fastest: bool = False) -> list[float]:
    """Median seconds of one cached forward pass of ``model``, per batch size, one thread
    (with ``fastest``, the fastest of the ``repeats`` instead: a slow spell on a busy machine
    only lengthens some of them).

    Each batch gets an :class:`~attnlib.models.decoder_lm.LMCache` of ``context`` positions
    filled with random keys and values (only the time matters, and a prefill of every batch
    would take longer than the steps); the pass then feeds ``new_tokens`` tokens per sequence
    (1: a decoding step; k + 1: speculative decoding's check) on a copy of that cache, so every
    repetition starts from the same state. Times depend on the machine: print them only where
    a notebook does not compare outputs.

    Raises:
        TypeError: if ``model`` is not a DecoderLM, or ``batch_sizes`` not a sequence of ints.
        ValueError: if a batch size, ``context`` or ``new_tokens`` < 1, ``seed`` < 0, or the
            pass would go past ``max_len``.
    """
    check_instance("model", model, DecoderLM, "a DecoderLM")
    check_ints("batch_sizes", batch_sizes, minimum=1)
    check_int("seed", seed, minimum=0)
    check_int("context", context, minimum=1)
    check_int("new_tokens", new_tokens, minimum=1)
    check_flag("fastest", fastest)
    if context + new_tokens > model.config.max_len:
        raise ValueError(f"context + new_tokens must be <= max_len = {model.config.max_len}, "
                         f"got {context} + {new_tokens}")
    generator = torch.Generator().manual_seed(seed)
    c = model.config
    dtype = model.embedding.weight.dtype
    model.eval()
    seconds = []
    for B in batch_sizes:
        shape = (B, c.num_kv_heads, context, c.head_dim)  # (B, H_kv, t, E) per layer

        def random() -> torch.Tensor:
            return torch.randn(shape, generator=generator, dtype=dtype)  # noqa: B023

        cache = LMCache([random() for _ in range(c.num_layers)],
                        [random() for _ in range(c.num_layers)], length=context)
        token = torch.randint(0, c.vocab_size, (B, new_tokens), generator=generator)
        low, median, _ = median_times(partial(_step, model, token, cache), repeats=repeats,
                                      clock="thread", num_threads=1, spread=True)[0]
        seconds.append(low if fastest else median)
    return seconds


@torch.no_grad()
def _step(model: DecoderLM, tokens: torch.Tensor, cache: LMCache) -> None:
    """One forward pass on a shallow copy of ``cache`` (the model appends to the copy)."""
    step_cache = copy.copy(cache)
    step_cache.keys, step_cache.values = list(cache.keys), list(cache.values)
    model(tokens, step_cache)
