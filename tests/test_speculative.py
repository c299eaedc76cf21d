"""Greedy speculative decoding gives the model's own greedy tokens."""

from __future__ import annotations

import pytest
import torch

from attnlib.experiments import lm_tasks as tasks
from attnlib.models.decoder_lm import DecoderLM, DecoderLMConfig, generate
from attnlib.train.speculative import speculative_decode

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
