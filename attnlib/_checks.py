"""Validation helpers shared by every attnlib module.

Bad input gets a clear error that names the argument, what it got and what it expected,
so a reader who passes the wrong shape learns which tensor and which dimension is wrong.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from typing import Literal

import torch
from torch import Tensor


def shape_str(shape: Sequence[int | str] | torch.Size) -> str:
    """Format a shape as ``(2, 3, 4)`` for error messages (sizes, or letters such as "Ev")."""
    if (isinstance(shape, str) or not isinstance(shape, Sequence | torch.Size)
            or any(isinstance(s, bool) or not isinstance(s, int | str)
                   or (isinstance(s, int) and s < 0) for s in shape)):
        raise TypeError(f"shape must be a sequence of sizes (ints >= 0) or letters, got "
                        f"{shape!r}")
    return "(" + ", ".join(str(s) for s in shape) + ")"


def _got(value: object) -> str:
    """What a message says it got: a tensor's dtype and shape, else the type's name."""
    return (f"a {value.dtype} tensor of shape {shape_str(value.shape)}"
            if isinstance(value, Tensor) else type(value).__name__)


def check_tensor(name: str, value: object) -> Tensor:
    """Raise TypeError unless ``value`` is a tensor."""
    if not isinstance(value, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    return value


def check_floating(name: str, value: object) -> Tensor:
    """Raise TypeError unless ``value`` is a tensor with a floating-point dtype."""
    t = check_tensor(name, value)
    if not t.is_floating_point():
        raise TypeError(f"{name} must have a floating-point dtype, got {t.dtype}")
    return t


def check_device(name: str, value: Tensor, device: torch.device, other: str) -> None:
    """Raise ValueError unless ``value`` is on ``device``, where ``other`` lives."""
    value = check_tensor(name, value)
    checked = check_device_arg("device", device, optional=False)
    if not isinstance(other, str):
        raise TypeError(f"other must name what lives on the device (a str), got "
                        f"{type(other).__name__}")
    if value.device != checked:
        raise ValueError(f"{name} is on device {value.device}, but {other} is on {checked}: "
                         f"move them to one device")


def check_input(name: str, value: object, like: Tensor, ndim: int | Sequence[int] | None = None,
                expected: str = "", other: str = "the parameters") -> Tensor:
    """Raise unless ``value`` is a floating tensor of ``like``'s dtype and device (a module's
    input: ``like`` is one of its parameters) with ``ndim`` dimensions.

    Raises:
        TypeError: a non-tensor, or a dtype other than ``like``'s.
        ValueError: another device, or another number of dimensions.
    """
    like = check_floating("like", like)
    t = check_floating(name, value)
    if ndim is not None and (isinstance(ndim, str) or not isinstance(ndim, Sequence)):
        check_int("ndim", ndim, minimum=0)
    if t.dtype != like.dtype:
        raise TypeError(f"{name} must have {other}' dtype {like.dtype}, got {t.dtype}; convert "
                        f"the module (e.g. .double()) or the input")
    check_device(name, t, like.device, other)
    if ndim is not None:
        check_ndim(name, t, ndim, expected)
    return t


def check_ndim(name: str, value: Tensor, ndims: int | Sequence[int], expected: str) -> None:
    """Raise ValueError unless ``value.ndim`` is one of ``ndims``.

    ``expected`` is the shape in the book's letters, e.g. ``"(B, L, E)"``.
    """
    value = check_tensor(name, value)
    if not isinstance(ndims, int | Sequence):
        raise TypeError(f"ndims must be an int or a sequence of ints, got {type(ndims).__name__}")
    allowed = (ndims,) if isinstance(ndims, int) else tuple(ndims)
    for n in allowed:
        check_int("ndims", n, minimum=0)
    if not isinstance(expected, str):
        raise TypeError(f"expected must be a str, got {type(expected).__name__}")
    if value.ndim not in allowed:
        raise ValueError(f"{name} must have {' or '.join(str(n) for n in allowed)} dimensions "
                         f"{expected}, got shape {shape_str(value.shape)}")


def check_positive(name: str, value: object) -> None:
    """Raise unless ``value`` is one finite number > 0: a Python number or a 0-d tensor.

    A Python number is checked as PyTorch's default dtype (float32) holds it: a number that
    rounds to 0 or overflows to infinity there is refused too, and the message shows both the
    number as given and what it became. Several values (a tensor of shape (2,)) are refused.

    Raises:
        TypeError: if ``value`` is a bool, or neither a number nor a tensor of numbers.
        ValueError: if ``value`` has more than 0 dimensions, is not finite or not > 0.
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
        if t.ndim != 0:
            raise ValueError(f"{name} must be one number (a Python number or a 0-d tensor), "
                             f"got {type(value).__name__} of shape {shape_str(t.shape)}")
    if bool(torch.all(torch.isfinite(t))) and bool(torch.all(t > 0)):
        return
    shown: object = float(t)
    if isinstance(value, int | float):
        if math.isfinite(number) and number > 0:
            raise ValueError(f"{name} must be finite and > 0 in {t.dtype}, got {value!r}, "
                             f"which {t.dtype} rounds to {shown}")
        too_large = isinstance(value, int) and number == math.inf
        shown = "an int too large for a float" if too_large else value
    raise ValueError(f"{name} must be finite and > 0, got {shown}")


