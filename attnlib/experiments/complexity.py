r"""Self-attention, recurrent and convolutional layers side by side: cost and path length.

A layer maps a sequence :math:`x_1, \dots, x_n \in \mathbb R^d` to :math:`y_1, \dots, y_n`.
There are three ways to do it:

.. math::

    \text{recurrent: } y_t = f(y_{t-1}, x_t),

    \text{convolutional: } y_t = f(x_{t-1}, x_t, x_{t+1}),

    \text{self-attention: } y_t = f(x_t, X, X).

Table 1 of Vaswani et al. (2017) compares them by the work of one layer, the number of
operations that must run one after another, and the longest path a signal travels between two
positions:

=================  ===================  ===================  ====================
layer              work per layer       sequential steps     maximum path length
=================  ===================  ===================  ====================
self-attention     :math:`O(n^2 d)`     :math:`O(1)`         :math:`O(1)`
recurrent          :math:`O(n d^2)`     :math:`O(n)`         :math:`O(n)`
convolutional      :math:`O(k n d^2)`   :math:`O(1)`         :math:`O(\log_k n)`
=================  ===================  ===================  ====================

This module builds the three layers on one shape, (B, n, d) to (B, n, d), counts their
floating-point operations, times them, and measures the path length through gradients:
position j reaches the last output once :math:`\partial y_n / \partial x_j \ne 0`.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Sequence
from itertools import pairwise

import torch
from torch import Tensor, nn

from attnlib._checks import (
    check_choice,
    check_floating,
    check_input,
    check_instance,
    check_int,
    check_ints,
    check_ndim,
    check_real,
    shape_str,
)
from attnlib.blocks.attention import scaled_dot_product_attention
from attnlib.blocks.multihead import MultiHeadAttention

__all__ = [
    "LAYER_TYPES",
    "ConvolutionalLayer",
    "MultiHeadSelfAttentionLayer",
    "RecurrentLayer",
    "SelfAttentionLayer",
    "flop_crossover",
    "gradient_norms",
    "layer_flops",
    "layers_to_reach",
    "make_layer",
    "measured_crossover",
    "time_layer",
]

LAYER_TYPES = ("self-attention", "multi-head self-attention", "recurrent", "convolutional")


def _check_sequence(name: str, x: Tensor, d: int | None, like: Tensor | None = None) -> None:
    """(B, n, d) with n, d >= 1, floating point; of a parameter's dtype and device (``like``)."""
    check_floating(name, x) if like is None else check_input(name, x, like)
    check_ndim(name, x, 3, "(B, n, d)")
    if (d is not None and x.shape[-1] != d) or x.shape[1] == 0 or x.shape[2] == 0:
        raise ValueError(f"{name} must have shape (B, n, d) with n >= 1 and d = "
                         f"{d if d is not None else 'd >= 1'}, got shape {shape_str(x.shape)}")


def layer_flops(layer_type: str, n: int, d: int, kernel_size: int = 3) -> int:
    r"""Floating-point operations of one layer on one sequence.

    A multiply-add counts 2. Only the matrix products are counted; softmax, tanh
    and biases add :math:`O(n^2)` or :math:`O(nd)`, a lower order.

    .. math::

        \text{self-attention: }
            \underbrace{2n^2d}_{QK^\top} + \underbrace{2n^2d}_{AV} = 4n^2d,

        \text{recurrent: }
            n\,(\underbrace{2d^2}_{W_{ih}x_t}
                + \underbrace{2d^2}_{W_{hh}y_{t-1}}) = 4nd^2,

        \text{convolutional: } 2knd^2,

        \text{multi-head self-attention: }
            \underbrace{8nd^2}_{W^Q, W^K, W^V, W^O} + 4n^2d.

    Raises:
        ValueError: if ``layer_type`` is not one of :data:`LAYER_TYPES` or a
            size is < 1.
        TypeError: if a size is not an int.
    """
    check_choice("layer_type", layer_type, LAYER_TYPES)
    for name, value in (("n", n), ("d", d), ("kernel_size", kernel_size)):
        check_int(name, value, minimum=1)
    if layer_type == "self-attention":
        return 4 * n * n * d
    if layer_type == "multi-head self-attention":
        return 8 * n * d * d + 4 * n * n * d
    if layer_type == "recurrent":
        return 4 * n * d * d
    return 2 * kernel_size * n * d * d


