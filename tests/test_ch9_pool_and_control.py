"""Chapter 9's plumbing and its long-context control.

The chapter keeps one pool of ``spawn`` worker processes and submits ``train_runs(runs,
workers=1)`` to it; the weights must be those of training in the caller's process, and the
worker must print no progress bar. The control of the long-context study splits its
predictions at position L; the split must agree with :func:`echo_accuracy` on the same lines.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from attnlib.experiments import long_context as lc
from attnlib.experiments import memory_wall as mw
from attnlib.experiments.lm_tasks import IGNORE_INDEX, varied_echo
from attnlib.models.decoder_lm import DecoderLM, DecoderLMConfig
from attnlib.train.runs import Run, train_runs

CONFIG = DecoderLMConfig(vocab_size=26, d_model=8, num_heads=2, num_kv_heads=2,
                         num_layers=1, d_ff=16, max_len=48)


def test_train_runs_submitted_to_a_pool_gives_the_same_weights(spawn_pool: Any) -> None:
    """In the session's pool of spawned workers (tests/conftest.py), shared with the
    long-context study's pooled runs as in the chapter."""
    run = Run("tiny", lc.EchoTraining(CONFIG, steps=3), init_seed=2)
    here = train_runs([run], workers=1)[0]
    written = spawn_pool.stderr.stat().st_size
    there = spawn_pool.pool.submit(train_runs, [run], workers=1).result()[0]
    err = spawn_pool.stderr.read_bytes()[written:].decode(errors="replace")
    assert "it/s" not in err, err  # no bar from the worker
    assert there.history.losses == here.history.losses
    for name, value in here.model.state_dict().items():
        assert torch.equal(there.model.state_dict()[name], value), name


def test_the_control_splits_the_predictions_of_echo_accuracy() -> None:
    setup = lc.ContextSetup()
    L = setup.train_length
    torch.manual_seed(0)
    model = DecoderLM(setup.config, dtype=torch.float64)
    near, (below, beyond) = lc._near_control(model, setup)
    assert near == lc.echo_accuracy(model, 4 * L, setup.test_lines, min_period=L // 4,
                                    max_period=L // 2)[1]
    _, targets = varied_echo(setup.test_lines, 4 * L, L // 4, L // 2,
                             setup.config.vocab_size, seed=10**6 + 4 * L)
    kept = targets != IGNORE_INDEX
    n_below, n_beyond = int(kept[:, :L].sum()), int(kept[:, L:].sum())
    assert near == pytest.approx((below * n_below + beyond * n_beyond) / (n_below + n_beyond))


def test_decode_step_times_fastest_is_a_flag() -> None:
    torch.manual_seed(0)
    model = DecoderLM(CONFIG)
    times = mw.decode_step_times(model, [1, 2], context=8, repeats=2, fastest=True)
    assert len(times) == 2 and all(t > 0 for t in times)
    with pytest.raises(TypeError, match="fastest"):
        mw.decode_step_times(model, [1], context=8, fastest=1)  # type: ignore[arg-type]
