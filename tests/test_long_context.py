"""Chapter 9's long-context study: the task, the rescaled models, the runs and their workers."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from attnlib.blocks.rope_scaling import ScaledRotaryEmbedding
from attnlib.experiments import long_context as lc
from attnlib.experiments.lm_tasks import IGNORE_INDEX, varied_echo
from attnlib.models.decoder_lm import DecoderLM, DecoderLMConfig

pytestmark = pytest.mark.usefixtures("one_thread")

F64 = torch.float64
TINY = lc.ContextSetup(
    config=DecoderLMConfig(vocab_size=16, d_model=16, num_heads=2, num_kv_heads=2,
                           num_layers=1, d_ff=16, max_len=32, rope_base=300.0),
    train_length=8, steps=3, batch_size=2, tune_steps=2, tune_batch_size=1, test_lines=3)


def test_varied_echo_repeats_each_lines_word_and_marks_the_first_period() -> None:
    tokens, targets = varied_echo(50, 40, 5, 12, vocab_size=20, seed=3)
    assert tokens.shape == targets.shape == (50, 40)
    for row, target in zip(tokens, targets, strict=True):
        known = (target != IGNORE_INDEX).nonzero()
        P = int(known[0]) if len(known) else 40
        word = row[:P]
        assert 5 <= P <= 12 and len(set(word.tolist())) == P  # distinct tokens
        assert torch.equal(row, word.repeat(-(-40 // P))[:40])
        assert torch.equal(target[P:-1], row[P + 1:])  # every later position predictable
    periods = {int((t != IGNORE_INDEX).nonzero()[0]) for t in targets}
    assert periods == set(range(5, 13))  # all periods drawn
    assert torch.equal(varied_echo(4, 9, 2, 3, seed=1)[0], varied_echo(4, 9, 2, 3, seed=1)[0])


def test_extend_context_keeps_weights_and_plain_rope_keeps_the_outputs() -> None:
    torch.manual_seed(0)
    model = DecoderLM(TINY.config, dtype=F64).eval()
    tokens = varied_echo(2, 20, 3, 6, vocab_size=16)[0]
    for method in ("rope", "pi", "ntk", "yarn"):
        extended = lc.extend_context(model, method, 2.0, 8)
        assert all(isinstance(b.attn.rope, ScaledRotaryEmbedding) for b in extended.blocks)
        for (name, a), (_, b) in zip(model.state_dict().items(),
                                     extended.state_dict().items(), strict=True):
            assert torch.equal(a, b), name
        with torch.no_grad():  # at s = 1 every method is plain RoPE (YaRN: to rounding)
            same = lc.extend_context(model, method, 1.0, 8)
            torch.testing.assert_close(same(tokens), model(tokens), atol=1e-12, rtol=0)
            if method == "rope":
                torch.testing.assert_close(extended(tokens), model(tokens), atol=0, rtol=0)


def test_echo_accuracy_of_a_model_that_copies_is_one() -> None:
    class Oracle(DecoderLM):
        def forward(self, tokens, cache=None):  # type: ignore[no-untyped-def]
            # the token that followed the last earlier occurrence of the current token
            B, L = tokens.shape
            logits = torch.zeros(B, L, self.config.vocab_size, dtype=F64)
            for b in range(B):
                for t in range(L):
                    earlier = (tokens[b, :t] == tokens[b, t]).nonzero()
                    if len(earlier):
                        logits[b, t, tokens[b, int(earlier[-1]) + 1]] = 1.0
            return logits

    loss, accuracy = lc.echo_accuracy(Oracle(TINY.config), 16, lines=5)
    assert accuracy == 1.0 and loss < 3.0


def test_a_run_is_deterministic_and_has_every_entry() -> None:
    first, again = lc.context_run(TINY, 1), lc.context_run(TINY, 1)
    assert first.accuracy == again.accuracy
    assert set(first.accuracy) == (
        {(m, n, False) for m in ("rope", "pi", "ntk", "yarn", "yarn-32") for n in (8, 16, 32)}
        | {(m, 32, True) for m in ("rope", "pi", "ntk", "yarn")})
    assert all(0 <= a <= 1 for a in first.accuracy.values())
    assert 0 <= first.near <= 1 and first.near == again.near
    # the control: the model as trained, at 4L, with the periods of training
    model = lc.extend_context(DecoderLM(TINY.config, dtype=F64), "rope", 1.0, 8)
    assert lc.echo_accuracy(model, 32, 3, min_period=2, max_period=4)[1] >= 0
    alibi = lc.context_run(TINY, 1, "alibi")
    assert set(alibi.accuracy) == {("alibi", n, False) for n in (8, 16, 32)} | {
        ("alibi", 32, True)}


def test_workers_give_the_same_numbers() -> None:
    one = lc.context_study(TINY, [0, 1], workers=1)
    two = lc.context_study(TINY, [0, 1], workers=2)
    assert [(r.seed, r.positions) for r in one] == [(0, "rope"), (1, "rope"), (0, "alibi"),
                                                    (1, "alibi")]
    assert [r.accuracy for r in one] == [r.accuracy for r in two]
    assert [r.train_loss for r in one] == [r.train_loss for r in two]


def test_a_pool_of_spawned_workers_gives_the_same_numbers(spawn_pool: Any) -> None:
    """The session's pool of two spawned workers (tests/conftest.py), which chapter 9's
    train_runs test also uses, as the chapter submits both kinds of training to one pool."""
    one = lc.context_study(TINY, [0], workers=1)
    pooled = lc.context_study(TINY, [0], pool=spawn_pool.pool)
    again = lc.context_study(TINY, [0], pool=spawn_pool.pool)  # the same workers, reused
    assert [(r.seed, r.positions) for r in pooled] == [(0, "rope"), (0, "alibi")]
    for runs in (pooled, again):
        assert [r.accuracy for r in runs] == [r.accuracy for r in one]
        assert [r.train_loss for r in runs] == [r.train_loss for r in one]


def test_echo_model_trains_as_train_lm_on_echo_text_on_one_thread() -> None:
    from attnlib.experiments.lm_tasks import echo_targets, echo_text
    from attnlib.models.decoder_lm import train_lm
    from attnlib.train.runs import Run, train_runs

    config = DecoderLMConfig(vocab_size=26, d_model=8, num_heads=2, num_kv_heads=1,
                             num_layers=1, d_ff=16, max_len=12)
    echo = lc.EchoTraining(config, steps=3, batch_size=2, length=12, period=4)
    [result] = train_runs([Run("echo", echo, init_seed=5)], workers=1)
    torch.manual_seed(5)
    model = DecoderLM(config)

    def batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        tokens = echo_text(2, 12, 4, seed=step)
        return tokens, echo_targets(tokens, 4)

    losses = train_lm(model, batch, steps=3, lr=0.01)
    assert result.history.losses == losses
    for a, b in zip(result.model.state_dict().values(), model.state_dict().values(),
                    strict=True):
        assert torch.equal(a, b)
    torch.set_num_threads(2)
    try:
        echo.fit(echo.build())
        assert torch.get_num_threads() == 2  # restored
    finally:
        torch.set_num_threads(1)


BAD = [
    (lambda: varied_echo(2, 10, 5, 4), ["max_period", "4", ">= 5"]),
    (lambda: varied_echo(2, 10, 3, 30, vocab_size=20), ["vocab_size", "20", ">= 30"]),
    (lambda: lc.ContextSetup(train_length=64), ["max_len", "256", "128"]),
    (lambda: lc.extend_context(DecoderLM(DecoderLMConfig(vocab_size=5, alibi=True)), "pi", 2.0,
                               8), ["model", "RoPE", "alibi=True"]),
    (lambda: lc.extend_context(DecoderLM(DecoderLMConfig(vocab_size=5)), "xpos", 2.0, 8),
     ["method", "'xpos'", "'yarn'"]),
    (lambda: lc.context_run(TINY, 0, "sinusoidal"), ["positions", "'sinusoidal'", "'alibi'"]),
    (lambda: lc.context_study(TINY, []), ["seeds", "none"]),
    (lambda: lc.echo_accuracy(DecoderLM(TINY.config), 2), ["length", "2", ">= 4"]),
    (lambda: lc.echo_accuracy(DecoderLM(TINY.config), 8, min_period=9),
     ["min_period", "9", "<= 8"]),
    (lambda: lc.EchoTraining(DecoderLMConfig(vocab_size=64)), ["vocab_size", "26", "64"]),
    (lambda: lc.EchoTraining(DecoderLMConfig(vocab_size=26, max_len=16)),
     ["max_len", "48", "16"]),
]


@pytest.mark.parametrize(("call", "fragments"), BAD)
def test_bad_input_names_argument_got_and_expected(call, fragments) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
