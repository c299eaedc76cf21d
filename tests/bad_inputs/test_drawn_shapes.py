"""Shapes, dtypes, masks and values drawn by hypothesis, for the one query/key/value check.

The catalogue (test_catalogue.py) mutates one valid call argument by argument; here hypothesis
draws whole calls: batch dimensions that broadcast or do not, empty dimensions, every mask kind
and shape, float16 to float64, values up to 1e4 or all equal to +-20. Every attention function
must end each call in a ValueError or TypeError that names one of its arguments, or in a finite
result equal to the same attention computed in float64 by the formula.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor

from .harness import api

PROPERTY = settings(deadline=None, max_examples=150, derandomize=True)
NAMES = ("query", "key", "value", "attn_mask", "is_causal", "scale", "mask")


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _reference(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, causal: bool) -> Tensor:
    """softmax(q k^T / sqrt(E) + M) v in float64, by the formula; a row with no key gives 0."""
    q, k, v = q.double(), k.double(), v.double()
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    L, S = scores.shape[-2:]
    if causal:
        mask = torch.ones(L, S, dtype=torch.bool).tril()
    if mask is not None:
        scores = (scores.masked_fill(~mask, -math.inf) if mask.dtype == torch.bool
                  else scores + mask.double())
    dead = torch.isneginf(scores).all(-1, keepdim=True)
    weights = torch.softmax(scores.masked_fill(dead, 0.0), -1).masked_fill(dead, 0.0)
    return weights @ v


@st.composite
def calls(draw: st.DrawFn) -> dict[str, object]:
    """query, key, value (batch dimensions that may broadcast, sizes that may be 0), a mask of
    any kind and shape, a dtype and a kind of values."""
    batch = draw(st.lists(st.integers(1, 3), min_size=0, max_size=2))

    def shrink(dims: list[int]) -> tuple[int, ...]:  # some batch sizes 1 (they broadcast)
        return tuple(1 if draw(st.booleans()) else d for d in dims)

    L, S, E, F = (draw(st.integers(0, 4)) for _ in range(4))
    if draw(st.integers(0, 9)) == 0:  # now and then a batch that does not broadcast
        batch_k = tuple(d + 1 for d in batch)
    else:
        batch_k = shrink(batch)
    dtype = draw(st.sampled_from([torch.float16, torch.float16, torch.bfloat16, torch.float32,
                                  torch.float64]))
    kind = draw(st.sampled_from(["normal", "1e4", "+20", "-20", "300", "300"]))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))

    def values(*shape: int) -> Tensor:
        t = torch.randn(shape, generator=gen, dtype=torch.float64)
        t = {"normal": t, "1e4": t * 1e4 / max(float(t.abs().max()) if t.numel() else 1, 1e-9),
             "+20": torch.full_like(t, 20.0), "-20": torch.full_like(t, -20.0),
             "300": t.sign() * 300}[kind]
        return t.to(dtype)

    q = values(*shrink(batch), L, E)
    k = values(*batch_k, S, E)
    v = values(*batch_k, S, F)
    mask: Tensor | None = None
    mask_kind = draw(st.sampled_from(["none", "none", "bool", "bool", "float", "int", "nan",
                                      "other-dtype"]))
    if mask_kind != "none":
        shape = draw(st.sampled_from([(L, S), (S,), (), (1, L, S), (*batch, L, S), (L, S + 1)]))
        m = torch.rand(shape, generator=gen) < 0.7
        mask = {"bool": m, "float": torch.zeros(shape).masked_fill(~m, -math.inf).to(dtype),
                "int": m.long(), "nan": torch.full(shape, math.nan, dtype=dtype),
                "other-dtype": torch.zeros(shape, dtype=torch.float64 if dtype != torch.float64
                                           else torch.float32)}[mask_kind]
    causal = draw(st.booleans()) if mask is None else False
    return {"query": q, "key": k, "value": v, "mask": mask, "is_causal": causal, "kind": kind}


def _clear_or_right(call: Callable[[], Tensor], case: dict[str, object]) -> None:
    """A ValueError/TypeError naming an argument, or the reference's finite numbers."""
    try:
        out = call()
    except (ValueError, TypeError) as error:
        message = str(error)
        assert any(re.search(rf"(?<![\w.]){n}(?!\w)", message) for n in NAMES), message
        return
    q, k, v = (case[n] for n in ("query", "key", "value"))
    assert isinstance(q, Tensor) and isinstance(k, Tensor) and isinstance(v, Tensor)
    assert bool(torch.isfinite(out).all()), f"non-finite output for {case['kind']} input"
    mask = case["mask"]
    assert mask is None or isinstance(mask, Tensor)
    expected = _reference(q, k, v, mask, bool(case["is_causal"]))
    tolerance = {torch.float16: 2e-2, torch.bfloat16: 2e-2, torch.float32: 1e-4,
                 torch.float64: 1e-9}[q.dtype]
    scale = max(float(v.double().abs().max()) if v.numel() else 1.0, 1.0)
    assert out.shape == expected.shape
    assert torch.allclose(out.double(), expected, atol=tolerance * scale, rtol=tolerance)


