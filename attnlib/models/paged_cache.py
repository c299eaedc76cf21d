r"""A paged key/value cache {Kwon et al. 2023}: fixed-size blocks and a block table per sequence.

A server decodes many sequences at once, each of a length it does not know in advance. A
contiguous cache reserves, per sequence, room for the longest length it might reach; what the
sequence does not use is wasted, and it cannot be lent to another. PagedAttention (vLLM) cuts
the cache into blocks of a fixed number of positions, taken from one shared pool as a sequence
grows. A sequence's **block table** lists its blocks in order: position p lives in block
``table[p // block_size]`` at slot ``p % block_size``. Only a sequence's last block can be
partly empty, so the waste is under one block per sequence.

:class:`PagedKVCache` is the pool and the tables (one layer; a model keeps one pool per layer
and shares the tables); :func:`paged_attention` lets one new query per sequence attend to its
keys and values through the table, and equals attention over the same keys and values stored
contiguously.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from attnlib._checks import (
    check_device,
    check_float_dtype,
    check_floating,
    check_instance,
    check_int,
    check_ndim,
    shape_str,
)
from attnlib.blocks.gqa import grouped_query_attention

__all__ = ["PagedKVCache", "paged_attention"]


class PagedKVCache:
    """A pool of ``num_blocks`` blocks of ``block_size`` positions, and a table per sequence.

    Args:
        num_blocks: blocks in the pool.
        block_size: positions per block.
        num_kv_heads, head_dim: H_kv and E of what is stored.
        dtype: the stored numbers.

    Shape:
        - key_blocks, value_blocks: (num_blocks, H_kv, block_size, E)

    Raises:
        ValueError: if a size is < 1. TypeError: if ``dtype`` is not a floating-point dtype.
    """

    def __init__(self, num_blocks: int, block_size: int, num_kv_heads: int, head_dim: int,
                 dtype: torch.dtype = torch.float32) -> None:
        for name, value in (("num_blocks", num_blocks), ("block_size", block_size),
                            ("num_kv_heads", num_kv_heads), ("head_dim", head_dim)):
            check_int(name, value, minimum=1)
        check_float_dtype("dtype", dtype)
        shape = (num_blocks, num_kv_heads, block_size, head_dim)
        self.key_blocks = torch.zeros(shape, dtype=dtype)
        self.value_blocks = torch.zeros(shape, dtype=dtype)
        self.block_size = block_size
        self.free: list[int] = list(range(num_blocks))
        self.tables: dict[int, list[int]] = {}
        self.lengths: dict[int, int] = {}

    def append(self, seq: int, key: Tensor, value: Tensor) -> None:
        """Store L new positions of sequence ``seq``, taking blocks from the pool as needed.

        Appending L = 0 positions changes nothing: no block is taken, and a sequence that
        holds no position yet is not added to the cache.

        Shape:
            - key, value: (H_kv, L, E)

        Raises:
            ValueError: if the shapes do not fit the pool, the tensors are on another device,
                or the pool has too few free blocks.
            TypeError: if ``seq`` is not an int >= 0, or ``key`` or ``value`` not floating.
        """
        check_int("seq", seq, minimum=0)
        _, H_kv, _, E = self.key_blocks.shape
        for name, x in (("key", key), ("value", value)):
            x = check_floating(name, x)
            check_device(name, x, self.key_blocks.device, "the cache")
            check_ndim(name, x, 3, "(H_kv, L, E)")
            if x.shape[0] != H_kv or x.shape[2] != E or x.shape != key.shape:
                raise ValueError(f"{name} must have shape (H_kv, L, E) with H_kv = {H_kv}, "
                                 f"E = {E}, and match key, got {shape_str(x.shape)}")
        if key.shape[1] == 0:  # nothing to store: no block, no new sequence
            return
        table = self.tables.get(seq, [])
        start = self.lengths.get(seq, 0)
        end = start + key.shape[1]
        needed = -(-end // self.block_size) - len(table)
        if needed > len(self.free):  # refused before anything changes
            raise ValueError(f"the pool has {len(self.free)} free blocks, sequence {seq} needs "
                             f"{needed} more: give PagedKVCache more num_blocks")
        table += [self.free.pop(0) for _ in range(needed)]
        self.tables[seq] = table
        positions = torch.arange(start, end)  # (L,)
        blocks = torch.tensor(table, dtype=torch.long)[positions // self.block_size]  # (L,)
        slots = positions % self.block_size  # (L,) slot in its block
        # (L, H_kv, E) written at [block, :, slot, :] for each position
        self.key_blocks[blocks, :, slots] = key.transpose(0, 1).to(self.key_blocks.dtype)
        self.value_blocks[blocks, :, slots] = value.transpose(0, 1).to(self.value_blocks.dtype)
        self.lengths[seq] = end

    def _check_seq(self, seq: object) -> None:
        check_int("seq", seq, minimum=0)
        if seq not in self.tables:
            raise ValueError(f"seq must be a sequence in the cache, got {seq}; it holds "
                             f"{sorted(self.tables)}")

    def release(self, seq: int) -> None:
        """Give sequence ``seq``'s blocks back to the pool.

        Raises:
            TypeError, ValueError: unless ``seq`` is a sequence in the cache.
        """
        self._check_seq(seq)
        self.free += self.tables.pop(seq, [])
        self.lengths.pop(seq, None)

    def gather(self, seq: int) -> tuple[Tensor, Tensor]:
        """Sequence ``seq``'s keys and values, contiguous: (H_kv, t, E) each.

        Raises:
            TypeError, ValueError: unless ``seq`` is a sequence in the cache.
        """
        self._check_seq(seq)
        table, t = self.tables[seq], self.lengths[seq]

        def read(pool: Tensor) -> Tensor:
            blocks = pool[table]  # (n_blocks, H_kv, block_size, E)
            return blocks.transpose(0, 1).flatten(1, 2)[:, :t]  # (H_kv, t, E)

        return read(self.key_blocks), read(self.value_blocks)

    def blocks_in_use(self) -> int:
        """Blocks some sequence holds."""
        return sum(len(table) for table in self.tables.values())


def paged_attention(query: Tensor, cache: PagedKVCache,
                    seqs: Sequence[int]) -> Tensor:
    """One new query per sequence attends to that sequence's cached keys and values.

    The keys and values are read block by block through each sequence's table (padded to the
    longest table; the slots past a sequence's length are masked), as
    :func:`~attnlib.blocks.gqa.grouped_query_attention` needs them.

    Shape:
        - query: (B, H, 1, E), row b for sequence ``seqs[b]``; output: (B, H, 1, E)
          (B = 0 with ``seqs`` empty: an empty output)

    Raises:
        ValueError: if ``query`` is not (B, H, 1, E) with one row per sequence, is on another
            device than the cache, or a sequence is not in the cache.
        TypeError: if ``query`` is not floating, ``cache`` not a :class:`PagedKVCache`, or
            ``seqs`` not a sequence of ints.
    """
    _check_paged_args(query, cache, seqs)
    if not seqs:  # no sequence: an empty batch, (0, H, 1, Ev)
        Ev = cache.value_blocks.shape[-1]
        return query.new_zeros((0, query.shape[1], 1, Ev))
    width = max(len(cache.tables[s]) for s in seqs)
    # (B, width) block ids, padded with block 0 (its slots are masked below)
    table = torch.tensor([cache.tables[s] + [0] * (width - len(cache.tables[s]))
                          for s in seqs])
    lengths = torch.tensor([cache.lengths[s] for s in seqs])  # (B,)

    def read(pool: Tensor) -> Tensor:
        blocks = pool[table]  # (B, width, H_kv, block_size, E)
        # (B, H_kv, width * block_size, E)
        return blocks.transpose(1, 2).flatten(2, 3)

    keys, values = read(cache.key_blocks), read(cache.value_blocks)
    S = keys.shape[2]
    # (B, S): True at the sequence's own positions
    mask = torch.arange(S)[None, :] < lengths[:, None]
    keys, values = keys.to(query.dtype), values.to(query.dtype)
    return grouped_query_attention(query, keys, values, mask[:, None, None, :])


def _check_paged_args(query: object, cache: PagedKVCache, seqs: Sequence[int]) -> None:
    """The argument checks of :func:`paged_attention`."""
    query = check_floating("query", query)
    check_instance("cache", cache, PagedKVCache, "a PagedKVCache")
    if isinstance(seqs, str) or not isinstance(seqs, Sequence):
        raise TypeError(f"seqs must be a sequence of the cache's sequence ids, got "
                        f"{type(seqs).__name__}")
    for i, s in enumerate(seqs):
        check_int(f"seqs[{i}]", s, minimum=0)
    check_device("query", query, cache.key_blocks.device, "the cache")
    check_ndim("query", query, 4, "(B, H, 1, E)")
    if query.shape[0] != len(seqs) or query.shape[2] != 1:
        raise ValueError(f"query must have shape (B, H, 1, E) with B = len(seqs) = {len(seqs)}, "
                         f"got {shape_str(query.shape)}")
    missing = [s for s in seqs if s not in cache.tables]
    if missing:
        raise ValueError(f"seqs must be sequences in the cache, got {missing[0]!r}, which "
                         f"holds none")