def check_finite(name: str, value: Tensor) -> None:
    """Raise ValueError if ``value`` holds NaN or infinity (TypeError unless it is a real
    floating-point tensor)."""
    value = check_floating(name, value)
    if not bool(torch.isfinite(value).all()):
        raise ValueError(f"{name} must be finite, got NaN or inf in a tensor of shape "
                         f"{shape_str(value.shape)}")


def check_choice(name: str, value: str, choices: Sequence[str]) -> None:
    """Raise ValueError unless ``value`` is one of ``choices`` (TypeError unless a str)."""
    if (isinstance(choices, str) or not isinstance(choices, Sequence) or not choices
            or not all(isinstance(c, str) for c in choices)):
        raise TypeError(f"choices must be a non-empty sequence of str, got {choices!r}")
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {', '.join(map(repr, choices))}, got "
                        f"{type(value).__name__} {value!r}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, choices))}, got {value!r}")


def check_int(name: str, value: object, minimum: int | None = None,
              maximum: int | None = None) -> int:
    """Raise unless ``value`` is a Python int (bool refused) in [``minimum``, ``maximum``], int64.

    Raises:
        TypeError: if ``value`` is not an int.
        ValueError: if ``value`` < ``minimum`` or > ``maximum``, or outside int64.
    """
    for bound, bound_name in ((minimum, "minimum"), (maximum, "maximum")):
        if bound is not None:  # an int within int64
            check_int(bound_name, bound)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {_got(value)}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    if not -(2**63) <= value < 2**63:
        raise ValueError(f"{name} must fit in int64 (-2**63 to 2**63 - 1), got {value}")
    return value


