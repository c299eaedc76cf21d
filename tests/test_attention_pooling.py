"""Tests for chapter 2's attention pooling: attnlib.blocks.scoring.AttentionPooling (note 003's learnable
query) and attnlib.data.object_region_task, the task the chapter trains it on.

AttentionPooling is tested against its other forms: scaled dot-product attention with one
query, attnlib's and PyTorch's, forward and backward. The task's tests check the design claims
the chapter relies on with a known query instead of a trained one: a query along the
objectness feature puts most of the weight on the object's region, and the class can then be
read off the pooled vector far better than off the average of the regions.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnlib.blocks.attention import scaled_dot_product_attention
from attnlib.blocks.masking import lengths_to_mask
from attnlib.blocks.scoring import AttentionPooling, hard_attention
from attnlib.data import RegionTask, object_region_task

B, S, E = 3, 6, 4


@pytest.fixture
def gen() -> torch.Generator:
    return torch.Generator().manual_seed(0)


def _pooling(E: int = E) -> AttentionPooling:
    pool = AttentionPooling(E).double()
    with torch.no_grad():
        pool.query.copy_(torch.randn(E, generator=torch.Generator().manual_seed(1),
                                     dtype=torch.float64))
    return pool


@pytest.mark.parametrize("masked", [False, True])
def test_pooling_is_scaled_dot_product_attention_with_one_query(
    masked: bool, gen: torch.Generator
) -> None:
    pool = _pooling()
    inputs = torch.randn(B, S, E, generator=gen, dtype=torch.float64, requires_grad=True)
    mask = lengths_to_mask(torch.tensor([6, 3, 1]), S) if masked else None  # (B, S)
    pooled, weights = pool(inputs, mask)
    assert pooled.shape == (B, E) and weights.shape == (B, S)

    query = pool.query.expand(B, 1, E)  # (B, 1, E)
    attn_mask = None if mask is None else mask[:, None, :]  # (B, 1, S)
    ours, our_weights = scaled_dot_product_attention(query, inputs, inputs, attn_mask,
                                                     need_weights=True)
    torch_out = F.scaled_dot_product_attention(query, inputs, inputs, attn_mask=attn_mask)
    torch.testing.assert_close(pooled, ours[:, 0], atol=1e-12, rtol=0)
    torch.testing.assert_close(weights, our_weights[:, 0], atol=1e-12, rtol=0)
    torch.testing.assert_close(pooled, torch_out[:, 0], atol=1e-10, rtol=0)

    # Backward: the same gradients for the query and the inputs.
    upstream = torch.randn(B, E, generator=gen, dtype=torch.float64)
    got = torch.autograd.grad((pooled * upstream).sum(), (pool.query, inputs))
    query_leaf = pool.query.detach().clone().requires_grad_()
    reference = F.scaled_dot_product_attention(query_leaf.expand(B, 1, E), inputs, inputs,
                                               attn_mask=attn_mask)
    expected = torch.autograd.grad((reference[:, 0] * upstream).sum(), (query_leaf, inputs))
    for g, x in zip(got, expected, strict=True):
        torch.testing.assert_close(g, x, atol=1e-10, rtol=0)


def test_untrained_pooling_is_average_pooling(gen: torch.Generator) -> None:
    pool = AttentionPooling(E).double()
    assert torch.equal(pool.query, torch.zeros(E, dtype=torch.float64))
    inputs = torch.randn(B, S, E, generator=gen, dtype=torch.float64)
    pooled, weights = pool(inputs)
    torch.testing.assert_close(weights, torch.full((B, S), 1 / S, dtype=torch.float64))
    torch.testing.assert_close(pooled, inputs.mean(1), atol=1e-12, rtol=0)


def test_masked_inputs_get_no_weight_and_an_empty_example_gives_zeros(
    gen: torch.Generator,
) -> None:
    pool = _pooling()
    inputs = torch.randn(B, S, E, generator=gen, dtype=torch.float64)
    mask = lengths_to_mask(torch.tensor([4, 0, 6]), S)  # (B, S)
    pooled, weights = pool(inputs, mask)
    assert torch.all(weights[~mask] == 0)
    torch.testing.assert_close(weights[[0, 2]].sum(-1), torch.ones(2, dtype=torch.float64))
    assert torch.all(pooled[1] == 0) and torch.all(weights[1] == 0)
    # The padding's contents do not matter.
    changed = inputs.clone()
    changed[0, 4:] = 1e3
    torch.testing.assert_close(pool(changed, mask)[0], pooled, atol=0, rtol=0)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: AttentionPooling(0), ValueError, "input_size"),
        (lambda: AttentionPooling(4)(torch.ones(2, 3)), ValueError,
         r"inputs must have 3 dimensions \(B, S, E\), got shape \(2, 3\)"),
        (lambda: AttentionPooling(4)(torch.ones(2, 3, 5)), ValueError,
         r"E = input_size = 4, got shape \(2, 3, 5\)"),
        (lambda: AttentionPooling(4)(torch.ones(2, 3, 4, dtype=torch.float64)), TypeError,
         "dtype of the learnable query, torch.float32, got torch.float64"),
        (lambda: AttentionPooling(4)(torch.ones(2, 3, 4), torch.ones(2, 3)), TypeError,
         "mask must be a bool tensor"),
        (lambda: AttentionPooling(4)(torch.ones(2, 3, 4), torch.ones(2, 1, 3, dtype=torch.bool)),
         ValueError, r"mask must have shape \(B, S\) = \(2, 3\).*got shape \(2, 1, 3\)"),
    ],
)
def test_pooling_bad_input(call: object, error: type[Exception], match: str) -> None:
    assert callable(call)
    with pytest.raises(error, match=match):
        call()


def test_hard_attention_dead_row_passes_no_gradient_to_the_values(gen: torch.Generator) -> None:
    """The argmax of a fully masked row is an arbitrary key; its value must not get gradient."""
    scores = torch.randn(1, 2, S, generator=gen)
    value = torch.randn(1, S, E, generator=gen, requires_grad=True)
    mask = torch.ones(1, 2, S, dtype=torch.bool)
    mask[0, 0] = False  # query 0 may attend to nothing
    mask[0, 1, 0] = False  # query 1 may not take key 0
    out, index = hard_attention(scores, value, mask)
    assert index[0, 0] == -1 and torch.all(out[0, 0] == 0)
    (grad,) = torch.autograd.grad(out.sum(), value)
    assert torch.all(grad[0, 0] == 0)  # key 0 is the argmax of the dead row: no gradient
    assert torch.all(grad[0, index[0, 1]] == 1)


# ---------------------------------------------------------------- the task


def test_region_task_shapes_labels_and_seeding() -> None:
    torch.manual_seed(5)
    before = torch.get_rng_state()
    task = object_region_task(50, grid=3, feature_size=5, seed=2)
    assert torch.equal(torch.get_rng_state(), before)
    assert isinstance(task, RegionTask) and task.grid == 3
    assert task.inputs.shape == (50, 9, 5) and task.inputs.dtype == torch.float64
    assert task.label.shape == (50,) and set(task.label.tolist()) == {0, 1}
    assert task.position.shape == (50,) and 0 <= int(task.position.min())
    assert int(task.position.max()) < 9
    again = object_region_task(50, grid=3, feature_size=5, seed=2)
    assert torch.equal(task.inputs, again.inputs) and torch.equal(task.label, again.label)
    assert not torch.equal(task.inputs, object_region_task(50, grid=3, feature_size=5).inputs)


def test_region_task_object_shifts_the_first_two_features_of_one_region() -> None:
    n = 4000
    task = object_region_task(n, objectness=4.0, separation=2.0)
    plain = object_region_task(n, objectness=0.0, separation=0.0)
    difference = task.inputs - plain.inputs  # the same noise: only the object's shift is left
    image = torch.arange(n)
    sign = (2 * task.label - 1).double()
    expected = torch.zeros_like(difference)
    expected[image, task.position, 0] = 4.0
    expected[image, task.position, 1] = 2.0 * sign
    torch.testing.assert_close(difference, expected, atol=1e-12, rtol=0)
    background = plain.inputs
    assert abs(float(background.mean())) < 0.01 and abs(float(background.std()) - 1) < 0.01


def test_design_a_query_on_objectness_finds_the_object_and_the_class() -> None:
    """The chapter's claim with a known query: looking for feature 1 finds the object's region,
    and the sign of the pooled feature 2 then names the class; averaging the regions dilutes
    the object 16 times, and the same reading is much worse."""
    task = object_region_task(4000, seed=1)
    pool = AttentionPooling(8).double()
    image = torch.arange(4000)
    with torch.no_grad():
        _, uniform = pool(task.inputs)
        average = task.inputs.mean(1)  # (n, E)
        pool.query.copy_(torch.eye(8, dtype=torch.float64)[0] * 6.0)
        pooled, weights = pool(task.inputs)
    assert torch.all(uniform == 1 / 16)
    assert float(weights[image, task.position].mean()) > 0.8
    assert float((weights.argmax(-1) == task.position).double().mean()) > 0.9
    attended = float(((pooled[:, 1] > 0).long() == task.label).double().mean())
    averaged = float(((average[:, 1] > 0).long() == task.label).double().mean())
    assert attended > 0.9 and averaged < 0.75


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n": 0}, ValueError, "n must be >= 1, got 0"),
        ({"n": 4, "grid": 2.0}, TypeError, "grid must be an int, got float"),
        ({"n": 4, "feature_size": 1}, ValueError, "feature_size must be >= 2, got 1"),
        ({"n": 4, "objectness": float("nan")}, ValueError,
         "objectness must be a finite number, got nan"),
        ({"n": 4, "separation": float("inf")}, ValueError,
         "separation must be a finite number, got inf"),
    ],
)
def test_region_task_bad_input(kwargs: dict[str, object], error: type[Exception],
                               match: str) -> None:
    with pytest.raises(error, match=match):
        object_region_task(**kwargs)  # type: ignore[arg-type]
