"""speculative_sample's counts when draft and model differ: the proposals it says it kept.

A round that keeps m of its proposals writes m + 1 tokens (the kept ones and one drawn by the
model), and only the last round can write one token past ``steps``; so the kept proposals and
the passes add up to ``steps`` or ``steps + 1``. Each checked proposal is kept with probability
beta = sum min(p, q), so over many checks the kept count follows sum beta within a few
standard deviations. An off-by-one in the count fails both.
"""

from __future__ import annotations

import math

import pytest
import torch

from attnlib.experiments import lm_tasks as tasks
from attnlib.models.decoder_lm import DecoderLM, DecoderLMConfig
from attnlib.train.speculative import speculative_decode, speculative_sample

pytestmark = pytest.mark.usefixtures("one_thread")


def _model(seed: int, **changes: object) -> DecoderLM:
    torch.manual_seed(seed)
    config = DecoderLMConfig(**{"vocab_size": 26, "max_len": 64, **changes})  # type: ignore[arg-type]
    return DecoderLM(config, dtype=torch.float64).eval()


@pytest.mark.parametrize("k", [1, 2, 4])
def test_kept_proposals_and_passes_add_up_to_the_tokens_written(k: int) -> None:
    model, draft = _model(0), _model(1, num_layers=1, num_kv_heads=1)
    g = torch.Generator().manual_seed(3)
    for seed in range(6):
        prompt = tasks.echo_text(1, 5, 4, seed=seed)
        steps = 13 + seed
        r = speculative_sample(model, draft, prompt, steps, k, temperature=1.5, generator=g)
        assert r.tokens.shape == (1, 5 + steps)
        assert r.accepted + r.model_passes in (steps, steps + 1)
        # every checked proposal has its beta; all but the refused ones are kept
        refusals = len(r.betas) - r.accepted
        assert 0 <= refusals <= r.model_passes
        assert r.proposed >= len(r.betas)


@pytest.mark.parametrize("k", [1, 4])
def test_greedy_counts_add_up_too(k: int) -> None:
    model, draft = _model(0), _model(1, num_layers=1, num_kv_heads=1)
    prompt = tasks.echo_text(1, 5, 4, seed=1)
    r = speculative_decode(model, draft, prompt, 21, k)
    assert r.accepted + r.model_passes in (21, 22)


def test_kept_count_follows_the_sum_of_beta() -> None:
    """Draft and model differ (beta well inside (0, 1)); the kept count is within 4 standard
    deviations of sum beta, the expected count given the positions checked."""
    model, draft = _model(0), _model(2, num_layers=1)
    g = torch.Generator().manual_seed(0)
    kept = checked = 0
    expected = variance = 0.0
    for seed in range(12):
        prompt = tasks.echo_text(1, 4, 4, seed=100 + seed)
        r = speculative_sample(model, draft, prompt, 40, 3, temperature=1.0, generator=g)
        kept += r.accepted
        checked += len(r.betas)
        expected += sum(r.betas)
        variance += sum(b * (1 - b) for b in r.betas)
    assert checked > 200
    assert 0.1 < expected / checked < 0.9, "the two models must differ, not agree or disagree"
    assert abs(kept - expected) < 4 * math.sqrt(variance), (kept, expected, variance)
