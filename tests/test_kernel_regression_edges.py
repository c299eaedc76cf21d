"""Edges of attnlib.models.kernel_regression found in the review of chapter 1."""

import math
import warnings

import pytest
import torch

from attnlib.models import kernel_regression as kr


def test_no_key_error_with_a_trainable_bandwidth_does_not_warn() -> None:
    # an Epanechnikov window narrower than the gap to the nearest other key
    data = kr.make_regression_data(n_train=50, n_test=10, noise=0.5, seed=0)
    model = kr.NadarayaWatson(bandwidth=0.2, kernel="epanechnikov").double()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # float() of a tensor requiring grad warns
        with pytest.raises(ValueError, match="has no key to attend to"):
            kr.fit_bandwidth(model, data.x_train, data.y_train, steps=5, lr=0.05,
                             leave_one_out=True)


def test_epanechnikov_scores_are_finite_exactly_inside_the_open_window() -> None:
    keys = torch.tensor([0.0, 0.5, 1.0, 1.5], dtype=torch.float64)
    queries = torch.tensor([0.0], dtype=torch.float64)
    scores = kr.kernel_scores(queries, keys, 1.0, "epanechnikov")[0]
    expected = [math.log(0.75), math.log(0.75) + math.log1p(-0.25), -math.inf, -math.inf]
    assert scores.tolist() == pytest.approx(expected)
