"""RoPE scaling (position interpolation, NTK-aware base) and ALiBi."""

from __future__ import annotations

import math

import pytest
import torch

from attnlib.blocks.positional import RotaryPositionalEmbedding, _frequencies
from attnlib.experiments import extrapolation as ex
from attnlib.experiments import long_context as lc

pytestmark = pytest.mark.usefixtures("one_thread")

F64 = torch.float64


def test_unscaled_equals_rope() -> None:
    x = torch.randn(2, 3, 10, 8, dtype=F64)
    torch.testing.assert_close(lc.ScaledRotaryEmbedding(8)(x), RotaryPositionalEmbedding(8)(x),
                               atol=0, rtol=0)
    torch.testing.assert_close(lc.ScaledRotaryEmbedding(8)(x, offset=3),
                               RotaryPositionalEmbedding(8)(x, offset=3), atol=0, rtol=0)


def test_interpolation_by_s_at_position_sm_is_rope_at_m() -> None:
    """Position interpolation by s rotates position s*m as plain RoPE rotates position m."""
    x = torch.randn(1, 4, 8, dtype=F64)
    pi = lc.ScaledRotaryEmbedding(8, interpolation=4.0)
    rope = RotaryPositionalEmbedding(8)
    positions = torch.arange(4)
    torch.testing.assert_close(pi(x, positions * 4), rope(x, positions), atol=1e-12, rtol=0)


def test_ntk_base_keeps_fastest_and_slows_slowest_by_s() -> None:
    E, base, s = 16, 10000.0, 4.0
    new = lc.ntk_base(base, s, E)
    old_f, new_f = _frequencies(E, base), _frequencies(E, new)
    assert math.isclose(float(new_f[0]), float(old_f[0]))
    assert math.isclose(float(old_f[-1] / new_f[-1]), s, rel_tol=1e-12)
    ratios = old_f / new_f
    assert bool((ratios[1:] >= ratios[:-1]).all())  # slowed down more the slower the pair


def test_rescale_rope_keeps_weights_and_scores_are_relative() -> None:
    torch.manual_seed(0)
    model = ex.LookbackModel(ex.LookbackConfig(encoding="rope"), dtype=F64)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    for method in ("rope", "pi", "ntk"):
        lc.rescale_rope(model, method, 2.0)
        for k, v in model.state_dict().items():
            assert torch.equal(v, before[k])
    tokens = torch.zeros(1, 12, dtype=torch.long)  # the same token everywhere
    with torch.no_grad():
        scores = model.scores(tokens)[0, 0]
    for d in range(-11, 12):
        diagonal = scores.diagonal(d)
        assert float(diagonal.max() - diagonal.min()) < 1e-10


def test_alibi_slopes_paper_values() -> None:
    assert torch.equal(lc.alibi_slopes(8), torch.tensor([2.0 ** -(h + 1) for h in range(8)],
                                                        dtype=F64))
    assert torch.equal(lc.alibi_slopes(4), torch.tensor([2.0 ** -(2 * (h + 1)) for h in range(4)],
                                                        dtype=F64))
    six = lc.alibi_slopes(6)  # 4 of the power of two, then every other of 8
    assert torch.equal(six[:4], lc.alibi_slopes(4))
    assert torch.equal(six[4:], lc.alibi_slopes(8)[0::2][:2])


def test_alibi_bias_values() -> None:
    slopes = torch.tensor([0.5, 0.25], dtype=F64)
    bias = lc.alibi_bias(4, slopes, dtype=F64)
    assert bias.shape == (2, 4, 4)
    assert float(bias[0, 3, 1]) == -1.0 and float(bias[1, 3, 0]) == -0.75
    assert bool(torch.isneginf(bias[:, 0, 1]).all())
    sym = lc.alibi_bias(4, slopes, causal=False, dtype=F64)
    assert float(sym[0, 1, 3]) == -1.0


def test_alibi_model_runs_on_any_length_without_nan() -> None:
    torch.manual_seed(0)
    model = lc.AlibiLookbackModel(ex.LookbackConfig(encoding="none", num_heads=4), dtype=F64)
    for L in (1, 16, 70):
        logits, weights = model(torch.zeros(2, L, dtype=torch.long), need_weights=True)
        assert logits.shape == (2, L, 16) and weights is not None
        assert bool(torch.isfinite(logits).all())
        assert bool((weights.triu(1) == 0).all())  # causal


BAD = [
    (lambda: lc.ntk_base(10000.0, 0.0, 8), ["scale", "0"]),
    (lambda: lc.ntk_base(10000.0, 2.0, 7), ["head_dim", "even", "7"]),
    (lambda: lc.ScaledRotaryEmbedding(8, interpolation=-1.0), ["interpolation", "-1"]),
    (lambda: lc.ScaledRotaryEmbedding(8)(torch.randn(2, 5, 6)), ["x", "head_dim = 8", "(2, 5, 6)"]),
    (lambda: lc.rescale_rope(ex.LookbackModel(ex.LookbackConfig(encoding="sinusoidal")), "pi", 2.0),
     ["RoPE", "sinusoidal"]),
    (lambda: lc.rescale_rope(ex.LookbackModel(ex.LookbackConfig(encoding="rope")), "yarn", 2.0),
     ["method", "yarn"]),
    (lambda: lc.alibi_bias(4, torch.ones(2, 2)), ["slopes", "(2, 2)", "(H,)"]),
    (lambda: lc.alibi_slopes(0), ["num_heads", "0"]),
    (lambda: lc.AlibiLookbackModel(ex.LookbackConfig(encoding="rope")), ["encoding", "rope"]),
]


@pytest.mark.parametrize(("call", "fragments"), BAD)
def test_bad_input_names_argument_got_and_expected(call, fragments) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