def flop_crossover(layer_type: str, d: int, kernel_size: int = 3) -> float:
    r"""The length n at which self-attention costs as many operations as ``layer_type``.

    :math:`4n^2d = 4nd^2` gives :math:`n = d` for the recurrent layer, and
    :math:`4n^2d = 2knd^2` gives :math:`n = kd/2` for the convolutional one. Shorter sequences
    are cheaper with self-attention.

    Raises:
        ValueError: if ``layer_type`` is not "recurrent" or "convolutional", or a size is < 1.
    """
    check_choice("layer_type", layer_type, ("recurrent", "convolutional"))
    check_int("d", d, minimum=1)
    check_int("kernel_size", kernel_size, minimum=1)
    return float(d) if layer_type == "recurrent" else kernel_size * d / 2


class SelfAttentionLayer(nn.Module):
    r"""Self-attention without projections, :math:`Y = \mathrm{softmax}(XX^\top/\sqrt d)\,X`.

    The part of a self-attention layer that Table 1 counts: every position against every
    other. (The projections :math:`W^Q, W^K, W^V, W^O` of :class:`~attnlib.blocks.multihead.MultiHeadAttention` add
    :math:`O(nd^2)`, the same order as a recurrent layer.) No parameters.

    Shape:
        - x: (B, n, d)
        - output: (B, n, d)
    """

    def forward(self, x: Tensor) -> Tensor:
        _check_sequence("x", x, None)
        # One head of size d, (B, 1, n, d): PyTorch's fused CPU kernel takes 4-D inputs only;
        # called on (B, n, d) it falls back to the unfused path that stores the n x n weights.
        h = x[:, None]  # (B, 1, n, d)
        return scaled_dot_product_attention(h, h, h)[:, 0]  # (B, n, d)


class MultiHeadSelfAttentionLayer(nn.Module):
    """:class:`~attnlib.blocks.multihead.MultiHeadAttention` called as ``MultiHead(X, X, X)``, returning the output only.

    Shape:
        - x: (B, n, d)
        - output: (B, n, d)
    """

    def __init__(self, d: int, num_heads: int) -> None:
        super().__init__()
        check_int("d", d, minimum=1)
        self.attention = MultiHeadAttention(d, num_heads)

    def forward(self, x: Tensor) -> Tensor:
        attention = self.attention
        _check_sequence("x", x, attention.embed_dim, attention.q_proj.weight)
        output: Tensor = self.attention(x, x, x)[0]  # (B, n, d)
        return output


class RecurrentLayer(nn.Module):
    r"""An Elman RNN, :math:`y_t = \tanh(W_{ih} x_t + W_{hh} y_{t-1} + b)`, :math:`y_0 = 0`.

    ``nn.RNN`` with its own initialisation; returns every :math:`y_t`. Step t needs step
    t - 1: the n steps run one after another.

    Shape:
        - x: (B, n, d)
        - output: (B, n, d)
    """

    def __init__(self, d: int) -> None:
        super().__init__()
        self.d = check_int("d", d, minimum=1)
        self.rnn = nn.RNN(d, d, batch_first=True)

    def forward(self, x: Tensor) -> Tensor:
        _check_sequence("x", x, self.d, self.rnn.all_weights[0][0])
        output: Tensor = self.rnn(x)[0]  # (B, n, d); [1] is the last state
        return output


class ConvolutionalLayer(nn.Module):
    r"""A 1-D convolution over positions, :math:`y_t = \sum_{i} W_i\, x_{t + (i - (k-1)/2)\,r}`.

    ``nn.Conv1d`` with kernel size k (odd), dilation r and zero padding that keeps the length,
    so :math:`y_t` sees :math:`x_{t-r}, x_t, x_{t+r}` for k = 3. Stacking layers widens what
    a position sees: by :math:`(k-1)/2` per layer without dilation, and geometrically with
    dilations :math:`1, k, k^2, \dots` (or :math:`1, 2, 4, \dots`).

    Shape:
        - x: (B, n, d)
        - output: (B, n, d)

    Raises:
        ValueError: if ``kernel_size`` is even or < 1, or ``d`` or ``dilation`` < 1.
    """

    def __init__(self, d: int, kernel_size: int = 3, dilation: int = 1) -> None:
        super().__init__()
        self.d = check_int("d", d, minimum=1)
        check_int("kernel_size", kernel_size, minimum=1)
        check_int("dilation", dilation, minimum=1)
        if kernel_size % 2 == 0:
            raise ValueError(f"kernel_size must be odd (centred on position t), got {kernel_size}")
        padding = dilation * (kernel_size - 1) // 2
        self.conv = nn.Conv1d(d, d, kernel_size, padding=padding, dilation=dilation)

    def forward(self, x: Tensor) -> Tensor:
        _check_sequence("x", x, self.d, self.conv.weight)
        y: Tensor = self.conv(x.transpose(1, 2))  # (B, d, n): Conv1d wants channels first
        return y.transpose(1, 2)  # (B, n, d)


