"""Tests for attnlib.data.key_retrieval_task, the task chapter 2 compares scoring functions on.

Besides shapes and seeding, these tests check the design claims the chapter relies on, with
known scores instead of trained ones: with the identity map a dot product finds the right key,
with a permuted map it does no better than chance, and the bilinear score with W = M finds it
again, whatever the query size.
"""

from __future__ import annotations

import math

import pytest
import torch

from attnlib.blocks.scoring import BilinearScore, DotScore, KeyValueAttention, ScaledDotScore
from attnlib.data import RetrievalTask, key_retrieval_task


def shift(E: int) -> torch.Tensor:
    """The cyclic shift of coordinates: (M k)_i = k_{i-1}."""
    return torch.roll(torch.eye(E, dtype=torch.float64), 1, dims=0)  # (E, E)


def test_shapes_dtype_and_norms() -> None:
    task = key_retrieval_task(5, num_keys=6, key_size=4, value_size=3)
    assert isinstance(task, RetrievalTask)
    assert task.query.shape == (5, 6, 4)
    assert task.key.shape == (5, 6, 4)
    assert task.value.shape == (5, 6, 3)
    assert task.mapping.shape == (4, 4)
    for t in (task.query, task.key, task.value, task.mapping):
        assert t.dtype == torch.float64
    torch.testing.assert_close(task.key.norm(dim=-1), torch.full((5, 6), 2.0, dtype=torch.float64))


def test_query_is_mapped_key_without_noise() -> None:
    M = torch.randn(7, 4, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    task = key_retrieval_task(3, num_keys=5, key_size=4, mapping=M, noise=0.0)
    assert task.query.shape == (3, 5, 7)
    torch.testing.assert_close(task.query, task.key @ M.T, rtol=0, atol=1e-12)
    identity = key_retrieval_task(3, num_keys=5, key_size=4, noise=0.0)
    assert torch.equal(identity.query, identity.key)


def test_noise_has_the_requested_scale() -> None:
    task = key_retrieval_task(400, num_keys=8, key_size=8, noise=0.5)
    residual = task.query - task.key  # identity map: the residual is the noise
    assert abs(float(residual.std()) - 0.5) < 0.02


def test_seeded_and_leaves_global_rng_alone() -> None:
    torch.manual_seed(123)
    before = torch.get_rng_state()
    a = key_retrieval_task(4, seed=3)
    assert torch.equal(torch.get_rng_state(), before)
    b = key_retrieval_task(4, seed=3)
    c = key_retrieval_task(4, seed=4)
    for x, y in ((a.query, b.query), (a.key, b.key), (a.value, b.value)):
        assert torch.equal(x, y)
    assert not torch.equal(a.key, c.key)


def test_mapping_is_copied_and_cast() -> None:
    M = shift(4).float()
    task = key_retrieval_task(2, key_size=4, mapping=M)
    assert task.mapping.dtype == torch.float64
    M.zero_()
    assert torch.equal(task.mapping, shift(4))


def test_accuracy_of_perfect_uniform_and_checked_weights() -> None:
    task = key_retrieval_task(3, num_keys=4)
    perfect = torch.eye(4, dtype=torch.float64).expand(3, 4, 4)
    assert task.accuracy(perfect) == 1.0
    wrong = torch.roll(perfect, 1, dims=-1)
    assert task.accuracy(wrong) == 0.0
    with pytest.raises(ValueError, match=r"weights must have shape \(n, S, S\) = \(3, 4, 4\)"):
        task.accuracy(perfect[:, :2])


def accuracy_of(score: torch.nn.Module, task: RetrievalTask) -> float:
    with torch.no_grad():
        _, weights = KeyValueAttention(score)(task.query, task.key, task.value)
    return task.accuracy(weights)


def test_design_dot_finds_similar_keys_but_not_mapped_ones() -> None:
    similar = key_retrieval_task(300, seed=1)
    assert accuracy_of(DotScore(), similar) > 0.95
    # Scaling changes how sharp the weights are, never which key is largest.
    assert accuracy_of(ScaledDotScore(), similar) == accuracy_of(DotScore(), similar)
    shifted = key_retrieval_task(300, mapping=shift(8), seed=1)
    chance = 1 / 8
    assert abs(accuracy_of(DotScore(), shifted) - chance) < 0.05


@pytest.mark.parametrize("query_size", [8, 12])
def test_design_bilinear_with_the_right_matrix_solves_it(query_size: int) -> None:
    gen = torch.Generator().manual_seed(2)
    if query_size == 8:
        M = shift(8)
    else:
        M = torch.randn(query_size, 8, generator=gen, dtype=torch.float64) / math.sqrt(8)
    task = key_retrieval_task(300, mapping=M, seed=1)
    score = BilinearScore(query_size, 8).double()
    with torch.no_grad():
        # q^T W k with W = M (M^T M)^{-1} is k_i^T k_j + noise: a dot product in key space.
        score.weight.copy_(M @ torch.linalg.inv(M.T @ M))
    assert accuracy_of(score, task) > 0.9
    if query_size != 8:
        with pytest.raises(ValueError, match="same size E"):
            DotScore()(task.query, task.key)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n": 0}, ValueError, "n must be >= 1"),
        ({"n": 2.0}, TypeError, "n must be an int"),
        ({"n": 2, "num_keys": True}, TypeError, "num_keys must be an int"),
        ({"n": 2, "value_size": 0}, ValueError, "value_size must be >= 1"),
        ({"n": 2, "mapping": torch.eye(8, dtype=torch.long)}, TypeError, "floating-point"),
        ({"n": 2, "mapping": [[1.0]]}, TypeError, "got list"),
        ({"n": 2, "mapping": torch.eye(8, 5)}, ValueError, r"Ek = key_size = 8, got \(8, 5\)"),
        ({"n": 2, "mapping": torch.ones(8)}, ValueError, r"shape \(Eq, Ek\)"),
        ({"n": 2, "noise": -0.1}, ValueError, "noise must be finite and >= 0"),
        ({"n": 2, "noise": float("nan")}, ValueError, "noise must be finite and >= 0"),
        ({"n": 2, "noise": float("inf")}, ValueError, "noise must be finite and >= 0"),
    ],
)
def test_bad_input(kwargs: dict[str, object], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        key_retrieval_task(**kwargs)  # type: ignore[arg-type]
