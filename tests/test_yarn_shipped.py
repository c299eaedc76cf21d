"""YaRN's ramp as the reference code computes it, against the numbers worked out by hand."""

from __future__ import annotations

import math

import torch

from attnlib.blocks import rope_scaling as rs


def test_llama_sizes_ramp_between_pairs_20_and_46() -> None:
    # E = 128, b = 10^4, L = 4096: the pair that turns 32 times is d = 20.94, rounded down to
    # 20; the one that turns once is d = 45.03, rounded up to 46.
    gamma = rs.yarn_ramp_shipped(128, 10000.0, 4096, alpha=1.0, beta=32.0)
    i = torch.arange(64, dtype=torch.float64)
    expected = 1 - ((i - 20) / 26).clamp(0, 1)
    assert torch.allclose(gamma, expected, rtol=0, atol=1e-15)


def test_agrees_with_the_paper_at_the_ends() -> None:
    # pairs that turn far more than beta times are kept by both, far fewer than alpha by both
    paper = rs.yarn_ramp(128, 10000.0, 4096)
    shipped = rs.yarn_ramp_shipped(128, 10000.0, 4096)
    turns = 4096 * rs.scaled_frequencies(128, 10000.0) / (2 * math.pi)
    ends = (turns > 64) | (turns < 0.5)
    assert torch.equal(paper[ends], shipped[ends])
    assert (paper[~ends] - shipped[~ends]).abs().max() > 0.1  # between, they differ


def test_the_rounding_clamps_at_the_first_pair() -> None:
    # a small model whose fastest pair turns fewer than beta times: index 0 is kept anyway
    gamma = rs.yarn_ramp_shipped(8, 300.0, 32, alpha=1.0, beta=32.0)
    assert gamma.tolist() == [1.0, 0.5, 0.0, 0.0]
