"""RoPE scaling (PI, NTK-aware, YaRN) against plain RoPE and the papers' formulas."""

from __future__ import annotations

import math

import pytest
import torch

from attnlib.blocks import rope_scaling as rs
from attnlib.blocks.positional import RotaryPositionalEmbedding, _frequencies

pytestmark = pytest.mark.usefixtures("one_thread")

F64 = torch.float64


def _x(*shape: int, dtype: torch.dtype = F64) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0), dtype=dtype)


@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_plain_method_is_rope_bit_for_bit(dtype: torch.dtype) -> None:
    x = _x(2, 3, 10, 8, dtype=dtype)
    for scale in (1.0, 4.0):  # "rope" ignores the scale
        scaled = rs.ScaledRotaryEmbedding(8, 300.0, "rope", scale)
        torch.testing.assert_close(scaled(x, offset=5), RotaryPositionalEmbedding(8, 300.0)(
            x, offset=5), atol=0, rtol=0)


def test_interpolation_at_position_sm_is_rope_at_m() -> None:
    x = _x(1, 6, 8)
    pi = rs.ScaledRotaryEmbedding(8, 100.0, "pi", 4.0)
    rope = RotaryPositionalEmbedding(8, 100.0)
    positions = torch.arange(6)
    torch.testing.assert_close(pi(x, positions * 4), rope(x, positions), atol=1e-12, rtol=0)


def test_ntk_is_rope_with_the_larger_base() -> None:
    x = _x(2, 2, 12, 16)
    new_base = rs.ntk_base(300.0, 4.0, 16)
    assert math.isclose(new_base, 300.0 * 4.0 ** (16 / 14))
    torch.testing.assert_close(rs.ScaledRotaryEmbedding(16, 300.0, "ntk", 4.0)(x),
                               RotaryPositionalEmbedding(16, new_base)(x), atol=1e-12, rtol=0)
    old, new = _frequencies(16, 300.0), _frequencies(16, new_base)
    assert math.isclose(float(new[0]), float(old[0]))  # the fastest pair is kept
    assert math.isclose(float(old[-1] / new[-1]), 4.0, rel_tol=1e-12)  # the slowest: / s


def _paper_yarn(E: int, base: float, s: float, L: int, alpha: float, beta: float) -> list[float]:
    """Peng et al.'s NTK-by-parts, pair by pair, written from the paper's equations."""
    out = []
    for d in range(E // 2):
        theta = base ** (-2 * d / E)
        wavelength = 2 * math.pi / theta
        r = L / wavelength
        gamma = 0.0 if r < alpha else 1.0 if r > beta else (r - alpha) / (beta - alpha)
        out.append((1 - gamma) * theta / s + gamma * theta)
    return out


@pytest.mark.parametrize(("E", "base", "L", "alpha", "beta"),
                         [(8, 300.0, 32, 1.0, 4.0), (128, 10000.0, 4096, 1.0, 32.0),
                          (16, 100.0, 64, 0.5, 3.0)])
def test_yarn_frequencies_follow_the_paper(E: int, base: float, L: int, alpha: float,
                                           beta: float) -> None:
    ours = rs.scaled_frequencies(E, base, "yarn", 4.0, L, alpha, beta)
    torch.testing.assert_close(ours, torch.tensor(_paper_yarn(E, base, 4.0, L, alpha, beta),
                                                  dtype=F64), atol=0, rtol=1e-14)


def test_yarn_ramp_ends_are_rope_and_interpolation() -> None:
    theta = _frequencies(8, 300.0)
    keep = rs.scaled_frequencies(8, 300.0, "yarn", 4.0, 10**6, 1.0, 2.0)  # every r > beta
    squeeze = rs.scaled_frequencies(8, 300.0, "yarn", 4.0, 1, 100.0, 200.0)  # every r < alpha
    torch.testing.assert_close(keep, theta, atol=0, rtol=1e-15)
    torch.testing.assert_close(squeeze, theta / 4.0, atol=0, rtol=1e-15)


def test_yarn_factor_sharpens_the_softmax_by_one_over_t() -> None:
    s = 4.0
    factor = rs.yarn_attention_factor(s)
    assert math.isclose(factor, 0.1 * math.log(4.0) + 1)
    assert rs.yarn_attention_factor(0.5) == 1.0
    q, k = _x(1, 1, 5, 8), _x(1, 1, 5, 8) * 0.5
    yarn = rs.ScaledRotaryEmbedding(8, 300.0, "yarn", s, 32, 1.0, 4.0)
    ramp_only = rs.ScaledRotaryEmbedding(8, 300.0, "yarn", 1.0, 32, 1.0, 4.0)
    ramp_only.theta = yarn.theta  # the same frequencies, without the factor
    scores = yarn(q) @ yarn(k).transpose(-2, -1)
    plain = ramp_only(q) @ ramp_only(k).transpose(-2, -1)
    torch.testing.assert_close(torch.softmax(scores, -1), torch.softmax(plain * factor**2, -1),
                               atol=1e-14, rtol=0)


@pytest.mark.parametrize("method", rs.METHODS)
def test_scores_depend_on_the_offset_only(method: str) -> None:
    rope = rs.ScaledRotaryEmbedding(8, 300.0, method, 3.0, 32, 1.0, 4.0)
    q, k = _x(1, 1, 8), _x(1, 1, 8) * 2  # (B, L, E)
    at = [(rope(q, torch.tensor([m])) @ rope(k, torch.tensor([m - 5])).mT).item()
          for m in (5, 17, 90)]
    assert max(at) - min(at) < 1e-10


BAD = [
    (lambda: rs.ntk_base(10000.0, 0.0, 8), ["scale", "0"]),
    (lambda: rs.ntk_base(10000.0, 2.0, 7), ["head_dim", "even", "7"]),
    (lambda: rs.scaled_frequencies(8, method="linear"), ["method", "'linear'", "'yarn'"]),
    (lambda: rs.scaled_frequencies(8, method="yarn", scale=2.0), ["train_length", "None"]),
    (lambda: rs.yarn_ramp(8, 300.0, 32, alpha=4.0, beta=2.0), ["alpha", "beta", "4.0"]),
    (lambda: rs.ScaledRotaryEmbedding(8, scale=-1.0), ["scale", "-1"]),
    (lambda: rs.ScaledRotaryEmbedding(8)(_x(2, 5, 6)), ["x", "head_dim = 8", "(2, 5, 6)"]),
]


@pytest.mark.parametrize(("call", "fragments"), BAD)
def test_bad_input_names_argument_got_and_expected(call, fragments) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
