"""Tests for attnlib.models.seq2seq: the bidirectional GRU encoder, the attending decoder, greedy decoding.

Padding must never matter: a sentence gets the same encoding, the same weights and the same
logits alone as in a batch with longer sentences (the encoder packs its input, the decoder masks
padded positions to weight exactly 0). These checks run in float64 so that "the same" can be
tested to 1e-12; batching changes only the order of float operations.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
import torch.nn.functional as F

from attnlib.blocks.scoring import AdditiveScore, KeyValueAttention
from attnlib.data import BOS_ID, EOS_ID, PAD_ID, UNK_ID, Vocab, batches, pad_batch, reverse_task
from attnlib.models.seq2seq import Encoder, Seq2Seq, Seq2SeqConfig, check_source, greedy_decode
from attnlib.train.translation import translate

V_SRC, V_TGT = 11, 13


# The tensors are tiny: one thread (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_thread")


MODES = [(True, "final"), (False, "final"), (False, "mean")]


def make_model(use_attention: bool = True, seed: int = 0, fixed_context: str = "final",
               **sizes: int) -> Seq2Seq:
    torch.manual_seed(seed)
    config = Seq2SeqConfig(V_SRC, V_TGT, use_attention=use_attention,
                           fixed_context=fixed_context,  # type: ignore[arg-type]
                           **{"embed_dim": 8, "hidden_size": 12, "attention_size": 10, **sizes})
    return Seq2Seq(config).double().eval()


def random_batch(lengths: list[int], seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    seqs = [torch.randint(4, V_SRC, (n,), generator=g).tolist() for n in lengths]
    return pad_batch(seqs)  # (B, S), (B,)


# ---------------------------------------------------------------------------------------------
# Shapes and masking
# ---------------------------------------------------------------------------------------------


def test_encoder_shapes_and_zero_states_at_padding() -> None:
    torch.manual_seed(0)
    encoder = Encoder(V_SRC, embed_dim=8, hidden_size=12).double()
    src, lengths = random_batch([5, 2, 3])
    states, final = encoder(src, lengths)
    assert states.shape == (3, 5, 24)
    assert final.shape == (3, 24)
    assert bool((states[1, 2:] == 0).all()) and bool((states[2, 3:] == 0).all())
    # The final state is [forward state at the last word; backward state at the first word].
    for b, n in enumerate(lengths.tolist()):
        torch.testing.assert_close(final[b, :12], states[b, n - 1, :12], rtol=0, atol=0)
        torch.testing.assert_close(final[b, 12:], states[b, 0, 12:], rtol=0, atol=0)


@pytest.mark.parametrize("use_attention, fixed", MODES)
def test_forward_shapes(use_attention: bool, fixed: str) -> None:
    model = make_model(use_attention, fixed_context=fixed)
    src, lengths = random_batch([4, 6, 1])
    tgt_in = torch.randint(0, V_TGT, (3, 5))
    logits, weights = model(src, lengths, tgt_in)
    assert logits.shape == (3, 5, V_TGT)
    assert weights.shape == (3, 5, 6)
    assert logits.dtype == torch.float64


@pytest.mark.parametrize("use_attention", [True, False])
def test_weights_over_padding_are_exactly_zero_and_rows_sum_to_one(use_attention: bool) -> None:
    model = make_model(use_attention, fixed_context="mean")
    src, lengths = random_batch([7, 2, 4, 1])
    _, weights = model(src, lengths, torch.randint(0, V_TGT, (4, 6)))
    for b, n in enumerate(lengths.tolist()):
        assert bool((weights[b, :, n:] == 0).all()), f"sentence {b} attends to padding"
        assert bool((weights[b, :, :n] > 0).all())
    torch.testing.assert_close(weights.sum(-1), torch.ones(4, 6, dtype=torch.float64),
                               rtol=0, atol=1e-12)


def test_attention_uses_additive_score_and_weights_depend_on_step() -> None:
    model = make_model(True)
    assert isinstance(model.decoder.score, AdditiveScore)
    src, lengths = random_batch([6])
    _, weights = model(src, lengths, torch.randint(4, V_TGT, (1, 4)))
    # The query changes from step to step, so the weights do too (unlike the fixed context).
    assert not torch.allclose(weights[0, 0], weights[0, 1])


def test_attend_equals_key_value_attention_with_the_additive_score() -> None:
    """Projecting the keys once per sentence changes nothing: the same as KeyValueAttention."""
    model = make_model(True)
    src, lengths = random_batch([6, 3, 4])
    memory, state = model.encode(src, lengths)
    context, weights = model.decoder.attend(state, memory)
    assert model.decoder.score is not None
    reference = KeyValueAttention(model.decoder.score)
    want_context, want_weights = reference(state[:, None, :], memory.states, memory.states,
                                           memory.mask[:, None, :])
    torch.testing.assert_close(context, want_context[:, 0], rtol=0, atol=1e-12)
    torch.testing.assert_close(weights, want_weights[:, 0], rtol=0, atol=1e-12)


def test_without_attention_the_mean_context_has_uniform_weights() -> None:
    model = make_model(False, fixed_context="mean")
    assert model.decoder.score is None
    assert not any("score" in name for name, _ in model.named_parameters())
    src, lengths = random_batch([5, 3])
    _, weights = model(src, lengths, torch.randint(0, V_TGT, (2, 4)))
    expected = torch.tensor([[0.2] * 5, [1 / 3] * 3 + [0.0] * 2], dtype=torch.float64)
    torch.testing.assert_close(weights, expected[:, None, :].expand(2, 4, 5), rtol=0, atol=1e-15)


def test_without_attention_the_final_state_is_the_context() -> None:
    """The RNN encoder-decoder: c = [forward state at the last word; backward at the first]."""
    model = make_model(False, fixed_context="final")
    src, lengths = random_batch([5, 3])
    memory, _ = model.encode(src, lengths)
    _, final = model.encoder(src, lengths)
    assert memory.context is not None and memory.weights is not None
    torch.testing.assert_close(memory.context, final, rtol=0, atol=0)
    assert bool((memory.weights == 0).all())  # no weighted average of the states
    # The context differs from the mean state: the two baselines are different models.
    assert not torch.allclose(memory.context[0], memory.states[0, :5].mean(0))


@pytest.mark.parametrize("use_attention, fixed", MODES)
def test_teacher_forced_forward_equals_the_step_loop(use_attention: bool, fixed: str) -> None:
    """Attention: embeddings and output layer outside the loop; fixed context: one GRU call."""
    model = make_model(use_attention, fixed_context=fixed)
    src, lengths = random_batch([6, 2, 4])
    tgt_in = torch.randint(4, V_TGT, (3, 5))
    logits, weights = model(src, lengths, tgt_in)
    memory, state = model.encode(src, lengths)
    for t in range(5):
        step_logits, state, step_weights = model.decoder.step(tgt_in[:, t], state, memory)
        torch.testing.assert_close(logits[:, t], step_logits, rtol=0, atol=1e-12)
        torch.testing.assert_close(weights[:, t], step_weights, rtol=0, atol=0)


@pytest.mark.parametrize("use_attention, fixed", MODES)
def test_padding_does_not_change_a_sentence(use_attention: bool, fixed: str) -> None:
    """The same sentence alone and in a batch with a longer one: same logits and weights.

    Without packing, the backward GRU of the padded copy would start on <pad> tokens and the
    encoding, hence the logits, would differ.
    """
    model = make_model(use_attention, fixed_context=fixed)
    short = [5, 6, 7]
    long = [8, 9, 10, 4, 5, 6, 7, 8]
    tgt = torch.tensor([[BOS_ID, 5, 6, 7, 8]])
    alone_src, alone_len = pad_batch([short])
    both_src, both_len = pad_batch([long, short])
    logits_alone, w_alone = model(alone_src, alone_len, tgt)
    logits_both, w_both = model(both_src, both_len, tgt.expand(2, -1))
    torch.testing.assert_close(logits_both[1:2], logits_alone, rtol=0, atol=1e-12)
    torch.testing.assert_close(w_both[1:2, :, :3], w_alone, rtol=0, atol=1e-12)
    tokens_alone, _ = greedy_decode(model, alone_src, alone_len, 6, BOS_ID, EOS_ID)
    tokens_both, _ = greedy_decode(model, both_src, both_len, 6, BOS_ID, EOS_ID)
    n = tokens_alone.shape[1]
    assert tokens_both[1, :n].tolist() == tokens_alone[0].tolist()


# ---------------------------------------------------------------------------------------------
# Greedy decoding
# ---------------------------------------------------------------------------------------------


def force_output(model: Seq2Seq, token: int) -> None:
    """Make the decoder predict ``token`` at every step, whatever its input."""
    with torch.no_grad():
        model.decoder.out_proj.weight.zero_()
        model.decoder.out_proj.bias.fill_(0.0)
        model.decoder.out_proj.bias[token] = 10.0


def test_greedy_decode_stops_at_eos() -> None:
    model = make_model()
    force_output(model, EOS_ID)
    src, lengths = random_batch([3, 5])
    tokens, weights = greedy_decode(model, src, lengths, max_len=20, bos_id=BOS_ID, eos_id=EOS_ID)
    assert tokens.tolist() == [[EOS_ID], [EOS_ID]]
    assert weights.shape == (2, 1, 5)


def test_greedy_decode_respects_max_len() -> None:
    model = make_model()
    force_output(model, 7)
    src, lengths = random_batch([3, 5])
    for max_len in (1, 4, 9):
        tokens, weights = greedy_decode(model, src, lengths, max_len, BOS_ID, EOS_ID)
        assert tokens.shape == (2, max_len)
        assert bool((tokens == 7).all())
        assert weights.shape == (2, max_len, 5)


def test_greedy_decode_restores_training_mode() -> None:
    model = make_model().train()
    src, lengths = random_batch([3])
    greedy_decode(model, src, lengths, 3, BOS_ID, EOS_ID)
    assert model.training


@dataclass(frozen=True)
class TokenPairs:
    src: tuple[str, ...]
    tgt: tuple[str, ...]


def reversal_pairs() -> list[TokenPairs]:
    """Eight short reversal pairs of different lengths, over the symbols a..f."""
    symbols, _ = reverse_task(8, length=6, num_symbols=6, seed=0)
    lengths = [2, 3, 4, 5, 6, 3, 4, 5]
    pairs = []
    for row, n in zip(symbols.tolist(), lengths, strict=True):
        words = tuple("abcdef"[i - 1] for i in row[:n])
        pairs.append(TokenPairs(words, words[::-1]))
    return pairs


def test_overfit_model_reproduces_its_training_targets() -> None:
    """A hundred steps on eight reversal pairs; greedy decoding must give them back."""
    pairs = reversal_pairs()
    vocab = Vocab.build(p.src for p in pairs)
    torch.manual_seed(0)
    model = Seq2Seq(Seq2SeqConfig(len(vocab), len(vocab), embed_dim=16, hidden_size=32,
                                  attention_size=32))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    batch = next(batches(pairs, vocab, vocab, batch_size=8))
    model.train()
    for _ in range(100):
        logits, _ = model(batch.src, batch.src_lengths, batch.tgt_in)
        loss = F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(), ignore_index=PAD_ID)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    tokens, weights = greedy_decode(model, batch.src, batch.src_lengths, 10, BOS_ID, EOS_ID)
    for b, pair in enumerate(batch.pairs):
        row = tokens[b].tolist()
        n = len(pair.tgt)
        assert vocab.decode(row) == list(pair.tgt)
        # Per-sentence stop: eos right after the target, then padding and zero weights.
        assert row[n] == EOS_ID
        assert all(t == PAD_ID for t in row[n + 1 :])
        assert bool((weights[b, n + 1 :] == 0).all())
    # Sentences of different lengths finish at different steps; decoding ran to the longest.
    assert tokens.shape[1] == max(len(p.tgt) for p in pairs) + 1


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------


def test_empty_source_sentence_is_refused() -> None:
    model = make_model()
    src = torch.tensor([[4, 5, 6], [0, 0, 0]])
    with pytest.raises(ValueError, match=r"src_lengths\[1\] = 0: sentence 1 is empty"):
        model(src, torch.tensor([3, 0]), torch.tensor([[BOS_ID], [BOS_ID]]))
    with pytest.raises(ValueError, match=r"src is empty: got shape \(2, 0\)"):
        check_source(torch.zeros(2, 0, dtype=torch.long), torch.tensor([1, 1]), V_SRC)


def test_source_longer_than_limit_is_refused() -> None:
    model = make_model(max_src_len=4)
    src, lengths = random_batch([5, 2])
    with pytest.raises(ValueError, match=r"length 5, longer than the model's max_src_len = 4"):
        greedy_decode(model, src, lengths, 3, BOS_ID, EOS_ID)


@pytest.mark.parametrize(
    ("src", "lengths", "error", "pattern"),
    [
        (torch.tensor([[4, 99]]), torch.tensor([2]), ValueError, r"id 99, outside the source vocabulary \[0, 11\)"),
        (torch.tensor([[4, -1]]), torch.tensor([2]), ValueError, r"id -1, outside"),
        (torch.tensor([[4.0, 5.0]]), torch.tensor([2]), TypeError, r"src must hold integer ids"),
        (torch.tensor([4, 5]), torch.tensor([2]), ValueError, r"src must have 2 dimensions \(B, S\), got shape \(2\)"),
        (torch.tensor([[4, 5]]), torch.tensor([2, 2]), ValueError, r"src_lengths must have shape \(B,\) = \(1,\)"),
        (torch.tensor([[4, 5]]), torch.tensor([3]), ValueError, r"length 3 greater than S = 2"),
    ],
)
def test_bad_source_gets_a_clear_error(
    src: torch.Tensor, lengths: torch.Tensor, error: type[Exception], pattern: str
) -> None:
    model = make_model()
    with pytest.raises(error, match=pattern):
        greedy_decode(model, src, lengths, 3, BOS_ID, EOS_ID)


def test_bad_target_and_max_len() -> None:
    model = make_model()
    src, lengths = random_batch([3, 2])
    with pytest.raises(ValueError, match=r"tgt_in must have shape \(B, L\) with B = 2"):
        model(src, lengths, torch.tensor([[BOS_ID, 5]]))
    with pytest.raises(ValueError, match=r"tgt_in holds an id outside the target vocabulary"):
        model(src, lengths, torch.tensor([[BOS_ID], [V_TGT]]))
    with pytest.raises(ValueError, match=r"max_len must be >= 1, got 0"):
        greedy_decode(model, src, lengths, 0, BOS_ID, EOS_ID)


def test_bad_config() -> None:
    with pytest.raises(ValueError, match=r"hidden_size must be >= 1, got 0"):
        Seq2SeqConfig(5, 5, hidden_size=0)
    with pytest.raises(TypeError, match=r"use_attention must be a bool"):
        Seq2SeqConfig(5, 5, use_attention=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"fixed_context must be 'final' or 'mean', got 'last'"):
        Seq2SeqConfig(5, 5, fixed_context="last")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"config must be a Seq2SeqConfig"):
        Seq2Seq({"src_vocab_size": 5})  # type: ignore[arg-type]


def test_unknown_tokens_become_unk_and_translate() -> None:
    vocab = Vocab.build([["我", "爱", "机器学习"]])
    assert vocab.encode(["我", "爱", "火星"]) == [vocab["我"], vocab["爱"], UNK_ID]
    torch.manual_seed(0)
    model = Seq2Seq(Seq2SeqConfig(len(vocab), V_TGT, embed_dim=8, hidden_size=12))
    tgt_vocab = Vocab.build([[f"w{i}" for i in range(V_TGT - 4)]])
    (result,) = translate(model, ["我 爱 火星"], vocab, tgt_vocab, max_len=5)
    assert result.src == ("我", "爱", "火星")
    assert len(result.tokens) <= 5
    assert result.weights.shape == (len(result.output), 3)
    with pytest.raises(ValueError, match=r"sentences\[1\] is empty"):
        translate(model, ["我", ""], vocab, tgt_vocab)


# ---------------------------------------------------------------------------------------------
# BLEU against several references (the corpus keeps every correct English sentence)
# ---------------------------------------------------------------------------------------------


def test_multi_reference_bleu_takes_the_best_reference_per_ngram() -> None:
    from attnlib.train.metrics import bleu, bleu_by_length, exact_match_any, multi_reference_bleu

    hyps = ["yesterday i ate the apple in the park", "he reads the book every day"]
    one = [["i ate the apple in the park yesterday"], ["he reads the book every day"]]
    both = [[*one[0], "yesterday i ate the apple in the park"], one[1]]
    assert multi_reference_bleu(hyps, one) == pytest.approx(bleu(hyps, [r[0] for r in one]))
    assert multi_reference_bleu(hyps, both) == pytest.approx(100.0)
    assert multi_reference_bleu(hyps, one) < 95.0
    assert exact_match_any(hyps, both) == 1.0 and exact_match_any(hyps, one) == 0.5
    groups = bleu_by_length(hyps, both, [8, 6], bins=[3, 7])
    assert [(g.label, g.count) for g in groups] == [("6", 1), ("8", 1)]
    assert all(g.bleu == pytest.approx(100.0) for g in groups)
    with pytest.raises(ValueError, match=r"reference_sets\[1\] must be a non-empty sequence"):
        multi_reference_bleu(hyps, [one[0], []])
    with pytest.raises(ValueError, match="bins must be a non-empty, strictly increasing"):
        bleu_by_length(hyps, both, [8, 6], bins=[5, 5])
