# mypy: disable-error-code="no-untyped-def"
# (the kernel's arguments are Triton's: pointers and constexprs, which Python cannot annotate)
r"""FlashAttention's forward pass as a Triton kernel: the loop of ``tiled_attention``, on a GPU.

:func:`attnlib.blocks.efficient.tiled_attention` walks over tiles of queries one after the
other; the kernel here is the same loop written for a GPU in Triton, the way FlashAttention-2
organises it: one *program* per tile of queries (and per batch entry), all of them running in
parallel, each streaming the keys and values tile by tile with the online softmax (running
maximum :math:`m` and sum :math:`\ell`) and storing, besides the output, each query's
log-sum-exp

.. math::

    \operatorname{lse}_i = m_i + \log \ell_i = \log \sum_j e^{s_{ij}},

which is all a backward pass needs to recompute the weights tile by tile.

Triton compiles the kernel for a GPU. On a computer without one, Triton's *interpreter* runs the
same kernel with NumPy on ordinary CPU tensors, one program after the other: slowly, but to the
same result up to rounding. :func:`triton_flash_attention` runs the interpreter for
``interpret=True``, or with ``interpret=None`` when the environment variable
``TRITON_INTERPRET`` is ``1`` at the call. Triton itself reads that variable when ``triton.jit``
wraps a function: for the functions of ``triton.language`` that are written in Triton
(``tl.max``, ``tl.sum``, ``tl.zeros``), that is when ``triton`` is first imported, which
``torch.utils.flop_counter`` and ``torch.compile`` also do. A kernel run by the interpreter
while they are wrapped for the compiler fails inside them, so this module wraps its kernel at
the first call in the mode asked for, and for the interpreter's run rewraps those functions and
restores them afterwards: the variable may be set before or after any import.

``triton`` is an optional dependency: this module imports without it, and the function says what
to install when it is missing.
"""

from __future__ import annotations

import contextlib
import math
import os
from collections.abc import Iterator
from typing import Any, Literal, overload

import torch
from torch import Tensor

from attnlib._checks import check_flag, check_int, check_qkv, shape_str

try:  # optional: without triton the module imports and the function says what is missing
    import triton  # type: ignore[import-untyped, import-not-found, unused-ignore]
    import triton.language as tl  # type: ignore[import-untyped, import-not-found, unused-ignore]
except ImportError:  # pragma: no cover - depends on the installation
    triton = None
    tl = None

#: Head sizes (E and Ev) up to this are tiled whole, as FlashAttention-2 supports.
MAX_HEAD_SIZE = 256
#: The dtypes the kernel takes (its accumulators are float32; float64 is not a GPU kernel's).
DTYPES = (torch.float32, torch.float16, torch.bfloat16)
#: The most batch entries (batch x heads) in one call, as CUDA caps a launch grid's second axis.
MAX_GRID_BATCH = 65535
#: The block sizes allowed, the powers of two from 16 (the smallest tile of ``tl.dot``) to 256.
BLOCK_SIZES = tuple(2**k for k in range(4, 9))


