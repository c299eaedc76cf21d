"""ALiBi's slopes and bias, and the decoder-only model with ALiBi instead of RoPE."""

from __future__ import annotations

import pytest
import torch

from attnlib.blocks.alibi import alibi_bias, alibi_slopes
from attnlib.experiments import lm_tasks as tasks
from attnlib.models.decoder_lm import DecoderLM, DecoderLMConfig, LMCache, generate

pytestmark = pytest.mark.usefixtures("one_thread")

F64 = torch.float64


def test_slopes_are_the_papers() -> None:
    assert torch.equal(alibi_slopes(8), torch.tensor([2.0 ** -(h + 1) for h in range(8)],
                                                     dtype=F64))
    assert torch.equal(alibi_slopes(4), torch.tensor([2.0 ** -(2 * (h + 1)) for h in range(4)],
                                                     dtype=F64))
    six = alibi_slopes(6)  # the 4 of a power of two, then every other of 8
    assert torch.equal(six[:4], alibi_slopes(4))
    assert torch.equal(six[4:], alibi_slopes(8)[0::2][:2])


def test_bias_values_and_mask() -> None:
    slopes = torch.tensor([0.5, 0.25], dtype=F64)
    pos = torch.arange(4)
    causal = pos[None, :] <= pos[:, None]
    bias = alibi_bias(pos, pos, slopes, causal, F64)
    assert bias.shape == (2, 4, 4)
    assert float(bias[0, 3, 1]) == -1.0 and float(bias[1, 3, 0]) == -0.75
    assert bool(torch.isneginf(bias[:, 0, 1]).all())
    # a decoding step: query at position 9 against keys 6..9
    step = alibi_bias(torch.tensor([9]), torch.arange(6, 10), slopes, dtype=F64)
    assert step[0, 0].tolist() == [-1.5, -1.0, -0.5, 0.0]


def test_softmax_equals_press_et_al_row_shift_form() -> None:
    """Press et al.'s code adds m_h * j (a shift constant along each row): same weights."""
    slopes = alibi_slopes(4)
    L = 7
    pos = torch.arange(L)
    causal = pos[None, :] <= pos[:, None]
    scores = torch.randn(4, L, L, dtype=F64)
    ours = torch.softmax(scores + alibi_bias(pos, pos, slopes, causal, F64), -1)
    shifted = (slopes[:, None, None] * pos[None, None, :]).masked_fill(~causal, float("-inf"))
    torch.testing.assert_close(ours, torch.softmax(scores + shifted, -1), atol=1e-14, rtol=0)


def _alibi_model() -> DecoderLM:
    torch.manual_seed(0)
    config = DecoderLMConfig(vocab_size=26, num_heads=4, max_len=64, alibi=True)
    return DecoderLM(config, dtype=F64).eval()


def test_alibi_model_has_no_rope_and_caches_like_the_full_pass() -> None:
    model = _alibi_model()
    assert all(block.attn.rope is None for block in model.blocks)
    tokens = tasks.echo_text(2, 20, 5, seed=1)
    with torch.no_grad():
        full = model(tokens)
        cache = LMCache()
        steps = [model(tokens[:, :8], cache)] + [model(tokens[:, i:i + 1], cache)
                                                 for i in range(8, 20)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-12, rtol=0)
    prompt = tokens[:, :6]
    assert torch.equal(generate(model, prompt, 10), generate(model, prompt, 10, use_cache=False))


def test_alibi_model_runs_past_any_trained_length() -> None:
    model = _alibi_model()
    with torch.no_grad():
        logits = model(torch.zeros(1, 64, dtype=torch.long))
    assert bool(torch.isfinite(logits).all())


BAD = [
    (lambda: alibi_slopes(0), ["num_heads", "0"]),
    (lambda: alibi_bias(torch.arange(3), torch.arange(3), torch.ones(2, 2)),
     ["slopes", "(2, 2)", "(H,)"]),
    (lambda: alibi_bias(torch.zeros(2, 3), torch.arange(3), torch.ones(2)),
     ["q_pos", "(2, 3)", "(L,)"]),
    (lambda: alibi_bias(torch.arange(3), torch.arange(3), torch.ones(2),
                        torch.ones(2, 2, dtype=torch.bool)), ["allowed", "(2, 2)", "(3, 3)"]),
    (lambda: DecoderLMConfig(vocab_size=5, alibi=1), ["alibi", "bool", "int"]),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("call", "fragments"), BAD)
def test_bad_input_names_argument_got_and_expected(call, fragments) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
