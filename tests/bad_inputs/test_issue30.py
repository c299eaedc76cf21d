"""Every example of issue 30, as a reader met it, with the answer it must get.

Each case is one call the issue names: a silent NaN from finite input, a wrong answer without
an error, torch's traceback instead of attnlib's message, a cost that followed an argument. The
catalogue (test_catalogue.py) makes these mistakes and many more structurally; these cases keep
the issue's own examples readable in one place.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

from .harness import api, seeded

F16 = torch.float16
XFAIL: set[str] = set()  # cases not fixed yet (strict: a fixed case must leave the set)


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def qkv(L: int = 3, S: int = 5, E: int = 4, fill: float | None = None,
        dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 2, n, e, generator=gen) for n, e in ((L, E), (S, E), (S, 6)))
    if fill is not None:
        q, k = torch.full_like(q, fill), torch.full_like(k, fill)
    return q.to(dtype), k.to(dtype), v.to(dtype)


def refuses(error: type[Exception], name: str, call: Callable[[], object]) -> None:
    """``call()`` raises ``error`` (exactly) and its message names ``name``."""
    with pytest.raises(error) as caught:
        call()
    assert type(caught.value) is error, f"{type(caught.value).__name__}: {caught.value}"
    assert name in str(caught.value), str(caught.value)


def finite(result: Any) -> None:
    tensors = result if isinstance(result, tuple | list) else [result]
    for t in tensors:
        if isinstance(t, torch.Tensor) and t.is_floating_point():
            assert bool(torch.isfinite(t).all()), f"non-finite result of shape {tuple(t.shape)}"


def tiny_transformer() -> Any:
    config = api("TransformerConfig")(10, 12, d_model=8, num_heads=2, num_encoder_layers=1,
                                      num_decoder_layers=1, d_ff=16, dropout=0.0, max_len=8)
    return seeded(lambda: api("Transformer")(config)).eval()


def tiny_lm(**changes: Any) -> Any:
    config = api("DecoderLMConfig")(**{"vocab_size": 12, "d_model": 8, "num_heads": 2,
                                       "num_kv_heads": 1, "num_layers": 1, "d_ff": 16,
                                       "max_len": 12, **changes})
    return seeded(lambda: api("DecoderLM")(config)).eval()


SRC, SRC_LENGTHS = torch.tensor([[3, 4, 5], [6, 7, 0]]), torch.tensor([3, 2])

# --- 1. silent NaN from finite input ------------------------------------------------------------


def _linear_all_minus_20() -> None:
    for name in ("linear_attention", "linear_attention_quadratic"):
        finite(api(name)(*qkv(fill=-20.0)))
        finite(api(name)(*qkv(S=3, fill=-20.0), is_causal=True))


def _linear_large_queries() -> None:
    q, k, v = qkv()
    for name in ("linear_attention", "linear_attention_quadratic"):
        finite(api(name)(q * 3e4, k, v))


def _linear_empty() -> None:
    q, k, v = qkv()
    for name in ("linear_attention", "linear_attention_quadratic"):
        for args in ((q, k[..., :0, :], v[..., :0, :]), (q[..., :0], k[..., :0], v)):
            try:
                finite(api(name)(*args))
            except ValueError as error:
                assert "key" in str(error) or "query" in str(error)


def _lm_loss_all_ignored() -> None:
    logits = torch.randn(2, 3, 12)
    try:
        finite(api("lm_loss")(logits, torch.full((2, 3), -100)))
    except ValueError as error:
        assert "targets" in str(error)


def _sdpa_weights_float16() -> None:
    q, k, v = qkv(dtype=F16)
    q, k = q.sign() * 300, k.sign() * 300  # scores of 4 * 300² / 2 overflow float16
    sdpa = api("scaled_dot_product_attention")
    finite(sdpa(q, k, v))
    out, weights = sdpa(q, k, v, need_weights=True)
    finite((out, weights))
    assert torch.allclose(out.float(), sdpa(q, k, v).float(), atol=1e-2)


def _empty_E() -> None:
    q, k, v = qkv(S=3)
    q0, k0 = q[..., :0], k[..., :0]
    for call in (lambda: api("ScaledDotScore")()(q0[0], k0[0]),
                 lambda: api("KeyValueAttention")(api("ScaledDotScore")())(q0[0], k0[0], v[0]),
                 lambda: api("sliding_window_attention")(q0, k0, v, 2)):
        try:
            finite(call())
        except ValueError as error:
            assert "query" in str(error) or "key" in str(error)


# --- 2. a wrong answer, no error ----------------------------------------------------------------


def _cached_decoder_layer_float_mask() -> None:
    layer = seeded(lambda: api("DecoderLayer")(8, 2, 16, dropout=0.0)).eval()
    memory, x = torch.randn(2, 5, 8), torch.randn(2, 1, 8)
    pad = torch.tensor([[True] * 4 + [False], [True] * 3 + [False] * 2])
    uncached = layer(x, memory, memory_key_padding_mask=pad, need_weights=True)
    cached = layer(x, None, cache=layer.init_cache(memory), memory_key_padding_mask=pad,
                   need_weights=True)
    assert torch.allclose(uncached[0], cached[0], atol=1e-6)
    for call in (lambda: layer(x, memory, memory_key_padding_mask=pad.float()),
                 lambda: layer(x, None, cache=layer.init_cache(memory),
                               memory_key_padding_mask=pad.float())):
        refuses(TypeError, "memory_key_padding_mask", call)


def _generate_past_max_len() -> None:
    refuses(ValueError, "max_len", lambda: api("generate")(
        tiny_lm(), torch.ones(1, 3, dtype=torch.long), 10))


def _kernel_bandwidth_and_mask() -> None:
    x = torch.linspace(0, 1, 4)
    pts = torch.randn(4, 2)
    refuses(ValueError, "bandwidth", lambda: api("kernel_scores")(pts, pts, torch.ones(2)))
    refuses(ValueError, "bandwidth", lambda: api("nadaraya_watson")(pts, pts, x, torch.ones(2)))
    refuses(ValueError, "attn_mask", lambda: api("nadaraya_watson")(
        x, x, x, attn_mask=torch.ones(2, 4, 4, dtype=torch.bool)))


def _scale_and_is_causal() -> None:
    q, k, v = qkv()
    for name in ("naive_attention", "tiled_attention"):
        for scale in (0.0, -1.0, math.nan, math.inf):
            refuses(ValueError, "scale", lambda n=name, s=scale: api(n)(q, k, v, scale=s))
        refuses(TypeError, "scale", lambda n=name: api(n)(q, k, v, scale=True))
        refuses(TypeError, "is_causal", lambda n=name: api(n)(q, k, v, is_causal="no"))
    refuses(TypeError, "is_causal", lambda: api("grouped_query_attention")(
        q, k[:, :1], v[:, :1], is_causal="no"))


def _float_ids_and_values() -> None:
    model = tiny_transformer()
    for name in ("decoding.greedy_decode", "beam_search"):
        refuses(TypeError, "bos_id", lambda n=name: api(n)(model, SRC, SRC_LENGTHS, 4,
                                                           bos_id=1.5))
    refuses(ValueError, "noise", lambda: api("make_regression_data")(noise=math.nan))
    refuses(TypeError, "ignore_index", lambda: api("LabelSmoothingLoss")(ignore_index="pad"))


# --- 3. torch's error instead of attnlib's ------------------------------------------------------


def _dtypes() -> None:
    x64 = torch.ones(2, 3, 8, dtype=torch.float64)
    xi = torch.ones(2, 3, 8, dtype=torch.long)
    calls = {
        "query": [lambda: api("AdditiveScore")(8, 8, 4)(x64, x64),
                  lambda: api("BilinearScore")(8, 8)(x64, x64),
                  lambda: api("KeyValueAttention")(api("AdditiveScore")(8, 8, 4))(x64, x64, x64)],
        "x": [lambda: api("FeedForward")(8, 16)(x64),
              lambda: api("GroupedQueryAttention")(8, 2, 1)(x64),
              lambda: api("GroupedQueryAttention")(8, 2, 1)(xi),
              lambda: api("EncoderLayer")(8, 2, 16, norm_first=True)(x64)],
        "memory": [lambda: api("DecoderLayer")(8, 2, 16).init_cache(x64)],
        "scores": [lambda: api("softmax_with_temperature")(xi, 1.0),
                   lambda: api("softmax_with_temperature")(xi > 0, 1.0)],
        "dtype": [lambda: api("sinusoidal_encoding")(4, 8, dtype=torch.int64),
                  lambda: api("alibi_bias")(torch.arange(3), torch.arange(3), torch.ones(2),
                                            dtype=torch.int64)],
    }
    for name, group in calls.items():
        for call in group:
            refuses(TypeError, name, call)


def _devices() -> None:
    q, k, v = qkv()
    mask = torch.ones(3, 5, dtype=torch.bool)
    sdpa = api("scaled_dot_product_attention")
    refuses(ValueError, "key", lambda: sdpa(q, k.to("meta"), v))
    refuses(ValueError, "attn_mask", lambda: sdpa(q, k, v, mask.to("meta")))
    refuses(ValueError, "key", lambda: api("naive_attention")(q, k.to("meta"), v))
    refuses(ValueError, "x", lambda: api("FeedForward")(8, 16)(torch.ones(2, 3, 8,
                                                                           device="meta")))


def _tiled_broadcast() -> None:
    q, k, v = qkv()
    tiled = api("tiled_attention")(q[:1], k, v, block_size_q=2, block_size_k=2)
    assert torch.allclose(tiled, api("naive_attention")(q[:1].expand_as(q), k, v), atol=1e-6)


def _small_masks() -> None:
    q, k, v = qkv()
    sdpa = api("scaled_dot_product_attention")
    full = sdpa(q, k, v)
    assert torch.allclose(sdpa(q, k, v, torch.tensor(True)), full, atol=1e-6)
    row = torch.tensor([True, True, False, True, True])
    assert torch.allclose(sdpa(q, k, v, row), sdpa(q, k, v, row.expand(3, 5)), atol=1e-6)
    mha = seeded(lambda: api("MultiHeadAttention")(8, 2))
    x = torch.randn(2, 3, 8)
    assert torch.allclose(mha(x, x, x, attn_mask=torch.tensor(True))[0], mha(x, x, x)[0])


def _ids_and_caches() -> None:
    model = tiny_transformer()
    refuses(ValueError, "bos_id", lambda: api("decoding.greedy_decode")(
        model, SRC, SRC_LENGTHS, 4, bos_id=50))
    refuses(ValueError, "pad_id", lambda: api("Seq2SeqConfig")(10, 12, pad_id=10))
    s2s = seeded(lambda: api("Seq2Seq")(api("Seq2SeqConfig")(10, 12, 4, 4, 4)))
    refuses(TypeError, "tgt_in", lambda: s2s(SRC, SRC_LENGTHS, torch.ones(2, 3)))
    layer = seeded(lambda: api("DecoderLayer")(8, 2, 16, dropout=0.0)).eval()
    cache = layer.init_cache(torch.randn(2, 5, 8))
    refuses(TypeError, "index", lambda: cache.reorder([1, 0]))
    refuses(ValueError, "cache", lambda: layer(torch.randn(1, 1, 8), None, cache=cache))
    lm = tiny_lm()
    lm_cache = api("LMCache")()
    lm(torch.ones(2, 2, dtype=torch.long), lm_cache)
    refuses(ValueError, "cache", lambda: lm(torch.ones(1, 1, dtype=torch.long), lm_cache))
    gqa = seeded(lambda: api("GroupedQueryAttention")(8, 2, 1))
    past = (torch.randn(1, 1, 2, 4), torch.randn(1, 1, 2, 4))
    refuses(ValueError, "past", lambda: gqa(torch.randn(2, 3, 8), None, past))
    refuses(ValueError, "tgt_lengths", lambda: api("make_masks")(
        torch.tensor([3, 2]), 3, torch.tensor([2, 2, 1]), 2))


# --- 4. cost that follows an argument -----------------------------------------------------------


def _cost() -> None:
    peak = api("peak_memory")
    q = torch.randn(1, 1, 4, 8)
    assert peak(lambda: api("sliding_window_attention")(q, q, q, 4096)) < 2**20
    pe = api("SinusoidalPositionalEncoding")(8)
    assert peak(lambda: pe(torch.zeros(1, 3, 8), offset=10**6)) < 2**20


CASES: dict[str, Callable[[], None]] = {
    "1-linear-attention-all-minus-20": _linear_all_minus_20,
    "1-linear-attention-queries-3e4": _linear_large_queries,
    "1-linear-attention-S-or-E-zero": _linear_empty,
    "1-lm_loss-every-target-ignored": _lm_loss_all_ignored,
    "1-sdpa-need_weights-float16-300": _sdpa_weights_float16,
    "1-E-zero-scores-kv-sliding": _empty_E,
    "2-cached-DecoderLayer-float-padding-mask": _cached_decoder_layer_float_mask,
    "2-generate-past-max_len": _generate_past_max_len,
    "2-kernel-per-feature-bandwidth-and-mask-shape": _kernel_bandwidth_and_mask,
    "2-naive-tiled-gqa-scale-and-is_causal": _scale_and_is_causal,
    "2-bos_id-float-noise-nan-ignore_index-str": _float_ids_and_values,
    "3-dtypes-not-checked": _dtypes,
    "3-another-device": _devices,
    "3-tiled-attention-broadcast-batch": _tiled_broadcast,
    "3-0-d-and-(S,)-masks": _small_masks,
    "3-ids-configs-caches-make_masks": _ids_and_caches,
    "4-sliding-window-4096-and-sinusoids-at-1e6": _cost,
}


@pytest.mark.parametrize("case", [
    pytest.param(name, marks=pytest.mark.xfail(strict=True, reason="issue 30, not fixed yet"))
    if name in XFAIL else name for name in CASES])
def test_issue_30_example(case: str) -> None:
    CASES[case]()
