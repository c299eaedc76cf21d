"""Greedy speculative decoding gives the model's own greedy tokens; speculative sampling gives
tokens distributed as the model's own samples."""

from __future__ import annotations

from itertools import product

import pytest
import torch

from attnlib.experiments import lm_tasks as tasks
from attnlib.models.decoder_lm import DecoderLM, DecoderLMConfig, generate
from attnlib.train.speculative import (
    accept_or_resample,
    expected_tokens_per_pass,
    goodness_of_fit,
    speculative_decode,
    speculative_sample,
)

pytestmark = pytest.mark.usefixtures("one_thread")


def _model(seed: int, **changes: object) -> DecoderLM:
    torch.manual_seed(seed)
    config = DecoderLMConfig(**{"vocab_size": 26, "max_len": 64, **changes})  # type: ignore[arg-type]
    return DecoderLM(config, dtype=torch.float64).eval()


@pytest.mark.parametrize("k", [1, 3, 5])
@pytest.mark.parametrize("same", [True, False])
def test_equals_greedy_decoding_of_the_model(k: int, same: bool) -> None:
    model = _model(0)
    draft = model if same else _model(1, num_layers=1, num_kv_heads=1)
    prompt = tasks.echo_text(1, 6, 4, seed=2)
    result = speculative_decode(model, draft, prompt, 17, k)
    assert torch.equal(result.tokens, generate(model, prompt, 17))
    assert result.proposed >= result.accepted >= 0
    if same:  # the model as its own draft: every proposal accepted
        assert result.accepted == result.proposed
        assert result.model_passes == -(-17 // (k + 1))  # k + 1 tokens per pass


def test_counts_with_a_perfect_draft() -> None:
    model = _model(0)
    result = speculative_decode(model, model, tasks.echo_text(1, 5, 4), 10, k=4)
    # rounds write 5, 5 tokens: two passes, 8 proposals, all accepted
    assert (result.model_passes, result.proposed, result.accepted) == (2, 8, 8)
    assert result.acceptance_rate == 1.0


BAD = [
    (lambda: speculative_decode(_model(0), _model(0), torch.zeros(2, 3, dtype=torch.long), 4),
     ["prompt", "(2, 3)", "(1, L0)"]),
    (lambda: speculative_decode(_model(0), _model(0), torch.zeros(1, 3, dtype=torch.long), 4, 0),
     ["k", "0"]),
    (lambda: speculative_decode(_model(0), _model(0, vocab_size=27),
                                torch.zeros(1, 3, dtype=torch.long), 4), ["vocab", "27", "26"]),
]


@pytest.mark.parametrize(("call", "fragments"), BAD)
def test_bad_input_names_argument_got_and_expected(call, fragments) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))


# --- speculative sampling --------------------------------------------------------------------


@pytest.mark.parametrize(("p", "q"), [
    ([0.5, 0.3, 0.2, 0.0], [0.1, 0.1, 0.4, 0.4]),  # q proposes a token p never writes
    ([0.0, 0.0, 0.5, 0.5], [0.5, 0.5, 0.0, 0.0]),  # disjoint: every proposal refused
    ([0.25, 0.25, 0.25, 0.25], [0.25, 0.25, 0.25, 0.25]),  # equal: every proposal kept
])
def test_the_rule_writes_tokens_distributed_as_p(p: list[float], q: list[float]) -> None:
    g = torch.Generator().manual_seed(0)
    N = 100_000
    P = torch.tensor([p], dtype=torch.float64).expand(N, 4)
    Q = torch.tensor([q], dtype=torch.float64).expand(N, 4)
    proposal = torch.multinomial(Q, 1, generator=g)[:, 0]
    tokens, kept = accept_or_resample(P, Q, proposal, g)
    statistic, dof, p_value = goodness_of_fit(torch.bincount(tokens, minlength=4), P[0])
    assert p_value > 1e-4, (statistic, dof)
    beta = float(torch.minimum(P[0], Q[0]).sum())
    assert abs(float(kept.double().mean()) - beta) < 5 * (beta * (1 - beta) / N) ** 0.5 + 1e-12


