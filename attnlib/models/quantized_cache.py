r"""A key/value cache stored in fewer bits: int8 or int4 per token, or 8-bit floats (FP8).

The cache of :class:`~attnlib.models.decoder_lm.LMCache` holds each key and value in the
model's own precision. Servers store it smaller and turn it back into the model's numbers
when attention reads it:

- **int8 / int4 per token**: each cached vector (one token, one key/value head, E numbers)
  gets one scale, its largest magnitude over :math:`q_{max} = 2^{b-1} - 1`, and is stored as
  the integers :math:`c = \mathrm{round}(x / s)`, :math:`|c| \le q_{max}`; read back as
  :math:`\hat x = c\, s`. The error per number is at most s / 2. int4 packs two codes a byte.
- **bfloat16**: each number cast to 16 bits (8 exponent bits, 7 mantissa bits), as served
  models usually keep their cache; the relative error is at most :math:`2^{-8}`.
- **FP8** (``float8_e4m3fn``: 4 exponent bits, 3 mantissa bits, largest 448): each number cast
  to 8 bits, read back exactly as stored. For :math:`2^{-6} \le |x| \le 448` (the normal
  numbers) the relative error is at most :math:`2^{-4}`. Below :math:`2^{-6}` the numbers are
  subnormal, :math:`2^{-9}` apart, and only the absolute error is bounded, by :math:`2^{-10}`:
  :math:`1.5 \cdot 2^{-9}` reads back as :math:`2^{-8}`, a third too large, and
  :math:`|x| \le 2^{-10}` reads back as 0. Above 448 PyTorch's cast saturates: every larger
  magnitude, infinity included, reads back as :math:`\pm 448`. No scale (a scale of 1, the
  serving engines' default).

The model writes its cache by joining the past it read with the new positions
(``cache.keys[n] = torch.cat((past, new))``). :class:`QuantizedStore` recognises the past in
what is written and encodes only the new positions, so that every position is quantized once,
when it enters the cache: quantizing again what was read back would give the same codes in
float64, float32 or float16, but not in bfloat16, whose read-back is rounded to 8 bits and
then re-encoded into other codes, step after step. :class:`QuantizedLMCache` therefore lets
:class:`~attnlib.models.decoder_lm.DecoderLM` write its cache as before and keeps only the
codes.

What is saved is storage. Attention here reads a full dequantized copy of the cache, so a
step reads as many bytes as without quantization; saving the bytes a step reads needs a kernel
that dequantizes as it reads (as serving engines' attention kernels do).

Scales are computed in float32 (float64 for float64 input), whatever the model's dtype, and
never below float32's smallest normal number. Non-finite input is refused with a
``ValueError``: an infinity would make a per-token scale infinite (and the vector NaN), and FP8
would read it back as 448.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import torch
from torch import Tensor

from attnlib._checks import (
    check_choice,
    check_device,
    check_float_dtype,
    check_floating,
    check_int,
    check_tensor,
    shape_str,
)
from attnlib.models.decoder_lm import LMCache

__all__ = [
    "FORMATS",
    "QuantizedLMCache",
    "QuantizedStore",
    "bytes_per_vector",
    "dequantize_per_token",
    "quantize_per_token",
]

FORMATS = ("bf16", "fp8", "int8", "int4")
"""The storage formats of :class:`QuantizedLMCache`."""


def quantize_per_token(x: Tensor, bits: int = 8) -> tuple[Tensor, Tensor]:
    r"""Symmetric per-token quantization: one scale per vector of the last dimension.

    :math:`s = \max_e |x_e| / q_{max}`, :math:`c = \mathrm{round}(x / s)`,
    :math:`q_{max} = 2^{b-1} - 1` (127 for 8 bits, 7 for 4); an all-zero vector gets s = 1.
    s is computed in float32 (float64 for float64 input), so a float16 or bfloat16 vector of
    tiny numbers does not get a scale that underflows to 0, and is floored at float32's
    smallest normal number (below :math:`q_{max} \cdot 1.2 \cdot 10^{-38}` the error may
    then exceed s / 2).

    Shape:
        - x: (..., E), floating; output: codes (..., E) int8, scales (..., 1) float32

    Raises:
        TypeError: if ``x`` is not a floating tensor.
        ValueError: if ``bits`` is not 4 or 8, ``x``'s last size E is 0, or ``x`` holds an
            infinity or NaN.
    """
    _check_quantize_args(x, bits)
    q_max = 2 ** (bits - 1) - 1
    work = torch.promote_types(x.dtype, torch.float32)  # float32, or float64
    xw = x.to(work)
    largest = xw.abs().amax(dim=-1, keepdim=True)  # (..., 1)
    scale = torch.where(largest > 0, largest / q_max, torch.ones_like(largest))
    # stored in float32, 4 bytes per vector; floored, never 0
    scale = scale.float().clamp_min(torch.finfo(torch.float32).tiny)
    codes = torch.round(xw / scale.to(work)).clamp(-q_max, q_max)  # (..., E)
    return codes.to(torch.int8), scale


def _check_quantize_args(x: object, bits: object) -> None:
    """The argument checks of :func:`quantize_per_token`."""
    t = check_floating("x", check_tensor("x", x))
    if isinstance(bits, bool) or not isinstance(bits, int):
        raise TypeError(f"bits must be the int 4 or 8, got {type(bits).__name__}")
    if bits not in (4, 8):
        raise ValueError(f"bits must be 4 or 8, got {bits!r}")
    if t.ndim == 0 or t.shape[-1] == 0:
        raise ValueError(f"x must have shape (..., E) with E >= 1 numbers per vector, got "
                         f"shape {shape_str(t.shape)}")
    _check_finite("x", t)


def _check_finite(name: str, t: Tensor) -> None:
    """A quantized cache holds finite numbers: refuse an infinity or NaN."""
    if t.device.type != "meta" and not bool(torch.isfinite(t).all()):
        raise ValueError(f"{name} must be finite to be quantized, got "
                         f"{int((~torch.isfinite(t)).sum())} infinite or NaN numbers in a "
                         f"tensor of shape {shape_str(t.shape)}")


def dequantize_per_token(codes: Tensor, scale: Tensor, dtype: torch.dtype) -> Tensor:
    """:math:`\\hat x = c\\, s`, computed in float32 (float64 for float64) and given in ``dtype``.

    Shape:
        - codes: (..., E) integer; scale: (..., 1); output: (..., E)

    Raises:
        TypeError: if ``codes`` is not an integer tensor, ``scale`` not a floating one, or
            ``dtype`` not a floating-point dtype.
        ValueError: if ``scale`` is not (..., 1) for ``codes`` (..., E), a code is outside
            [-127, 127], or the two are on different devices.
    """
    codes, scale = check_tensor("codes", codes), check_floating("scale", scale)
    if codes.is_floating_point() or codes.is_complex() or codes.dtype == torch.bool:
        raise TypeError(f"codes must have an integer dtype, got {codes.dtype}")
    check_float_dtype("dtype", dtype)
    check_device("codes", codes, scale.device, "scale")
    outside = (codes < -127) | (codes > 127)
    if codes.device.type != "meta" and bool(outside.any()):
        raise ValueError(f"codes must lie in [-127, 127] (8 bits or fewer, symmetric), got "
                         f"{int(codes[outside][0])}")
    if scale.shape != (*codes.shape[:-1], 1):
        raise ValueError(f"scale must have shape (..., 1) = {shape_str((*codes.shape[:-1], 1))} "
                         f"for codes of shape {shape_str(codes.shape)}, got "
                         f"{shape_str(scale.shape)}")
    work = torch.promote_types(dtype, torch.float32)  # one rounding, to dtype, at the end
    return (codes.to(work) * scale.to(work)).to(dtype)


def _pack_int4(codes: Tensor) -> Tensor:
    """Two 4-bit codes in [-7, 7] per byte (the last size must be even): (..., E / 2) uint8."""
    nibbles = (codes + 8).to(torch.uint8)  # [1, 15]
    return nibbles[..., 0::2] | (nibbles[..., 1::2] << 4)


def _unpack_int4(packed: Tensor) -> Tensor:
    low = (packed & 15).to(torch.int8) - 8
    high = (packed >> 4).to(torch.int8) - 8
    return torch.stack((low, high), dim=-1).flatten(-2)  # (..., E)


@dataclass
class _Stored:
    """One layer's keys (or values) as stored: codes and per-token scales (None for FP8)."""

    codes: Tensor
    scale: Tensor | None

    def nbytes(self) -> int:
        scale = 0 if self.scale is None else self.scale.numel() * self.scale.element_size()
        return self.codes.numel() * self.codes.element_size() + scale


