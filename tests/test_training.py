"""Tests for attnlib.train: progress bars, the teacher-forcing loop, translation and scores.

BLEU is sacrebleu's; the tests check that :func:`bleu` passes sentences to it correctly, against
a value worked out by hand from BLEU's definition (clipped n-gram precisions, brevity penalty).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
import sacrebleu
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlib.book.progress import progress
from attnlib.data import PAD_ID, Vocab, batches
from attnlib.models.seq2seq import Seq2Seq, Seq2SeqConfig
from attnlib.train.metrics import accuracy_by_length, bleu, bleu_signature, exact_match
from attnlib.train.seq2seq_loop import History, train_seq2seq
from attnlib.train.translation import translate

# The tensors are tiny: one thread (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_thread")


# ---------------------------------------------------------------------------------------------
# progress
# ---------------------------------------------------------------------------------------------


def test_progress_is_silent_with_attnlib_progress_0(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ATTNLIB_PROGRESS", "0")
    items = [1, 2, 3]
    wrapped = progress(items, total=3, desc="silent")
    assert wrapped is items
    assert list(wrapped) == [1, 2, 3]
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


def test_progress_shows_a_bar_otherwise(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ATTNLIB_PROGRESS", "1")
    assert list(progress(range(3), total=3, desc="visible")) == [0, 1, 2]
    captured = capsys.readouterr()
    assert "visible" in captured.err and "3/3" in captured.err


# ---------------------------------------------------------------------------------------------
# Scores
# ---------------------------------------------------------------------------------------------


def test_bleu_matches_sacrebleu_and_a_hand_computed_value() -> None:
    hyps = ["i love machine learning", "he reads books"]
    refs = ["i love machine learning", "he reads books every day"]
    expected = sacrebleu.corpus_bleu(hyps, [refs]).score
    assert bleu(hyps, refs) == expected
    assert bleu([h.split() for h in hyps], [r.split() for r in refs]) == expected
    # By hand: 7 hypothesis words, 9 reference words; every n-gram of the hypotheses occurs in
    # the references, so all four precisions are 1 and BLEU is the brevity penalty exp(1 - 9/7).
    assert expected == pytest.approx(100 * math.exp(1 - 9 / 7), abs=1e-9)


def test_bleu_perfect_and_disjoint() -> None:
    assert bleu(["a b c d"], ["a b c d"]) == pytest.approx(100.0)
    assert bleu(["w x y z"], ["a b c d"]) == pytest.approx(0.0, abs=1e-9)
    assert "version:" in bleu_signature()


def test_exact_match_known_inputs() -> None:
    hyps = [["i", "love", "tea"], "he reads books", ["she", "eats"]]
    refs = ["i love tea", ["he", "reads", "books"], "she eats rice"]
    assert exact_match(hyps, refs) == pytest.approx(2 / 3)
    assert exact_match(["a"], ["a"]) == 1.0


@pytest.mark.parametrize("score", [bleu, exact_match])
def test_scores_refuse_mismatched_or_empty_lists(score: object) -> None:
    assert callable(score)
    with pytest.raises(ValueError, match=r"same length, got 2 hypotheses and 1 references"):
        score(["a", "b"], ["a"])
    with pytest.raises(ValueError, match=r"empty"):
        score([], [])


def test_accuracy_by_length() -> None:
    hyps = ["a", "a b", "x y", "a b c", "a b c d", "x"]
    refs = ["a", "a b", "a b", "a b c", "a b c d e", "a b c d e f"]
    lengths = [1, 2, 2, 3, 5, 6]
    per_length = accuracy_by_length(hyps, refs, lengths)
    assert [(g.low, g.high, g.count, g.accuracy) for g in per_length] == [
        (1, 1, 1, 1.0), (2, 2, 2, 0.5), (3, 3, 1, 1.0), (5, 5, 1, 0.0), (6, 6, 1, 0.0)]
    binned = accuracy_by_length(hyps, refs, lengths, bins=[1, 3, 5])
    assert [(g.label, g.count, g.accuracy) for g in binned] == [
        ("1–2", 3, 2 / 3), ("3", 1, 1.0), ("5–6", 2, 0.0)]
    with pytest.raises(ValueError, match=r"strictly increasing"):
        accuracy_by_length(hyps, refs, lengths, bins=[3, 1])
    with pytest.raises(ValueError, match=r"lengths must have one entry per hypothesis \(6\)"):
        accuracy_by_length(hyps, refs, lengths[:2])


# ---------------------------------------------------------------------------------------------
# Training and translation
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class P:
    src: tuple[str, ...]
    tgt: tuple[str, ...]


PAIRS = [
    P(("我", "爱", "茶"), ("i", "love", "tea")),
    P(("他", "爱", "茶"), ("he", "loves", "tea")),
    P(("我", "在", "北京", "爱", "茶"), ("i", "love", "tea", "in", "beijing")),
    P(("他", "喝", "茶"), ("he", "drinks", "tea")),
    P(("昨天", "我", "喝", "了", "茶"), ("i", "drank", "tea", "yesterday")),
    P(("他", "在", "北京", "喝", "茶"), ("he", "drinks", "tea", "in", "beijing")),
]
SRC = Vocab.build(p.src for p in PAIRS)
TGT = Vocab.build(p.tgt for p in PAIRS)


def tiny_model(seed: int = 0) -> Seq2Seq:
    torch.manual_seed(seed)
    return Seq2Seq(Seq2SeqConfig(len(SRC), len(TGT), embed_dim=16, hidden_size=24,
                                 attention_size=24))


def test_train_seq2seq_learns_and_is_reproducible() -> None:
    seen: list[tuple[int, float]] = []
    model = tiny_model()
    history = train_seq2seq(model, PAIRS, SRC, TGT, epochs=25, batch_size=3, lr=2e-2,
                            callback=lambda e, loss: seen.append((e, loss)) and None)
    assert isinstance(history, History)
    assert history.epochs == 25 and len(history.losses) == 25
    assert [e for e, _ in seen] == list(range(1, 26))
    assert [loss for _, loss in seen] == history.losses
    assert history.losses[-1] < 0.1 * history.losses[0]
    assert not model.training
    translations = translate(model, [p.src for p in PAIRS], SRC, TGT)
    assert exact_match([t.tokens for t in translations], [p.tgt for p in PAIRS]) == 1.0
    for t, pair in zip(translations, PAIRS, strict=True):
        assert t.finished and t.output == (*pair.tgt, "<eos>")
        assert t.weights.shape == (len(pair.tgt) + 1, len(pair.src))
    again = train_seq2seq(tiny_model(), PAIRS, SRC, TGT, epochs=25, batch_size=3, lr=2e-2)
    assert again.losses == history.losses


def test_train_seq2seq_loss_is_cross_entropy_over_real_target_tokens() -> None:
    """One batch holding every pair: the first epoch's loss is the untrained model's loss."""
    batch = next(batches(PAIRS, SRC, TGT, batch_size=len(PAIRS)))
    assert bool((batch.tgt_out == PAD_ID).any())  # the targets differ in length
    with torch.no_grad():
        logits, _ = tiny_model()(batch.src, batch.src_lengths, batch.tgt_in)
    real = batch.tgt_out != PAD_ID
    expected = F.cross_entropy(logits[real], batch.tgt_out[real])
    history = train_seq2seq(tiny_model(), PAIRS, SRC, TGT, epochs=1, batch_size=len(PAIRS))
    assert history.losses[0] == pytest.approx(float(expected), rel=1e-5)


def test_train_seq2seq_callback_can_stop_and_shuffle_depends_on_seed() -> None:
    history = train_seq2seq(tiny_model(), PAIRS, SRC, TGT, epochs=10, batch_size=2,
                            callback=lambda e, _: e == 3)
    assert history.epochs == 3
    other = train_seq2seq(tiny_model(), PAIRS, SRC, TGT, epochs=3, batch_size=2, seed=1)
    assert other.losses[0] != history.losses[0]


def test_train_seq2seq_accepts_a_model_that_returns_logits_only() -> None:
    class LogitsOnly(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = tiny_model()

        def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> Tensor:
            logits: Tensor = self.inner(src, src_lengths, tgt_in)[0]
            return logits

    history = train_seq2seq(LogitsOnly(), PAIRS, SRC, TGT, epochs=2)
    assert history.epochs == 2 and all(math.isfinite(x) for x in history.losses)


def test_train_seq2seq_cosine_schedule(monkeypatch: pytest.MonkeyPatch) -> None:
    """Step k of T uses lr (1 + cos(pi k / T)) / 2: from lr down towards 0, every epoch counted."""
    used: list[float] = []
    original = torch.optim.Adam.step

    def spy(self: torch.optim.Adam, *args: object, **kwargs: object) -> object:
        used.append(self.param_groups[0]["lr"])
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(torch.optim.Adam, "step", spy)
    train_seq2seq(tiny_model(), PAIRS, SRC, TGT, epochs=3, batch_size=4, lr=0.01,
                  lr_schedule="cosine")
    steps = 3 * 2  # 6 pairs in batches of 4: 2 batches an epoch
    assert used == pytest.approx([0.005 * (1 + math.cos(math.pi * k / steps)) for k in range(steps)])
    assert used[0] == 0.01 and used[-1] < 0.01 * 0.07
    used.clear()
    train_seq2seq(tiny_model(), PAIRS, SRC, TGT, epochs=3, batch_size=4, lr=0.01)
    assert used == [0.01] * steps


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"epochs": 0}, ValueError, r"epochs must be >= 1, got 0"),
        ({"epochs": 1, "batch_size": 0}, ValueError, r"batch_size must be >= 1, got 0"),
        ({"epochs": 1, "lr": -1.0}, ValueError, r"lr must be finite and > 0"),
        ({"epochs": 1.5}, TypeError, r"epochs must be an int"),
        ({"epochs": 1, "lr_schedule": "linear"}, ValueError,
         r"lr_schedule must be 'constant' or 'cosine', got 'linear'"),
    ],
)
def test_train_seq2seq_bad_arguments(kwargs: dict[str, object], error: type[Exception],
                                     pattern: str) -> None:
    with pytest.raises(error, match=pattern):
        train_seq2seq(tiny_model(), PAIRS, SRC, TGT, **kwargs)  # type: ignore[arg-type]


def test_translate_batches_and_weights() -> None:
    model = tiny_model().double()
    sentences = ["我 爱 茶", ["他", "在", "北京", "喝", "茶"], "昨天 我 喝 了 茶"]
    together = translate(model, sentences, SRC, TGT, max_len=7)
    one_by_one = translate(model, sentences, SRC, TGT, max_len=7, batch_size=1)
    for a, b in zip(together, one_by_one, strict=True):
        assert a.output == b.output and a.tokens == b.tokens
        torch.testing.assert_close(a.weights, b.weights, rtol=0, atol=1e-12)
        assert a.weights.shape == (len(a.output), len(a.src))
        assert len(a.output) == 7 or a.finished
        assert set(a.tokens) <= set(a.output)
    assert together[1].src == ("他", "在", "北京", "喝", "茶")
    with pytest.raises(ValueError, match=r"sentences is empty"):
        translate(model, [], SRC, TGT)
