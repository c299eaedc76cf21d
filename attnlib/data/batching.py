"""Batching: padding id sequences, and padded teacher-forcing batches, optionally by length."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import Tensor

from attnlib._checks import check_flag, check_instance, check_int
from attnlib.data.vocab import BOS_ID, EOS_ID, PAD_ID, Vocab

__all__ = ["Batch", "TokenPair", "batches", "pad_batch"]


class TokenPair(Protocol):
    """Anything with a source and a target token sequence, such as a :class:`Pair`."""

    @property
    def src(self) -> Sequence[str]: ...

    @property
    def tgt(self) -> Sequence[str]: ...


def _check_int(name: str, value: int, low: int) -> None:
    """Raise unless ``value`` is an int (not a bool) >= ``low`` that fits in int64
    (:func:`~attnlib._checks.check_int`)."""
    check_int(name, value, minimum=low)


def pad_batch(sequences: Sequence[Sequence[int]], pad_id: int = PAD_ID) -> tuple[Tensor, Tensor]:
    """Stack id sequences of different lengths into one padded tensor.

    Shape:
        Returns ``(padded, lengths)``: ``padded`` is (B, S) long, with ``pad_id`` after each
        sequence's end, S the longest length; ``lengths`` is (B,) long.

    Raises:
        ValueError: if ``sequences`` is empty or one of them is empty.
    """
    _check_int("pad_id", pad_id, low=0)
    if isinstance(sequences, str) or not isinstance(sequences, Sequence):
        raise TypeError(f"sequences must be a sequence of id sequences, got "
                        f"{type(sequences).__name__}")
    if len(sequences) == 0:
        raise ValueError("sequences is empty: pad_batch needs at least one sequence")
    for i, seq in enumerate(sequences):
        if isinstance(seq, str) or not isinstance(seq, Sequence):
            raise TypeError(f"sequences[{i}] must be a sequence of int ids, got "
                            f"{type(seq).__name__}")
        if len(seq) == 0:
            raise ValueError(f"sequences[{i}] is empty: every sequence needs at least one id")
        for j, token in enumerate(seq):
            if isinstance(token, bool) or not isinstance(token, int):
                raise TypeError(f"sequences[{i}][{j}] must be an int id, got "
                                f"{type(token).__name__} {token!r}")
    lengths = torch.tensor([len(seq) for seq in sequences], dtype=torch.long)  # (B,)
    padded = torch.full((len(sequences), int(lengths.max())), pad_id, dtype=torch.long)  # (B, S)
    for i, seq in enumerate(sequences):
        padded[i, : len(seq)] = torch.as_tensor(list(seq), dtype=torch.long)
    return padded, lengths


@dataclass(frozen=True, eq=False)
class Batch:
    """One batch for teacher-forced training of an encoder-decoder.

    Shape:
        src: (B, S) source ids, padded with ``<pad>``; src_lengths: (B,).
        tgt_in: (B, L) ``<bos> y_1 ... y_n``, the decoder's input (the targets shifted right).
        tgt_out: (B, L) ``y_1 ... y_n <eos>``, what the decoder must predict at each step.
        tgt_lengths: (B,) n + 1, the unpadded length of both ``tgt_in`` and ``tgt_out``.
        pairs: the B pairs the batch was made from, in row order (for decoding and BLEU).
    """

    src: Tensor
    src_lengths: Tensor
    tgt_in: Tensor
    tgt_out: Tensor
    tgt_lengths: Tensor
    pairs: tuple[TokenPair, ...]


def batches(
    pairs: Sequence[TokenPair],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    batch_size: int,
    shuffle: bool = False,
    seed: int = 0,
    max_len: int | None = None,
    by_length: bool = False,
) -> Iterator[Batch]:
    """Yield padded :class:`Batch` es of ``batch_size`` pairs (the last one may be smaller).

    With ``shuffle``, the order is a permutation drawn from ``random.Random(seed)``: pass the
    epoch number as ``seed`` for a new, reproducible order every epoch. ``max_len`` bounds every
    tensor's sequence length: the source length and the target length + 1 (for ``<bos>`` /
    ``<eos>``). All pairs are checked before the first batch is yielded.

    With ``by_length`` (bucketing), each batch holds pairs of similar source length, so little
    of it is padding: the pairs (shuffled first if ``shuffle``) are sorted by source length, cut
    into batches, and the batches are visited in an order shuffled with the same seed (in order
    of length without ``shuffle``). A recurrent model then runs few steps on short batches.

    Raises:
        ValueError: if ``pairs`` is empty, ``batch_size`` < 1, a source or target is empty, or a
            sentence is longer than ``max_len``.
    """
    _check_int("batch_size", batch_size, low=1)
    if max_len is not None:
        _check_int("max_len", max_len, low=2)
    check_instance("src_vocab", src_vocab, Vocab, "a Vocab")
    check_instance("tgt_vocab", tgt_vocab, Vocab, "a Vocab")
    check_flag("shuffle", shuffle)
    check_flag("by_length", by_length)
    _check_int("seed", seed, low=0)
    if isinstance(pairs, str) or not isinstance(pairs, Sequence):
        raise TypeError(f"pairs must be a sequence of pairs (src, tgt), got "
                        f"{type(pairs).__name__}")
    if len(pairs) == 0:
        raise ValueError("pairs is empty: batches needs at least one pair")
    for i, pair in enumerate(pairs):
        for side, tokens, extra in (("src", pair.src, 0), ("tgt", pair.tgt, 1)):
            if len(tokens) == 0:
                raise ValueError(f"pairs[{i}].{side} is an empty sentence; every sentence "
                                 f"needs at least one token")
            if max_len is not None and len(tokens) + extra > max_len:
                plus = " + 1 for <bos>/<eos>" if extra else ""
                raise ValueError(
                    f"pairs[{i}].{side} has length {len(tokens)}{plus}, longer than "
                    f"max_len={max_len}: {' '.join(tokens)!r}"
                )
    rng = random.Random(seed)
    order = list(range(len(pairs)))
    if shuffle:
        rng.shuffle(order)
    if by_length:
        order.sort(key=lambda i: len(pairs[i].src))  # stable: ties keep the shuffled order
    starts = list(range(0, len(order), batch_size))
    if by_length and shuffle:
        rng.shuffle(starts)
    for start in starts:
        chunk = tuple(pairs[i] for i in order[start : start + batch_size])
        src, src_lengths = pad_batch([src_vocab.encode(p.src) for p in chunk])  # (B, S)
        ys = [tgt_vocab.encode(p.tgt) for p in chunk]
        tgt_in, tgt_lengths = pad_batch([[BOS_ID, *y] for y in ys])  # (B, L)
        tgt_out, _ = pad_batch([[*y, EOS_ID] for y in ys])  # (B, L)
        yield Batch(src, src_lengths, tgt_in, tgt_out, tgt_lengths, chunk)
