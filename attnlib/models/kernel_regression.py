r"""Nadaraya–Watson kernel regression: attention pooling before it had the name.

Given training pairs :math:`(x_i, y_i)` (keys and values) and a query :math:`x`, the estimate is

.. math::

    \begin{aligned}
    f(x) &= \sum_{i=1}^{n} \frac{K\!\left((x - x_i)/h\right)}
            {\sum_{j=1}^{n} K\!\left((x - x_j)/h\right)}\, y_i \\
         &= \sum_{i=1}^{n} \operatorname{softmax}_i\!\big(s(x, x_i)\big)\, y_i,
    \end{aligned}

    s(x, x_i) = \log K\!\left((x - x_i)/h\right).

For the Gaussian kernel the score is :math:`s(x, x_i) = -\lVert x - x_i\rVert^2 / (2h^2)`: the
weights are exactly a softmax of scores, and the softmax only normalises. attnlib computes every
kernel this way, through its log-kernel score, because the softmax form subtracts the row maximum
and stays finite where the ratio of raw kernel values underflows to 0/0.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from attnlib._checks import (
    check_choice,
    check_device,
    check_device_arg,
    check_flag,
    check_float_dtype,
    check_floating,
    check_int,
    check_mask,
    check_ndim,
    check_positive,
    check_real,
    check_tensor,
    shape_str,
)

KERNELS = ("gaussian", "boxcar", "epanechnikov")


def gaussian_kernel(u: Tensor) -> Tensor:
    r"""Gaussian kernel :math:`K(u) = \exp(-\lVert u\rVert^2 / 2)` (unnormalised)."""
    check_floating("u", u)
    return torch.exp(-0.5 * u.square().sum(-1))


def boxcar_kernel(u: Tensor) -> Tensor:
    r"""Boxcar kernel :math:`K(u) = \mathbb{1}[\lVert u\rVert \le 1]`."""
    check_floating("u", u)
    return (u.square().sum(-1) <= 1).to(u.dtype)


def epanechnikov_kernel(u: Tensor) -> Tensor:
    r"""Epanechnikov kernel :math:`K(u) = \tfrac34\,(1 - \lVert u\rVert^2)_+`."""
    check_floating("u", u)
    return 0.75 * torch.clamp(1 - u.square().sum(-1), min=0)


KERNEL_FUNCTIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "gaussian": gaussian_kernel,
    "boxcar": boxcar_kernel,
    "epanechnikov": epanechnikov_kernel,
}


def _as_points(name: str, x: Tensor) -> Tensor:
    """Accept (N,) for 1-D points or (..., N, E); return (..., N, E)."""
    check_tensor(name, x)
    check_floating(name, x)
    if x.ndim == 0:
        raise ValueError(f"{name} must have 1 to 3 dimensions (N,), (N, E) or (B, N, E), "
                         f"got shape {shape_str(x.shape)}")
    check_ndim(name, x, (1, 2, 3), "(N,), (N, E) or (B, N, E)")
    return x.unsqueeze(-1) if x.ndim == 1 else x


def kernel_scores(
    queries: Tensor, keys: Tensor, bandwidth: float | Tensor = 1.0,
    kernel: str = "gaussian",
) -> Tensor:
    r"""Scores :math:`\log K((q - k)/h)` of every query against every key.

    Gaussian: :math:`-\lVert q-k\rVert^2/(2h^2)`; boxcar: 0 inside the unit
    ball, :math:`-\infty` outside; Epanechnikov:
    :math:`\log\tfrac34 + \log(1 - \lVert u\rVert^2)`, :math:`-\infty` outside.

    Shape:
        queries: (L,), (L, E) or (B, L, E). keys: same rank as queries, (S,),
        (S, E) or (B, S, E). Returns (L, S) or (B, L, S).

    Raises:
        ValueError: bandwidth <= 0 or not finite, an unknown kernel,
            mismatched ranks or sizes.
        TypeError: a non-tensor or integer tensor.
    """
    # as (..., L, E), (..., S, E)
    q, k = _check_kernel_args(queries, keys, bandwidth, kernel)
    u = (q.unsqueeze(-2) - k.unsqueeze(-3)) / bandwidth  # (..., L, S, E)
    sq = u.square().sum(-1)  # (..., L, S)
    if kernel == "gaussian":
        return -0.5 * sq
    inside = sq <= 1
    if kernel == "boxcar":
        zero = torch.zeros((), dtype=sq.dtype)
        return torch.where(inside, zero, -math.inf)
    # Epanechnikov: log(3/4) cancels in the softmax but is kept so that
    # exp(score) is the kernel.
    log_k = math.log(0.75) + torch.log1p(-sq.clamp(max=1))
    return torch.where(sq < 1, log_k, -math.inf)


def _check_kernel_args(
    queries: Tensor, keys: Tensor, bandwidth: float | Tensor, kernel: str
) -> tuple[Tensor, Tensor]:
    """The argument checks of :func:`kernel_scores`; returns queries and keys as points."""
    check_choice("kernel", kernel, KERNELS)
    check_positive("bandwidth", bandwidth)
    if isinstance(bandwidth, Tensor) and bandwidth.ndim != 0:
        raise ValueError(f"bandwidth must be a number or a 0-d tensor (one bandwidth for "
                         f"every feature), got a tensor of shape {shape_str(bandwidth.shape)}")
    q = _as_points("queries", queries)
    k = _as_points("keys", keys)
    check_device("keys", keys, queries.device, "queries")
    if queries.dtype in (torch.float16, torch.bfloat16):
        raise TypeError(f"queries must be float32 or float64, got {queries.dtype}: squared "
                        f"distances overflow it; convert the points with .float()")
    if queries.ndim != keys.ndim:
        raise ValueError(f"queries and keys must have the same number of dimensions, got "
                         f"queries {shape_str(queries.shape)} and keys {shape_str(keys.shape)}")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"queries and keys must have the same feature size E, got queries "
                         f"{shape_str(queries.shape)} and keys {shape_str(keys.shape)}")
    if q.ndim == 3 and q.shape[0] != k.shape[0]:
        raise ValueError(f"queries and keys must have the same batch size B, got queries "
                         f"{shape_str(queries.shape)} and keys {shape_str(keys.shape)}")
    return q, k


def nadaraya_watson(
    queries: Tensor,
    keys: Tensor,
    values: Tensor,
    bandwidth: float | Tensor = 1.0,
    kernel: str = "gaussian",
    attn_mask: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    r"""Nadaraya–Watson regression as attention pooling: predictions and attention weights.

    .. math::

        \hat f(q) = \sum_j \alpha(q, k_j)\, v_j,

        \alpha(q, k_j) = \operatorname{softmax}_j \log K\!\left(\frac{q - k_j}{h}\right).

    Args:
        queries: points to predict at.
        keys: training inputs :math:`x_i`.
        values: training targets :math:`y_i`.
        bandwidth: :math:`h > 0`, a float or a 0-d tensor (learnable in :class:`NadarayaWatson`).
        kernel: ``"gaussian"``, ``"boxcar"`` or ``"epanechnikov"``.
        attn_mask: optional boolean mask, True where a query may attend to a key, broadcastable
            to (L, S) or (B, L, S). :func:`leave_one_out_mask` keeps a point from being its own key.

    Shape:
        queries (L,) or (L, E) or (B, L, E); keys with the same rank, S points;
        values (S,) or (S, Ev) (and (B, S) or (B, S, Ev) with a batch).
        Returns predictions (L,), (L, Ev), (B, L) or (B, L, Ev) following values, and
        weights (L, S) or (B, L, S).

    Raises:
        ValueError: key and value counts differ, bandwidth <= 0, wrong ranks, unknown kernel,
            a mask that does not broadcast, or a query left with no key to attend to (a
            compact kernel whose bandwidth is smaller than the gap to the nearest key, or a
            mask that hides every key): such a row has no defined average, so attnlib refuses
            it instead of returning NaN.
    """
    # The three helpers only check the arguments (and give (S,) values a
    # column); the computation is the score, the mask, the softmax, the sum.
    scores = kernel_scores(queries, keys, bandwidth, kernel)  # (..., L, S)
    v = _values_as_columns(values, queries, keys, scores)  # (..., S, Ev)
    if attn_mask is not None:
        hidden = ~_check_attn_mask(attn_mask, scores)
        scores = scores.masked_fill(hidden, -math.inf)
    _check_every_query_has_a_key(scores, attn_mask, kernel, bandwidth)
    weights = torch.softmax(scores, dim=-1)  # (..., L, S)
    predictions = weights @ v  # (..., L, Ev)
    if v.ndim > values.ndim:  # values were (S,) or (B, S): one target per point
        predictions = predictions.squeeze(-1)  # (..., L)
    return predictions, weights


def _values_as_columns(values: Tensor, queries: Tensor, keys: Tensor, scores: Tensor) -> Tensor:
    """``values`` as (..., S, Ev), checked against the keys; (S,) and (B, S) gain Ev = 1."""
    check_tensor("values", values)
    check_floating("values", values)
    batched = queries.ndim == 3
    value_rank = (2, 3) if batched else (1, 2)
    check_ndim("values", values, value_rank, "(B, S) or (B, S, Ev)" if batched else "(S,) or (S, Ev)")
    v = values.unsqueeze(-1) if values.ndim == value_rank[0] else values  # (..., S, Ev)
    if v.shape[-2] != scores.shape[-1] or (batched and v.shape[0] != scores.shape[0]):
        raise ValueError(f"keys and values must hold the same number of points S, got keys "
                         f"{shape_str(keys.shape)} and values {shape_str(values.shape)}")
    if v.dtype != scores.dtype:
        raise TypeError(f"values must have the dtype of queries and keys, {scores.dtype}, "
                        f"got {v.dtype}")
    check_device("values", values, scores.device, "queries")
    return v


def _check_attn_mask(attn_mask: Tensor, scores: Tensor) -> Tensor:
    """A bool mask that broadcasts to the (..., L, S) scores without enlarging them."""
    check_tensor("attn_mask", attn_mask)
    if attn_mask.dtype != torch.bool:
        raise TypeError(f"attn_mask must be a boolean tensor (True = may attend), "
                        f"got dtype {attn_mask.dtype}")
    return check_mask("attn_mask", attn_mask, scores.shape, device=scores.device)


def _check_every_query_has_a_key(
    scores: Tensor, attn_mask: Tensor | None, kernel: str, bandwidth: float | Tensor
) -> None:
    """Refuse a row of scores that is all -inf: its weights would be 0/0 = NaN."""
    empty = torch.isneginf(scores).all(-1)  # (..., L)
    if not bool(empty.any()):
        return
    first = [int(i) for i in torch.nonzero(empty)[0]]
    if attn_mask is not None:
        hidden = ~attn_mask.expand(scores.shape)  # (..., L, S)
        if bool(hidden[tuple(first)].all()):
            raise ValueError(f"attn_mask hides every key from the query at index {first} "
                             f"(its row is all False): each query needs a key to attend to")
    raise ValueError(
        f"query at index {first} has no key to attend to (kernel={kernel!r}, "
        f"bandwidth={float(torch.as_tensor(bandwidth).detach()):.4g}); every kernel value in its row is 0, so its "
        "weights are undefined. Use a larger bandwidth or the gaussian kernel."
    )


def leave_one_out_mask(n: int, device: torch.device | None = None) -> Tensor:
    """Boolean (n, n) mask that is False on the diagonal: training point i is never its own key.

    Without it, a learnable bandwidth shrinks to zero: every point attends only to itself and
    reproduces its own noisy target, a training loss of zero that says nothing about new points.

    Raises:
        TypeError: if ``n`` is not an int.
        ValueError: if ``n`` < 2.
    """
    check_int("n", n)
    if n < 2:
        raise ValueError(f"n must be at least 2 for leave-one-out (each point needs another key), got {n}")
    check_device_arg("device", device)
    return ~torch.eye(n, dtype=torch.bool, device=device)


class NadarayaWatson(nn.Module):
    r"""Nadaraya–Watson regression with a learnable bandwidth.

    The bandwidth is stored as :math:`\log h` so gradient steps keep it positive.

    Args:
        bandwidth: initial bandwidth, > 0.
        kernel: ``"gaussian"`` (default), ``"boxcar"`` or ``"epanechnikov"``. The Gaussian
            weights change smoothly with h and the Epanechnikov's continuously (a key enters
            the window with weight 0), so :func:`fit_bandwidth` can learn h. The boxcar's
            weights are constant while the set of keys inside each window stays the same and
            jump where it changes: its bandwidth gets no gradient, and :func:`fit_bandwidth`
            refuses it.

    Shape:
        As :func:`nadaraya_watson`.
    """

    def __init__(self, bandwidth: float = 1.0, kernel: str = "gaussian") -> None:
        super().__init__()
        check_positive("bandwidth", bandwidth)
        check_choice("kernel", kernel, KERNELS)
        self.kernel = kernel
        self.log_bandwidth = nn.Parameter(torch.tensor(math.log(bandwidth)))

    @property
    def bandwidth(self) -> Tensor:
        """The current bandwidth :math:`h = e^{\\log h}`, a 0-d tensor."""
        return self.log_bandwidth.exp()

    def forward(
        self, queries: Tensor, keys: Tensor, values: Tensor, attn_mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        check_floating("queries", queries)  # before its dtype converts the bandwidth
        return nadaraya_watson(queries, keys, values, self.bandwidth.to(queries.dtype),
                               self.kernel, attn_mask)

    def extra_repr(self) -> str:
        return f"kernel={self.kernel!r}, bandwidth={float(self.bandwidth.detach()):.4g}"


@dataclass(frozen=True)
class FitResult:
    """What :func:`fit_bandwidth` returns: the loss after each step and the bandwidth path."""

    losses: list[float]
    bandwidths: list[float]


def fit_bandwidth(
    model: NadarayaWatson,
    x: Tensor,
    y: Tensor,
    steps: int = 200,
    lr: float = 0.05,
    leave_one_out: bool = True,
) -> FitResult:
    r"""Fit the bandwidth by gradient descent on the mean squared error over the training set.

    Each training point is a query against all the training points as keys and values. With
    ``leave_one_out=True`` (the default and the only sensible choice) a point never attends to
    itself, so the loss measures how well the *other* points predict it.

    Shape:
        x: (N,) or (N, E); y: (N,) or (N, Ev).

    Raises:
        ValueError: ``steps`` < 1, ``lr`` <= 0, or a boxcar model (its bandwidth has no
            gradient).
    """
    _check_fit_args(model, x, y, steps, lr, leave_one_out)
    mask = leave_one_out_mask(x.shape[0], x.device) if leave_one_out else None
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses: list[float] = []
    bandwidths: list[float] = []
    for _ in range(steps):
        optimizer.zero_grad()
        prediction, _ = model(x, x, y, attn_mask=mask)
        loss = (prediction - y).square().mean()
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
        bandwidths.append(float(model.bandwidth.detach()))
    return FitResult(losses=losses, bandwidths=bandwidths)


def _check_fit_args(model: NadarayaWatson, x: Tensor, y: Tensor, steps: int, lr: float,
                    leave_one_out: bool) -> None:
    """The argument checks of :func:`fit_bandwidth`."""
    if not isinstance(model, NadarayaWatson):
        raise TypeError(f"model must be a NadarayaWatson, got {type(model).__name__}")
    device = model.log_bandwidth.device
    for name, t in (("x", x), ("y", y)):
        t = check_floating(name, t)
        check_ndim(name, t, (1, 2), "(N,) or (N, E)")
        check_device(name, t, device, "the model")
        if t.dtype in (torch.float16, torch.bfloat16):
            raise TypeError(f"{name} must be float32 or float64, got {t.dtype}")
    if y.shape[0] != x.shape[0] or y.dtype != x.dtype:
        raise ValueError(f"y must hold one target per point of x, in x's dtype {x.dtype}, got "
                         f"x of shape {shape_str(x.shape)} and y of shape "
                         f"{shape_str(y.shape)} ({y.dtype})")
    check_int("steps", steps, minimum=1)
    check_positive("lr", lr)
    check_flag("leave_one_out", leave_one_out)
    if x.shape[0] < 1 + leave_one_out:
        raise ValueError(f"x must hold at least {1 + leave_one_out} points (each point needs "
                         f"another as its key with leave_one_out), got shape "
                         f"{shape_str(x.shape)}")
    if model.kernel == "boxcar":
        raise ValueError(
            "model.kernel='boxcar' cannot be fitted by gradient descent: its weights are "
            "constant while the set of keys inside each window stays the same, so the loss "
            "has no gradient with respect to the bandwidth; use kernel='gaussian' or "
            "'epanechnikov', or choose the boxcar's bandwidth on a grid")


def target_function(x: Tensor) -> Tensor:
    r"""The smooth function behind the chapter's data: :math:`f(x) = 2\sin x + x^{0.8}`."""
    check_floating("x", x)
    return 2 * torch.sin(x) + x.abs().pow(0.8)


