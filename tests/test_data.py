"""Tests for attnlib.data's vocabularies, batching and synthetic tasks (the grammar and the
corpus are tested in test_data_grammar.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib.data import (
    BOS_ID,
    EOS_ID,
    NOTE_EXAMPLE,
    PAD_ID,
    UNK_ID,
    Corpus,
    Vocab,
    batches,
    copy_task,
    make_corpus,
    pad_batch,
    realize,
    reverse_task,
)


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return make_corpus(seed=0, n_pairs=1500)


# ---------------------------------------------------------------------------------------------
# Vocabularies
# ---------------------------------------------------------------------------------------------


def test_vocab_specials_order_and_unknowns() -> None:
    vocab = Vocab.build([["b", "a"], ["c", "a"]])
    assert vocab.itos == ("<pad>", "<bos>", "<eos>", "<unk>", "a", "b", "c")
    assert (PAD_ID, BOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3)
    assert len(vocab) == 7
    assert vocab["a"] == 4 and vocab["zzz"] == UNK_ID
    assert "a" in vocab and "zzz" not in vocab
    assert vocab.encode(["c", "zzz", "a"]) == [6, UNK_ID, 4]
    assert vocab.decode([BOS_ID, 6, UNK_ID, 4, EOS_ID, 5, PAD_ID]) == ["c", "<unk>", "a"]
    assert vocab.decode(torch.tensor([6, 4, PAD_ID])) == ["c", "a"]
    assert vocab.decode([BOS_ID, 4, EOS_ID], strip_special=False) == ["<bos>", "a", "<eos>"]


def test_vocab_errors() -> None:
    with pytest.raises(ValueError, match="special tokens"):
        Vocab.build([["a", "<eos>"]])
    with pytest.raises(ValueError, match="id 9 is outside the vocabulary"):
        Vocab.build([["a"]]).decode([9])
    with pytest.raises(ValueError, match="itos must start with"):
        Vocab(("a", "b"))


# ---------------------------------------------------------------------------------------------
# Batching
# ---------------------------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.integers(1, 50), min_size=1, max_size=8), min_size=1, max_size=6))
def test_pad_batch(sequences: list[list[int]]) -> None:
    padded, lengths = pad_batch(sequences, pad_id=0)
    assert padded.dtype == lengths.dtype == torch.long
    assert padded.shape == (len(sequences), max(map(len, sequences)))
    assert lengths.tolist() == [len(s) for s in sequences]
    for row, seq in zip(padded.tolist(), sequences, strict=True):
        assert row[: len(seq)] == seq
        assert set(row[len(seq):]) <= {0}


def test_pad_batch_errors() -> None:
    with pytest.raises(ValueError, match="sequences is empty"):
        pad_batch([])
    with pytest.raises(ValueError, match=r"sequences\[1\] is empty"):
        pad_batch([[1], []])


def test_batches_shapes_shift_and_padding(corpus: Corpus) -> None:
    src_vocab, tgt_vocab = corpus.src_vocab, corpus.tgt_vocab
    data = corpus.train[:70]
    got = list(batches(data, src_vocab, tgt_vocab, batch_size=32))
    assert [b.src.shape[0] for b in got] == [32, 32, 6]
    rows = [p for b in got for p in b.pairs]
    assert rows == list(data)
    for b in got:
        assert b.tgt_in.shape == b.tgt_out.shape
        assert b.src.shape[1] == int(b.src_lengths.max())
        assert b.tgt_in.shape[1] == int(b.tgt_lengths.max())
        for row, pair in enumerate(b.pairs):
            n_src, n_tgt = len(pair.src), len(pair.tgt) + 1
            assert b.src_lengths[row] == n_src and b.tgt_lengths[row] == n_tgt
            assert src_vocab.decode(b.src[row]) == list(pair.src)
            assert b.tgt_in[row, 0] == BOS_ID
            assert b.tgt_out[row, n_tgt - 1] == EOS_ID
            assert tgt_vocab.decode(b.tgt_out[row]) == list(pair.tgt)
            assert torch.equal(b.tgt_in[row, 1:n_tgt], b.tgt_out[row, : n_tgt - 1])
            assert bool((b.src[row, n_src:] == PAD_ID).all())
            assert bool((b.tgt_in[row, n_tgt:] == PAD_ID).all())
            assert bool((b.tgt_out[row, n_tgt:] == PAD_ID).all())


def test_batches_shuffle_is_seeded(corpus: Corpus) -> None:
    def order(seed: int) -> list[tuple[str, ...]]:
        got = batches(corpus.train[:200], corpus.src_vocab, corpus.tgt_vocab, 16, True, seed)
        return [tuple(p.src) for b in got for p in b.pairs]

    assert order(0) == order(0)
    assert order(0) != order(1)
    assert sorted(order(0)) == sorted(p.src for p in corpus.train[:200])


def test_batches_map_unknown_words_to_unk(corpus: Corpus) -> None:
    pair = realize(NOTE_EXAMPLE)
    vocab = Vocab.build([["我", "爱"]])
    b = next(batches([pair], vocab, corpus.tgt_vocab, 1))
    assert b.src[0].tolist() == [vocab["我"], vocab["爱"], UNK_ID]


@dataclass(frozen=True)
class RawPair:
    src: tuple[str, ...]
    tgt: tuple[str, ...]


def test_batches_errors(corpus: Corpus) -> None:
    v_src, v_tgt = corpus.src_vocab, corpus.tgt_vocab
    ok = RawPair(("我", "爱", "音乐"), ("i", "love", "music"))
    with pytest.raises(ValueError, match="pairs is empty"):
        next(batches([], v_src, v_tgt, 4))
    with pytest.raises(ValueError, match="batch_size must be >= 1, got 0"):
        next(batches([ok], v_src, v_tgt, 0))
    with pytest.raises(ValueError, match=r"pairs\[1\].src is an empty sentence"):
        next(batches([ok, RawPair((), ("i",))], v_src, v_tgt, 4))
    with pytest.raises(ValueError, match=r"pairs\[0\].tgt is an empty sentence"):
        next(batches([RawPair(("我",), ())], v_src, v_tgt, 4))
    with pytest.raises(ValueError, match=r"pairs\[0\].src has length 3, longer than max_len=2"):
        next(batches([ok], v_src, v_tgt, 4, max_len=2))
    with pytest.raises(ValueError, match=r"tgt has length 3 \+ 1 for <bos>/<eos>, longer than "
                                         r"max_len=3"):
        next(batches([ok], v_src, v_tgt, 4, max_len=3))
    assert next(batches([ok], v_src, v_tgt, 4, max_len=4)).tgt_in.shape == (1, 4)


# ---------------------------------------------------------------------------------------------
# Sanity tasks
# ---------------------------------------------------------------------------------------------


def test_copy_task() -> None:
    src, tgt = copy_task(64, length=10, num_symbols=10, seed=0)
    assert src.shape == tgt.shape == (64, 10) and src.dtype == torch.long
    assert torch.equal(src, tgt)
    assert int(src.min()) == 1 and int(src.max()) == 10
    assert torch.equal(copy_task(64, seed=0)[0], src)
    assert not torch.equal(copy_task(64, seed=1)[0], src)


def test_reverse_task() -> None:
    src, tgt = reverse_task(32, length=7, num_symbols=5, seed=3)
    assert src.shape == tgt.shape == (32, 7)
    for row in range(32):
        assert tgt[row].tolist() == src[row].tolist()[::-1]
    assert 1 <= int(src.min()) and int(src.max()) <= 5
    assert torch.equal(reverse_task(32, length=7, num_symbols=5, seed=3)[1], tgt)


def test_sanity_task_errors() -> None:
    with pytest.raises(ValueError, match="length must be >= 1, got 0"):
        copy_task(4, length=0)
    with pytest.raises(ValueError, match="num_symbols must be >= 1, got 0"):
        reverse_task(4, num_symbols=0)


def test_batches_by_length_bucket_similar_lengths(corpus: Corpus) -> None:
    pairs = corpus.train[:400]
    plain = list(batches(pairs, corpus.src_vocab, corpus.tgt_vocab, 32, True, 5))
    bucketed = list(batches(pairs, corpus.src_vocab, corpus.tgt_vocab, 32, True, 5,
                            by_length=True))
    assert sorted(p.src for b in bucketed for p in b.pairs) == sorted(p.src for p in pairs)

    def padding(got: list) -> int:  # padded source positions over all batches
        return sum(int(b.src.numel() - b.src_lengths.sum()) for b in got)

    assert padding(bucketed) < padding(plain) / 4
    def spread(got: list) -> float:  # the mean range of source lengths within a batch
        return sum(int(b.src_lengths.max() - b.src_lengths.min()) for b in got) / len(got)

    assert spread(bucketed) < 4 < 20 < spread(plain)
    again = list(batches(pairs, corpus.src_vocab, corpus.tgt_vocab, 32, True, 5, by_length=True))
    assert [b.pairs for b in again] == [b.pairs for b in bucketed]
    other = list(batches(pairs, corpus.src_vocab, corpus.tgt_vocab, 32, True, 6, by_length=True))
    assert [b.pairs for b in other] != [b.pairs for b in bucketed]
    ordered = list(batches(pairs, corpus.src_vocab, corpus.tgt_vocab, 32, by_length=True))
    firsts = [int(b.src_lengths.max()) for b in ordered]
    assert firsts == sorted(firsts)
