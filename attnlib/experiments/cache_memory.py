r"""How much memory the key/value cache of a decoder takes, by formula, for real models.

A decoder that generates keeps, for every layer, the key and the value of every position it
has seen, one vector of size E per key/value head. For a batch of B sequences of t tokens:

.. math::

    \begin{aligned}
    \text{bytes} = {} & 2 \cdot N_{layers} \cdot H_{kv} \cdot E \cdot \min(t, w) \cdot B \\
                      & \cdot \text{bytes per number}
    \end{aligned}

(the 2 for keys and values; w the sliding window, :math:`w = \infty` without one). The query
heads do not appear: grouped-query attention divides the cache by :math:`H / H_{kv}`, and a
window caps it at w positions whatever the length.

:data:`PUBLISHED` lists the attention shapes of a few open models as their papers state them.
:func:`allocation_waste` measures what a batch of sequences of mixed lengths leaves unused in
a contiguous cache, reserved at the longest length, and in a paged one
(:mod:`attnlib.models.paged_cache`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attnlib._checks import check_flag, check_instance, check_int, check_ints
from attnlib.models.paged_cache import PagedKVCache

__all__ = ["PUBLISHED", "Allocation", "AttentionShape", "allocation_waste", "kv_cache_bytes"]


def kv_cache_bytes(
    num_layers: int,
    num_kv_heads: int,
    head_dim: int,
    tokens: int,
    batch: int = 1,
    bytes_per_number: int = 2,
    window: int | None = None,
) -> int:
    r"""Bytes of a key/value cache: :math:`2 N H_{kv} E \min(t, w) B b`.

    ``bytes_per_number`` is 2 for float16/bfloat16, 1 for an 8-bit (FP8) cache, 4 for
    float32, 8 for float64.

    Raises:
        TypeError: if an argument is not an int.
        ValueError: if a size is < 1 (``tokens`` < 0).
    """
    _check_cache_sizes(num_layers, num_kv_heads, head_dim, tokens, batch,
                       bytes_per_number, window)
    kept = tokens if window is None else min(tokens, window)  # positions cached
    per_position = 2 * num_layers * num_kv_heads * head_dim  # a key and a value
    return per_position * kept * batch * bytes_per_number


def _check_cache_sizes(num_layers: int, num_kv_heads: int, head_dim: int, tokens: int,
                       batch: int, bytes_per_number: int, window: int | None) -> None:
    """The argument checks of :func:`kv_cache_bytes`."""
    for name, value in (("num_layers", num_layers), ("num_kv_heads", num_kv_heads),
                        ("head_dim", head_dim), ("batch", batch),
                        ("bytes_per_number", bytes_per_number)):
        check_int(name, value, minimum=1)
    check_int("tokens", tokens, minimum=0)
    if window is not None:
        check_int("window", window, minimum=1)


@dataclass(frozen=True)
class AttentionShape:
    """The attention sizes of a model that decide its cache.

    Args:
        name: the model.
        num_layers: N (decoder layers).
        num_heads: H, query heads.
        num_kv_heads: H_kv, key/value heads.
        head_dim: E.
        context: the context length the model was trained for.
        window: the sliding window, or None.
        source: where the numbers come from (a bibliography key).
    """

    name: str
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    context: int
    window: int | None = None
    source: str = ""

    def __post_init__(self) -> None:
        check_instance("name", self.name, str, "a str")
        check_instance("source", self.source, str, "a str")
        for name in ("num_layers", "num_heads", "num_kv_heads", "head_dim", "context"):
            check_int(name, getattr(self, name), minimum=1)
        if self.window is not None:
            check_int("window", self.window, minimum=1)

    def cache_bytes(self, tokens: int | None = None, batch: int = 1,
                    bytes_per_number: int = 2, window: bool = True) -> int:
        """:func:`kv_cache_bytes` for this model; ``tokens`` defaults to its context."""
        check_flag("window", window)
        return kv_cache_bytes(self.num_layers, self.num_kv_heads, self.head_dim,
                              self.context if tokens is None else tokens, batch,
                              bytes_per_number, self.window if window else None)


PUBLISHED: dict[str, AttentionShape] = {
    # Vaswani et al. 2017, Table 3, base model: N = 6, h = 8, d_k = d_v = 64. The paper sets no
    # context length; 512 is a length chosen here. Decoder self-attention only (the
    # cross-attention keys and values of the source come on top).
    "Transformer base (2017)": AttentionShape("Transformer base (2017)", 6, 8, 8, 64, 512,
                                              source="vaswani2017"),
    # Touvron et al. 2023 (Llama 2), Table 1 and Section 2.2: 4k context, GQA for 34B/70B only.
    "Llama 2 7B": AttentionShape("Llama 2 7B", 32, 32, 32, 128, 4096, source="touvron2023llama2"),
    "Llama 2 70B": AttentionShape("Llama 2 70B", 80, 64, 8, 128, 4096,
                                  source="touvron2023llama2"),
    # Jiang et al. 2023 (Mistral 7B, the v0.1 release), Table 1: 32 layers, 32 heads, 8 kv
    # heads, head_dim 128, window 4096, context 8192. v0.2 and v0.3 have no window and a 32K
    # context (rope_theta 1e6).
    "Mistral 7B": AttentionShape("Mistral 7B v0.1", 32, 32, 8, 128, 8192, window=4096,
                                      source="jiang2023mistral"),
    # Llama 3 8B as released in April 2024 (Meta's announcement: a context of 8,192 tokens);
    # its shape, Grattafiori et al. 2024, Table 3: 32 layers, 32 heads, 8 key/value heads,
    # model dimension 4096 (E = 128).
    "Llama 3 8B": AttentionShape("Llama 3 8B (April 2024, 8K)", 32, 32, 8,
                                                  128, 8192, source="meta2024llama3"),
    # Llama 3.1 8B (July 2024), the model of Grattafiori et al. 2024: the same shape,
    # pre-trained further to a context of 128K = 131,072 tokens (Section 3.4.2; config.json:
    # max_position_embeddings 131072).
    "Llama 3.1 8B": AttentionShape("Llama 3.1 8B", 32, 32, 8, 128, 131072,
                                   source="grattafiori2024llama3"),
    # Llama 3.1 70B: Grattafiori et al. 2024, Table 3 (80 layers, 64 heads, 8 key/value
    # heads, model dimension 8192, E = 128), at the same 128K context.
    "Llama 3.1 70B": AttentionShape("Llama 3.1 70B", 80, 64, 8, 128, 131072,
                                    source="grattafiori2024llama3"),
}
"""Attention shapes of published models, from their papers (see each entry's ``source``)."""


@dataclass(frozen=True)
class Allocation:
    """Cache positions a batch uses, and those a contiguous and a paged cache hold for it.

    Raises:
        TypeError: a count that is not an int. ValueError: ``used`` < 0, or a cache holding
            fewer positions than are used (or none).
    """

    used: int
    contiguous: int
    paged: int

    def __post_init__(self) -> None:
        check_int("used", self.used, minimum=0)
        check_int("contiguous", self.contiguous, minimum=max(1, self.used))
        check_int("paged", self.paged, minimum=max(1, self.used))

    def waste(self, held: int) -> float:
        """The share of ``held`` positions that hold nothing.

        Raises:
            TypeError: if ``held`` is not an int. ValueError: if it is below the positions
                used (or 0).
        """
        check_int("held", held, minimum=max(1, self.used))
        return 1 - self.used / held


def allocation_waste(lengths: Sequence[int], max_len: int, block_size: int = 16,
                     num_kv_heads: int = 1, head_dim: int = 1) -> Allocation:
    """Store one layer's keys for sequences of ``lengths`` both ways and count the positions.

    Contiguous: one (B, H_kv, max_len, E) tensor, every sequence reserving ``max_len``, as a
    server must that does not know how long a sequence will grow. Paged: a
    :class:`~attnlib.models.paged_cache.PagedKVCache` of ``block_size`` positions a block,
    each sequence appended and holding whole blocks. The positions come from the tensors'
    sizes.

    Raises:
        TypeError: if ``lengths`` is not a sequence of ints or a size not an int.
        ValueError: if ``lengths`` is empty, a length is < 1 or > ``max_len``, or a size < 1.
    """
    check_ints("lengths", lengths, minimum=1)
    if not lengths:
        raise ValueError("lengths must hold at least one sequence length, got none")
    check_int("max_len", max_len, minimum=1)
    for name, v in (("block_size", block_size), ("num_kv_heads", num_kv_heads),
                    ("head_dim", head_dim)):
        check_int(name, v, minimum=1)
    for i, n in enumerate(lengths):
        if n > max_len:
            raise ValueError(f"lengths[{i}] must be <= max_len = {max_len}, got {n}")
    contiguous = torch.zeros(len(lengths), num_kv_heads, max_len, head_dim)
    blocks = sum(-(-n // block_size) for n in lengths)
    paged = PagedKVCache(blocks, block_size, num_kv_heads, head_dim)
    for seq, n in enumerate(lengths):
        keys = torch.randn(num_kv_heads, n, head_dim)
        contiguous[seq, :, :n] = keys
        paged.append(seq, keys, keys)
    per_position = num_kv_heads * head_dim
    held_paged = paged.blocks_in_use() * block_size
    return Allocation(sum(lengths), contiguous.numel() // per_position, held_paged)
