"""Nadaraya–Watson regression: weights, the softmax identity, limits, learning, bad input."""

from __future__ import annotations

import math

import pytest
import torch

import attnlib
from attnlib.models.kernel_regression import (
    KERNEL_FUNCTIONS,
    KERNELS,
    NadarayaWatson,
    fit_bandwidth,
    kernel_scores,
    leave_one_out_mask,
    make_regression_data,
    nadaraya_watson,
)


@pytest.fixture
def data() -> attnlib.models.kernel_regression.RegressionData:
    return make_regression_data(n_train=40, n_test=30, seed=3)


@pytest.mark.parametrize("kernel", KERNELS)
def test_weights_are_a_distribution(data, kernel):
    _, w = nadaraya_watson(data.x_test, data.x_train, data.y_train, bandwidth=1.5, kernel=kernel)
    assert w.shape == (30, 40)
    assert bool((w >= 0).all())
    torch.testing.assert_close(w.sum(-1), torch.ones(30, dtype=w.dtype), rtol=0, atol=1e-12)


@pytest.mark.parametrize("kernel", KERNELS)
def test_weights_equal_normalised_kernel_values(data, kernel):
    """The score/softmax route gives the textbook ratio K(u_i) / sum_j K(u_j)."""
    h = 1.5
    _, w = nadaraya_watson(data.x_test, data.x_train, data.y_train, bandwidth=h, kernel=kernel)
    u = (data.x_test[:, None] - data.x_train[None, :])[..., None] / h
    k = KERNEL_FUNCTIONS[kernel](u)
    torch.testing.assert_close(w, k / k.sum(-1, keepdim=True), rtol=0, atol=1e-12)


def test_gaussian_weights_are_softmax_of_scaled_negative_squared_distance(data):
    sigma = 0.7
    _, w = nadaraya_watson(data.x_test, data.x_train, data.y_train, bandwidth=sigma)
    d2 = (data.x_test[:, None] - data.x_train[None, :]).square()
    expected = torch.softmax(-d2 / (2 * sigma**2), dim=-1)
    assert w.dtype == torch.float64
    assert float((w - expected).abs().max()) <= 1e-12


def test_prediction_is_weighted_average_of_values(data):
    pred, w = nadaraya_watson(data.x_test, data.x_train, data.y_train, bandwidth=0.5)
    manual = torch.stack([sum(w[i, j] * data.y_train[j] for j in range(40)) for i in range(30)])
    torch.testing.assert_close(pred, manual, rtol=0, atol=1e-12)


def test_large_bandwidth_gives_average_pooling(data):
    pred, w = nadaraya_watson(data.x_test, data.x_train, data.y_train, bandwidth=1e6)
    torch.testing.assert_close(w, torch.full_like(w, 1 / 40), rtol=0, atol=1e-9)
    torch.testing.assert_close(pred, data.y_train.mean().expand(30), rtol=0, atol=1e-9)


def test_small_bandwidth_gives_nearest_neighbour(data):
    pred, w = nadaraya_watson(data.x_test, data.x_train, data.y_train, bandwidth=1e-4)
    nearest = (data.x_test[:, None] - data.x_train[None, :]).abs().argmin(-1)
    assert torch.equal(w.argmax(-1), nearest)
    torch.testing.assert_close(pred, data.y_train[nearest], rtol=0, atol=1e-9)
    assert bool(torch.isfinite(w).all())  # the raw kernel ratio would be 0/0 here


def test_multidimensional_and_batched_inputs_agree_with_single():
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(2, 5, 3, generator=gen, dtype=torch.float64)
    k = torch.randn(2, 7, 3, generator=gen, dtype=torch.float64)
    v = torch.randn(2, 7, 4, generator=gen, dtype=torch.float64)
    pred, w = nadaraya_watson(q, k, v, bandwidth=0.8)
    assert pred.shape == (2, 5, 4) and w.shape == (2, 5, 7)
    for b in range(2):
        p1, w1 = nadaraya_watson(q[b], k[b], v[b], bandwidth=0.8)
        torch.testing.assert_close(pred[b], p1, rtol=0, atol=1e-14)
        torch.testing.assert_close(w[b], w1, rtol=0, atol=1e-14)


def test_leave_one_out_mask_zeroes_own_weight(data):
    mask = leave_one_out_mask(40)
    _, w = nadaraya_watson(data.x_train, data.x_train, data.y_train, bandwidth=0.3, attn_mask=mask)
    assert bool((w.diagonal() == 0).all())
    torch.testing.assert_close(w.sum(-1), torch.ones(40, dtype=w.dtype), rtol=0, atol=1e-12)


def test_learned_bandwidth_lowers_leave_one_out_loss(data):
    model = NadarayaWatson(bandwidth=2.0).double()
    mask = leave_one_out_mask(40)

    def loo_loss() -> float:
        with torch.no_grad():
            pred, _ = model(data.x_train, data.x_train, data.y_train, attn_mask=mask)
        return float((pred - data.y_train).square().mean())

    before = loo_loss()
    result = fit_bandwidth(model, data.x_train, data.y_train, steps=100, lr=0.05)
    after = loo_loss()
    assert after < 0.8 * before
    assert result.losses[-1] < result.losses[0]
    assert 0.05 < result.bandwidths[-1] < 2.0


def test_without_leave_one_out_bandwidth_collapses(data):
    model = NadarayaWatson(bandwidth=0.5).double()
    result = fit_bandwidth(model, data.x_train, data.y_train, steps=150, lr=0.1, leave_one_out=False)
    assert result.bandwidths[-1] < 0.1 * result.bandwidths[0]
    assert result.losses[-1] < 0.05 * result.losses[0]  # memorises its own noisy targets