def check_flag(name: str, value: object) -> bool:
    """Raise TypeError unless ``value`` is a bool (a truthy string or 1 is not read as True)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}")
    return value


def check_real(name: str, value: object, minimum: float | None = None) -> float:
    """Raise unless ``value`` is a finite number (bool refused) and, if given, >= ``minimum``.

    Raises:
        TypeError: if ``value`` is not an int or float.
        ValueError: if it is NaN, infinite or below ``minimum``.
    """
    if minimum is not None and (isinstance(minimum, bool) or not isinstance(minimum, int | float)
                                or not math.isfinite(minimum)):
        raise TypeError(f"minimum must be a finite number or None, got {minimum!r}")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {_got(value)}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return float(value)


def check_float_dtype(name: str, dtype: object, optional: bool = False) -> torch.dtype | None:
    """Raise TypeError unless ``dtype`` is a floating-point torch.dtype, or None if
    ``optional`` (a module's parameters: an integer or bool dtype fails inside PyTorch)."""
    check_flag("optional", optional)
    if (dtype is None and optional) or (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
        return dtype
    raise TypeError(f"{name} must be a floating-point torch.dtype{' or None' if optional else ''} "
                    f"(e.g. torch.float32), got {dtype!r}")


def check_device_arg(name: str, value: object, optional: bool = True) -> torch.device | None:
    """The device ``value`` names (a ``torch.device``, a string such as ``"cpu"`` or
    ``"cuda:0"``, or an accelerator index), checked to be cpu, meta or one of this machine's
    accelerator; None stays None if ``optional``. Raises TypeError for another type, ValueError
    for a string that names no device (``"gpu0"``) or a device this machine does not have."""
    check_flag("optional", optional)
    if (value is None and optional) or (isinstance(value, torch.device)
                                        and value.type in ("cpu", "meta")):
        return value
    available = torch.accelerator.is_available()
    accelerator = torch.accelerator.current_accelerator() if available else None
    has = f"the accelerator {accelerator.type!r}" if accelerator else "no accelerator"
    if isinstance(value, str):
        try:
            value = torch.device(value)
        except (RuntimeError, ValueError):
            raise ValueError(f"{name} must name a device, such as 'cpu', 'cuda:0' or 'meta', got "
                             f"{value!r}") from None
    elif isinstance(value, int) and not isinstance(value, bool):
        if value < 0 or accelerator is None:
            raise ValueError(f"{name} = {value} is an index on an accelerator, but this machine "
                             f"has {has}; expected an index >= 0 or a device such as 'cpu'")
        value = torch.device(accelerator.type, value)
    elif not isinstance(value, torch.device):
        raise TypeError(f"{name} must be a torch.device, a device string such as 'cpu' or an "
                        f"accelerator index{' or None' if optional else ''}, got {_got(value)}")
    count = torch.accelerator.device_count() if accelerator else 0
    if value.type not in ("cpu", "meta") and (accelerator is None or value.type != accelerator.type
                                              or (value.index or 0) >= count):
        raise ValueError(f"{name} is {str(value)!r}, a device this machine does not have (it has "
                         f"{has}{f' with {count} device(s)' if accelerator else ''})")
    return value


def check_not_meta(name: str, value: Tensor, what: str) -> None:
    """Raise ValueError if ``value`` is on the meta device, where ``what`` cannot be checked."""
    value = check_tensor(name, value)
    check_instance("what", what, str, "a description of the values to check (a str)")
    if value.device.type == "meta":
        raise ValueError(f"{name} is on the meta device, which holds no values, but {what} "
                         f"must be checked: give {name} on 'cpu' or an accelerator")


def check_instance(name: str, value: object, cls: type | tuple[type, ...], what: str) -> None:
    """Raise TypeError unless ``value`` is an instance of ``cls`` (``what`` names it)."""
    if not isinstance(what, str):
        raise TypeError(f"what must describe the expected value (a str), got "
                        f"{type(what).__name__}")
    if not isinstance(value, cls):
        raise TypeError(f"{name} must be {what}, got {type(value).__name__}")


def check_tokens(name: str, value: object) -> list[str]:
    """Raise TypeError unless ``value`` is a sequence of str tokens (a str itself is refused:
    it would be read character by character); returns it as a list."""
    if isinstance(value, str) or not isinstance(value, Sequence | Iterable):
        raise TypeError(f"{name} must be a sequence of str tokens, got {type(value).__name__}")
    tokens = list(value)
    bad = [t for t in tokens if not isinstance(t, str)]
    if bad:
        raise TypeError(f"{name} must hold str tokens, got {type(bad[0]).__name__} {bad[0]!r}")
    return tokens


def check_sentences(name: str, value: object) -> None:
    """Raise TypeError unless ``value`` is a sequence of sentences, each a str or a sequence
    of str tokens (a bare str is refused: it would be read as one sentence per character)."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a sequence of sentences (str or token sequences), got "
                        f"{type(value).__name__}")
    for i, sentence in enumerate(value):
        if not isinstance(sentence, str):
            check_tokens(f"{name}[{i}]", sentence)


def check_ints(name: str, value: object, minimum: int | None = None) -> list[int]:
    """Raise unless ``value`` is a sequence of ints (bool refused), each >= ``minimum``."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TypeError(f"{name} must be a sequence of ints, got {type(value).__name__}")
    for i, item in enumerate(value):
        check_int(f"{name}[{i}]", item, minimum=minimum)
    return list(value)


def positive_int_from_env(name: str, default: int) -> int:
    """The positive integer in environment variable ``name``, or ``default`` if it is unset.

    Raises:
        ValueError: if the variable is set to anything but a positive integer.
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be the name of an environment variable (a str), got "
                        f"{type(name).__name__}")
    check_int("default", default, minimum=1)
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if not 1 <= value < 2**63:  # an int that fits in int64
        raise ValueError(f"{name} must be a positive integer, got {raw!r}")
    return value


def check_probability(name: str, value: object) -> float:
    """Raise unless ``value`` is a number in [0, 1), as a dropout probability must be.

    Raises:
        TypeError: if ``value`` is not an int or float (bool refused).
        ValueError: if ``value`` is not in [0, 1).
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a float, got {_got(value)}")
    if not 0.0 <= value < 1.0:  # NaN fails too
        raise ValueError(f"{name} must be in [0, 1), got {value}")
    return float(value)


def check_sequence(name: str, x: object, d_model: int, like: Tensor | None = None) -> Tensor:
    """Raise unless ``x`` is a floating (B, L, D) tensor with D = ``d_model`` (and, with
    ``like``, a module's parameter, of its dtype and device)."""
    check_int("d_model", d_model, minimum=1)
    t = check_floating(name, x) if like is None else check_input(name, x, like)
    check_ndim(name, t, 3, "(B, L, D)")
    if t.shape[-1] != d_model:
        raise ValueError(f"{name} must have shape (B, L, D) with D = d_model = {d_model}, "
                         f"got shape {shape_str(t.shape)}")
    return t


def check_token_ids(name: str, tokens: object, num_symbols: int, ndim: int = 2,
                    expected: str = "(B, L)", device: torch.device | None = None) -> Tensor:
    """Raise unless ``tokens`` is an integer tensor of ``ndim`` dimensions (``expected``) of ids
    in [0, ``num_symbols``), on ``device`` if given (a model's)."""
    check_int("num_symbols", num_symbols, minimum=1)
    check_int("ndim", ndim, minimum=0)
    t = check_tensor(name, tokens)
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise TypeError(f"{name} must have an integer dtype, got {t.dtype}")
    check_ndim(name, t, ndim, expected)
    if device is not None:
        check_device(name, t, device, "the model")
    outside = (t < 0) | (t >= num_symbols)
    if bool(outside.any()):
        raise ValueError(f"{name} must be ids in [0, num_symbols) = [0, {num_symbols}), "
                         f"got id {int(t[outside][0])}")
    return t


def check_positions(name: str, value: object, expected: str = "(L,)",
                    device: torch.device | None = None, other: str = "the model") -> Tensor:
    """Raise unless ``value`` is a 1-D integer tensor (``expected``) of positions >= 0, on
    ``device`` (where ``other`` lives) if given."""
    t = check_tensor(name, value)
    check_ndim(name, t, 1, expected)
    if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
        raise TypeError(f"{name} must be integer positions, got dtype {t.dtype}")
    if device is not None:
        check_device(name, t, device, other)
    if t.device.type != "meta" and bool((t < 0).any()):
        raise ValueError(f"{name} must be positions >= 0, got {int(t.min())}")
    return t


def check_mask(
    name: str,
    mask: object,
    target_shape: Sequence[int] | torch.Size,
    *,
    dtype: torch.dtype | None = None,
    expected: str | None = None,
    device: torch.device | None = None,
    bool_only: bool = False,
) -> Tensor:
    """Check that ``mask`` is a valid attention mask for scores of shape ``target_shape``.

    A valid mask is a bool tensor (True = may attend) or a floating-point tensor (added to the
    scores: 0 or a finite bias, -inf where a query may not attend; NaN and +inf are refused,
    they would make the weights NaN), whose shape broadcasts to ``target_shape`` without
    enlarging it, on the scores' ``device`` if given. ``bool_only`` refuses float masks.

    Args:
        name: the argument's name, used in error messages.
        mask: the value to check.
        target_shape: the shape of the scores the mask is applied to.
        dtype: if given, a float mask must have this dtype (the scores' dtype), so that adding
            it does not silently promote the scores.
        expected: the target shape in the book's letters, e.g. ``"(B, H, L, S)"``, for messages.

    Returns:
        ``mask``, typed as a tensor.

    Raises:
        TypeError: if ``mask`` is not a tensor, has an integer or complex dtype, or is a float
            mask whose dtype differs from ``dtype``.
        ValueError: if ``mask`` does not broadcast to ``target_shape``.
    """
    mask = check_tensor(name, mask)
    check_float_dtype("dtype", dtype, optional=True)
    if bool_only and mask.dtype != torch.bool:
        raise TypeError(f"{name} must be a bool tensor (True = may attend), got dtype "
                        f"{mask.dtype}")
    if mask.dtype != torch.bool and not mask.is_floating_point():
        raise TypeError(f"{name} must be a bool tensor (True = may attend) or a floating-point "
                        f"tensor added to the scores, got dtype {mask.dtype}")
    if mask.is_floating_point() and dtype is not None and mask.dtype != dtype:
        raise TypeError(f"{name} is a float mask of dtype {mask.dtype}, but the scores have dtype "
                        f"{dtype}; a float mask must have the scores' dtype")
    if device is not None:
        check_device(name, mask, device, "the scores")
    if (not isinstance(target_shape, Sequence | torch.Size)
            or any(isinstance(n, bool) or not isinstance(n, int) or n < 0
                   for n in target_shape)):
        raise TypeError(f"target_shape must be a sequence of sizes, got {target_shape!r}")
    if mask.is_floating_point() and mask.device.type != "meta" and bool(
            (torch.isnan(mask) | torch.isposinf(mask)).any()):
        raise ValueError(f"{name} is a float mask with NaN or +inf (of shape "
                         f"{shape_str(mask.shape)}): a float mask holds finite biases, or -inf "
                         f"where a query may not attend")
    target = torch.Size(target_shape)
    try:
        broadcast: torch.Size | None = torch.broadcast_shapes(mask.shape, target)  # type: ignore[no-untyped-call]
    except RuntimeError:
        broadcast = None
    if broadcast != target:
        letters = f"{expected} " if expected else ""
        raise ValueError(f"{name} of shape {shape_str(mask.shape)} does not broadcast to the "
                         f"scores' shape {letters}{shape_str(target)}")
    return mask


#: The shapes :func:`check_qkv` accepts, in the book's letters: query, key, value, scores.
QKV_LAYOUTS: dict[str, tuple[str, str, str, str]] = {
    # any batch dimensions (...) that broadcast, as torch's scaled_dot_product_attention
    "broadcast": ("(..., L, E)", "(..., S, E)", "(..., S, Ev)", "(..., L, S)"),
    # heads: every query head has its own key/value head
    "heads": ("(B, H, L, E)", "(B, H, S, E)", "(B, H, S, Ev)", "(B, H, L, S)"),
    # grouped: H_kv key/value heads, each shared by H / H_kv query heads
    "grouped": ("(B, H, L, E)", "(B, H_kv, S, E)", "(B, H_kv, S, Ev)", "(B, H, L, S)"),
    # self-attention: the keys are the queries' positions (S = L)
    "self": ("(B, H, L, E)", "(B, H, L, E)", "(B, H, L, Ev)", "(B, H, L, L)"),
}


def check_qkv(
    query: object,
    key: object,
    value: object,
    *,
    layout: Literal["broadcast", "heads", "grouped", "self"] = "broadcast",
    attn_mask: object = None,
    is_causal: object = False,
    causal_needs_l_eq_s: bool = False,
    need_keys: bool = False,
    scale: object = None,
    dropout_p: object = 0.0,
) -> Tensor | None:
    r"""The one check of the query, key, value and mask of every attention function.

    Each of query, key and value must be a floating-point tensor of the ``layout``'s shape
    (:data:`QKV_LAYOUTS`), key and value of query's dtype and on query's device; query and key
    must agree in E (at least 1: the scores are scaled by :math:`1/\sqrt E`), key and value in
    S and in their batch (and head) sizes. ``attn_mask``, if given, must broadcast to the scores'
    shape (:func:`check_mask`, on query's device, no NaN or +inf), and not come with
    ``is_causal=True``. ``scale``, if given, must be finite and > 0; ``dropout_p`` in [0, 1).

    Args:
        layout: ``"broadcast"`` (..., L, E), ``"heads"`` (B, H, L, E) with as many key/value
            heads, ``"grouped"`` (B, H_kv, S, E) keys and values with H_kv dividing H, or
            ``"self"``: keys of the query's own shape (self-attention).
        attn_mask: the mask to check, or None.
        is_causal: must be a bool; True may not be given with a mask.
        causal_needs_l_eq_s: refuse ``is_causal`` with L != S (a causal form that only exists
            for self-attention).
        need_keys: refuse S = 0 (an attention over no key is not defined).
        scale: the factor of the scores, None for :math:`1/\sqrt E`.
        dropout_p: the dropout probability on the weights.

    Returns:
        ``attn_mask``, typed as a tensor (or None).

    Raises:
        TypeError: a non-tensor, a non-floating tensor, key or value of another dtype than
            query, a non-bool ``is_causal``, or a mask of a wrong dtype (:func:`check_mask`).
        ValueError: a wrong number of dimensions, sizes that do not fit (the message names the
            tensor, its shape and the shape expected), a mask that does not broadcast, or a
            mask with ``is_causal``.
    """
    check_choice("layout", layout, tuple(QKV_LAYOUTS))
    check_flag("causal_needs_l_eq_s", causal_needs_l_eq_s)
    check_flag("need_keys", need_keys)
    letters = QKV_LAYOUTS[layout]
    tensors = []
    for name, t, expected in zip(("query", "key", "value"), (query, key, value), letters,
                                 strict=False):
        t = check_tensor(name, t)
        check_floating(name, t)
        if layout == "broadcast":
            if t.ndim < 2:
                raise ValueError(f"{name} must have at least 2 dimensions {expected}, got "
                                 f"shape {shape_str(t.shape)}")
        else:
            check_ndim(name, t, 4, expected)
        tensors.append(t)
    q, k, v = tensors
    for name, t in (("key", k), ("value", v)):
        if t.dtype != q.dtype:
            raise TypeError(f"{name} must have query's dtype {q.dtype}, got {t.dtype} (query of "
                            f"shape {shape_str(q.shape)}, {name} of shape {shape_str(t.shape)})")
        check_device(name, t, q.device, "query")
    if layout == "broadcast":
        _check_qkv_broadcast(q, k, v)
    else:
        _check_qkv_heads(q, k, v, layout)
    L, S = q.shape[-2], k.shape[-2]
    if q.shape[-1] == 0:
        raise ValueError(f"query and key must have E >= 1 features (the scores are scaled by "
                         f"1/sqrt(E)), got query of shape {shape_str(q.shape)}")
    if need_keys and S == 0:
        raise ValueError(f"key must hold at least one position, got shape {shape_str(k.shape)}")
    check_flag("is_causal", is_causal)
    if scale is not None:
        check_positive("scale", scale)
    check_probability("dropout_p", dropout_p)
    if is_causal and causal_needs_l_eq_s and L != S:
        raise ValueError(f"is_causal needs L == S, got query {shape_str(q.shape)} and key "
                         f"{shape_str(k.shape)}")
    if attn_mask is None:
        return None
    if is_causal:
        raise ValueError("attn_mask and is_causal=True cannot both be given (as in PyTorch); "
                         "pass causal_mask(L, S) & attn_mask as attn_mask instead")
    if layout == "broadcast":
        # Against the scores' batch dimensions (query's and key's), not value's: PyTorch's
        # kernels fail on a mask that would enlarge the scores.
        batch = tuple(torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]))  # type: ignore[no-untyped-call]
    else:
        batch = tuple(q.shape[:2])
    return check_mask("attn_mask", attn_mask, (*batch, L, S), dtype=q.dtype,
                      expected=letters[3], device=q.device)