@PROPERTY
@given(calls(), st.booleans())
def test_scaled_dot_product_attention_on_drawn_calls(case: dict[str, object], weights: bool
                                                     ) -> None:
    sdpa = api("scaled_dot_product_attention")

    def call() -> Tensor:
        out = sdpa(case["query"], case["key"], case["value"], case["mask"],
                   case["is_causal"], need_weights=weights)
        return out[0] if weights else out

    _clear_or_right(call, case)


@PROPERTY
@given(calls())
def test_naive_and_tiled_attention_on_drawn_calls(case: dict[str, object]) -> None:
    case = {**case, "mask": None}
    for name in ("naive_attention", "tiled_attention"):
        fn = api(name)
        _clear_or_right(lambda fn=fn: fn(case["query"], case["key"], case["value"],
                                         case["is_causal"]), case)


@st.composite
def head_calls(draw: st.DrawFn) -> dict[str, object]:
    """(B, H, n, E) queries, keys and values with hard values, for the linear forms."""
    B, H, n, E = (draw(st.integers(1, 3)) for _ in range(4))
    dtype = draw(st.sampled_from([torch.float16, torch.float32, torch.float64]))
    kind = draw(st.sampled_from(["normal", "1e4", "3e4", "+20", "-20", "-100"]))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    t = [torch.randn(B, H, n, E, generator=gen, dtype=torch.float64) for _ in range(3)]
    big = {"normal": 1.0, "1e4": 1e4, "3e4": 3e4}
    if kind in big:
        t[0], t[1] = t[0] * big[kind], t[1] * big[kind]
    else:
        t[0], t[1] = torch.full_like(t[0], float(kind)), torch.full_like(t[1], float(kind))
    return {"query": t[0].to(dtype), "key": t[1].to(dtype), "value": t[2].to(dtype),
            "causal": draw(st.booleans()), "chunk": draw(st.integers(1, 4))}


@PROPERTY
@given(head_calls())
def test_linear_attention_is_finite_and_equals_its_quadratic_form(case: dict[str, object]
                                                                   ) -> None:
    q, k, v = (case[n] for n in ("query", "key", "value"))
    assert isinstance(q, Tensor) and isinstance(k, Tensor) and isinstance(v, Tensor)
    causal = bool(case["causal"])
    chunked = api("linear_attention")(q, k, v, causal, case["chunk"])
    quadratic = api("linear_attention_quadratic")(q, k, v, causal)
    assert bool(torch.isfinite(chunked).all()) and bool(torch.isfinite(quadratic).all())
    # a weighted mean of the values: within their range
    assert float(chunked.double().abs().max()) <= float(v.double().abs().max()) * 1.01 + 1e-6
    tolerance = {torch.float16: 1e-2, torch.float32: 1e-4, torch.float64: 1e-10}[q.dtype]
    assert torch.allclose(chunked.double(), quadratic.double(), atol=tolerance, rtol=tolerance)


@PROPERTY
@given(head_calls(), st.integers(1, 6))
def test_sliding_window_attention_on_drawn_calls(case: dict[str, object], window: int
                                                 ) -> None:
    q, k, v = (case[n] for n in ("query", "key", "value"))
    assert isinstance(q, Tensor) and isinstance(k, Tensor) and isinstance(v, Tensor)
    out = api("sliding_window_attention")(q, k, v, window)
    n = q.shape[2]
    band = api("sliding_window_mask")(n, window)
    expected = _reference(q, k, v, band, False)
    tolerance = {torch.float16: 2e-2, torch.float32: 1e-4, torch.float64: 1e-9}[q.dtype]
    assert bool(torch.isfinite(out).all())
    assert torch.allclose(out.double(), expected, atol=tolerance * max(
        float(v.double().abs().max()), 1.0), rtol=tolerance)