def test_empty_row_is_an_error_not_nan(data):
    with pytest.raises(ValueError, match=r"no key to attend to.*bandwidth"):
        nadaraya_watson(torch.tensor([100.0], dtype=torch.float64), data.x_train, data.y_train,
                        bandwidth=0.5, kernel="boxcar")


def test_inputs_not_modified(data):
    x, y, q = data.x_train.clone(), data.y_train.clone(), data.x_test.clone()
    nadaraya_watson(data.x_test, data.x_train, data.y_train, bandwidth=0.5,
                    attn_mask=torch.ones(30, 40, dtype=torch.bool))
    assert torch.equal(x, data.x_train) and torch.equal(y, data.y_train) and torch.equal(q, data.x_test)


def test_data_is_deterministic_and_leaves_global_rng_alone():
    torch.manual_seed(123)
    state = torch.get_rng_state()
    a = make_regression_data(seed=5)
    assert torch.equal(state, torch.get_rng_state())
    b = make_regression_data(seed=5)
    c = make_regression_data(seed=6)
    assert torch.equal(a.x_train, b.x_train) and torch.equal(a.y_train, b.y_train)
    assert not torch.equal(a.y_train, c.y_train)
    assert bool((a.x_train[1:] >= a.x_train[:-1]).all())


X = torch.linspace(0, 1, 5, dtype=torch.float64)


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"values": torch.zeros(4, dtype=torch.float64)}, ValueError, r"keys and values.*\(5\).*\(4\)"),
        ({"bandwidth": 0.0}, ValueError, r"bandwidth must be finite and > 0, got 0"),
        ({"bandwidth": -1.0}, ValueError, r"bandwidth must be finite and > 0, got -1"),
        ({"bandwidth": math.nan}, ValueError, r"bandwidth must be finite"),
        ({"kernel": "triangle"}, ValueError, r"kernel must be one of.*'triangle'"),
        ({"queries": torch.zeros(2, 2, 2, 2, dtype=torch.float64)}, ValueError, r"queries must have 1 or 2 or 3 dimensions.*\(2, 2, 2, 2\)"),
        ({"queries": torch.zeros(3, 2, dtype=torch.float64)}, ValueError, r"queries and keys must have the same number of dimensions"),
        ({"queries": torch.zeros(3, dtype=torch.long)}, TypeError, r"queries must have a floating-point dtype"),
        ({"keys": [0.0, 1.0]}, TypeError, r"keys must be a torch.Tensor, got list"),
        ({"values": torch.zeros(5, 2, 2, dtype=torch.float64)}, ValueError, r"values must have 1 or 2 dimensions.*\(5, 2, 2\)"),
        ({"attn_mask": torch.ones(5, 5)}, TypeError, r"attn_mask must be a boolean tensor"),
        ({"attn_mask": torch.ones(3, 4, dtype=torch.bool)}, ValueError, r"attn_mask of shape \(3, 4\) does not broadcast.*\(5, 5\)"),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, pattern):
    args = {"queries": X, "keys": X, "values": X, "bandwidth": 1.0, "kernel": "gaussian"}
    args.update(kwargs)
    with pytest.raises(error, match=pattern):
        nadaraya_watson(**args)


def test_bad_model_and_fit_arguments(data):
    with pytest.raises(ValueError, match="bandwidth"):
        NadarayaWatson(bandwidth=0.0)
    with pytest.raises(ValueError, match="kernel"):
        NadarayaWatson(kernel="cosine")
    with pytest.raises(ValueError, match="n must be at least 2"):
        leave_one_out_mask(1)
    with pytest.raises(ValueError, match="steps must be >= 1"):
        fit_bandwidth(NadarayaWatson().double(), data.x_train, data.y_train, steps=0)


def test_kernel_scores_are_log_kernels(data):
    u_scale = 0.9
    for kernel in KERNELS:
        s = kernel_scores(data.x_test, data.x_train, u_scale, kernel)
        u = (data.x_test[:, None] - data.x_train[None, :])[..., None] / u_scale
        torch.testing.assert_close(s.exp(), KERNEL_FUNCTIONS[kernel](u), rtol=0, atol=1e-12)


def test_epanechnikov_bandwidth_has_a_gradient_and_learns(data):
    """Its weights (h² - r_i²) / Σ_j (h² - r_j²) depend on h inside a fixed window."""
    model = NadarayaWatson(bandwidth=2.0, kernel="epanechnikov").double()
    mask = leave_one_out_mask(40)
    prediction, _ = model(data.x_train, data.x_train, data.y_train, attn_mask=mask)
    (prediction - data.y_train).square().mean().backward()
    assert model.log_bandwidth.grad is not None and abs(float(model.log_bandwidth.grad)) > 1e-3
    result = fit_bandwidth(model, data.x_train, data.y_train, steps=100, lr=0.05)
    assert result.losses[-1] < 0.9 * result.losses[0]
    assert 0.1 < result.bandwidths[-1] < 1.9


def test_boxcar_bandwidth_has_no_gradient_and_fit_refuses_it(data):
    """Boxcar weights are 1/(keys in the window): constant in h until the window's set changes."""
    h = torch.tensor(0.7, dtype=torch.float64, requires_grad=True)
    scores = kernel_scores(data.x_test, data.x_train, h, "boxcar")
    assert not scores.requires_grad  # no path from h to the scores, hence none to a loss
    with pytest.raises(ValueError, match=r"model.kernel='boxcar'.*no gradient"):
        fit_bandwidth(NadarayaWatson(kernel="boxcar").double(), data.x_train, data.y_train)