def _flash_forward_kernel(
    Q, K, V, Out, Lse,  # (B, L, E), (B, S, E), (B, S, Ev), (B, L, Ev), (B, L)
    scale, L, S, E, Ev,
    IS_CAUSAL: tl.constexpr, BLOCK_Q: tl.constexpr, BLOCK_K: tl.constexpr,
    BLOCK_E: tl.constexpr, BLOCK_EV: tl.constexpr,
):
    q0 = tl.program_id(0) * BLOCK_Q  # this program's tile of queries...
    # ... in this batch entry; all programs in parallel. 64-bit, so that
    # offsets such as b * L * E do not wrap past 2**31 elements.
    b = tl.program_id(1).to(tl.int64)
    rows = q0 + tl.arange(0, BLOCK_Q)  # (bq,) query positions
    e = tl.arange(0, BLOCK_E)  # E padded to a power of two; masked below
    ev = tl.arange(0, BLOCK_EV)
    q_blk = tl.load(Q + b * L * E + rows[:, None] * E + e[None, :],
                    mask=(rows[:, None] < L) & (e[None, :] < E),
                    other=0.0)  # (bq, E), kept on chip for the whole loop
    row_max = tl.full([BLOCK_Q], float("-inf"), tl.float32)  # (bq,)
    row_sum = tl.zeros([BLOCK_Q], tl.float32)  # (bq,)
    acc = tl.zeros([BLOCK_Q, BLOCK_EV], tl.float32)  # (bq, Ev)
    k_end = S
    if IS_CAUSAL:  # query i sees keys 0..i: keys from q0 + bq on never
        k_end = tl.minimum(S, q0 + BLOCK_Q)
    for k0 in range(0, k_end, BLOCK_K):
        cols = k0 + tl.arange(0, BLOCK_K)  # (bk,) key positions
        k_blk = tl.load(K + b * S * E + cols[:, None] * E + e[None, :],
                        mask=(cols[:, None] < S) & (e[None, :] < E),
                        other=0.0)  # (bk, E)
        v_blk = tl.load(V + b * S * Ev + cols[:, None] * Ev + ev[None, :],
                        mask=(cols[:, None] < S) & (ev[None, :] < Ev),
                        other=0.0)  # (bk, Ev)
        s = tl.dot(q_blk, tl.trans(k_blk)) * scale  # (bq, bk), float32
        hidden = cols[None, :] >= S  # past the last key (the last tile)
        if IS_CAUSAL:
            hidden = hidden | (cols[None, :] > rows[:, None])
        s = tl.where(hidden, float("-inf"), s)
        new_max = tl.maximum(row_max, tl.max(s, 1))  # (bq,)
        # A row with only -inf scores so far keeps m' = -inf: exponents
        # relative to 0 then (FlashAttention-2's code), not -inf+inf = NaN.
        ref = tl.where(new_max == float("-inf"), 0.0, new_max)
        correction = tl.exp(row_max - ref)  # (bq,)
        p = tl.exp(s - ref[:, None])  # (bq, bk)
        row_sum = row_sum * correction + tl.sum(p, 1)
        acc = acc * correction[:, None] \
            + tl.dot(p.to(v_blk.dtype), v_blk)  # (bq, Ev)
        row_max = new_max
    # A query whose scores are all -inf has l = 0 and a = 0: output 0.
    out = acc / tl.where(row_sum == 0, 1.0, row_sum)[:, None]
    tl.store(Out + b * L * Ev + rows[:, None] * Ev + ev[None, :],
             out.to(Out.dtype.element_ty),
             mask=(rows[:, None] < L) & (ev[None, :] < Ev))
    tl.store(Lse + b * L + rows, row_max + tl.log(row_sum), mask=rows < L)


_kernels: dict[bool, Any] = {}  # interpreted or compiled: each made at its first use


def _kernel(interpret: bool) -> Any:
    """The kernel wrapped for Triton's interpreter or for its GPU compiler, made once each."""
    if interpret not in _kernels:
        if interpret:
            from triton.runtime.interpreter import InterpretedFunction  # type: ignore[import-untyped, import-not-found, unused-ignore]
            _kernels[interpret] = InterpretedFunction(_flash_forward_kernel)
        else:  # triton.jit would read TRITON_INTERPRET: the class itself compiles
            from triton.runtime.jit import JITFunction  # type: ignore[import-untyped, import-not-found, unused-ignore]
            _kernels[interpret] = JITFunction(_flash_forward_kernel)
    return _kernels[interpret]


@contextlib.contextmanager
def _library_for(interpret: bool) -> Iterator[None]:
    """``triton.language``'s own Triton functions wrapped for the mode of this run.

    Triton wrapped them (``tl.max``, ``tl.sum``, ...) once, at its first import, for the
    interpreter if ``TRITON_INTERPRET`` was 1 then and for the compiler otherwise. For a run of
    the interpreter, those wrapped for the compiler are rewrapped for the interpreter while it
    runs, and ``triton.language`` is restored afterwards.
    """
    from triton.runtime.interpreter import InterpretedFunction  # type: ignore[import-untyped, import-not-found, unused-ignore]
    from triton.runtime.jit import JITFunction  # type: ignore[import-untyped, import-not-found, unused-ignore]

    if not interpret:  # the compiler: left as triton wrapped it
        yield
        return
    # The interpreter patches triton.language while it runs and restores it, except where a
    # Triton function calls another one (tl.max's body): those patches it leaves in place,
    # and a compilation later in the same process fails on them. So everything is restored.
    patched = (tl, tl.core, tl.math, tl.standard, tl.core.tensor,
               tl.core.tensor_descriptor_base)
    saved = [(obj, dict(vars(obj))) for obj in patched]
    try:
        for name, value in list(vars(tl).items()):
            if isinstance(value, JITFunction):
                setattr(tl, name, InterpretedFunction(value.fn))
        yield
    finally:
        for obj, attributes in saved:  # names it adds (its own helpers) stay
            for name, value in attributes.items():
                if vars(obj).get(name, _ABSENT) is not value:
                    setattr(obj, name, value)


