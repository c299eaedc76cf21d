r"""RoPE past the training length: position interpolation, NTK-aware scaling and YaRN.

A model trained with RoPE on sequences of :math:`L` tokens has met the rotation angles
:math:`(m - n)\theta_i` only for :math:`|m - n| < L`. The slow pairs, whose wavelength
:math:`\lambda_i = 2\pi / \theta_i` is longer than L, have not even turned once. Past L they
reach angles that training never produced. Each method below changes the frequencies
:math:`\theta_i = b^{-2i/E}` for a context s times longer, :math:`s = L' / L`, and keeps the
weights:

- **position interpolation** {Chen et al. 2023}: :math:`\theta'_i = \theta_i / s`, every
  position divided by s; all angles stay in the trained range, and neighbours come
  :math:`1/s` apart, closer than training ever put them.
- **NTK-aware scaling** {bloc97 2023}: a larger base, :math:`b' = b\, s^{E/(E-2)}`; the
  fastest pair keeps its frequency, the slowest is divided by exactly s.
- **YaRN** {Peng et al. 2024}: each pair by the number of turns it makes over the training
  length, :math:`r_i = L / \lambda_i`. A pair that turns more than :math:`\beta` times keeps
  its frequency, one that turns fewer than :math:`\alpha` times is interpolated as by PI, and
  those between are mixed with the ramp :math:`\gamma_i = (r_i - \alpha)/(\beta - \alpha)`:
  :math:`\theta'_i = (1 - \gamma_i)\,\theta_i / s + \gamma_i \theta_i` ("NTK-by-parts"). It
  also sharpens the scores by :math:`1/t`, :math:`\sqrt{1/t} = 0.1 \ln s + 1`, by scaling
  queries and keys by :math:`\sqrt{1/t}`. The paper sets :math:`\alpha = 1, \beta = 32` for
  Llama.

:class:`ScaledRotaryEmbedding` applies any of them where
:class:`~attnlib.blocks.positional.RotaryPositionalEmbedding` stood; with ``method="rope"``
it is RoPE, bit for bit (with s = 1 every method is RoPE, YaRN to rounding).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlib._checks import check_choice, check_int, check_positive
from attnlib.blocks.positional import RotaryPositionalEmbedding, _frequencies

__all__ = [
    "METHODS",
    "ScaledRotaryEmbedding",
    "ntk_base",
    "scaled_frequencies",
    "yarn_attention_factor",
    "yarn_ramp",
]

METHODS = ("rope", "pi", "ntk", "yarn")
"""The frequency rules, in order plain RoPE, position interpolation, NTK-aware base, YaRN."""


def ntk_base(base: float, scale: float, head_dim: int) -> float:
    r"""The NTK-aware base :math:`b' = b\, s^{E / (E - 2)}` for a context ``scale`` times longer.

    With it the slowest pair's frequency :math:`b'^{-(E-2)/E} = b^{-(E-2)/E} / s` is the old
    one divided by s, while the fastest, :math:`b'^0 = 1`, is unchanged.

    Raises:
        ValueError: if ``base`` or ``scale`` is not > 0, or ``head_dim`` is not an even int >= 4.
    """
    check_positive("base", base)
    check_positive("scale", scale)
    _check_head_dim(head_dim)
    factor: float = float(scale) ** (head_dim / (head_dim - 2))
    return float(base) * factor


def yarn_ramp(head_dim: int, base: float, train_length: int, alpha: float = 1.0,
              beta: float = 32.0) -> Tensor:
    r"""YaRN's :math:`\gamma_i`: 1 keeps pair i's frequency, 0 interpolates it by s.

    :math:`r_i = L / \lambda_i` is the number of turns pair i makes over the training length;
    :math:`\gamma_i = \mathrm{clamp}((r_i - \alpha)/(\beta - \alpha), 0, 1)`.

    Shape:
        - output: (E/2,), float64

    Raises:
        ValueError: if ``train_length`` < 1, ``alpha`` < 0 or ``beta`` <= ``alpha``.
    """
    _check_head_dim(head_dim)
    check_positive("base", base)
    check_int("train_length", train_length, minimum=1)
    _check_alpha_beta(alpha, beta)
    turns = train_length * _frequencies(head_dim, base) / (2 * math.pi)  # r_i, (E/2,)
    return ((turns - alpha) / (beta - alpha)).clamp(0.0, 1.0)


def yarn_ramp_shipped(head_dim: int, base: float, train_length: int,
                      alpha: float = 1.0, beta: float = 32.0) -> Tensor:
    r"""YaRN's :math:`\gamma_i` as the reference code and Hugging Face's ``"yarn"`` compute it.

    The paper's ramp (:func:`yarn_ramp`) is linear in the turns :math:`r_i`. The code that
    released models run instead finds the pair index at which a pair turns :math:`\beta` times
    and the one at which it turns :math:`\alpha` times over L,
    :math:`d(r) = E \ln(L / (2\pi r)) / (2 \ln b)`, rounds the first down and the second up,
    and ramps linearly in the pair index i between them:
    :math:`\gamma_i = 1 - \mathrm{clamp}((i - \lfloor d(\beta) \rfloor) /
    (\lceil d(\alpha) \rceil - \lfloor d(\beta) \rfloor), 0, 1)`. Both keep the pairs that
    turn often and interpolate those that turn seldom; between, they differ. (Hugging Face's
    ``truncate=False``, used by a few configurations, skips the rounding.)

    Shape:
        - output: (E/2,), float64

    Raises:
        ValueError: as :func:`yarn_ramp`.
    """
    _check_head_dim(head_dim)
    check_positive("base", base)
    check_int("train_length", train_length, minimum=1)
    _check_alpha_beta(alpha, beta)

    def pair_index(turns: float) -> float:  # the pair turning `turns` times
        wavelength = train_length / turns  # in positions
        log_ratio = math.log(wavelength / (2 * math.pi))
        return head_dim * log_ratio / (2 * math.log(base))

    low = max(math.floor(pair_index(beta)), 0)
    high: float = min(math.ceil(pair_index(alpha)), head_dim - 1)
    if low == high:
        high += 0.001  # as the reference code: no division by zero
    i = torch.arange(head_dim // 2, dtype=torch.float64)  # (E/2,)
    return 1 - ((i - low) / (high - low)).clamp(0.0, 1.0)  # (E/2,)


def scaled_frequencies(
    head_dim: int, base: float = 10000.0, method: str = "rope",
    scale: float = 1.0, train_length: int | None = None, alpha: float = 1.0,
    beta: float = 32.0,
) -> Tensor:
    r"""The frequencies :math:`\theta'_i` of ``method`` for a context ``scale`` times longer.

    ``method`` is one of :data:`METHODS`; ``train_length``, ``alpha`` and ``beta`` are read by
    ``"yarn"`` only (it needs ``train_length``).

    Shape:
        - output: (E/2,), float64

    Raises:
        ValueError: for an unknown ``method``, ``scale`` <= 0, or ``"yarn"`` without
            ``train_length``.
    """
    check_choice("method", method, METHODS)
    check_positive("scale", scale)
    theta = _frequencies(_check_head_dim(head_dim), base)  # (E/2,)
    if method == "pi":
        return theta / scale
    if method == "ntk":
        return _frequencies(head_dim, ntk_base(base, scale, head_dim))
    if method == "yarn":
        if train_length is None:
            raise ValueError("method 'yarn' needs train_length, the length "
                             "trained on, got None")
        gamma = yarn_ramp(head_dim, base, train_length, alpha, beta)  # (E/2,)
        return (1 - gamma) * theta / scale + gamma * theta
    return theta


def yarn_attention_factor(scale: float) -> float:
    r"""YaRN's :math:`\sqrt{1/t} = 0.1 \ln s + 1` (1 for s <= 1), applied to queries and keys.

    Raises:
        ValueError: if ``scale`` is not > 0.
    """
    check_positive("scale", scale)
    return 0.1 * math.log(scale) + 1.0 if scale > 1 else 1.0


class ScaledRotaryEmbedding(RotaryPositionalEmbedding):
    r"""RoPE with the frequencies of :func:`scaled_frequencies`, and YaRN's factor.

    .. math::

        x'_{\text{pair } i} = c\, R(m\theta'_i)\, x_{\text{pair } i},

        c = \sqrt{1/t} \text{ for YaRN, else } 1

    Args:
        head_dim: E, even.
        base: b, the base the model was trained with.
        method: ``"rope"``, ``"pi"``, ``"ntk"`` or ``"yarn"``.
        scale: s, the new context over the trained one.
        train_length: L, the trained context (YaRN's turns :math:`r_i` need it).
        alpha, beta: YaRN's ramp.

    Shape:
        as :class:`~attnlib.blocks.positional.RotaryPositionalEmbedding`.

    Raises:
        ValueError: as :func:`scaled_frequencies`; in ``forward``, as the parent.
    """

    def __init__(self, head_dim: int, base: float = 10000.0, method: str = "rope",
                 scale: float = 1.0, train_length: int | None = None, alpha: float = 1.0,
                 beta: float = 32.0) -> None:
        super().__init__(head_dim, base)
        # float64 and not a buffer: ``model.to(dtype)`` must not round the frequencies
        self.theta = scaled_frequencies(head_dim, base, method, scale, train_length, alpha,
                                        beta)  # (E/2,)
        self.method, self.scale = method, float(scale)
        self.factor = yarn_attention_factor(scale) if method == "yarn" else 1.0

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, method={self.method!r}, scale={self.scale}"

    def forward(
        self, x: Tensor, positions: Tensor | None = None, offset: int = 0
    ) -> Tensor:
        pos = self._check_forward_args(x, positions, offset)  # (L,) or (B, L)
        angles = pos[..., None] * self.theta.to(pos.device)  # (L, E/2) or (B, L, E/2)
        if x.ndim == 4 and angles.ndim == 3:
            angles = angles[:, None]  # (B, 1, L, E/2)
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
        x_even, x_odd = x[..., 0::2], x[..., 1::2]  # (..., L, E/2) each
        rotated = torch.stack(
            (x_even * cos - x_odd * sin, x_even * sin + x_odd * cos), dim=-1
        ).flatten(-2)  # (..., L, E)
        return rotated * self.factor if self.factor != 1.0 else rotated


def _check_head_dim(head_dim: object) -> int:
    """An even int >= 4 (a pair for the fastest and one for the slowest frequency)."""
    E = check_int("head_dim", head_dim, minimum=4)
    if E % 2:
        raise ValueError(f"head_dim must be even (RoPE rotates pairs), got {E}")
    return E


def _check_alpha_beta(alpha: float, beta: float) -> None:
    """YaRN's ramp needs 0 <= alpha < beta."""
    for name, value in (("alpha", alpha), ("beta", beta)):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not (0 <= alpha < beta) or not math.isfinite(beta):
        raise ValueError(f"YaRN's ramp needs 0 <= alpha < beta (finite), got alpha = {alpha}, "
                         f"beta = {beta}")