def _check_qkv_broadcast(q: Tensor, k: Tensor, v: Tensor) -> None:
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"query and key must have the same size E (query (..., L, E), key "
                         f"(..., S, E)), got query of shape {shape_str(q.shape)} and key of "
                         f"shape {shape_str(k.shape)}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"key and value must have the same length S (key (..., S, E), value "
                         f"(..., S, Ev)), got key of shape {shape_str(k.shape)} and value of "
                         f"shape {shape_str(v.shape)}")
    try:
        torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])  # type: ignore[no-untyped-call]
    except RuntimeError:
        raise ValueError(f"the batch dimensions (...) of query, key and value must broadcast, "
                         f"got query of shape {shape_str(q.shape)}, key of shape "
                         f"{shape_str(k.shape)} and value of shape {shape_str(v.shape)}") from None


def _check_qkv_heads(q: Tensor, k: Tensor, v: Tensor, layout: str) -> None:
    _, key_letters, value_letters, _ = QKV_LAYOUTS[layout]
    B, H, L, E = q.shape
    heads: int | str = "H_kv" if layout == "grouped" else H
    length: int | str = L if layout == "self" else "S"
    want = (B, heads, length, E)
    if any(isinstance(w, int) and w != got for w, got in zip(want, k.shape, strict=True)):
        raise ValueError(f"key must have shape {key_letters} = {shape_str(want)} for query of "
                         f"shape {shape_str(q.shape)}, got {shape_str(k.shape)}")
    if v.shape[:3] != k.shape[:3]:
        raise ValueError(f"value must have shape {value_letters} = "
                         f"{shape_str((*k.shape[:3], 'Ev'))} to match key of shape "
                         f"{shape_str(k.shape)}, got {shape_str(v.shape)}")
    H_kv = k.shape[1]
    if layout == "grouped" and (H_kv == 0 or H % H_kv):
        raise ValueError(f"key's head count H_kv must divide query's H, got key "
                         f"{shape_str(k.shape)} (H_kv = {H_kv}) and query "
                         f"{shape_str(q.shape)} (H = {H})")
