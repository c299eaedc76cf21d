"""attnlib.train.decoding and attnlib.models.kv_cache: greedy and beam search, the cache, sequence scores.

Decoding runs on untrained models whose outputs vary from token to token (large random
embeddings), so that every search has something to choose.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from attnlib.models.transformer import Transformer, TransformerConfig
from attnlib.train.decoding import (
    beam_search,
    gnmt_length_penalty,
    greedy_decode,
    sequence_log_prob,
)

D, H, FF = 16, 4, 24


def small_config(**changes: object) -> TransformerConfig:
    base = TransformerConfig(
        src_vocab_size=11, tgt_vocab_size=9, d_model=D, num_heads=H, num_encoder_layers=2,
        num_decoder_layers=2, d_ff=FF, dropout=0.0, max_len=32,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def random_model(seed: int = 0, dtype: torch.dtype = torch.float64, **changes: object) -> Transformer:
    """An untrained model whose outputs vary from token to token (large random embeddings)."""
    torch.manual_seed(seed)
    model = Transformer(small_config(tie_embeddings=False, **changes), dtype=dtype).eval()
    with torch.no_grad():
        for embedding in (model.src_embed, model.tgt_embed, model.output_projection):
            embedding.weight.normal_(0.0, 1.0)
    return model


# ---------------------------------------------------------------------------------------------
# Decoding
# ---------------------------------------------------------------------------------------------

SRC = torch.tensor([[3, 4, 5, 6, 7], [8, 9, 10, 0, 0], [4, 4, 0, 0, 0]])
SRC_LENGTHS = torch.tensor([5, 3, 2])


def test_decode_step_equals_full_decoder() -> None:
    """Step by step with the cache gives the logits of the whole prefix at once."""
    for norm_first in (False, True):
        model = random_model(norm_first=norm_first)
        tgt = torch.tensor([[1, 3, 4, 5], [1, 6, 7, 8], [1, 2, 0, 0]])
        encoded = model.encode(SRC, SRC_LENGTHS)
        full = model.decode(tgt, encoded, need_weights=True)
        cache = model.init_cache(encoded)
        for t in range(tgt.shape[1]):
            step = model.decode_step(tgt[:, t], cache, need_weights=True)
            torch.testing.assert_close(step.logits, full.logits[:, t], atol=1e-10, rtol=0)
            assert full.cross_weights is not None and step.cross_weights is not None
            torch.testing.assert_close(step.cross_weights, full.cross_weights[:, :, :, t],
                                       atol=1e-10, rtol=0)
        assert cache.length == 4 and cache.layers[0].self_key.shape == (3, H, 4, D // H)


@pytest.mark.parametrize("seed", [0, 1, 6])
def test_cached_decoding_gives_the_uncached_tokens(seed: int) -> None:
    model = random_model(seed, dtype=torch.float32)
    with torch.no_grad():  # make each token depend strongly on the earlier ones
        for name, p in model.decoder.named_parameters():
            if ".self_attn." in name:
                p.mul_(3.0)
    cached = greedy_decode(model, SRC, SRC_LENGTHS, 20)
    uncached = greedy_decode(model, SRC, SRC_LENGTHS, 20, use_cache=False)
    assert len(set(cached.tokens.flatten().tolist())) > 3  # a non-trivial output
    assert torch.equal(cached.tokens, uncached.tokens)
    torch.testing.assert_close(cached.weights, uncached.weights, atol=1e-5, rtol=0)
    beam = beam_search(model, SRC, SRC_LENGTHS, 20, beam_size=3)
    beam_uncached = beam_search(model, SRC, SRC_LENGTHS, 20, beam_size=3, use_cache=False)
    assert torch.equal(beam.tokens, beam_uncached.tokens)
    torch.testing.assert_close(beam.weights, beam_uncached.weights, atol=1e-5, rtol=0)


@pytest.mark.parametrize("beam_size", [0, 1, 3], ids=["greedy", "beam1", "beam3"])
def test_decoded_weights_are_the_cross_attention_of_the_tokens(beam_size: int) -> None:
    """Decoded.weights[b, t] is what the last layer's heads, averaged, put on the source when
    token t was produced: the same as a teacher-forced pass over the returned tokens."""
    model = random_model(2)  # a seed where the best hypothesis changes places in the beam
    if beam_size == 0:
        out = greedy_decode(model, SRC, SRC_LENGTHS, 12)
    else:
        out = beam_search(model, SRC, SRC_LENGTHS, 12, beam_size=beam_size)
    tgt_in = torch.cat((torch.ones(3, 1, dtype=torch.long), out.tokens[:, :-1]), dim=1)
    cross = model.attention_weights(SRC, SRC_LENGTHS, tgt_in).cross[:, -1].mean(dim=1)
    for b, row in enumerate(out.tokens.tolist()):
        n = row.index(2) + 1 if 2 in row else len(row)  # up to <eos>; zero rows after it
        torch.testing.assert_close(out.weights[b, :n], cross[b, :n], atol=1e-10, rtol=0)
        assert bool((out.weights[b, n:] == 0).all())


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_beam_of_one_is_greedy(seed: int) -> None:
    model = random_model(seed)
    greedy = greedy_decode(model, SRC, SRC_LENGTHS, 15)
    beam = beam_search(model, SRC, SRC_LENGTHS, 15, beam_size=1)
    assert torch.equal(beam.tokens, greedy.tokens)
    torch.testing.assert_close(beam.weights, greedy.weights, atol=1e-12, rtol=0)


def test_decoding_stops_at_eos_and_respects_max_len() -> None:
    model = random_model(0)
    out = greedy_decode(model, SRC, SRC_LENGTHS, 4)
    assert out.tokens.shape[1] <= 4 and out.weights.shape == (*out.tokens.shape, 5)
    long = greedy_decode(model, SRC, SRC_LENGTHS, 30)
    for row, weights in zip(long.tokens, long.weights, strict=True):
        ids = row.tolist()
        if 2 in ids:  # after <eos>: <pad>, and no attention
            end = ids.index(2)
            assert all(i == 0 for i in ids[end + 1 :])
            assert bool((weights[end + 1 :] == 0).all())
            torch.testing.assert_close(weights[: end + 1].sum(-1), torch.ones(end + 1,
                                       dtype=weights.dtype))
    assert (long.tokens == 2).any(dim=1).all() or long.tokens.shape[1] == 30


def test_wide_beam_finds_the_best_normalised_hypothesis() -> None:
    """A beam wider than the number of hypotheses is exhaustive search: compare with brute force.

    The model's output distribution is flattened (small output weights) so that the length
    penalty decides between short and long hypotheses: the winner changes with alpha.
    """
    model = random_model(1, src_vocab_size=6, tgt_vocab_size=5)
    with torch.no_grad():
        model.output_projection.weight.mul_(0.15)
    src, src_lengths = torch.tensor([[3, 4, 5]]), torch.tensor([3])
    max_len, V = 3, 5
    # Every hypothesis: finished (ends with <eos> = 2, no earlier <eos>) or cut at max_len.
    hypotheses = [
        list(y) for n in range(1, max_len + 1) for y in itertools.product(range(V), repeat=n)
        if 2 not in y[:-1] and (n == max_len or y[-1] == 2)
    ]
    log_probs = [float(sequence_log_prob(model, src, src_lengths, torch.tensor([y])))
                 for y in hypotheses]
    winners = []
    for alpha in (0.0, 0.6, 2.0):
        scores = [lp / float(gnmt_length_penalty(torch.tensor(len(y)), alpha))
                  for y, lp in zip(hypotheses, log_probs, strict=True)]
        best = hypotheses[max(range(len(scores)), key=scores.__getitem__)]
        out = beam_search(model, src, src_lengths, max_len, beam_size=V**max_len,
                          length_penalty=alpha)
        ids = out.tokens[0].tolist()
        produced = ids[: ids.index(2) + 1] if 2 in ids else ids
        assert produced == best, f"alpha = {alpha}"
        winners.append(tuple(best))
    assert len(set(winners)) > 1  # the length penalty mattered


def reference_beam_search(
    model: Transformer, src: Tensor, src_lengths: Tensor, max_len: int, K: int, alpha: float
) -> list[int]:
    """The documented algorithm, on Python lists, one hypothesis at a time, without a cache."""

    def normalised(hyp: tuple[list[int], float]) -> float:
        return hyp[1] / float(gnmt_length_penalty(torch.tensor(len(hyp[0])), alpha))

    beam: list[tuple[list[int], float]] = [([], 0.0)]
    for _ in range(max_len):
        candidates: list[tuple[list[int], float]] = []
        for y, score in beam:
            if y and y[-1] == 2:
                candidates.append((y, score))  # finished: kept, score frozen
                continue
            with torch.no_grad():
                logits = model(src, src_lengths, torch.tensor([[1, *y]]))[0, -1]
            log_probs = F.log_softmax(logits, dim=-1)
            candidates += [([*y, w], score + float(log_probs[w])) for w in range(len(log_probs))]
        beam = sorted(candidates, key=normalised, reverse=True)[:K]
        if all(y[-1] == 2 for y, _ in beam):
            break
    return max(beam, key=normalised)[0]


@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_beam_search_equals_a_reference_implementation(alpha: float) -> None:
    model = random_model(1, src_vocab_size=6, tgt_vocab_size=5)
    with torch.no_grad():
        model.output_projection.weight.mul_(0.15)  # flat: the length penalty matters
    results = []
    for src in ([[3, 4, 5]], [[5, 5, 3]], [[4, 3, 3]]):
        src_t, src_lengths = torch.tensor(src), torch.tensor([3])
        expected = reference_beam_search(model, src_t, src_lengths, 4, 2, alpha)
        ids = beam_search(model, src_t, src_lengths, 4, beam_size=2,
                          length_penalty=alpha).tokens[0].tolist()
        assert ids[: len(expected)] == expected and all(i == 0 for i in ids[len(expected):])
        results.append(expected)


def test_length_penalty() -> None:
    lengths = torch.tensor([1, 5, 10])
    torch.testing.assert_close(gnmt_length_penalty(lengths, 0.0), torch.ones(3, dtype=torch.float64))
    torch.testing.assert_close(gnmt_length_penalty(lengths, 1.0),
                               torch.tensor([1.0, 10 / 6, 15 / 6], dtype=torch.float64))
    with pytest.raises(ValueError, match="alpha"):
        gnmt_length_penalty(lengths, -0.1)


def test_decoded_works_with_training_translate() -> None:
    from attnlib.data import Vocab
    from attnlib.train.translation import translate

    vocab = Vocab.build([["a", "b", "c", "d", "e"]])  # 4 specials + 5 words = 9 ids
    model = random_model(1, src_vocab_size=9)
    out = translate(model, ["a b c", "d e"], vocab, vocab, max_len=8, decode=greedy_decode)
    assert len(out) == 2 and out[0].weights.shape[1] == 3


# ---------------------------------------------------------------------------------------------
# Scoring a translation; the old import path
# ---------------------------------------------------------------------------------------------


def hand_log_prob(model: Transformer, src: Tensor, src_lengths: Tensor, y: list[int]) -> float:
    """log p(y | x), one decoder run per token on the growing prefix (no teacher forcing)."""
    total = 0.0
    with torch.no_grad():
        for t, token in enumerate(y):
            logits = model(src, src_lengths, torch.tensor([[1, *y[:t]]]))[0, -1]
            total += float(F.log_softmax(logits, dim=-1)[token])
    return total


def test_sequence_log_prob_sums_the_step_log_probabilities() -> None:
    model = random_model(3)
    src, src_lengths = SRC[:2], SRC_LENGTHS[:2]
    # Row 0 ends with <eos> = 2 and has <pad> and a stray word after it (ignored); row 1 has
    # no <eos>: all of its tokens count.
    tokens = torch.tensor([[5, 6, 2, 0, 7], [3, 4, 5, 6, 7]])
    got = sequence_log_prob(model, src, src_lengths, tokens)
    assert got.dtype == torch.float64 and got.shape == (2,)
    expected = [hand_log_prob(model, src[:1], src_lengths[:1], [5, 6, 2]),
                hand_log_prob(model, src[1:], src_lengths[1:], [3, 4, 5, 6, 7])]
    torch.testing.assert_close(got, torch.tensor(expected, dtype=torch.float64),
                               atol=1e-9, rtol=0)
    assert bool((got < 0).all())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_beam_never_scores_below_greedy_without_length_penalty(seed: int) -> None:
    """At alpha = 0 beam search ranks by log p(y | x); a wide beam that holds greedy's path
    ends with a hypothesis at least as probable, and sequence_log_prob measures both."""
    model = random_model(seed, dtype=torch.float64)
    greedy = greedy_decode(model, SRC, SRC_LENGTHS, 12)
    beam = beam_search(model, SRC, SRC_LENGTHS, 12, beam_size=4, length_penalty=0.0)
    lp_greedy = sequence_log_prob(model, SRC, SRC_LENGTHS, greedy.tokens)
    lp_beam = sequence_log_prob(model, SRC, SRC_LENGTHS, beam.tokens)
    finished = (greedy.tokens == 2).any(dim=1) & (beam.tokens == 2).any(dim=1)
    assert bool(finished.any())
    assert bool((lp_beam[finished] >= lp_greedy[finished] - 1e-9).all())


def test_sequence_log_prob_bad_input() -> None:
    model = random_model()
    with pytest.raises(ValueError, match=r"tokens must have shape \(B, L\) = \(3, L >= 1\).*got \(2, 4\)"):
        sequence_log_prob(model, SRC, SRC_LENGTHS, torch.ones(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match="exceeds the model's max_len = 32"):
        sequence_log_prob(model, SRC, SRC_LENGTHS, torch.ones(3, 40, dtype=torch.long))
    with pytest.raises(TypeError, match="must be an attnlib Transformer"):
        sequence_log_prob(torch.nn.Linear(1, 1), SRC, SRC_LENGTHS,  # type: ignore[arg-type]
                          torch.ones(3, 4, dtype=torch.long))
