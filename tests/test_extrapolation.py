"""Tests for attnlib.experiments.extrapolation: the look-back task, the one-layer model, training and scoring."""

from __future__ import annotations

import math

import pytest
import torch

from attnlib.experiments import extrapolation as ex

F64 = torch.float64


def model_of(encoding: str, **kwargs: object) -> ex.LookbackModel:
    torch.manual_seed(0)
    return ex.LookbackModel(ex.LookbackConfig(encoding=encoding, **kwargs), dtype=F64)


# ---------------------------------------------------------------------------------------------
# The task
# ---------------------------------------------------------------------------------------------


def test_lookback_targets_are_the_tokens_shift_back() -> None:
    tokens, targets = ex.lookback_task(50, 12, shift=3, num_symbols=7, seed=4)
    assert tokens.shape == targets.shape == (50, 12)
    assert tokens.dtype == targets.dtype == torch.long
    assert bool((tokens >= 0).all()) and bool((tokens < 7).all())
    assert bool((targets[:, :3] == ex.IGNORE_INDEX).all())
    assert torch.equal(targets[:, 3:], tokens[:, :-3])


def test_lookback_is_seeded_and_leaves_the_global_generator_alone() -> None:
    torch.manual_seed(123)
    before = torch.get_rng_state()
    a = ex.lookback_task(8, 10, seed=1)
    assert torch.equal(torch.get_rng_state(), before)
    b = ex.lookback_task(8, 10, seed=1)
    c = ex.lookback_task(8, 10, seed=2)
    assert torch.equal(a[0], b[0]) and not torch.equal(a[0], c[0])


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"n": 0, "length": 5}, ValueError),
        ({"n": 2, "length": 3, "shift": 3}, ValueError),
        ({"n": 2, "length": 5, "shift": 0}, ValueError),
        ({"n": 2, "length": 5, "num_symbols": 0}, ValueError),
        ({"n": 2.0, "length": 5}, TypeError),
    ],
)
def test_lookback_rejects_bad_arguments(kwargs: dict[str, object], error: type) -> None:
    with pytest.raises(error):
        ex.lookback_task(**kwargs)


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ex.ENCODINGS)
def test_shapes_and_weights(encoding: str) -> None:
    model = model_of(encoding, num_heads=2)
    tokens, _ = ex.lookback_task(3, 10)
    logits, weights = model(tokens, need_weights=True)
    assert logits.shape == (3, 10, 16) and logits.dtype == F64
    assert weights is not None and weights.shape == (3, 2, 10, 10)
    torch.testing.assert_close(weights.sum(-1), torch.ones(3, 2, 10, dtype=F64))
    # The fused path (need_weights=False) gives the same logits.
    fused, none = model(tokens)
    assert none is None
    torch.testing.assert_close(fused, logits, atol=1e-10, rtol=0)
    # scores() are the logits of the weights.
    torch.testing.assert_close(model.scores(tokens).softmax(-1), weights, atol=1e-12, rtol=0)


def test_without_positions_the_model_is_permutation_equivariant() -> None:
    model = model_of("none")
    tokens, _ = ex.lookback_task(2, 9)
    perm = torch.tensor([4, 0, 8, 2, 6, 1, 3, 7, 5])
    logits, _ = model(tokens)
    logits_p, _ = model(tokens[:, perm])
    torch.testing.assert_close(logits_p, logits[:, perm], atol=1e-12, rtol=0)


@pytest.mark.parametrize("encoding", ["sinusoidal", "learned", "rope"])
def test_with_positions_the_model_is_not_permutation_equivariant(encoding: str) -> None:
    model = model_of(encoding)
    tokens, _ = ex.lookback_task(2, 9)
    perm = torch.tensor([4, 0, 8, 2, 6, 1, 3, 7, 5])
    logits, _ = model(tokens)
    logits_p, _ = model(tokens[:, perm])
    assert float((logits_p - logits[:, perm]).detach().abs().max()) > 1e-3


