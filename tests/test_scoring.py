"""Tests for attnlib.blocks.scoring: the four scoring functions, key-value attention, hard attention."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from attnlib.blocks.masking import lengths_to_mask, softmax_with_temperature
from attnlib.blocks.scoring import (
    AdditiveScore,
    BilinearScore,
    DotScore,
    KeyValueAttention,
    ScaledDotScore,
    hard_attention,
)

B, L, S, E, Ev = 2, 3, 5, 4, 6


def n_params(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.fixture
def gen() -> torch.Generator:
    return torch.Generator().manual_seed(0)


@pytest.mark.parametrize(
    ("make", "Eq", "Ek", "count"),
    [
        (lambda: AdditiveScore(4, 7, 8), 4, 7, 8 * (4 + 7 + 1)),
        (lambda: AdditiveScore(4, 7, 8, bias=True), 4, 7, 8 * (4 + 7 + 1) + 8),
        (lambda: DotScore(), 4, 4, 0),
        (lambda: ScaledDotScore(), 4, 4, 0),
        (lambda: BilinearScore(4, 7), 4, 7, 4 * 7),
    ],
)
def test_score_shape_and_parameter_count(
    make: object, Eq: int, Ek: int, count: int, gen: torch.Generator
) -> None:
    assert callable(make)
    score = make()
    assert isinstance(score, nn.Module)
    out = score(torch.randn(B, L, Eq, generator=gen), torch.randn(B, S, Ek, generator=gen))
    assert out.shape == (B, L, S)
    assert n_params(score) == count


def test_additive_score_matches_formula_with_different_sizes(gen: torch.Generator) -> None:
    Eq, Ek, h = 3, 7, 5
    score = AdditiveScore(Eq, Ek, h, bias=True).double()
    q = torch.randn(B, L, Eq, generator=gen, dtype=torch.float64)
    k = torch.randn(B, S, Ek, generator=gen, dtype=torch.float64)
    out = score(q, k)
    Wq, bq, Wk, wv = score.q_proj.weight, score.q_proj.bias, score.k_proj.weight, score.w_v
    assert bq is not None
    for b in range(B):
        for i in range(L):
            for j in range(S):
                expected = wv @ torch.tanh(Wq @ q[b, i] + bq + Wk @ k[b, j])
                torch.testing.assert_close(out[b, i, j], expected, atol=1e-12, rtol=0)


def test_dot_and_scaled_dot_scores(gen: torch.Generator) -> None:
    q = torch.randn(B, L, E, generator=gen, dtype=torch.float64)
    k = torch.randn(B, S, E, generator=gen, dtype=torch.float64)
    dot = DotScore()(q, k)
    torch.testing.assert_close(dot[1, 2, 3], q[1, 2] @ k[1, 3], atol=1e-12, rtol=0)
    torch.testing.assert_close(ScaledDotScore()(q, k), dot / math.sqrt(E), atol=1e-12, rtol=0)


def test_bilinear_with_identity_is_dot(gen: torch.Generator) -> None:
    score = BilinearScore(E, E).double()
    with torch.no_grad():
        score.weight.copy_(torch.eye(E))
    q = torch.randn(B, L, E, generator=gen, dtype=torch.float64)
    k = torch.randn(B, S, E, generator=gen, dtype=torch.float64)
    torch.testing.assert_close(score(q, k), DotScore()(q, k), atol=1e-12, rtol=0)


def test_bilinear_is_asymmetric(gen: torch.Generator) -> None:
    score = BilinearScore(E, E)
    x = torch.randn(1, 1, E, generator=gen)
    y = torch.randn(1, 1, E, generator=gen)
    assert not torch.allclose(score(x, y), score(y, x))


def test_key_value_attention_matches_sdpa(gen: torch.Generator) -> None:
    attn = KeyValueAttention(ScaledDotScore())
    q = torch.randn(B, L, E, generator=gen, dtype=torch.float64)
    k = torch.randn(B, S, E, generator=gen, dtype=torch.float64)
    v = torch.randn(B, S, Ev, generator=gen, dtype=torch.float64)
    mask = lengths_to_mask(torch.tensor([2, 5]), S)[:, None, :]  # (B, 1, S)
    out, weights = attn(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert out.shape == (B, L, Ev) and weights.shape == (B, L, S)
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=0)
    assert torch.all(weights[0, :, 2:] == 0)


def test_key_value_attention_with_additive_score_and_lengths(gen: torch.Generator) -> None:
    attn = KeyValueAttention(AdditiveScore(3, 7, 8))
    q, k = torch.randn(B, L, 3, generator=gen), torch.randn(B, S, 7, generator=gen)
    v = torch.randn(B, S, Ev, generator=gen)
    mask = lengths_to_mask(torch.tensor([0, 4]), S)[:, None, :]  # (B, 1, S)
    out, weights = attn(q, k, v, mask)
    assert torch.all(out[0] == 0) and torch.all(weights[0] == 0)  # no valid key at all
    torch.testing.assert_close(weights[1].sum(-1), torch.ones(L))
    torch.testing.assert_close(out, weights @ v)


def test_key_value_attention_dropout_only_in_training(gen: torch.Generator) -> None:
    attn = KeyValueAttention(DotScore(), dropout=0.5)
    q, k = torch.randn(B, L, E, generator=gen), torch.randn(B, S, E, generator=gen)
    v = torch.randn(B, S, Ev, generator=gen)
    attn.eval()
    out_eval, w_eval = attn(q, k, v)
    out_eval2, _ = attn(q, k, v)
    assert torch.equal(out_eval, out_eval2)
    torch.testing.assert_close(w_eval.sum(-1), torch.ones(B, L))
    attn.train()
    torch.manual_seed(0)
    out_train, w_train = attn(q, k, v)
    dropped = w_train == 0
    assert dropped.any() and (~dropped).any()
    # Kept weights are rescaled by 1 / (1 - p); the returned weights are the ones used.
    torch.testing.assert_close(w_train[~dropped], 2 * w_eval[~dropped])
    torch.testing.assert_close(out_train, w_train @ v)


def test_hard_attention_selects_argmax_and_blocks_score_gradients(gen: torch.Generator) -> None:
    scores = torch.randn(B, L, S, generator=gen, requires_grad=True)
    value = torch.randn(B, S, Ev, generator=gen, requires_grad=True)
    mask = torch.ones(B, L, S, dtype=torch.bool)
    mask[0, 1] = False  # query 1 of batch 0 may attend to nothing
    mask[1, :, 0] = False
    out, index = hard_attention(scores, value, mask)
    assert out.shape == (B, L, Ev) and index.shape == (B, L) and index.dtype == torch.long
    assert index[0, 1] == -1 and torch.all(out[0, 1] == 0)
    expected_index = scores.detach().masked_fill(~mask, float("-inf")).argmax(-1)
    assert torch.equal(index[1], expected_index[1])
    assert torch.all(index[1] != 0)
    torch.testing.assert_close(out[1, 2], value[1, index[1, 2]])
    grad_scores, grad_value = torch.autograd.grad(out.sum(), (scores, value), allow_unused=True)
    assert grad_scores is None  # argmax: no gradient reaches the scores
    assert grad_value is not None and grad_value.abs().sum() > 0
    # A very cold softmax approaches hard attention.
    soft = softmax_with_temperature(scores.detach(), 1e-4, mask) @ value.detach()
    torch.testing.assert_close(soft, out.detach())


# ---------------------------------------------------------------- bad input


def _qk(Eq: int = E, Ek: int = E) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(B, L, Eq), torch.randn(B, S, Ek)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: DotScore()(*_qk(4, 3)), ValueError, r"query and key.*\(2, 3, 4\).*\(2, 5, 3\)"),
        (
            lambda: ScaledDotScore()(*_qk(4, 3)),
            ValueError,
            r"query and key.*\(2, 3, 4\).*\(2, 5, 3\)",
        ),
        (
            lambda: DotScore()(torch.randn(3, 4), torch.randn(2, 5, 4)),
            ValueError,
            r"query must have 3 dimensions \(B, L, Eq\), got shape \(3, 4\)",
        ),
        (
            lambda: DotScore()(torch.randn(2, 3, 4), torch.randn(3, 5, 4)),
            ValueError,
            r"batch size.*\(2, 3, 4\).*\(3, 5, 4\)",
        ),
        (
            lambda: DotScore()(torch.randn(2, 3, 4), torch.randn(2, 5, 4, dtype=torch.float64)),
            TypeError,
            r"query and key.*dtype",
        ),
        (
            lambda: AdditiveScore(4, 7, 8)(*_qk(4, 6)),
            ValueError,
            r"key must have shape \(B, \*, Ek\) with Ek = 7, got shape \(2, 5, 6\)",
        ),
        (
            lambda: BilinearScore(4, 7)(*_qk(5, 7)),
            ValueError,
            r"query.*Eq = 4, got shape \(2, 3, 5\)",
        ),
        (
            lambda: DotScore()(torch.ones(2, 3, 4, dtype=torch.long), torch.randn(2, 5, 4)),
            TypeError,
            r"query.*floating.*torch.int64",
        ),
        (
            lambda: KeyValueAttention(DotScore(), dropout=1.0),
            ValueError,
            r"dropout must be in \[0, 1\), got 1.0",
        ),
        (
            lambda: KeyValueAttention(DotScore())(*_qk(), torch.randn(B, S + 1, Ev)),
            ValueError,
            r"key.*value.*\(2, 5, 4\).*\(2, 6, 6\)",
        ),
        (
            lambda: KeyValueAttention(DotScore())(*_qk(), torch.randn(S, Ev)),
            ValueError,
            r"value must have 3 dimensions \(B, S, Ev\), got shape \(5, 6\)",
        ),
        (
            lambda: KeyValueAttention(DotScore())(
                *_qk(), torch.randn(B, S, Ev), torch.ones(B, 4, S, dtype=torch.bool)
            ),
            ValueError,
            r"mask of shape \(2, 4, 5\).*\(B, L, S\) \(2, 3, 5\)",
        ),
        (
            lambda: KeyValueAttention(DotScore())(
                *_qk(), torch.randn(B, S, Ev), torch.ones(B, L, S, dtype=torch.int32)
            ),
            TypeError,
            r"mask.*torch.int32",
        ),
        (
            lambda: KeyValueAttention(DotScore())(
                *_qk(), torch.randn(B, S, Ev), torch.zeros(B, L, S)
            ),
            TypeError,
            r"mask must be a bool.*torch.float32",
        ),
        (
            lambda: hard_attention(torch.randn(B, L, S), torch.randn(B, S + 1, Ev)),
            ValueError,
            r"scores.*value.*\(2, 3, 5\).*\(2, 6, 6\)",
        ),
        (
            lambda: hard_attention(
                torch.randn(B, L, S),
                torch.randn(B, S, Ev),
                torch.ones(3, S, dtype=torch.bool)[None, None],
            ),
            ValueError,
            r"mask of shape \(1, 1, 3, 5\)",
        ),
    ],
)
def test_bad_input(call: object, error: type[Exception], match: str) -> None:
    assert callable(call)
    with pytest.raises(error, match=match):
        call()
