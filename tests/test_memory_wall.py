"""The memory-wall formulas against what the model computes (FlopCounterMode) and holds."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from attnlib.experiments import memory_wall as mw
from attnlib.models.decoder_lm import DecoderLM, DecoderLMConfig, LMCache

pytestmark = pytest.mark.usefixtures("one_thread")


def _model(**changes: object) -> DecoderLM:
    torch.manual_seed(0)
    config = DecoderLMConfig(**{"vocab_size": 26, "max_len": 64, **changes})  # type: ignore[arg-type]
    return DecoderLM(config, dtype=torch.float64).eval()


def _counted(model: DecoderLM, tokens: torch.Tensor, cache: LMCache) -> int:
    # the math backend writes attention as matrix products, which the counter sees
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), FlopCounterMode(display=False) as fc:
        model(tokens, cache)
    return int(fc.get_total_flops())


@pytest.mark.parametrize("changes", [{}, {"num_kv_heads": 1}, {"num_heads": 2, "num_kv_heads": 2, "d_ff": 48,
                                                                "num_layers": 3}])
@pytest.mark.parametrize("batch", [1, 3])
def test_decode_formula_equals_the_models_flops_and_bytes(changes: dict[str, int],
                                                         batch: int) -> None:
    model = _model(**changes)
    shape = mw.ModelShape.from_config(model.config)
    cache = LMCache()
    with torch.no_grad():
        model(torch.zeros(batch, 20, dtype=torch.long), cache)
    flops = _counted(model, torch.ones(batch, 1, dtype=torch.long), cache)
    cost = mw.decode_cost(shape, context=21, batch=batch, bytes_per_number=8)
    assert cost.flops == flops
    matrices = sum(p.numel() for name, p in model.named_parameters()
                   if p.ndim == 2)  # the projections, feed-forward and the tied embedding
    assert cost.weight_bytes == 8 * matrices
    assert cost.cache_bytes == cache.nbytes()
    assert shape.parameters() == matrices  # tied: the embedding counted once


def test_prefill_formula_equals_the_models_flops() -> None:
    model = _model(num_kv_heads=2)
    shape = mw.ModelShape.from_config(model.config)
    cache = LMCache()
    flops = _counted(model, torch.zeros(2, 9, dtype=torch.long), cache)
    # the counter counts the masked products in full: T x T scores, not T (T + 1) / 2
    T, N, H, E = 9, model.config.num_layers, model.config.num_heads, model.config.head_dim
    cost = mw.prefill_cost(shape, 9, batch=2, bytes_per_number=8)
    assert cost.flops - 2 * 4 * N * H * E * T * (T + 1) // 2 == flops - 2 * 4 * N * H * E * T * T
    assert cost.cache_bytes == cache.nbytes()


def test_a_window_caps_the_cache_and_the_attention_a_step_reads() -> None:
    """Review of chapter 9, finding 4: Mistral 7B v0.1's window was not passed to decode_cost,
    which charged it the cache of all 8192 positions."""
    mistral = mw.PUBLISHED["Mistral 7B"]
    assert mistral.window == 4096 and "v0.1" in mistral.name
    unwindowed = dataclasses.replace(mistral, window=None)
    at_8k = mw.decode_cost(mistral, 8192, batch=4)
    assert at_8k == mw.decode_cost(unwindowed, 4096, batch=4)
    assert at_8k.cache_bytes == mw.decode_cost(unwindowed, 8192, batch=4).cache_bytes // 2
    assert mw.prefill_cost(mistral, 100) == mw.prefill_cost(unwindowed, 100)
    longer = mw.prefill_cost(mistral, 5000).flops - mw.prefill_cost(mistral, 4999).flops
    assert longer == mw.decode_cost(mistral, 5000).flops  # the 5000th token sees 4096
    # the model's rolling cache holds what the formula says
    model = _model(window=8)
    shape = mw.ModelShape.from_config(model.config)
    cache = LMCache()
    with torch.no_grad():
        model(torch.zeros(2, 20, dtype=torch.long), cache)
        model(torch.ones(2, 1, dtype=torch.long), cache)
    assert shape.window == 8
    assert mw.decode_cost(shape, 21, batch=2, bytes_per_number=8).cache_bytes == cache.nbytes()


def test_docstring_states_the_intensity_of_the_weights() -> None:
    """Finding 19: the module said B / b FLOPs per byte; a multiply and an add make it 2B / b."""
    doc = " ".join((mw.__doc__ or "").split())
    assert "about 2B / b FLOPs per byte" in doc and "about B / b" not in doc
    shape = mw.PUBLISHED["Llama 3.1 8B"]
    weights_only = mw.decode_cost(shape, 1, batch=4)
    assert 2 * 4 / 2 == pytest.approx(weights_only.intensity, rel=0.01)


def test_published_parameter_counts_match_the_names() -> None:
    expected = {"Mistral 7B": 7.24e9, "Llama 3.1 8B": 8.03e9, "Llama 3.1 70B": 70.6e9,
                "Llama 3.1 405B": 405.8e9}
    for name, shape in mw.PUBLISHED.items():
        assert shape.parameters() == pytest.approx(expected[name], rel=0.01), name


def test_intensity_of_decoding_grows_with_the_batch_and_prefill_with_the_prompt() -> None:
    shape = mw.PUBLISHED["Llama 3.1 8B"]
    one, many = mw.decode_cost(shape, 1024, 1), mw.decode_cost(shape, 1024, 64)
    assert 0.9 < one.intensity < 1.1 < many.intensity
    assert mw.prefill_cost(shape, 2048).intensity > 500


def test_step_times_are_measured_for_each_batch() -> None:
    model = _model()
    seconds = mw.decode_step_times(model, [1, 4], context=8, new_tokens=3, repeats=1)
    assert len(seconds) == 2 and all(s > 0 for s in seconds)


BAD = [
    (lambda: mw.decode_cost(mw.PUBLISHED["Mistral 7B"], 0), ["context", "0", ">= 1"]),
    (lambda: mw.prefill_cost(mw.PUBLISHED["Mistral 7B"], 8, batch=0), ["batch", "0", ">= 1"]),
    (lambda: mw.decode_step_times(_model(), [1], context=64), ["context + new_tokens",
                                                               "max_len = 64", "64 + 1"]),
    (lambda: mw.decode_step_times(_model(), [0], context=4), ["batch_sizes[0]", "0", ">= 1"]),
]


@pytest.mark.parametrize(("call", "fragments"), BAD)
def test_bad_input_names_argument_got_and_expected(call, fragments) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
