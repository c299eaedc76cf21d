"""The argument checks of attnlib.book.interactive's drawing calls, and its pixel format: numbers
(Python, NumPy or 0-d tensors) as floats, sequences of numbers, texts, equal lengths."""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import torch
from torch import Tensor

from attnlib._checks import check_instance, check_real


def _number(name: str, value: object) -> float:
    """``value`` as a float: a Python, NumPy or 0-d tensor number (bool refused); NaN and
    infinities pass (the caller says whether they may)."""
    if isinstance(value, Tensor) and value.ndim == 0 and value.dtype != torch.bool \
            and not value.is_complex():
        return float(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return check_real(name, value)  # raises: a str, None, a bool, a tensor of several values


def _real(name: str, value: object, minimum: float | None = None) -> float:
    """``value`` as a finite float (>= ``minimum`` if given), or a clear error naming ``name``."""
    return check_real(name, _number(name, value), minimum)


def _positive(name: str, value: object) -> float:
    number = _real(name, value)
    if number <= 0:
        raise ValueError(f"{name} must be > 0, got {number}")
    return number


def _reals(name: str, value: object, finite: bool = True) -> list[float]:
    """A sequence of numbers (a list, a range, a 1-d tensor or array) as floats; items must be
    finite unless ``finite`` is False."""
    if isinstance(value, Tensor) and value.ndim != 1:
        raise ValueError(f"{name} must be a sequence of numbers (1-d), got a tensor of shape "
                         f"({', '.join(map(str, value.shape))})")
    if isinstance(value, str | bytes) or not hasattr(value, "__len__") \
            or not hasattr(value, "__iter__"):
        raise TypeError(f"{name} must be a sequence of numbers, got {type(value).__name__}")
    return [(_real if finite else _number)(f"{name}[{i}]", item)
            for i, item in enumerate(value)]


def _text(name: str, value: object, optional: bool = False) -> None:
    if not (optional and value is None):
        check_instance(name, value, str, "a str" + (" or None" if optional else ""))


def _same_length(xs: str, n_x: int, ys: str, n_y: int) -> None:
    if n_x != n_y:
        raise ValueError(f"{xs} and {ys} must have the same length, got {n_x} and {n_y}")


def _num(value: float) -> str:
    """A pixel coordinate, to 0.1 px: the same on every machine and small."""
    text = f"{value:.1f}"
    text = text[:-2] if text.endswith(".0") else text
    return "0" if text == "-0" else text


def _sequence(name: str, value: object, what: str) -> None:
    """A sequence (a str is not one), or a TypeError naming ``name`` and ``what`` its items are."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a sequence of {what}, got {type(value).__name__}")