_ABSENT = object()


def _interpreter_requested() -> bool:
    """Whether the environment asks for Triton's interpreter: ``TRITON_INTERPRET`` is 1 now."""
    return os.environ.get("TRITON_INTERPRET", "0").strip().lower() in ("1", "true", "on", "yes")


@overload
def triton_flash_attention(
    query: Tensor, key: Tensor, value: Tensor, is_causal: bool = ...,
    scale: float | None = ..., block_size_q: int = ..., block_size_k: int = ...,
    interpret: bool | None = ..., return_lse: Literal[False] = ...,
) -> Tensor: ...


@overload
def triton_flash_attention(
    query: Tensor, key: Tensor, value: Tensor, is_causal: bool = ...,
    scale: float | None = ..., block_size_q: int = ..., block_size_k: int = ...,
    interpret: bool | None = ..., *, return_lse: Literal[True],
) -> tuple[Tensor, Tensor]: ...


def triton_flash_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    is_causal: bool = False,
    scale: float | None = None,
    block_size_q: int = 64,
    block_size_k: int = 64,
    interpret: bool | None = None,
    return_lse: bool = False,
) -> Tensor | tuple[Tensor, Tensor]:
    r"""Exact attention by FlashAttention-2's forward loop, as a Triton kernel.

    Equal, up to rounding, to :func:`attnlib.blocks.efficient.tiled_attention` and to
    :func:`torch.nn.functional.scaled_dot_product_attention` with the same ``is_causal``
    (aligned upper-left) and ``scale`` (default :math:`1/\sqrt E`). One program handles one
    tile of ``block_size_q`` queries of one batch entry and streams the keys and values in
    tiles of ``block_size_k``; with ``is_causal`` it stops after the tile that holds the
    diagonal. Shapes need not be multiples of the tiles: the last tiles are masked.

    Scores, maxima, sums and the accumulator are float32; float16 and bfloat16 inputs are
    multiplied in their own dtype (the weights are cast to value's dtype before the product
    with it, as FlashAttention does) and the output has the input's dtype. On a GPU, Triton
    multiplies float32 matrices in TF32 by default, so float32 results there agree with
    float32 references only to about 1e-3; the interpreter multiplies in float32. Triton
    3.9.0's interpreter gets matrix products in bfloat16 wrong, so bfloat16 is refused there.

    Forward only: there is no backward pass, so inputs that require gradients are refused
    while gradients are enabled (use it under :func:`torch.no_grad`).

    Args:
        query, key, value: (..., L, E), (..., S, E), (..., S, Ev); batch dimensions broadcast.
        is_causal: query :math:`i` attends to keys :math:`0, \dots, i` only.
        scale: the factor of the scores, None for :math:`1/\sqrt E`.
        block_size_q, block_size_k: the tile sizes, powers of two from 16 to 256.
        interpret: True runs Triton's interpreter (any device, CPU included), False the
            compiled GPU kernel (CUDA tensors), None the interpreter when the environment
            variable ``TRITON_INTERPRET`` is 1 and the compiled kernel otherwise.
        return_lse: also return the log-sum-exp of each query's scaled scores, float32.

    Shape:
        query (..., L, E), key (..., S, E), value (..., S, Ev). Returns (..., L, Ev), and
        with ``return_lse`` also (..., L).

    Raises:
        ModuleNotFoundError: ``triton`` is not installed.
        TypeError: a non-tensor, a dtype other than float32, float16 and bfloat16
            (bfloat16 only on a GPU: the interpreter's products in it are wrong), key or
            value of another dtype than query, a non-bool ``is_causal``, ``interpret`` or
            ``return_lse``, block sizes that are not ints.
        ValueError: mismatched shapes, batch dimensions that do not broadcast, no key,
            E = 0, E or Ev above 256, another device, a ``scale`` that is not finite and
            > 0, block sizes that are not powers of two from 16 to 256, inputs that require
            gradients, inputs that the chosen mode cannot run: CPU tensors without the
            interpreter, or tensors neither on the CPU nor on a CUDA GPU, or more than
            ``MAX_GRID_BATCH`` (65535) batch entries, the most a launch grid's axis holds.
    """
    check_qkv(query, key, value, is_causal=is_causal, need_keys=True, scale=scale)
    for name, size in (("block_size_q", block_size_q), ("block_size_k", block_size_k)):
        check_int(name, size)
        if size not in BLOCK_SIZES:
            raise ValueError(f"{name} must be a power of two from 16 to 256 (a tile of "
                             f"tl.dot), got {size}")
    if interpret is not None:
        check_flag("interpret", interpret)
    check_flag("return_lse", return_lse)
    _check_supported(query, key, value)
    if triton is None:
        raise ModuleNotFoundError(
            "triton_flash_attention needs the triton package, which is not installed: "
            "pip install triton (the book pins triton==3.9.0 in requirements.lock)")
    use_interpreter = _interpreter_requested() if interpret is None else interpret
    _check_runnable(query, use_interpreter, interpret)
    scale = 1 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    L, E = query.shape[-2:]
    S, Ev = value.shape[-2:]
    batch = torch.broadcast_shapes(  # type: ignore[no-untyped-call]
        query.shape[:-2], key.shape[:-2], value.shape[:-2])
    B = math.prod(batch)
    if B > MAX_GRID_BATCH:
        raise ValueError(f"the batch dimensions {tuple(batch)} hold {B} entries, above "
                         f"{MAX_GRID_BATCH}, the most that a GPU launch grid holds along the "
                         f"axis of batch entries: split the batch into calls of at most "
                         f"{MAX_GRID_BATCH}")
    q, k, v = (t.expand(*batch, *t.shape[-2:]).reshape(B, *t.shape[-2:]).contiguous()
               for t in (query, key, value))  # (B, L, E), (B, S, E), (B, S, Ev)
    out = query.new_empty(B, L, Ev)  # (B, L, Ev)
    lse = torch.empty(B, L, dtype=torch.float32, device=query.device)  # (B, L)
    if out.numel() > 0:
        grid = (triton.cdiv(L, block_size_q), B)  # (query tiles, batch)
        with _library_for(use_interpreter):
            _kernel(use_interpreter)[grid](
                q, k, v, out, lse, scale, L, S, E, Ev,
                IS_CAUSAL=is_causal, BLOCK_Q=block_size_q, BLOCK_K=block_size_k,
                BLOCK_E=_padded(E), BLOCK_EV=_padded(Ev))
    out = out.reshape(*batch, L, Ev)
    if return_lse:
        return out, lse.reshape(*batch, L)
    return out