def test_goodness_of_fit_rejects_the_draft_distribution() -> None:
    """The same test has the power to see a wrong rule: keeping every proposal writes q."""
    g = torch.Generator().manual_seed(0)
    q = torch.tensor([0.1, 0.1, 0.4, 0.4], dtype=torch.float64)
    counts = torch.bincount(torch.multinomial(q, 5000, replacement=True, generator=g),
                            minlength=4)
    assert goodness_of_fit(counts, torch.tensor([0.5, 0.3, 0.2, 0.0]))[2] == 0.0
    assert goodness_of_fit(counts, torch.tensor([0.15, 0.15, 0.35, 0.35]))[2] < 1e-10
    assert goodness_of_fit(counts, q)[2] > 1e-3


def test_speculative_sampling_writes_the_models_joint_distribution() -> None:
    """Three tokens over a vocabulary of 3, from two random models: the 27 sequences' counts
    against the model's exact probabilities (chained over the 27 continuations)."""
    model = _model(0, vocab_size=3, d_model=8, num_heads=2, num_kv_heads=2, num_layers=1)
    draft = _model(5, vocab_size=3, d_model=8, num_heads=2, num_kv_heads=1, num_layers=1)
    prompt = torch.tensor([[0, 2]])
    sequences = torch.tensor(list(product(range(3), repeat=3)))  # (27, 3)
    with torch.no_grad():
        full = torch.cat((prompt.expand(27, 2), sequences), 1)
        p = torch.softmax(model(full)[:, 1:4], -1)  # (27, 3, V): p(x_i | before)
    exact = p.gather(2, sequences[:, :, None])[..., 0].prod(1)  # (27,)
    g = torch.Generator().manual_seed(1)
    N = 1500
    counts = torch.zeros(27, dtype=torch.long)
    passes = 0
    for _ in range(N):
        result = speculative_sample(model, draft, prompt, 3, k=2, generator=g)
        x = result.tokens[0, 2:]
        counts[int(9 * x[0] + 3 * x[1] + x[2])] += 1
        passes += result.model_passes
    statistic, dof, p_value = goodness_of_fit(counts, exact)
    assert dof == 26 and p_value > 1e-4, statistic
    assert N <= passes < 3 * N  # fewer passes than tokens


def test_expected_tokens_per_pass() -> None:
    assert expected_tokens_per_pass(0.0, 4) == 1.0
    assert expected_tokens_per_pass(1.0, 4) == 5.0
    alpha, k = 0.7, 3
    # the same count by simulation: kept proposals until the first refusal, plus one
    g = torch.Generator().manual_seed(0)
    kept = torch.rand(200_000, k, generator=g) < alpha
    simulated = float((kept.long().cumprod(1).sum(1) + 1).double().mean())
    assert abs(simulated - expected_tokens_per_pass(alpha, k)) < 0.01


SAMPLING_BAD = [
    (lambda: accept_or_resample(torch.ones(2, 3) / 3, torch.ones(2, 4) / 4, torch.zeros(2)),
     ["q", "(2, 3)", "(2, 4)"]),
    (lambda: accept_or_resample(torch.ones(2, 3) / 3, torch.tensor([[1.0, 0, 0]] * 2),
                                torch.tensor([1, 1])), ["proposal", "q(x) = 0", "drawn from q"]),
    (lambda: expected_tokens_per_pass(1.5, 2), ["alpha", "1.5", "[0, 1]"]),
    (lambda: goodness_of_fit(torch.ones(3), torch.ones(4) / 4), ["counts", "(3)", "(4)"]),
    (lambda: speculative_sample(_model(0), _model(1), torch.zeros(1, 3, dtype=torch.long), 4,
                                temperature=0.0), ["temperature", "0"]),
]


@pytest.mark.parametrize(("call", "fragments"), SAMPLING_BAD)
def test_sampling_bad_input_names_argument_got_and_expected(call, fragments) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