class QuantizedStore:
    """The list of per-layer tensors a model reads and writes, kept in ``format``.

    Writing ``store.append(x)`` quantizes x; writing ``store[n] = x`` quantizes only the
    positions of x that follow what layer n stores, read back (each position is quantized once,
    when it enters); reading ``store[n]`` gives the dequantized tensor in the dtype written. This is all
    :class:`~attnlib.models.decoder_lm.DecoderLM` does with ``cache.keys`` and
    ``cache.values``.

    Shape:
        - each tensor: (B, H_kv, t, E); E even for int4
    """

    def __init__(self, format: str = "int8") -> None:
        check_choice("format", format, FORMATS)
        self.format = format
        self._layers: list[_Stored] = []
        self._dtype = torch.float32

    def _encode(self, x: Tensor) -> _Stored:
        x = check_tensor("x", x)
        check_floating("x", x)
        _check_finite("x", x)
        self._dtype = x.dtype
        if self.format in ("bf16", "fp8"):
            kind = torch.bfloat16 if self.format == "bf16" else torch.float8_e4m3fn
            return _Stored(x.to(kind), None)
        codes, scale = quantize_per_token(x, 4 if self.format == "int4" else 8)
        if self.format == "int4":
            if x.shape[-1] % 2:
                raise ValueError(f"int4 packs two numbers a byte: the last size of x must be "
                                 f"even, got {x.shape[-1]}")
            codes = _pack_int4(codes)
        return _Stored(codes, scale)

    def _decode(self, stored: _Stored) -> Tensor:
        if stored.scale is None:
            return stored.codes.to(self._dtype)
        codes = _unpack_int4(stored.codes) if self.format == "int4" else stored.codes
        return dequantize_per_token(codes, stored.scale, self._dtype)

    def __len__(self) -> int:
        return len(self._layers)

    def __getitem__(self, n: int) -> Tensor:
        return self._decode(self._layers[n])

    def __setitem__(self, n: int, x: Tensor) -> None:
        self._layers[n] = self._update(self._layers[n], x)

    def _update(self, stored: _Stored, x: Tensor) -> _Stored:
        """Encode only the positions of ``x`` that are not the stored ones read back.

        The model writes ``cat(past, new)``, with a window only its last w positions: if x
        begins with the stored positions d, d + 1, ... as read back, those keep their codes
        and only the rest is encoded; anything else is encoded whole.
        """
        x = check_tensor("x", x)
        check_floating("x", x)
        old = self._decode(stored)  # (B, H_kv, t, E)
        t = old.shape[2]
        if (x.dtype != old.dtype or x.ndim != 4 or t == 0 or x.device != old.device
                or x.shape[:2] != old.shape[:2] or x.shape[3] != old.shape[3]):
            return self._encode(x)
        # positions d of the past that equal x's first position: (t,)
        starts = (old == x[:, :, :1]).flatten(3).all(-1).all(1).all(0)
        for d in starts.nonzero().flatten().tolist():
            kept = t - d  # the past's last positions, at the start of x
            if kept <= x.shape[2] and torch.equal(old[:, :, d:], x[:, :, :kept]):
                return self._join(stored, d, x[:, :, kept:])
        return self._encode(x)

    def _join(self, stored: _Stored, d: int, new: Tensor) -> _Stored:
        """The stored positions from d on, followed by ``new`` encoded."""
        codes = stored.codes[:, :, d:]
        scale = None if stored.scale is None else stored.scale[:, :, d:]
        if new.shape[2] == 0:
            return _Stored(codes, scale)
        added = self._encode(new)
        codes = torch.cat((codes, added.codes), dim=2)
        if scale is not None and added.scale is not None:
            scale = torch.cat((scale, added.scale), dim=2)
        return _Stored(codes, scale)

    def __iter__(self) -> Iterator[Tensor]:
        return (self._decode(s) for s in self._layers)

    def append(self, x: Tensor) -> None:
        self._layers.append(self._encode(x))

    def nbytes(self) -> int:
        """Bytes of the stored codes and scales."""
        return sum(s.nbytes() for s in self._layers)