def test_rope_scores_depend_on_offsets_only() -> None:
    """Dropping the first tokens shifts every position; RoPE scores must not change."""
    model = model_of("rope", num_heads=2)
    tokens, _ = ex.lookback_task(2, 20)
    full = model.scores(tokens)  # (B, H, 20, 20)
    torch.testing.assert_close(model.scores(tokens[:, 5:]), full[..., 5:, 5:], atol=1e-10, rtol=0)
    # The sinusoidal model uses absolute positions: its scores do change.
    sinusoidal = model_of("sinusoidal")
    full = sinusoidal.scores(tokens)
    assert float((sinusoidal.scores(tokens[:, 5:]) - full[..., 5:, 5:]).detach().abs().max()) > 1e-3


def test_learned_table_refuses_longer_sequences() -> None:
    model = model_of("learned", max_len=8)
    model(torch.zeros(1, 8, dtype=torch.long))
    with pytest.raises(ValueError, match="max_len = 8"):
        model(torch.zeros(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match="max_len = 8"):
        ex.lookback_accuracy(model, 9)


@pytest.mark.parametrize(
    "changes",
    [
        {"encoding": "alibi"},  # refused by the config
        {"d_model": 30, "num_heads": 4},  # refused by the model
        {"encoding": "rope", "d_model": 30, "num_heads": 2},  # E = 15, odd
        {"num_symbols": 0},  # refused by the config
    ],
)
def test_bad_configs(changes: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        ex.LookbackModel(ex.LookbackConfig(**changes))  # type: ignore[arg-type]


def test_bad_tokens() -> None:
    model = model_of("none")
    with pytest.raises(TypeError, match="integer dtype"):
        model(torch.zeros(1, 4))
    with pytest.raises(ValueError, match=r"\(B, L\)"):
        model(torch.zeros(4, dtype=torch.long))


# ---------------------------------------------------------------------------------------------
# Training and evaluation
# ---------------------------------------------------------------------------------------------


def test_training_is_deterministic_and_learns() -> None:
    a, b = model_of("rope"), model_of("rope")
    losses_a = ex.train_lookback(a, length=8, steps=60, batch_size=16, lr=0.05)
    losses_b = ex.train_lookback(b, length=8, steps=60, batch_size=16, lr=0.05)
    assert losses_a == losses_b
    assert losses_a[-1] < 0.1 * losses_a[0]
    assert ex.lookback_accuracy(a, 8, n=200) > 0.95
    assert not a.training  # left in evaluation mode


def test_untrained_rows_of_a_learned_table_stay_at_their_initial_values() -> None:
    model = model_of("learned", max_len=12)
    before = model.position.embedding.weight.detach().clone()
    ex.train_lookback(model, length=8, steps=5)
    after = model.position.embedding.weight.detach()
    assert torch.equal(after[8:], before[8:])
    assert not torch.equal(after[:8], before[:8])


def test_accuracy_by_position() -> None:
    model = model_of("sinusoidal")
    by_position = ex.lookback_accuracy_by_position(model, 10, shift=2, n=50)
    assert by_position.shape == (8,) and by_position.dtype == F64  # positions 2, ..., 9
    assert bool(by_position.isfinite().all())
    overall = ex.lookback_accuracy(model, 10, shift=2, n=50)
    assert overall == pytest.approx(float(by_position.mean()))
    assert 0.0 <= overall <= 1.0


def test_mean_score_by_offset_matches_the_diagonals() -> None:
    model = model_of("rope")
    offsets, mean = ex.mean_score_by_offset(model, length=7, n=5, seed=3)
    assert offsets.tolist() == list(range(-6, 7))
    assert mean.shape == (13,) and mean.dtype == F64
    tokens, _ = ex.lookback_task(5, 7, 1, seed=3)
    with torch.no_grad():
        scores = model.scores(tokens)[:, 0]  # (n, L, L)
    for d in (-6, -2, 0, 3, 6):
        expected = float(sum(scores[b, i, i + d] for b in range(5) for i in range(7)
                             if 0 <= i + d < 7)) / (5 * (7 - abs(d)))
        assert float(mean[offsets == d][0]) == pytest.approx(expected, abs=1e-10)
    assert math.isfinite(float(mean.sum()))