@dataclass(frozen=True)
class RegressionData:
    """A 1-D regression problem: noisy training pairs and a noise-free test grid."""

    x_train: Tensor
    y_train: Tensor
    x_test: Tensor
    y_test: Tensor


def make_regression_data(
    n_train: int = 50, n_test: int = 100, noise: float = 0.5, x_max: float = 5.0, seed: int = 0,
    dtype: torch.dtype = torch.float64,
) -> RegressionData:
    """Sorted training inputs uniform on [0, x_max], targets f(x) + N(0, noise²); a test grid.

    Deterministic for a seed (its own generator; global RNG state is untouched).

    Raises:
        TypeError: if a count or the seed is not an int, ``noise`` or ``x_max`` not a number,
            or ``dtype`` not a floating-point dtype.
        ValueError: if ``n_train`` < 2, ``n_test`` < 1, ``noise`` is negative or not finite,
            ``x_max`` is not finite and > 0, or ``seed`` < 0.
    """
    check_int("n_train", n_train, minimum=2)
    check_int("n_test", n_test, minimum=1)
    check_positive("x_max", x_max)
    check_real("noise", noise, minimum=0.0)
    check_int("seed", seed, minimum=0)
    check_float_dtype("dtype", dtype)
    gen = torch.Generator().manual_seed(seed)
    x_train = torch.sort(torch.rand(n_train, generator=gen, dtype=dtype) * x_max).values
    y_train = target_function(x_train) + noise * torch.randn(n_train, generator=gen, dtype=dtype)
    x_test = torch.linspace(0, x_max, n_test, dtype=dtype)
    return RegressionData(x_train, y_train, x_test, target_function(x_test))
