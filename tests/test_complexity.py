"""Tests for attnlib.experiments.complexity: operation counts, the three layers, timing and path length."""

from __future__ import annotations

import math

import pytest
import torch

from attnlib.experiments.complexity import (
    LAYER_TYPES,
    ConvolutionalLayer,
    RecurrentLayer,
    SelfAttentionLayer,
    flop_crossover,
    gradient_norms,
    layer_flops,
    layers_to_reach,
    make_layer,
    measured_crossover,
    time_layer,
)

F64 = torch.float64


def test_layer_flops_follow_the_formulas() -> None:
    n, d, k = 10, 6, 3
    assert layer_flops("self-attention", n, d) == 4 * n * n * d
    assert layer_flops("recurrent", n, d) == 4 * n * d * d
    assert layer_flops("convolutional", n, d, kernel_size=k) == 2 * k * n * d * d
    assert layer_flops("multi-head self-attention", n, d) == 8 * n * d * d + 4 * n * n * d
    with pytest.raises(ValueError, match="layer_type"):
        layer_flops("transformer", n, d)
    with pytest.raises(ValueError, match="n must be >= 1"):
        layer_flops("recurrent", 0, d)
    with pytest.raises(TypeError, match="d must be an int"):
        layer_flops("recurrent", n, 2.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("d", [16, 256, 512])
def test_flop_crossover_is_where_the_counts_meet(d: int) -> None:
    n = flop_crossover("recurrent", d)
    assert n == d
    assert layer_flops("self-attention", d, d) == layer_flops("recurrent", d, d)
    n = flop_crossover("convolutional", d, kernel_size=3)
    assert n == 1.5 * d
    assert layer_flops("self-attention", int(n), d) == layer_flops("convolutional", int(n), d)
    # Shorter: self-attention is cheaper; longer: dearer.
    assert layer_flops("self-attention", d // 2, d) < layer_flops("recurrent", d // 2, d)
    assert layer_flops("self-attention", 2 * d, d) > layer_flops("recurrent", 2 * d, d)
    with pytest.raises(ValueError, match="layer_type"):
        flop_crossover("self-attention", d)


@pytest.mark.parametrize("layer_type", LAYER_TYPES)
def test_every_layer_maps_b_n_d_to_b_n_d(layer_type: str) -> None:
    layer = make_layer(layer_type, 8)
    x = torch.randn(2, 5, 8)
    assert layer(x).shape == (2, 5, 8)


def test_self_attention_layer_is_the_formula() -> None:
    x = torch.randn(2, 5, 4, dtype=F64)
    expected = torch.softmax(x @ x.transpose(1, 2) / 2.0, dim=-1) @ x
    torch.testing.assert_close(SelfAttentionLayer()(x), expected, atol=1e-12, rtol=0)
    assert not list(SelfAttentionLayer().parameters())


def test_recurrent_layer_is_nn_rnn() -> None:
    torch.manual_seed(0)
    layer = RecurrentLayer(4).double()
    x = torch.randn(1, 6, 4, dtype=F64)
    w_ih, w_hh = layer.rnn.weight_ih_l0, layer.rnn.weight_hh_l0
    b = layer.rnn.bias_ih_l0 + layer.rnn.bias_hh_l0
    h = torch.zeros(4, dtype=F64)
    for t in range(6):
        h = torch.tanh(w_ih @ x[0, t] + w_hh @ h + b)
        torch.testing.assert_close(layer(x)[0, t], h, atol=1e-12, rtol=0)


def test_layers_check_their_input() -> None:
    with pytest.raises(ValueError, match="odd"):
        ConvolutionalLayer(4, kernel_size=2)
    with pytest.raises(ValueError, match=r"d = 4, got shape \(1, 3, 5\)"):
        ConvolutionalLayer(4)(torch.randn(1, 3, 5))
    with pytest.raises(ValueError, match=r"\(B, n, d\)"):
        RecurrentLayer(4)(torch.randn(3, 4))


def test_convolution_reaches_one_position_further_per_layer() -> None:
    torch.manual_seed(0)
    n, d, depth = 10, 3, 9
    x = torch.randn(1, n, d, dtype=F64)
    norms = gradient_norms([ConvolutionalLayer(d).double() for _ in range(depth)], x)
    assert norms.shape == (depth, n)
    for layer in range(depth):
        reached = norms[layer] != 0
        # After layer + 1 layers, y_n sees x_{n - 1 - (layer + 1)}, ..., x_n and nothing else.
        assert reached.tolist() == [j >= n - 2 - layer for j in range(n)]
    assert layers_to_reach(norms) == n - 1
    assert layers_to_reach(norms, position=-1) == 1


def test_dilated_convolutions_reach_exponentially_far() -> None:
    torch.manual_seed(0)
    n, d = 16, 3
    x = torch.randn(1, n, d, dtype=F64)
    layers = [ConvolutionalLayer(d, dilation=2**i).double() for i in range(5)]
    norms = gradient_norms(layers, x)
    # Radius after l layers: 1 + 2 + ... + 2^(l-1) = 2^l - 1.
    for depth in range(1, 6):
        assert int((norms[depth - 1] != 0).sum()) == min(n, 2**depth)
    assert layers_to_reach(norms) == math.ceil(math.log2(n))


def test_recurrence_and_attention_reach_everything_in_one_layer() -> None:
    torch.manual_seed(0)
    x = torch.randn(1, 7, 4, dtype=F64)
    for layer in (RecurrentLayer(4).double(), SelfAttentionLayer()):
        norms = gradient_norms([layer], x)
        assert bool((norms != 0).all())
        assert layers_to_reach(norms) == 1
    # A recurrent layer is causal: y_1 depends on x_1 only.
    x.requires_grad_(True)
    y = RecurrentLayer(4).double()(x)
    (grad,) = torch.autograd.grad(y[0, 0].sum(), x)
    assert bool((grad[0, 1:] == 0).all())


def test_layers_to_reach_none_and_errors() -> None:
    norms = torch.tensor([[0.0, 1.0], [0.0, 2.0]])
    assert layers_to_reach(norms) is None
    with pytest.raises(ValueError, match="position"):
        layers_to_reach(norms, position=2)
    with pytest.raises(ValueError, match="at least one layer"):
        gradient_norms([], torch.randn(1, 2, 3))


def test_measured_crossover_interpolates_in_log_log() -> None:
    lengths = [16, 32, 64, 128, 256, 512]
    # Power laws are straight lines in log-log, so the interpolation is exact: n^2 = 100 n.
    quadratic = [float(n * n) for n in lengths]
    linear = [100.0 * n for n in lengths]
    assert measured_crossover(lengths, quadratic, linear) == pytest.approx(100.0)
    assert measured_crossover(lengths, linear, quadratic) == 16.0  # slower from the start
    assert measured_crossover(lengths, [1.0] * 6, [2.0] * 6) is None
    with pytest.raises(ValueError, match="equally long"):
        measured_crossover(lengths, quadratic[:-1], linear)
    with pytest.raises(ValueError, match="increase"):
        measured_crossover([2, 1], [1.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="> 0"):
        measured_crossover([1, 2], [0.0, 1.0], [1.0, 1.0])


def test_time_layer_returns_seconds_and_restores_threads() -> None:
    before = torch.get_num_threads()
    x = torch.randn(1, 8, 4)
    for kwargs in ({}, {"clock": "wall"}, {"clock": "wall", "num_threads": None}):
        seconds = time_layer(SelfAttentionLayer(), x, repeats=2, **kwargs)
        assert isinstance(seconds, float) and seconds >= 0
        assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="repeats"):
        time_layer(SelfAttentionLayer(), x, repeats=0)
    with pytest.raises(ValueError, match="clock"):
        time_layer(SelfAttentionLayer(), x, clock="cpu")
    with pytest.raises(ValueError, match="num_threads=1"):
        time_layer(SelfAttentionLayer(), x, num_threads=2)


def test_self_attention_layer_runs_the_fused_kernel() -> None:
    """Chapter 5's timing relies on it: PyTorch's fused CPU kernel takes 4-D inputs only."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    x = torch.randn(2, 16, 8)  # (B, n, d)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):  # raises if the fused kernel cannot run
        fused = SelfAttentionLayer()(x)
        with pytest.raises(RuntimeError):  # the 3-D call it avoids
            torch.nn.functional.scaled_dot_product_attention(x, x, x)
    reference = torch.softmax(x @ x.transpose(-2, -1) / 8**0.5, dim=-1) @ x  # (B, n, d)
    torch.testing.assert_close(fused, reference, rtol=1e-5, atol=1e-5)
