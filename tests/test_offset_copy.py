"""Tests for attnlib.experiments.offset_copy: the task, the probe model, and the offset profile."""

from __future__ import annotations

import pytest
import torch

from attnlib.blocks.multihead import parameter_count
from attnlib.experiments.offset_copy import (
    OffsetCopyModel,
    attention_by_offset,
    fit_offset_copy,
    offset_accuracy,
    offset_copy_task,
)


def test_targets_are_the_tokens_at_the_offsets_cyclically() -> None:
    tokens, targets = offset_copy_task(5, length=6, num_symbols=4, offsets=(-1, 2), seed=3)
    assert tokens.shape == (5, 6) and targets.shape == (5, 6, 2)
    assert int(tokens.min()) >= 0 and int(tokens.max()) < 4
    for b in range(5):
        for t in range(6):
            assert targets[b, t, 0] == tokens[b, (t - 1) % 6]
            assert targets[b, t, 1] == tokens[b, (t + 2) % 6]


def test_task_is_seeded_and_leaves_the_global_generator_alone() -> None:
    torch.manual_seed(0)
    before = torch.rand(1)
    torch.manual_seed(0)
    a, _ = offset_copy_task(4, seed=1)
    after = torch.rand(1)
    b, _ = offset_copy_task(4, seed=1)
    assert torch.equal(before, after) and torch.equal(a, b)
    with pytest.raises(TypeError, match="offsets"):
        offset_copy_task(4, offsets=())
    with pytest.raises(ValueError, match="length"):
        offset_copy_task(4, length=0)


def test_attention_by_offset_finds_a_shift() -> None:
    L = 6
    shift = torch.eye(L).roll(-1, dims=1)  # row t has its 1 at column (t - 1) mod L
    assert bool(shift[2, 1] == 1) and bool(shift[0, L - 1] == 1)
    uniform = torch.full((L, L), 1 / L)
    weights = torch.stack([shift, uniform])[None].expand(3, 2, L, L)  # (B, H, L, L)
    profile = attention_by_offset(weights)
    assert profile.shape == (2, L)
    expected = torch.zeros(L)
    expected[L // 2 - 1] = 1.0  # offset -1
    torch.testing.assert_close(profile[0], expected)
    torch.testing.assert_close(profile[1], torch.full((L,), 1 / L))
    torch.testing.assert_close(profile.sum(-1), torch.ones(2))
    with pytest.raises(ValueError, match=r"\(B, H, L, L\)"):
        attention_by_offset(torch.rand(1, 1, 3, 4))


def test_model_shapes_and_parameters_do_not_depend_on_heads() -> None:
    counts = []
    for heads in (1, 2, 4):
        model = OffsetCopyModel(length=8, num_symbols=5, num_offsets=2, embed_dim=16,
                                num_heads=heads)
        logits, weights = model(torch.randint(0, 5, (3, 8)))
        assert logits.shape == (3, 8, 2, 5) and weights.shape == (3, heads, 8, 8)
        counts.append(sum(p.numel() for p in model.attention.parameters()))
    assert counts == [parameter_count(16, 1)] * 3
    with pytest.raises(ValueError, match="L = 8"):
        model(torch.randint(0, 5, (3, 7)))


def test_two_heads_learn_two_offsets() -> None:
    torch.manual_seed(0)
    tokens, targets = offset_copy_task(512, length=8, num_symbols=8, offsets=(-1, 1))
    model = OffsetCopyModel(8, 8, 2, embed_dim=32, num_heads=2)
    losses = fit_offset_copy(model, tokens, targets, steps=80)
    assert len(losses) == 80 and losses[-1] < losses[0] / 10
    assert bool((offset_accuracy(model, tokens, targets) > 0.99).all())
    _, weights = model(tokens)
    profile = attention_by_offset(weights.detach())  # (H, L)
    peaks = sorted(int(i) - 4 for i in profile.argmax(-1))
    assert peaks == [-1, 1]
    with pytest.raises(ValueError, match="targets"):
        fit_offset_copy(model, tokens, targets[..., :1], steps=1)
