"""Tests for attnlib.blocks.masking: lengths to masks, causal masks, the masked softmax."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib.blocks.masking import (
    causal_mask,
    check_mask,
    float_mask,
    lengths_to_mask,
    masked_softmax,
    padding_mask,
    softmax_with_temperature,
)

# Deterministic in CI: the same examples on every run.
PROPERTY = settings(deadline=None, max_examples=40, derandomize=True)


@st.composite
def scores_and_mask(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor]:
    """Float64 scores (B, L, S) and a bool mask (B, L, S) or (B, 1, S), sometimes all False."""
    B = draw(st.integers(1, 3))
    L = draw(st.integers(1, 4))
    S = draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**31 - 1))
    p_keep = draw(st.sampled_from([0.0, 0.3, 0.7, 1.0]))
    per_query = draw(st.booleans())
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(B, L, S, generator=g, dtype=torch.float64) * 3
    mask = torch.rand(B, L if per_query else 1, S, generator=g) < p_keep
    return scores, mask


# ---------------------------------------------------------------- lengths, padding, causal


def test_lengths_to_mask_values() -> None:
    mask = lengths_to_mask(torch.tensor([0, 2, 4]), 4)
    expected = torch.tensor(
        [[False, False, False, False], [True, True, False, False], [True, True, True, True]]
    )
    assert mask.dtype == torch.bool
    assert torch.equal(mask, expected)


def test_lengths_to_mask_accepts_int32_and_zero_max_len() -> None:
    assert lengths_to_mask(torch.tensor([1, 0], dtype=torch.int32), 3).shape == (2, 3)
    assert lengths_to_mask(torch.tensor([0, 0]), 0).shape == (2, 0)


def test_padding_mask_shape_and_broadcast() -> None:
    lengths = torch.tensor([1, 3])
    mask = padding_mask(lengths, 3)
    assert mask.shape == (2, 1, 1, 3)
    assert torch.equal(mask[:, 0, 0], lengths_to_mask(lengths, 3))
    scores = torch.randn(2, 4, 5, 3)  # (B, H, L, S)
    weights = masked_softmax(scores, mask)
    assert torch.all(weights[0, :, :, 1:] == 0)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 4, 5))


@pytest.mark.parametrize(("L", "S"), [(4, 4), (3, 5), (5, 3), (1, 1), (0, 2)])
def test_causal_mask_matches_pytorch_is_causal(L: int, S: int) -> None:
    mask = causal_mask(L, S)
    assert mask.dtype == torch.bool and mask.shape == (L, S)
    assert torch.equal(mask, torch.ones(L, S, dtype=torch.bool).tril())
    if L and S:
        # Same as what SDPA does with is_causal=True.
        q, k, v = torch.randn(L, 2), torch.randn(S, 2), torch.randn(S, 3)
        ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        torch.testing.assert_close(out, ref)


def test_causal_mask_square_default() -> None:
    assert torch.equal(causal_mask(3), torch.tensor([[1, 0, 0], [1, 1, 0], [1, 1, 1]]).bool())


def test_float_mask() -> None:
    mask = torch.tensor([True, False, True])
    out = float_mask(mask, dtype=torch.float16)
    assert out.dtype == torch.float16
    assert out.tolist() == [0.0, float("-inf"), 0.0]
    scores = torch.randn(2, 3)
    torch.testing.assert_close(
        masked_softmax(scores, mask), masked_softmax(scores, float_mask(mask))
    )


# ---------------------------------------------------------------- masked softmax


def test_masked_softmax_known_values() -> None:
    scores = torch.tensor([[0.0, 0.0, 5.0], [1.0, 2.0, 3.0]])
    mask = torch.tensor([[True, True, False], [False, False, False]])
    weights = masked_softmax(scores, mask)
    torch.testing.assert_close(weights, torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.0, 0.0]]))


def test_masked_softmax_without_mask_is_softmax() -> None:
    scores = torch.randn(2, 3, 4)
    torch.testing.assert_close(masked_softmax(scores, dim=1), torch.softmax(scores, dim=1))


def test_masked_softmax_other_dim() -> None:
    scores = torch.randn(4, 3)
    mask = torch.tensor([True, False, True, True])[:, None]  # masks a row along dim 0
    weights = masked_softmax(scores, mask, dim=0)
    assert torch.all(weights[1] == 0)
    torch.testing.assert_close(weights.sum(0), torch.ones(3))


def test_masked_softmax_fully_masked_row_has_finite_zero_gradient() -> None:
    scores = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[True, False, True], [False, False, False]])
    weights = masked_softmax(scores, mask)
    (weights * torch.randn(2, 3, dtype=torch.float64)).sum().backward()
    assert scores.grad is not None
    assert torch.isfinite(scores.grad).all()
    assert torch.all(scores.grad[1] == 0) and torch.all(scores.grad[0, 1] == 0)
    assert torch.any(scores.grad[0] != 0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_masked_softmax_half_precision(dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(0)
    # Scores up to 60000 stay finite in float16; filling with -1e9 would overflow to -inf there.
    scores32 = torch.randn(3, 4, 6, generator=g) * 8
    scores32[0, 0] = 6.0e4
    mask = torch.rand(3, 4, 6, generator=g) < 0.5
    mask[1, 2] = False  # one fully masked row
    scores = scores32.to(dtype)
    weights = masked_softmax(scores, mask)
    assert weights.dtype == dtype
    assert not torch.isnan(weights).any()
    assert torch.all(weights[1, 2] == 0)
    assert torch.all(weights[~mask] == 0)
    # Tolerance: the result is only as good as the half-precision rounding of the scores.
    ref = masked_softmax(scores.float(), mask)
    torch.testing.assert_close(weights.float(), ref, atol=1e-2, rtol=0)
    float_weights = masked_softmax(scores, float_mask(mask, dtype))
    assert torch.equal(float_weights, weights)


def test_softmax_with_temperature() -> None:
    scores = torch.tensor([[1.0, 2.0, 3.0]])
    torch.testing.assert_close(softmax_with_temperature(scores, 1.0), torch.softmax(scores, -1))
    torch.testing.assert_close(softmax_with_temperature(scores, 2.0), torch.softmax(scores / 2, -1))
    cold = softmax_with_temperature(scores, 1e-3)
    torch.testing.assert_close(cold, torch.tensor([[0.0, 0.0, 1.0]]))
    hot = softmax_with_temperature(scores, 1e6, mask=torch.tensor([True, True, False]))
    torch.testing.assert_close(hot, torch.tensor([[0.5, 0.5, 0.0]]))


# ---------------------------------------------------------------- properties


@PROPERTY
@given(scores_and_mask())
def test_property_rows_sum_to_one_and_masked_are_zero(
    sm: tuple[torch.Tensor, torch.Tensor],
) -> None:
    scores, mask = sm
    weights = masked_softmax(scores, mask)
    full = mask.expand_as(scores)
    alive = full.any(-1)  # (B, L)
    torch.testing.assert_close(
        weights.sum(-1)[alive], torch.ones(int(alive.sum()), dtype=torch.float64)
    )
    assert torch.all(weights[~full] == 0)  # exactly zero, not merely small
    assert torch.all(weights[~alive] == 0)
    assert torch.all(weights >= 0)


@PROPERTY
@given(scores_and_mask(), st.booleans())
def test_property_inputs_not_modified(
    sm: tuple[torch.Tensor, torch.Tensor], as_float: bool
) -> None:
    scores, mask = sm
    m = float_mask(mask, torch.float64) if as_float else mask
    scores_before, mask_before = scores.clone(), m.clone()
    masked_softmax(scores, m)
    softmax_with_temperature(scores, 0.5, m)
    assert torch.equal(scores, scores_before)
    assert torch.equal(m, mask_before)


@PROPERTY
@given(scores_and_mask(), st.floats(-50, 50, allow_nan=False))
def test_property_shift_invariance(sm: tuple[torch.Tensor, torch.Tensor], c: float) -> None:
    scores, mask = sm
    # One constant per row (different across rows) changes nothing.
    shift = c * torch.arange(1, scores.shape[1] + 1, dtype=torch.float64)[None, :, None]
    torch.testing.assert_close(
        masked_softmax(scores + shift, mask), masked_softmax(scores, mask), atol=1e-12, rtol=0
    )


@PROPERTY
@given(scores_and_mask())
def test_property_bool_and_float_mask_agree(sm: tuple[torch.Tensor, torch.Tensor]) -> None:
    scores, mask = sm
    torch.testing.assert_close(
        masked_softmax(scores, float_mask(mask, torch.float64)), masked_softmax(scores, mask)
    )


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: lengths_to_mask(torch.tensor([1, 5]), 4), ValueError, r"lengths.*max_len = 4.*5"),
        (
            lambda: lengths_to_mask(torch.tensor([1, -1]), 4),
            ValueError,
            r"lengths must be >= 0.*-1",
        ),
        (
            lambda: lengths_to_mask(torch.tensor([1.0, 2.0]), 4),
            TypeError,
            r"lengths.*integer.*torch.float32",
        ),
        (
            lambda: lengths_to_mask(torch.tensor([True]), 4),
            TypeError,
            r"lengths.*integer.*torch.bool",
        ),
        (
            lambda: lengths_to_mask(torch.tensor([[1, 2]]), 4),
            ValueError,
            r"lengths.*\(B,\).*\(1, 2\)",
        ),
        (
            lambda: lengths_to_mask(torch.tensor([1]), -1),
            ValueError,
            r"max_len must be >= 0, got -1",
        ),
        (
            lambda: lengths_to_mask([1, 2], 4),
            TypeError,
            r"lengths must be a torch.Tensor, got list",
        ),
        (lambda: causal_mask(-2), ValueError, r"L must be >= 0, got -2"),
        (lambda: causal_mask(2, 3.0), TypeError, r"S must be an int, got float"),
        (lambda: float_mask(torch.zeros(2, 3)), TypeError, r"mask must be a bool.*torch.float32"),
        (
            lambda: masked_softmax(torch.randn(2, 3), torch.ones(2, 3, dtype=torch.int64)),
            TypeError,
            r"mask must be a bool.*torch.int64",
        ),
        (
            lambda: masked_softmax(torch.randn(2, 3), torch.ones(4, 3, dtype=torch.bool)),
            ValueError,
            r"mask of shape \(4, 3\) does not broadcast.*\(2, 3\)",
        ),
        (
            # A mask that would enlarge the scores is refused too.
            lambda: masked_softmax(torch.randn(2, 3), torch.ones(5, 2, 3, dtype=torch.bool)),
            ValueError,
            r"mask of shape \(5, 2, 3\).*\(2, 3\)",
        ),
        (
            lambda: masked_softmax(torch.randn(2, 3), torch.zeros(2, 3, dtype=torch.float64)),
            TypeError,
            r"mask.*torch.float64.*torch.float32",
        ),
        (
            lambda: masked_softmax(torch.arange(3), None),
            TypeError,
            r"scores.*floating.*torch.int64",
        ),
        (lambda: masked_softmax(torch.randn(2, 3), dim=2), ValueError, r"dim.*\(2, 3\), got 2"),
        (
            lambda: softmax_with_temperature(torch.randn(3), 0.0),
            ValueError,
            r"temperature.*> 0, got 0",
        ),
        (lambda: softmax_with_temperature(torch.randn(3), -1.0), ValueError, r"temperature.*-1"),
        (
            lambda: check_mask(
                "attn_mask", torch.ones(3, 3, dtype=torch.bool), (2, 4, 3), expected="(B, L, S)"
            ),
            ValueError,
            r"attn_mask of shape \(3, 3\).*\(B, L, S\) \(2, 4, 3\)",
        ),
    ],
)
def test_bad_input(call: object, error: type[Exception], match: str) -> None:
    assert callable(call)
    with pytest.raises(error, match=match):
        call()