def make_layer(
    layer_type: str, d: int, *, kernel_size: int = 3, dilation: int = 1, num_heads: int = 4
) -> nn.Module:
    """One layer of ``layer_type`` (see :data:`LAYER_TYPES`) mapping (B, n, d) to (B, n, d).

    ``kernel_size`` and ``dilation`` are for the convolutional layer, ``num_heads`` for the
    multi-head one.

    Raises:
        ValueError: for an unknown ``layer_type`` or bad sizes.
    """
    check_choice("layer_type", layer_type, LAYER_TYPES)
    check_int("d", d, minimum=1)
    for name, value in (("kernel_size", kernel_size), ("dilation", dilation),
                        ("num_heads", num_heads)):
        check_int(name, value, minimum=1)
    if layer_type == "self-attention":
        return SelfAttentionLayer()
    if layer_type == "multi-head self-attention":
        return MultiHeadSelfAttentionLayer(d, num_heads)
    if layer_type == "recurrent":
        return RecurrentLayer(d)
    return ConvolutionalLayer(d, kernel_size, dilation)


def time_layer(
    layer: nn.Module,
    x: Tensor,
    repeats: int = 5,
    *,
    clock: str = "thread",
    num_threads: int | None = 1,
) -> float:
    """The median seconds of ``layer(x)`` over ``repeats`` calls, after one warm-up call.

    Runs under ``torch.no_grad()``. The default measures what the layer itself costs on one
    core: PyTorch runs on one thread for the measurement (the previous thread count is
    restored afterwards), and the clock is the CPU time of that thread
    (:func:`time.thread_time`), which does not advance while other programs have the
    processor. Wall-clock time (``clock="wall"``, :func:`time.perf_counter`) includes every
    thread's parallel work but also every interruption by the rest of the machine.

    Either way the result depends on the machine: print it only where a notebook does not
    compare outputs.

    Args:
        layer: called as ``layer(x)``.
        x: its input.
        repeats: the number of timed calls.
        clock: ``"thread"`` (CPU time of the calling thread) or ``"wall"``.
        num_threads: PyTorch's intra-op threads during the measurement; ``None`` leaves the
            current setting. ``clock="thread"`` needs 1, since it sees only the calling thread.

    Raises:
        ValueError: if ``repeats`` < 1, ``clock`` is unknown, or ``clock="thread"`` is asked
            for with a thread count other than 1.
    """
    check_int("repeats", repeats, minimum=1)
    check_choice("clock", clock, ("thread", "wall"))
    if num_threads is not None:
        check_int("num_threads", num_threads, minimum=1)
    check_instance("layer", layer, nn.Module, "an nn.Module")
    _check_sequence("x", x, None)
    threads = torch.get_num_threads() if num_threads is None else num_threads
    if clock == "thread" and threads != 1:
        raise ValueError(f"clock='thread' measures the calling thread only and needs "
                         f"num_threads=1, got {threads} threads; use clock='wall'")
    now = time.thread_time if clock == "thread" else time.perf_counter
    previous = torch.get_num_threads()
    times = []
    try:
        torch.set_num_threads(threads)
        with torch.no_grad():
            try:  # warm-up: first-call allocations and kernel selection
                layer(x)
            except RuntimeError as error:
                raise ValueError(f"layer(x) failed for x of shape {shape_str(x.shape)}: the "
                                 f"layer must take (B, n, d); {error}") from error
            for _ in range(repeats):
                start = now()
                layer(x)
                times.append(now() - start)
    finally:
        torch.set_num_threads(previous)
    return statistics.median(times)


