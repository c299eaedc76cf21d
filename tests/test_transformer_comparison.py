"""attnlib.train.comparison: matched parameter counts and training throughput."""

from __future__ import annotations

from typing import NamedTuple

import pytest
from torch import nn

from attnlib.models.seq2seq import Seq2Seq, Seq2SeqConfig
from attnlib.models.transformer import Transformer, TransformerConfig
from attnlib.train.comparison import (
    closest_width,
    count_parameters,
    tokens_per_second,
    training_tokens,
)


class Pair(NamedTuple):
    src: tuple[str, ...]
    tgt: tuple[str, ...]


def test_count_parameters_counts_a_shared_matrix_once() -> None:
    tied = Transformer(TransformerConfig(20, 20, d_model=8, num_heads=2, num_encoder_layers=1,
                                         num_decoder_layers=1, d_ff=16))
    untied = Transformer(TransformerConfig(20, 20, d_model=8, num_heads=2, num_encoder_layers=1,
                                           num_decoder_layers=1, d_ff=16, tie_embeddings=False))
    assert count_parameters(tied) == tied.config.parameter_count()
    assert count_parameters(untied) - count_parameters(tied) == 20 * 8  # the output projection
    frozen = nn.Linear(3, 2)
    frozen.bias.requires_grad_(False)
    assert count_parameters(frozen) == 6
    with pytest.raises(TypeError, match=r"model must be an nn\.Module, got int"):
        count_parameters(3)  # type: ignore[arg-type]


def gru(width: int) -> nn.Module:
    return Seq2Seq(Seq2SeqConfig(50, 60, embed_dim=16, hidden_size=width, attention_size=width))


def test_closest_width_matches_a_transformer_and_allocates_nothing() -> None:
    target = TransformerConfig(50, 60, d_model=16, num_heads=2, num_encoder_layers=2,
                               num_decoder_layers=2, d_ff=32).parameter_count()
    widths = range(4, 65, 4)
    width, count = closest_width(gru, target, widths)
    # Brute force on real (CPU) models gives the same choice.
    counts = {w: count_parameters(gru(w)) for w in widths}
    assert counts[width] == count
    assert abs(count - target) == min(abs(c - target) for c in counts.values())
    assert width not in (4, 64)  # an interior choice: the range brackets the target


def test_closest_width_breaks_ties_towards_the_smaller_width() -> None:
    def linear(width: int) -> nn.Module:
        return nn.Linear(width, 1, bias=False)  # width parameters

    assert closest_width(linear, 5, [7, 3]) == (3, 3)
    assert closest_width(linear, 5, [6]) == (6, 6)


def test_closest_width_bad_input() -> None:
    with pytest.raises(ValueError, match="widths is empty"):
        closest_width(gru, 100, [])
    with pytest.raises(ValueError, match="target must be >= 1, got 0"):
        closest_width(gru, 0, [4])


def test_training_tokens_and_tokens_per_second() -> None:
    pairs = [Pair(("a",), ("x", "y")), Pair(("b", "c"), ("z",))]
    assert training_tokens(pairs) == 5  # 3 words + 2 <eos>
    assert tokens_per_second(pairs, 4, 2.0) == pytest.approx(10.0)
    with pytest.raises(ValueError, match="pairs is empty"):
        training_tokens([])
    with pytest.raises(ValueError, match="epochs must be >= 1, got 0"):
        tokens_per_second(pairs, 0, 1.0)
    with pytest.raises(ValueError, match="seconds"):
        tokens_per_second(pairs, 1, 0.0)
    with pytest.raises(ValueError, match="seconds"):
        tokens_per_second(pairs, 1, float("inf"))


def test_reference_bleu_equals_multi_reference_bleu_overall_and_by_length() -> None:
    from attnlib import data
    from attnlib.train import metrics
    from attnlib.train.comparison import ReferenceBLEU

    corpus = data.make_corpus(seed=0, n_pairs=600)
    test = list(corpus.test)
    refs = [p.references for p in test]
    lengths = [len(p.src) for p in test]
    # hypotheses of every quality: right, cut short, a word dropped, repeated, empty-ish
    hyps: list[tuple[str, ...]] = []
    for i, p in enumerate(test):
        kind = i % 5
        hyps.append(p.tgt if kind == 0 else p.tgt[: len(p.tgt) // 2] if kind == 1 else
                    p.tgt[1:] if kind == 2 else p.tgt + p.tgt[:3] if kind == 3 else ("the",))
    scorer = ReferenceBLEU(refs)
    assert len(scorer) == len(test)
    assert scorer.bleu(hyps) == metrics.multi_reference_bleu(hyps, refs)
    bins = [3, 8, 14]
    assert scorer.bleu_by_length(hyps, lengths, bins) == metrics.bleu_by_length(
        hyps, refs, lengths, bins)
    perfect = [p.tgt for p in test]
    assert scorer.bleu(perfect) == pytest.approx(100.0)  # reusable: a second system
    with pytest.raises(ValueError, match=r"one sentence per reference set \(\d+\), got 1"):
        scorer.bleu(hyps[:1])
    with pytest.raises(ValueError, match=r"lengths must have one entry per hypothesis"):
        scorer.bleu_by_length(hyps, lengths[:-1], bins)
    with pytest.raises(ValueError, match=r"bins must be a non-empty, strictly increasing"):
        scorer.bleu_by_length(hyps, lengths, [5, 3])
    with pytest.raises(ValueError, match=r"reference_sets is empty"):
        ReferenceBLEU([])
    with pytest.raises(ValueError, match=r"reference_sets\[1\] must be a non-empty sequence"):
        ReferenceBLEU([["a b"], []])
