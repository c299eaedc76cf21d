"""Validation helpers shared by every attnlib module.

Bad input gets a clear error that names the argument, what it got and what it expected,
so a reader who passes the wrong shape learns which tensor and which dimension is wrong.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence

import torch
from torch import Tensor


def shape_str(shape: Sequence[int | str] | torch.Size) -> str:
    """Format a shape as ``(2, 3, 4)`` for error messages."""
    return "(" + ", ".join(str(s) for s in shape) + ")"


def check_tensor(name: str, value: object) -> Tensor:
    """Raise TypeError unless ``value`` is a tensor."""
    if not isinstance(value, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value


def check_floating(name: str, value: Tensor) -> None:
    """Raise TypeError unless ``value`` has a floating-point dtype."""
    if not value.is_floating_point():
        raise TypeError(f"{name} must have a floating-point dtype, got {value.dtype}")


def check_ndim(name: str, value: Tensor, ndims: int | Sequence[int], expected: str) -> None:
    """Raise ValueError unless ``value.ndim`` is one of ``ndims``.

    ``expected`` is the shape in the book's letters, e.g. ``"(B, L, E)"``.
    """
    allowed = (ndims,) if isinstance(ndims, int) else tuple(ndims)
    if value.ndim not in allowed:
        raise ValueError(
            f"{name} must have {' or '.join(str(n) for n in allowed)} dimensions "
            f"{expected}, got shape {shape_str(value.shape)}"
        )


def check_positive(name: str, value: float | Tensor) -> None:
    """Raise unless every element of ``value`` is finite and > 0.

    A Python number is checked as PyTorch's default dtype (float32) holds it: a number that
    rounds to 0 or overflows to infinity there is refused too, and the message shows both the
    number as given and what it became.

    Raises:
        TypeError: if ``value`` is a bool, or neither a number nor a tensor of numbers.
        ValueError: if an element is not finite or not > 0.
    """
    if isinstance(value, bool):
        raise TypeError(f"{name} must be a number, got bool")
    if isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:  # an int too large for any float
            number = math.inf
        t = torch.as_tensor(number)
    else:
        try:
            t = torch.as_tensor(value)
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(f"{name} must be a number or a tensor of numbers, "
                            f"got {type(value).__name__}") from None
        if t.dtype == torch.bool or t.is_complex():
            raise TypeError(f"{name} must hold real numbers, got dtype {t.dtype}")
    if bool(torch.all(torch.isfinite(t))) and bool(torch.all(t > 0)):
        return
    shown: object = float(t) if t.numel() == 1 else t.tolist()
    if isinstance(value, int | float):
        if math.isfinite(number) and number > 0:
            raise ValueError(f"{name} must be finite and > 0 in {t.dtype}, got {value!r}, "
                             f"which {t.dtype} rounds to {shown}")
        too_large = isinstance(value, int) and number == math.inf
        shown = "an int too large for a float" if too_large else value
    raise ValueError(f"{name} must be finite and > 0, got {shown}")


def check_finite(name: str, value: Tensor) -> None:
    """Raise ValueError if ``value`` holds NaN or infinity."""
    if value.is_floating_point() and not bool(torch.isfinite(value).all()):
        raise ValueError(f"{name} must be finite, got NaN or inf in a tensor of shape "
                         f"{shape_str(value.shape)}")


def check_choice(name: str, value: str, choices: Sequence[str]) -> None:
    """Raise ValueError unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")


def check_int(name: str, value: object, minimum: int | None = None) -> int:
    """Raise unless ``value`` is a Python int (bool refused) and, if given, >= ``minimum``.

    Raises:
        TypeError: if ``value`` is not an int.
        ValueError: if ``value`` < ``minimum``.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def positive_int_from_env(name: str, default: int) -> int:
    """The positive integer in environment variable ``name``, or ``default`` if it is unset.

    Raises:
        ValueError: if the variable is set to anything but a positive integer.
    """
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {raw!r}")
    return value


def check_probability(name: str, value: object) -> float:
    """Raise unless ``value`` is a number in [0, 1), as a dropout probability must be.

    Raises:
        TypeError: if ``value`` is not an int or float (bool refused).
        ValueError: if ``value`` is not in [0, 1).
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a float, got {type(value).__name__}")
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {value}")
    return float(value)


def check_sequence(name: str, x: object, d_model: int) -> Tensor:
    """Raise unless ``x`` is a floating (B, L, D) tensor with D = ``d_model``."""
    t = check_tensor(name, x)
    check_floating(name, t)
    check_ndim(name, t, 3, "(B, L, D)")
    if t.shape[-1] != d_model:
        raise ValueError(
            f"{name} must have shape (B, L, D) with D = d_model = {d_model}, "
            f"got shape {shape_str(t.shape)}"
        )
    return t


def check_token_ids(name: str, tokens: object, num_symbols: int) -> Tensor:
    """Raise unless ``tokens`` is a (B, L) integer tensor of ids in [0, ``num_symbols``)."""
    t = check_tensor(name, tokens)
    check_ndim(name, t, 2, "(B, L)")
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise TypeError(f"{name} must have an integer dtype, got {t.dtype}")
    outside = (t < 0) | (t >= num_symbols)
    if bool(outside.any()):
        raise ValueError(f"{name} must be ids in [0, num_symbols) = [0, {num_symbols}), "
                         f"got id {int(t[outside][0])}")
    return t