@dataclass
class QuantizedLMCache(LMCache):
    """:class:`~attnlib.models.decoder_lm.LMCache` whose keys and values are stored in
    ``format`` (``"bf16"``, ``"fp8"``, ``"int8"`` or ``"int4"``); pass it to the model as the
    cache.

    ``nbytes()`` counts what is stored (codes and scales), not the dequantized copies the
    model computes with.

    Raises:
        ValueError: if ``format`` is not one of :data:`FORMATS`.
    """

    format: str = "int8"
    keys: list[Tensor] = field(default_factory=list)
    values: list[Tensor] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__post_init__()
        check_choice("format", self.format, FORMATS)
        # the model only indexes, assigns, appends and counts: a store does all four
        self.keys = QuantizedStore(self.format)  # type: ignore[assignment]
        self.values = QuantizedStore(self.format)  # type: ignore[assignment]

    def nbytes(self) -> int:
        """Bytes held by the stored keys and values: codes and scales."""
        stores = (self.keys, self.values)
        return sum(s.nbytes() for s in stores if isinstance(s, QuantizedStore))


def bytes_per_vector(head_dim: int, format: str) -> int:
    """Bytes one cached vector of E numbers takes in ``format`` (a float32 scale for int)."""
    E = check_int("head_dim", head_dim, minimum=1)
    check_choice("format", format, FORMATS)
    if format in ("bf16", "fp8"):
        return 2 * E if format == "bf16" else E
    return (E if format == "int8" else -(-E // 2)) + 4
