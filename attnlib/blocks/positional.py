r"""Position encodings: how attention, which ignores order, learns where a token is.

Attention is permutation-equivariant: shuffle the tokens and the outputs shuffle with them.
Positions have to be put into the input. Three ways:

- :class:`SinusoidalPositionalEncoding` adds the fixed table of :func:`sinusoidal_encoding`
  (Vaswani et al., 2017): bounded in [-1, 1], defined for every position, and such that
  PE(pos + k) is a fixed rotation of PE(pos) (:func:`relative_shift_matrix`).
- :class:`LearnedPositionalEmbedding` adds a learned vector per position (BERT, GPT-2); it
  knows no position beyond the table.
- :class:`RotaryPositionalEmbedding` (RoPE, Su et al., 2021) rotates queries and keys instead
  of adding to the input, so that :math:`q_m \cdot k_n` depends only on m - n.

Frequencies and angles are computed in float64 and only then cast: in float32 the angle
:math:`pos \cdot \omega` loses digits once pos is in the thousands.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlib._checks import (
    check_device,
    check_device_arg,
    check_float_dtype,
    check_floating,
    check_int,
    check_ndim,
    check_positive,
    check_probability,
    check_tensor,
    shape_str,
)
from attnlib._checks import check_sequence as _check_sequence

__all__ = [
    "LearnedPositionalEmbedding",
    "RotaryPositionalEmbedding",
    "SinusoidalPositionalEncoding",
    "relative_shift_matrix",
    "sinusoidal_encoding",
]


def _check_even(name: str, value: object) -> int:
    """A positive even int: the features come in (sin, cos) or (x, y) pairs."""
    n = check_int(name, value, minimum=1)
    if n % 2 != 0:
        raise ValueError(
            f"{name} must be even (the features come in pairs, one pair per frequency), "
            f"got {name} = {n}"
        )
    return n


def _check_table_args(base: object, dtype: object, device: object = None) -> None:
    """A table's ``base`` (finite and > 0), ``dtype`` (floating point) and ``device`` (one this
    machine has, or None)."""
    check_positive("base", base)
    check_float_dtype("dtype", dtype)
    check_device_arg("device", device)


def _sinusoids(pos: Tensor, d_model: int, base: float, dtype: torch.dtype) -> Tensor:
    """The rows PE(pos) of the sinusoidal table for the (float64) positions ``pos`` (L,)."""
    angles = pos[:, None] * _frequencies(d_model, base, pos.device)[None, :]  # (L, D/2)
    pe = torch.stack((angles.sin(), angles.cos()), dim=-1)  # (L, D/2, 2)
    return pe.reshape(len(pos), d_model).to(dtype)  # (L, D): sin, cos, sin, ...


def _frequencies(d_model: int, base: float, device: torch.device | str | None = None) -> Tensor:
    r""":math:`\omega_i = \text{base}^{-2i/d}` for i = 0, ..., d/2 - 1, in float64.

    Shape:
        - output: (d_model / 2,)

    Raises:
        TypeError, ValueError: unless ``base`` is a finite number > 0.
    """
    check_positive("base", base)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64, device=device)  # (d/2,)
    return base ** (-two_i / d_model)


def sinusoidal_encoding(
    max_len: int,
    d_model: int,
    base: float = 10000.0,
    *,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> Tensor:
    r"""The sinusoidal position table of "Attention Is All You Need".

    .. math::

        \mathrm{PE}(pos, 2i) = \sin\!\left(\frac{pos}{\text{base}^{2i/d}}\right),

        \mathrm{PE}(pos, 2i + 1) = \cos\!\left(\frac{pos}{\text{base}^{2i/d}}\right)

    Column pair i oscillates with frequency :math:`\omega_i = \text{base}^{-2i/d}`: wavelengths
    from :math:`2\pi` (i = 0) to almost :math:`2\pi \cdot \text{base}`. Every entry lies in
    [-1, 1], whatever the sequence length, and
    :math:`\mathrm{PE}(p) \cdot \mathrm{PE}(q) = \sum_i \cos(\omega_i (p - q))` depends only
    on the distance p - q.

    Args:
        max_len: the number of positions 0, ..., max_len - 1.
        d_model: D, the size of an encoding; must be even.
        base: the base of the geometric progression of wavelengths.
        dtype: the table's dtype (it is computed in float64).
        device: where to create the table.

    Shape:
        - output: (max_len, d_model)

    Raises:
        TypeError: if ``max_len`` or ``d_model`` is not an int.
        ValueError: if ``max_len`` < 0, ``d_model`` is not positive and even, or ``base`` is
            not finite and > 0.
    """
    check_int("max_len", max_len, minimum=0)
    _check_even("d_model", d_model)
    _check_table_args(base, dtype, device)
    pos = torch.arange(max_len, dtype=torch.float64, device=device)  # (L,)
    omega = _frequencies(d_model, base, device)  # (D/2,)
    angles = pos[:, None] * omega[None, :]  # (L, D/2), L = max_len
    pe = torch.stack((angles.sin(), angles.cos()), dim=-1)  # (L, D/2, 2)
    return pe.reshape(max_len, d_model).to(dtype)  # (L, D): sin, cos, sin, ...


def relative_shift_matrix(
    k: int,
    d_model: int,
    base: float = 10000.0,
    *,
    dtype: torch.dtype = torch.float32,
    device: torch.device | str | None = None,
) -> Tensor:
    r"""The fixed matrix :math:`M_k` with :math:`\mathrm{PE}(pos + k) = M_k\,\mathrm{PE}(pos)`.

    One matrix for every pos: shifting a position by k is a fixed linear map of its encoding.

    From :math:`\sin(a + b) = \sin a \cos b + \cos a \sin b` and
    :math:`\cos(a + b) = \cos a \cos b - \sin a \sin b` with :math:`a = \omega_i pos`,
    :math:`b = \omega_i k`, each (sin, cos) pair of :func:`sinusoidal_encoding` is rotated by a
    2 x 2 block that depends on k, not on pos:

    .. math::

        M_k = \mathrm{diag}(B_0, \dots, B_{d/2 - 1}),

        B_i = \begin{pmatrix} \cos \omega_i k & \sin \omega_i k \\
                              -\sin \omega_i k & \cos \omega_i k \end{pmatrix}

    So a linear layer can compute "the position k steps away" from a position's encoding.
    :math:`M_k` is orthogonal and :math:`M_j M_k = M_{j + k}`, :math:`M_{-k} = M_k^\top`. With
    the table's rows as row vectors: ``pe[pos + k] == pe[pos] @ M_k.T``. The rotation RoPE
    applies at position m is :math:`M_m^\top` (``rope(x) == x @ M_m`` for a row vector x).

    Args:
        k: the shift, any int (negative shifts back).
        d_model: D; must be even.
        base: as in :func:`sinusoidal_encoding`.
        dtype: the matrix's dtype (computed in float64).
        device: where to create it.

    Shape:
        - output: (d_model, d_model)

    Raises:
        TypeError: if ``k`` or ``d_model`` is not an int.
        ValueError: if ``d_model`` is not positive and even, or ``base`` is not finite and > 0.
    """
    check_int("k", k)
    _check_even("d_model", d_model)
    _check_table_args(base, dtype, device)
    angle = k * _frequencies(d_model, base, device)  # (D/2,)
    cos, sin = angle.cos(), angle.sin()
    m = torch.zeros(d_model, d_model, dtype=torch.float64, device=device)
    # (D/2,): each block's first index
    i = torch.arange(0, d_model, 2, device=device)
    m[i, i], m[i, i + 1] = cos, sin
    m[i + 1, i], m[i + 1, i + 1] = -sin, cos
    return m.to(dtype)  # (D, D)


class SinusoidalPositionalEncoding(nn.Module):
    r"""Add the sinusoidal table to a batch of sequences, then apply dropout.

    .. math::

        y_{b, l} = \mathrm{Dropout}(x_{b, l} + \mathrm{PE}(\text{offset} + l))

    with PE from :func:`sinusoidal_encoding`. The first ``max_len`` rows are kept as the
    non-persistent buffer ``pe`` (a fixed table: not learned, not saved in ``state_dict``).
    ``max_len`` is only the size of that cache: sinusoids are defined for every position, so
    positions beyond it are computed on the fly, in the input's dtype, and give the same values
    (only the L rows asked for: memory follows the sequence, not the offset).
    The buffer has the dtype given at construction (float32 by default); build the module with
    ``dtype=torch.float64`` for a float64 table (``.double()`` would only widen float32 values).
    Dropout acts only in training mode.

    Args:
        d_model: D; must be even.
        max_len: how many positions to precompute.
        dropout: dropout probability on the sum, in [0, 1).
        base: as in :func:`sinusoidal_encoding`.
        device: where to create the table.
        dtype: the table's dtype.

    Shape:
        - x: (B, L, D)
        - output: (B, L, D)

    Raises:
        ValueError: if ``d_model`` is odd or < 1, ``max_len`` < 0, ``dropout`` is not in
            [0, 1); in ``forward``, if ``x`` is not (B, L, D) with D = ``d_model`` or
            ``offset`` < 0.
        TypeError: if ``x`` is not a floating-point tensor or ``offset`` is not an int.
    """

    pe: Tensor

    def __init__(
        self,
        d_model: int,
        max_len: int = 5000,
        dropout: float = 0.0,
        base: float = 10000.0,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float32,
    ) -> None:
        super().__init__()
        self.d_model = _check_even("d_model", d_model)
        self.max_len = check_int("max_len", max_len, minimum=0)
        self.dropout = check_probability("dropout", dropout)
        check_positive("base", base)
        self.base = float(base)
        table = sinusoidal_encoding(max_len, d_model, base, dtype=dtype, device=device)
        self.register_buffer("pe", table, persistent=False)  # (max_len, D)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}, dropout={self.dropout}"

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """Add PE(offset), ..., PE(offset + L - 1); ``offset`` > 0 when decoding step by step."""
        _check_sequence("x", x, self.d_model)
        check_device("x", x, self.pe.device, "the table pe")
        check_int("offset", offset, minimum=0)
        L = x.shape[1]
        if offset + L <= self.max_len:
            pe = self.pe[offset : offset + L].to(x.dtype)  # (L, D)
        else:
            # only the L rows asked for: memory follows the sequence, not the offset
            pos = torch.arange(offset, offset + L, dtype=torch.float64, device=x.device)
            pe = _sinusoids(pos, self.d_model, self.base, x.dtype)  # (L, D)
        return F.dropout(x + pe, p=self.dropout, training=self.training)


class LearnedPositionalEmbedding(nn.Module):
    r"""Add a learned vector per position: :math:`y_{b, l} = x_{b, l} + P_{\text{offset} + l}`.

    :math:`P \in \mathbb R^{\text{max\_len} \times D}` is ``embedding.weight``, an
    ``nn.Embedding`` (initialised as ``nn.Embedding`` does, N(0, 1)). Unlike the sinusoidal
    table it has no rows beyond ``max_len``: a longer sequence is an error, not an extrapolation.

    Args:
        max_len: the number of positions with a learned vector.
        d_model: D.

    Shape:
        - x: (B, L, D)
        - output: (B, L, D)

    Raises:
        ValueError: if ``max_len`` or ``d_model`` < 1; in ``forward``, if ``x`` is not
            (B, L, D) with D = ``d_model``, or ``offset + L`` > ``max_len``.
        TypeError: if ``x`` is not a floating-point tensor.
    """

    def __init__(
        self,
        max_len: int,
        d_model: int,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        check_device_arg("device", device)
        check_float_dtype("dtype", dtype, optional=True)
        self.max_len = check_int("max_len", max_len, minimum=1)
        self.d_model = check_int("d_model", d_model, minimum=1)
        self.embedding = nn.Embedding(max_len, d_model, device=device, dtype=dtype)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """Add the learned vectors of positions offset, ..., offset + L - 1."""
        _check_sequence("x", x, self.d_model, self.embedding.weight)
        check_int("offset", offset, minimum=0)
        L = x.shape[1]
        if offset + L > self.max_len:
            raise ValueError(
                f"positions up to offset + L - 1 = {offset + L - 1} "
                f"(sequence length L = {L}, offset = {offset}) exceed "
                f"max_len = {self.max_len} of the learned table; a learned "
                f"embedding has no vector for positions >= max_len"
            )
        positions = torch.arange(offset, offset + L, device=x.device)  # (L,)
        table: Tensor = self.embedding(positions)  # (L, D)
        return x + table  # (B, L, D)


class RotaryPositionalEmbedding(nn.Module):
    r"""Rotary position embedding (RoPE): rotate each pair of features by a position's angle.

    Feature pair i = (2i, 2i + 1) of a vector at position m is rotated by :math:`m\theta_i`,
    :math:`\theta_i = \text{base}^{-2i/E}`:

    .. math::

        \begin{pmatrix} x'_{2i} \\ x'_{2i+1} \end{pmatrix} =
        \begin{pmatrix} \cos m\theta_i & -\sin m\theta_i \\
                        \sin m\theta_i & \cos m\theta_i \end{pmatrix}
        \begin{pmatrix} x_{2i} \\ x_{2i+1} \end{pmatrix},

        x' = R_m x

    Apply it to queries and keys (not values) after projection, before the scores. Since
    :math:`R_m^\top R_n = R_{n - m}`,

    .. math::

        (R_m q) \cdot (R_n k) = q^\top R_{n - m}\, k,

    the score depends on the positions only through n - m, and :math:`\|R_m x\| = \|x\|`.
    Pairs are adjacent features (2i, 2i + 1), as in the RoFormer paper and in Meta's reference
    LLaMA code (which views each pair as one complex number, ``torch.view_as_complex``).
    GPT-NeoX, and the Hugging Face port of LLaMA, pair feature i with i + E/2 instead (the
    "half-split" layout, ``rotate_half``). The two layouts differ by a fixed permutation of the
    features of each head, so a model trained in one runs in the other once the output
    features of :math:`W^Q` and :math:`W^K` (the rows of the ``nn.Linear`` weights) are
    permuted; the Hugging Face conversion of Meta's LLaMA weights does exactly that.

    Nothing is learned; the angles are computed per call in float64 (no cache to go stale).

    Args:
        head_dim: E, the size of a query/key per head; must be even.
        base: as in :func:`sinusoidal_encoding`.

    Shape:
        - x: (B, H, L, E) or (B, L, E)
        - positions: (L,) or (B, L), integer; default ``offset, ..., offset + L - 1``
        - output: same as x

    Raises:
        ValueError: if ``head_dim`` is odd or < 1; in ``forward``, if ``x`` is not 3-D or 4-D
            with last size ``head_dim``, ``positions`` does not have shape (L,) or (B, L),
            ``offset`` < 0, or both ``offset`` and ``positions`` are given.
        TypeError: if ``x`` is not a floating-point tensor, or ``positions`` is not an integer
            tensor.
    """

    def __init__(self, head_dim: int, base: float = 10000.0) -> None:
        super().__init__()
        self.head_dim = _check_even("head_dim", head_dim)
        check_positive("base", base)
        self.base = float(base)

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, base={self.base}"

    def _positions(self, x: Tensor, positions: Tensor | None, offset: int) -> Tensor:
        """Validated positions, (L,) or (B, L)."""
        check_int("offset", offset, minimum=0)
        B, L = x.shape[0], x.shape[-2]
        if positions is None:
            return torch.arange(offset, offset + L, device=x.device)  # (L,)
        positions = check_tensor("positions", positions)
        check_device("positions", positions, x.device, "x")
        if offset != 0:
            raise ValueError(
                f"give either positions or offset, not both; got offset = {offset} and "
                f"positions of shape {shape_str(positions.shape)}"
            )
        if positions.is_floating_point() or positions.is_complex() or positions.dtype == torch.bool:
            raise TypeError(f"positions must have an integer dtype, got {positions.dtype}")
        if positions.shape not in ((L,), (B, L)):
            raise ValueError(
                f"positions must have shape (L,) = ({L},) or (B, L) = "
                f"{shape_str((B, L))} for x of shape {shape_str(x.shape)}, got shape "
                f"{shape_str(positions.shape)}"
            )
        if bool((positions < 0).any()):
            raise ValueError(f"positions must be >= 0, got {int(positions.min())}")
        return positions

    def _check_forward_args(
        self, x: Tensor, positions: Tensor | None, offset: int
    ) -> Tensor:
        """Check ``x``; return the validated positions in float64, (L,) or (B, L)."""
        x = check_tensor("x", x)
        check_floating("x", x)
        check_ndim("x", x, (3, 4), "(B, L, E) or (B, H, L, E)")
        if x.shape[-1] != self.head_dim:
            raise ValueError(
                f"x must have last size E = head_dim = {self.head_dim}, got shape "
                f"{shape_str(x.shape)}"
            )
        return self._positions(x, positions, offset).to(torch.float64)

    def forward(
        self, x: Tensor, positions: Tensor | None = None, offset: int = 0
    ) -> Tensor:
        """Rotate x at positions ``positions`` (default: offset, ..., offset + L - 1)."""
        pos = self._check_forward_args(x, positions, offset)  # (L,) or (B, L)
        theta = _frequencies(self.head_dim, self.base, x.device)  # (E/2,)
        angles = pos[..., None] * theta  # (L, E/2) or (B, L, E/2)
        if x.ndim == 4 and angles.ndim == 3:
            angles = angles[:, None]  # (B, 1, L, E/2)
        cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
        x_even, x_odd = x[..., 0::2], x[..., 1::2]  # (..., L, E/2) each
        rotated = torch.stack(
            (x_even * cos - x_odd * sin, x_even * sin + x_odd * cos), dim=-1
        )  # (..., L, E/2, 2)
        return rotated.flatten(-2)  # (..., L, E)
