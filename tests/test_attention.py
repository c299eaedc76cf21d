"""Tests for attnlib.blocks.attention.scaled_dot_product_attention against PyTorch's, and its properties."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib.blocks.attention import _attend, scaled_dot_product_attention
from attnlib.blocks.masking import causal_mask, padding_mask

# Deterministic in CI: the same examples on every run.
PROPERTY = settings(deadline=None, max_examples=30, derandomize=True)

# float64: tight; float32: loose, since PyTorch's fused kernel sums in another order.
TOL = {torch.float32: 1e-5, torch.float64: 1e-10}

Tensors = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


def make_qkv(
    batch: tuple[int, ...], L: int, S: int, E: int, Ev: int, dtype: torch.dtype, seed: int = 0
) -> Tensors:
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(*batch, L, E, generator=g, dtype=dtype)
    k = torch.randn(*batch, S, E, generator=g, dtype=dtype)
    v = torch.randn(*batch, S, Ev, generator=g, dtype=dtype)
    return q, k, v


def make_case(name: str, dtype: torch.dtype) -> tuple[Tensors, dict[str, Any]]:
    """Inputs and keyword arguments for one comparison against PyTorch."""
    g = torch.Generator().manual_seed(1)
    if name == "no_mask_3d":
        return make_qkv((2,), 4, 4, 8, 8, dtype), {}
    if name == "no_mask_heads_l_ne_s":
        return make_qkv((2, 3), 4, 6, 8, 5, dtype), {}
    if name == "custom_scale":
        return make_qkv((2, 3), 4, 6, 8, 5, dtype), {"scale": 0.3}
    if name == "bool_mask_heads":
        qkv = make_qkv((2, 3), 4, 6, 8, 5, dtype)
        mask = torch.rand(2, 3, 4, 6, generator=g) < 0.6
        mask[..., 0] = True
        return qkv, {"attn_mask": mask}
    if name == "bool_mask_fully_masked_rows":
        qkv = make_qkv((2, 3), 4, 6, 8, 5, dtype)
        mask = torch.rand(2, 3, 4, 6, generator=g) < 0.6
        mask[0, 1, 2] = False
        mask[1, :, 0] = False
        return qkv, {"attn_mask": mask}
    if name == "padding_mask_broadcast":
        qkv = make_qkv((2, 3), 4, 6, 8, 5, dtype)
        return qkv, {"attn_mask": padding_mask(torch.tensor([6, 2]), 6)}  # (B, 1, 1, S)
    if name == "float_mask":
        qkv = make_qkv((2, 3), 4, 6, 8, 5, dtype)
        mask = torch.randn(4, 6, generator=g, dtype=dtype)  # (L, S), a bias
        mask[0, 2:] = float("-inf")
        return qkv, {"attn_mask": mask}
    if name == "causal":
        return make_qkv((2, 3), 5, 5, 8, 5, dtype), {"is_causal": True}
    if name == "causal_l_lt_s":
        return make_qkv((2, 3), 3, 6, 8, 5, dtype), {"is_causal": True}
    if name == "causal_l_gt_s":
        return make_qkv((2,), 6, 3, 8, 5, dtype), {"is_causal": True}
    raise AssertionError(name)


CASES = [
    "no_mask_3d",
    "no_mask_heads_l_ne_s",
    "custom_scale",
    "bool_mask_heads",
    "bool_mask_fully_masked_rows",
    "padding_mask_broadcast",
    "float_mask",
    "causal",
    "causal_l_lt_s",
    "causal_l_gt_s",
]


def forward_backward(
    fn: Any, qkv: Tensors, kwargs: dict[str, Any], grad_out_seed: int = 2
) -> list[torch.Tensor]:
    q, k, v = (t.clone().requires_grad_() for t in qkv)
    out = fn(q, k, v, **kwargs)
    if isinstance(out, tuple):
        out = out[0]
    g = torch.Generator().manual_seed(grad_out_seed)
    grad_out = torch.randn(out.shape, generator=g, dtype=out.dtype)
    grads = torch.autograd.grad(out, (q, k, v), grad_out)
    return [out.detach(), *grads]


@pytest.mark.parametrize("need_weights", [False, True], ids=["fused", "explicit"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case", CASES)
def test_matches_pytorch_forward_and_backward(
    case: str, dtype: torch.dtype, need_weights: bool
) -> None:
    qkv, kwargs = make_case(case, dtype)
    ref = forward_backward(F.scaled_dot_product_attention, qkv, kwargs)
    ours = forward_backward(
        lambda q, k, v, **kw: scaled_dot_product_attention(
            q, k, v, **kw, need_weights=need_weights
        ),
        qkv,
        kwargs,
    )
    for name, a, b in zip(
        ["output", "grad query", "grad key", "grad value"], ours, ref, strict=True
    ):
        # Compare only where PyTorch defines a value (torch 2.13 defines all: see the test below).
        defined = ~torch.isnan(b)
        assert a.shape == b.shape, name
        torch.testing.assert_close(a[defined], b[defined], atol=TOL[dtype], rtol=0, msg=name)


def test_pytorch_gives_zeros_for_fully_masked_rows() -> None:
    """The comparison above relies on this: torch 2.13 CPU SDPA gives zeros, not NaN."""
    q, k, v = (t.requires_grad_() for t in make_qkv((2,), 3, 4, 5, 6, torch.float32))
    mask = torch.ones(2, 3, 4, dtype=torch.bool)
    mask[1, 0] = False
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert torch.all(out[1, 0] == 0)
    out.sum().backward()
    assert q.grad is not None and torch.all(q.grad[1, 0] == 0)


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_fully_masked_rows_give_zero_output_and_finite_grads(
    dtype: torch.dtype, need_weights: bool
) -> None:
    q, k, v = (t.requires_grad_() for t in make_qkv((2, 2), 3, 4, 5, 6, dtype))
    mask = torch.rand(2, 2, 3, 4, generator=torch.Generator().manual_seed(0)) < 0.5
    mask[0, 1, 2] = False
    mask[1, :, 0] = False
    for m in (mask, torch.zeros(mask.shape, dtype=dtype).masked_fill(~mask, float("-inf"))):
        result = scaled_dot_product_attention(q, k, v, m, need_weights=need_weights)
        out = result[0] if isinstance(result, tuple) else result
        assert not torch.isnan(out).any()
        assert torch.all(out[0, 1, 2] == 0) and torch.all(out[1, :, 0] == 0)
        if isinstance(result, tuple):
            assert torch.all(result[1][0, 1, 2] == 0) and torch.all(result[1][1, :, 0] == 0)
        grads = torch.autograd.grad(out.sum(), (q, k, v))
        assert all(torch.isfinite(g).all() for g in grads)


def test_need_weights_returns_weights_that_reproduce_output() -> None:
    q, k, v = make_qkv((2, 3), 4, 6, 8, 5, torch.float64)
    out, weights = scaled_dot_product_attention(q, k, v, is_causal=True, need_weights=True)
    assert weights.shape == (2, 3, 4, 6)
    torch.testing.assert_close(out, weights @ v, atol=1e-12, rtol=0)
    assert torch.all(weights[..., ~causal_mask(4, 6)] == 0)
    fused = scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(fused, out, atol=1e-10, rtol=0)


@pytest.mark.parametrize("mask_kind", ["none", "bool", "float"])
def test_core_is_the_formula_and_the_explicit_path(mask_kind: str) -> None:
    """_attend, the listing of chapter 3: softmax(Q K^T scale + M) V and the weights, and
    exactly what the checked entry point returns with need_weights=True."""
    q, k, v = make_qkv((2, 3), 4, 6, 8, 5, torch.float64)
    allowed = torch.rand(2, 3, 4, 6, generator=torch.Generator().manual_seed(3)) < 0.6
    allowed[0, 1, 2] = False  # one query may attend to no key
    bias = torch.zeros(allowed.shape, dtype=torch.float64).masked_fill(~allowed, float("-inf"))
    mask = {"none": None, "bool": allowed, "float": bias}[mask_kind]
    out, weights = _attend(q, k, v, mask, 0.3, 0.0)
    scores = q @ k.transpose(-2, -1) * 0.3  # (B, H, L, S)
    if mask is not None:
        scores = scores + bias
    expected = torch.softmax(scores, dim=-1)
    if mask is not None:
        expected = expected.nan_to_num(0.0)  # the empty row: zeros, not 0/0
        assert torch.all(weights[0, 1, 2] == 0) and torch.all(out[0, 1, 2] == 0)
    torch.testing.assert_close(weights, expected, atol=1e-12, rtol=0)
    torch.testing.assert_close(out, expected @ v, atol=1e-12, rtol=0)
    public = scaled_dot_product_attention(q, k, v, mask, scale=0.3, need_weights=True)
    assert torch.equal(public[0], out) and torch.equal(public[1], weights)


def test_broadcast_batch_dims_like_pytorch() -> None:
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 1, 3, 4, generator=g, dtype=torch.float64)
    k = torch.randn(1, 5, 4, generator=g, dtype=torch.float64)
    v = torch.randn(3, 5, 6, generator=g, dtype=torch.float64)
    mask = torch.rand(2, 1, 3, 5, generator=g) < 0.7  # (B, 1, L, S)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    out, weights = scaled_dot_product_attention(q, k, v, mask, need_weights=True)
    assert out.shape == ref.shape == (2, 3, 3, 6) and weights.shape == (2, 1, 3, 5)
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=0)
    torch.testing.assert_close(scaled_dot_product_attention(q, k, v, mask), ref, atol=1e-10, rtol=0)


@pytest.mark.parametrize("need_weights", [False, True])
def test_mask_may_not_enlarge_the_scores(need_weights: bool) -> None:
    """PyTorch fails on a mask with batch dims that query @ key.T lacks; we say why, first."""
    q = torch.randn(2, 1, 3, 4)
    k, v = torch.randn(1, 5, 4), torch.randn(3, 5, 6)
    mask = torch.ones(2, 3, 3, 5, dtype=torch.bool)
    with pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    with pytest.raises(ValueError, match=r"attn_mask of shape \(2, 3, 3, 5\).*\(2, 1, 3, 5\)"):
        scaled_dot_product_attention(q, k, v, mask, need_weights=need_weights)


def test_dropout_explicit_path() -> None:
    q, k, v = make_qkv((2, 3), 4, 6, 8, 5, torch.float64)
    _, plain = scaled_dot_product_attention(q, k, v, need_weights=True)
    torch.manual_seed(0)
    out, dropped = scaled_dot_product_attention(q, k, v, dropout_p=0.25, need_weights=True)
    zero = dropped == 0
    assert zero.any() and (~zero).any()
    torch.testing.assert_close(dropped[~zero], plain[~zero] / 0.75, atol=1e-12, rtol=0)
    torch.testing.assert_close(out, dropped @ v, atol=1e-12, rtol=0)


def test_dropout_fused_path_is_pytorchs() -> None:
    q, k, v = make_qkv((2, 3), 4, 6, 8, 5, torch.float32)
    torch.manual_seed(0)
    ours = scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    torch.manual_seed(0)
    ref = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    assert torch.equal(ours, ref)
    assert not torch.allclose(ours, scaled_dot_product_attention(q, k, v))


# ---------------------------------------------------------------- properties


@st.composite
def attention_inputs(draw: st.DrawFn) -> tuple[Tensors, torch.Tensor]:
    """Float64 (B, H, L, E), (B, H, S, E), (B, H, S, Ev) and a bool mask (B, H, L, S) or (L, S)."""
    B, H = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    L, S = draw(st.integers(1, 4)), draw(st.integers(1, 5))
    E, Ev = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    seed = draw(st.integers(0, 2**31 - 1))
    p_keep = draw(st.sampled_from([0.0, 0.2, 0.6, 1.0]))
    qkv = make_qkv((B, H), L, S, E, Ev, torch.float64, seed)
    g = torch.Generator().manual_seed(seed + 1)
    shape = (B, H, L, S) if draw(st.booleans()) else (L, S)
    mask = torch.rand(shape, generator=g) < p_keep
    return qkv, mask


@PROPERTY
@given(attention_inputs())
def test_property_rows_sum_to_one_masked_zero_dead_rows_zero(
    inputs: tuple[Tensors, torch.Tensor],
) -> None:
    (q, k, v), mask = inputs
    out, weights = scaled_dot_product_attention(q, k, v, mask, need_weights=True)
    full = mask.expand(weights.shape)
    alive = full.any(-1)  # (B, H, L)
    sums = weights.sum(-1)[alive]
    torch.testing.assert_close(sums, torch.ones_like(sums), atol=1e-12, rtol=0)
    assert torch.all(weights[~full] == 0)
    assert torch.all(weights[~alive] == 0) and torch.all(out[~alive] == 0)
    fused = scaled_dot_product_attention(q, k, v, mask)
    torch.testing.assert_close(fused, out, atol=1e-10, rtol=0)


@PROPERTY
@given(attention_inputs(), st.booleans(), st.booleans())
def test_property_inputs_not_modified(
    inputs: tuple[Tensors, torch.Tensor], as_float: bool, need_weights: bool
) -> None:
    (q, k, v), mask = inputs
    m = (
        torch.zeros(mask.shape, dtype=q.dtype).masked_fill(~mask, float("-inf"))
        if as_float
        else mask
    )
    before = [t.clone() for t in (q, k, v, m)]
    scaled_dot_product_attention(q, k, v, m, need_weights=need_weights)
    scaled_dot_product_attention(q, k, v, need_weights=need_weights, is_causal=True, dropout_p=0.3)
    for t, b in zip((q, k, v, m), before, strict=True):
        assert torch.equal(t, b)


# ---------------------------------------------------------------- bad input


def _qkv() -> Tensors:
    return make_qkv((2, 3), 4, 6, 8, 5, torch.float32)


def _sdpa(**overrides: Any) -> Any:
    q, k, v = _qkv()
    args: dict[str, Any] = {"query": q, "key": k, "value": v, **overrides}
    return scaled_dot_product_attention(**args)


@pytest.mark.parametrize(
    ("overrides", "error", "match"),
    [
        (
            {"key": torch.randn(2, 3, 6, 7)},
            ValueError,
            r"query.*key.*size E.*\(2, 3, 4, 8\).*\(2, 3, 6, 7\)",
        ),
        (
            {"value": torch.randn(2, 3, 7, 5)},
            ValueError,
            r"key.*value.*length S.*\(2, 3, 6, 8\).*\(2, 3, 7, 5\)",
        ),
        (
            {"query": torch.randn(8)},
            ValueError,
            r"query must have at least 2 dimensions \(\.\.\., L, E\), got shape \(8\)",
        ),
        (
            {"query": torch.randn(4, 4, 8)},
            ValueError,
            r"batch dimensions.*query.*\(4, 4, 8\).*key.*\(2, 3, 6, 8\)",
        ),
        (
            {"key": torch.randn(2, 3, 6, 8, dtype=torch.float64)},
            TypeError,
            r"key must have query's dtype torch.float32, got torch.float64",
        ),
        (
            {"value": torch.ones(2, 3, 6, 5, dtype=torch.long)},
            TypeError,
            r"value.*floating.*torch.int64",
        ),
        (
            {"attn_mask": torch.ones(4, 5, dtype=torch.bool)},
            ValueError,
            r"attn_mask of shape \(4, 5\) does not broadcast.*\(\.\.\., L, S\) \(2, 3, 4, 6\)",
        ),
        ({"attn_mask": torch.ones(4, 6, dtype=torch.int64)}, TypeError, r"attn_mask.*torch.int64"),
        (
            {"attn_mask": torch.zeros(4, 6, dtype=torch.float64)},
            TypeError,
            r"attn_mask.*torch.float64.*torch.float32",
        ),
        (
            {"attn_mask": torch.ones(4, 6, dtype=torch.bool), "is_causal": True},
            ValueError,
            r"attn_mask and is_causal",
        ),
        ({"is_causal": 1}, TypeError, r"is_causal must be a bool, got int"),
        ({"dropout_p": 1.0}, ValueError, r"dropout_p must be in \[0, 1\), got 1.0"),
        ({"dropout_p": -0.1}, ValueError, r"dropout_p must be in \[0, 1\), got -0.1"),
        ({"scale": 0.0}, ValueError, r"scale must be finite and > 0, got 0.0"),
        ({"scale": -2.0}, ValueError, r"scale must be finite and > 0, got -2.0"),
        ({"query": [[1.0]]}, TypeError, r"query must be a torch.Tensor, got list"),
    ],
)
@pytest.mark.parametrize("need_weights", [False, True])
def test_bad_input(
    overrides: dict[str, Any], error: type[Exception], match: str, need_weights: bool
) -> None:
    with pytest.raises(error, match=match):
        _sdpa(**overrides, need_weights=need_weights)