def _padded(size: int) -> int:
    """The smallest power of two >= size and >= 16 (a tile of tl.dot)."""
    return max(16, 1 << (size - 1).bit_length())


def _check_supported(query: Tensor, key: Tensor, value: Tensor) -> None:
    """The dtypes, head sizes and autograd state that the kernel handles."""
    if query.dtype not in DTYPES:
        raise TypeError(f"query must be float32, float16 or bfloat16 for the Triton kernel, "
                        f"got {query.dtype} (tiled_attention computes in float64)")
    for name, t, letter in (("query", query, "E"), ("value", value, "Ev")):
        if t.shape[-1] > MAX_HEAD_SIZE:
            raise ValueError(f"{name} has shape {shape_str(t.shape)}: {letter} = {t.shape[-1]} "
                             f"is above {MAX_HEAD_SIZE}, the largest head size this kernel "
                             f"tiles whole")
    if torch.is_grad_enabled():
        for name, t in (("query", query), ("key", key), ("value", value)):
            if t.requires_grad:
                raise ValueError(f"{name} requires grad, but triton_flash_attention is a "
                                 f"forward pass only (no backward): call it under "
                                 f"torch.no_grad() or detach the inputs")


def _check_runnable(query: Tensor, use_interpreter: bool, interpret: bool | None) -> None:
    """Refuse a device that the chosen mode cannot run, saying which mode would."""
    device = query.device
    if use_interpreter:
        if device.type not in ("cpu", "cuda"):
            raise ValueError(f"query is on device {device}: Triton's interpreter runs on "
                             f"CPU (or CUDA) tensors; move the inputs with .cpu()")
        if query.dtype == torch.bfloat16:  # measured with triton 3.9.0
            raise TypeError("query is bfloat16, whose matrix products Triton's interpreter "
                            "gets wrong (tl.dot on bfloat16 returns numbers of the order of "
                            "1e10): use float32 or float16 under the interpreter, bfloat16 "
                            "on a GPU")
        return
    if device.type == "cpu":
        how = ("interpret=False was given" if interpret is False
               else "TRITON_INTERPRET is not 1 in the environment")
        raise ValueError(f"query is on the CPU, where Triton has no compiler ({how}): pass "
                         f"interpret=True or set TRITON_INTERPRET=1 to run Triton's "
                         f"interpreter, or move the inputs to a CUDA GPU")
    if device.type != "cuda":
        raise ValueError(f"query is on device {device}: the compiled Triton kernel runs on "
                         f"CUDA GPUs only; pass interpret=True to run Triton's interpreter")