def measured_crossover(
    lengths: Sequence[int], times_a: Sequence[float], times_b: Sequence[float]
) -> float | None:
    r"""The length at which layer a becomes slower than layer b, or ``None`` if it never does.

    Finds the first i with :math:`t_a(n_i) \le t_b(n_i)` and :math:`t_a(n_{i+1}) > t_b(n_{i+1})`
    and interpolates :math:`\log(t_a / t_b)` linearly in :math:`\log n` between the two
    lengths. If a is already slower at the first length, returns that length.

    Raises:
        ValueError: if the three sequences differ in length, are empty, or a time or length
            is not > 0, or the lengths do not increase.
    """
    check_ints("lengths", lengths, minimum=1)
    for name, values in (("times_a", times_a), ("times_b", times_b)):
        if isinstance(values, str) or not isinstance(values, Sequence):
            raise TypeError(f"{name} must be a sequence of numbers, got {type(values).__name__}")
        for i, value in enumerate(values):
            check_real(f"{name}[{i}]", value)
    if not len(lengths) == len(times_a) == len(times_b) or not lengths:
        raise ValueError(f"lengths, times_a and times_b must be non-empty and equally long, got "
                         f"{len(lengths)}, {len(times_a)} and {len(times_b)}")
    for name, values in (("lengths", lengths), ("times_a", times_a), ("times_b", times_b)):
        if any(not v > 0 for v in values):
            raise ValueError(f"{name} must all be > 0 (lengths and times are logged), "
                             f"got {list(values)}")
    if any(b <= a for a, b in pairwise(lengths)):
        raise ValueError(f"lengths must increase, got {list(lengths)}")
    gap = [math.log(a / b) for a, b in zip(times_a, times_b, strict=True)]  # > 0: a slower
    if gap[0] > 0:
        return float(lengths[0])
    for i in range(len(gap) - 1):
        if gap[i] <= 0 < gap[i + 1]:
            lo, hi = math.log(lengths[i]), math.log(lengths[i + 1])
            fraction = -gap[i] / (gap[i + 1] - gap[i])
            return math.exp(lo + fraction * (hi - lo))
    return None


def _check_gradient_norms_args(layers: Sequence[nn.Module], x: Tensor) -> None:
    _check_sequence("x", x, None)
    if x.shape[0] == 0:
        raise ValueError(f"x must hold at least one sequence (B >= 1), got shape "
                         f"{shape_str(x.shape)}")
    if isinstance(layers, str) or not isinstance(layers, Sequence):
        raise TypeError(f"layers must be a sequence of layers, got {type(layers).__name__}")
    for i, layer in enumerate(layers):
        check_instance(f"layers[{i}]", layer, nn.Module, "an nn.Module")
    if not layers:
        raise ValueError("layers must hold at least one layer")


def gradient_norms(layers: Sequence[nn.Module], x: Tensor) -> Tensor:
    r"""How strongly the last output depends on each input, after each depth of a stack.

    For depth :math:`\ell = 1, \dots,` ``len(layers)``, let :math:`y^{(\ell)}` be the output of
    the first :math:`\ell` layers applied to ``x``. Row :math:`\ell - 1` holds, for every
    position j, :math:`\lVert \partial (\sum_i y^{(\ell)}_{n,i}) / \partial x_j \rVert` for the
    first sequence of the batch. A zero means that no path connects :math:`x_j` to
    :math:`y_n` (the zeros are exact: a convolution's receptive field ends sharply).

    Shape:
        - x: (B, n, d)
        - output: (len(layers), n)

    Raises:
        ValueError: if ``layers`` is empty or ``x`` is not 3-D.
    """
    _check_gradient_norms_args(layers, x)
    x = x.detach().requires_grad_(True)
    rows = []
    y = x
    for layer in layers:
        y = layer(y)  # (B, n, d)
        # (B, n, d)
        (grad,) = torch.autograd.grad(y[0, -1].sum(), x, retain_graph=True)
        rows.append(grad[0].norm(dim=-1))  # (n,)
    return torch.stack(rows)  # (depth, n)


def layers_to_reach(norms: Tensor, position: int = 0) -> int | None:
    """The smallest depth at which the last output depends on input ``position``.

    Shape:
        - norms: (depth, n), as returned by :func:`gradient_norms`.

    Returns:
        A depth from 1 to ``depth``, or ``None`` if even the deepest stack does not reach it.

    Raises:
        ValueError: if ``norms`` is not 2-D or ``position`` is out of range.
    """
    check_floating("norms", norms)
    check_ndim("norms", norms, 2, "(depth, n)")
    check_int("position", position)
    n = norms.shape[1]
    if n == 0:
        raise ValueError(f"norms must have at least one position, got shape "
                         f"{shape_str(norms.shape)}")
    if not -n <= position < n:
        raise ValueError(f"position must be an int in [-{n}, {n}), got {position}")
    reached = (norms[:, position] != 0).nonzero()
    return int(reached[0, 0]) + 1 if len(reached) else None
