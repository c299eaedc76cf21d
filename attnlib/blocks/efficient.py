r"""Attention made cheap: online softmax, tiled attention, and measuring what they save.

Naive attention materialises the :math:`L \times S` score matrix. Tiled attention (the idea
behind FlashAttention) walks over blocks of keys and values with an *online* softmax, which keeps
a running maximum :math:`m` and a running normaliser :math:`\ell` per query, so the full score
matrix never exists:

.. math::

    m' = \max(m, \max_j s_j),

    \ell' = e^{m - m'}\,\ell + \sum_j e^{s_j - m'},

    \mathbf o' = e^{m - m'}\,\mathbf o + \sum_j e^{s_j - m'}\,\mathbf v_j,

and the output is :math:`\mathbf o / \ell` after the last block.
"""

from __future__ import annotations

import contextlib
import math
import os
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Literal, overload

import torch
from torch import Tensor

from attnlib._checks import (
    check_choice,
    check_flag,
    check_floating,
    check_int,
    check_qkv,
    check_tensor,
    shape_str,
)
from attnlib.blocks.attention import LOW_PRECISION, _in_float32


def online_softmax(scores: Tensor, block_size: int = 128) -> Tensor:
    r"""Softmax over the last dimension computed in one pass over blocks of scores.

    The pass keeps, for each row, the running maximum :math:`m` and the running sum
    :math:`\ell = \sum_j e^{s_j - m}`; when a block raises the maximum, the sum so far is rescaled
    by :math:`e^{m_{\text{old}} - m_{\text{new}}}`. A second, embarrassingly parallel step writes
    :math:`e^{s_j - m}/\ell`. Equal to :func:`torch.softmax` up to rounding. While a row's
    scores so far are all :math:`-\infty` (a masked start), :math:`m` stays :math:`-\infty`
    and the exponents are taken relative to 0, never :math:`e^{-\infty + \infty}`: the rule
    of FlashAttention-2's CUDA code (``softmax.h``), which neither FlashAttention paper's
    pseudocode states.

    float16 and bfloat16 are computed in float32 and returned in the input's dtype, as
    :func:`naive_attention` and :func:`tiled_attention` do.

    Shape:
        scores: (..., S). Returns (..., S).

    Raises:
        TypeError: a non-tensor or a non-floating tensor.
        ValueError: block_size < 1, or a row that is entirely :math:`-\infty`.
    """
    block_size = _check_online_softmax_args(scores, block_size)
    if scores.dtype in LOW_PRECISION:  # float16: computed in float32
        return online_softmax(scores.float(), block_size).to(scores.dtype)
    running_max = torch.full(scores.shape[:-1], -math.inf, dtype=scores.dtype,
                             device=scores.device)  # (...,)
    running_sum = torch.zeros_like(running_max)
    for start in range(0, scores.shape[-1], block_size):
        block = scores[..., start:start + block_size]  # (..., b)
        new_max = torch.maximum(running_max, block.amax(-1))
        # While a row has seen only -inf, m' = -inf and e^(m - m') would be
        # e^(-inf + inf) = NaN: exponents are then taken relative to 0 (as
        # FlashAttention-2's CUDA code does), so e^(-inf - 0) = 0 discards
        # the empty sum.
        ref = torch.where(torch.isneginf(new_max), 0.0, new_max)  # (...,)
        running_sum = running_sum * torch.exp(running_max - ref) \
            + torch.exp(block - ref.unsqueeze(-1)).sum(-1)
        running_max = new_max
    _check_rows_not_all_masked(running_max)
    weights = torch.exp(scores - running_max.unsqueeze(-1))  # (..., n)
    return weights / running_sum.unsqueeze(-1)


def _check_rows_not_all_masked(running_max: Tensor) -> None:
    """Refuse a row of scores that is entirely -inf: its softmax is undefined."""
    if bool(torch.isneginf(running_max).any()):
        raise ValueError("scores has a row that is entirely -inf; its softmax is undefined "
                         "(use attnlib.masked_softmax, which returns zeros for such rows)")


def _check_online_softmax_args(scores: Tensor, block_size: int) -> int:
    """The argument checks of :func:`online_softmax`; returns the block size."""
    check_tensor("scores", scores)
    check_floating("scores", scores)
    block_size = check_int("block_size", block_size, minimum=1)
    if scores.ndim == 0 or scores.shape[-1] == 0:
        raise ValueError(f"scores must have a non-empty last dimension, got shape {shape_str(scores.shape)}")
    return block_size


def naive_attention(
    query: Tensor, key: Tensor, value: Tensor, is_causal: bool = False,
    scale: float | None = None,
) -> Tensor:
    r""":math:`\operatorname{softmax}(QK^\top/\sqrt E)\,V` with the full score matrix in memory.

    Shape:
        query (..., L, E), key (..., S, E), value (..., S, Ev). Returns (..., L, Ev).

    float16 and bfloat16 are computed in float32 and returned in the input's dtype.

    Raises:
        TypeError: a non-tensor, a non-floating tensor, key or value of another dtype than
            query, a non-bool ``is_causal``.
        ValueError: mismatched shapes, batch dimensions that do not broadcast, no key, E = 0,
            another device, or a ``scale`` that is not finite and > 0.
    """
    check_qkv(query, key, value, is_causal=is_causal, need_keys=True,
              scale=scale)
    if query.dtype in LOW_PRECISION:  # float16: computed in float32
        return _in_float32(naive_attention, query, key, value, is_causal, scale)
    scale = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = (query @ key.transpose(-2, -1)) * scale  # (..., L, S)
    if is_causal:
        allowed = torch.ones(scores.shape[-2:], dtype=torch.bool,
                             device=scores.device).tril()  # (L, S)
        scores = scores.masked_fill(~allowed, -math.inf)
    return torch.softmax(scores, dim=-1) @ value  # (..., L, Ev)


def tiled_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    is_causal: bool = False,
    scale: float | None = None,
    block_size_q: int = 512,
    block_size_k: int = 512,
) -> Tensor:
    r"""Exact attention computed block by block with the online softmax (FlashAttention's idea).

    For each block of queries, the keys and values are visited block by block; only a
    ``block_size_q`` by ``block_size_k`` tile of scores exists at any time. With ``is_causal``
    (upper-left aligned, as :func:`torch.nn.functional.scaled_dot_product_attention`), key
    blocks that lie entirely above the diagonal are skipped: for :math:`L = S = n b` with
    square tiles of size :math:`b`, :math:`n(n+1)/2` of the :math:`n^2` tiles, a fraction
    :math:`(n+1)/2n` (one half only as :math:`n \to \infty`).

    Without gradients the tiles are updated in place, so one tile of scores is all the extra
    memory. The running maximum is detached from autograd, as Rabe and Staats stop the
    gradient of theirs: the output does not depend on the reference point :math:`m` of the
    exponents, so the gradients are unchanged, and autograd need not keep the score tiles for
    the maximum's backward. With gradients it still keeps each tile's exponentials
    :math:`e^{s - m}` for the backward pass, so training memory grows like :math:`L S`; the
    memory-efficient backward of Rabe and Staats (checkpointing each chunk) and of
    FlashAttention (recomputing the tiles from the saved row maxima and sums) is not attempted.

    Shape:
        query (..., L, E), key (..., S, E), value (..., S, Ev). Returns (..., L, Ev).

    Batch dimensions broadcast, as in :func:`naive_attention`. float16 and bfloat16 are
    computed in float32 and returned in the input's dtype.

    Raises:
        TypeError: a non-tensor, a non-floating tensor, key or value of another dtype than
            query, a non-bool ``is_causal``, block sizes that are not ints.
        ValueError: mismatched shapes, batch dimensions that do not broadcast, no key, E = 0,
            another device, a ``scale`` that is not finite and > 0, or block sizes < 1.
    """
    check_qkv(query, key, value, is_causal=is_causal, need_keys=True,
              scale=scale)
    _check_block_sizes(block_size_q, block_size_k)
    if query.dtype in LOW_PRECISION:  # float16: computed in float32
        return _in_float32(tiled_attention, query, key, value, is_causal, scale,
                           block_size_q, block_size_k)
    scale = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    L, S = query.shape[-2], key.shape[-2]
    query = _broadcast_batch(query, key, value)  # (..., L, E): the output's
    grads = query.requires_grad or key.requires_grad or value.requires_grad
    in_place = not (torch.is_grad_enabled() and grads)
    Ev = value.shape[-1]
    out = query.new_empty(*query.shape[:-1], Ev)  # (..., L, Ev)
    for q0 in range(0, L, block_size_q):
        q1 = min(q0 + block_size_q, L)
        q_blk = query[..., q0:q1, :] * scale  # (..., bq, E)
        row_max = query.new_full(q_blk.shape[:-1], -math.inf)  # (..., bq)
        row_sum = torch.zeros_like(row_max)  # (..., bq)
        acc = query.new_zeros(*q_blk.shape[:-1], Ev)  # (..., bq, Ev)
        # Causal: query i sees keys 0..i, so keys from q1 on are never needed.
        k_end = min(S, q1) if is_causal else S
        for k0 in range(0, k_end, block_size_k):
            k1 = min(k0 + block_size_k, k_end)
            s = q_blk @ key[..., k0:k1, :].transpose(-2, -1)  # (..., bq, bk)
            if is_causal and k1 - 1 > q0:  # the tile crosses the diagonal
                rows = torch.arange(q0, q1, device=query.device).unsqueeze(-1)
                cols = torch.arange(k0, k1, device=query.device)
                # in place: the matrix product does not save its output
                s.masked_fill_(cols > rows, -math.inf)
            # m' is only the exponents' reference point: no gradient (Rabe and
            # Staats's stop_gradient), so autograd need not keep s for amax
            new_max = torch.maximum(row_max, s.detach().amax(-1))  # (..., bq)
            # A row with only -inf scores so far keeps m' = -inf: exponents
            # relative to 0 then (FlashAttention-2's code), not -inf+inf = NaN.
            ref = torch.where(torch.isneginf(new_max), 0.0, new_max)
            correction = torch.exp(row_max - ref)  # (..., bq)
            if in_place:  # s becomes p = exp(s - m'): no second tile
                p = s.sub_(ref.unsqueeze(-1)).exp_()  # (..., bq, bk)
                row_sum.mul_(correction).add_(p.sum(-1))
                acc.mul_(correction.unsqueeze(-1))
                acc.add_(p @ value[..., k0:k1, :])  # (..., bq, Ev)
            else:  # autograd keeps each tile's p for the backward pass
                p = torch.exp(s - ref.unsqueeze(-1))  # (..., bq, bk)
                row_sum = row_sum * correction + p.sum(-1)
                acc = acc * correction.unsqueeze(-1) + p @ value[..., k0:k1, :]
            row_max = new_max
            del s, p  # free this tile before the next one is computed
        # A query whose scores are all -inf has l = 0 and a = 0: output 0, as
        # F.scaled_dot_product_attention gives it, not 0 / 0 = NaN.
        row_sum = torch.where(row_sum == 0, 1.0, row_sum)  # (..., bq)
        out[..., q0:q1, :] = acc / row_sum.unsqueeze(-1)
    return out


def _check_block_sizes(block_size_q: int, block_size_k: int) -> None:
    check_int("block_size_q", block_size_q, minimum=1)
    check_int("block_size_k", block_size_k, minimum=1)


def _broadcast_batch(query: Tensor, key: Tensor, value: Tensor) -> Tensor:
    """``query`` expanded (a view) to the batch dimensions of query, key and value together."""
    batch = torch.broadcast_shapes(query.shape[:-2], key.shape[:-2], value.shape[:-2])  # type: ignore[no-untyped-call]
    return query.expand(*batch, *query.shape[-2:])


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Send file descriptor 2 to /dev/null: the profiler's C++ layer logs timestamps there."""
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def peak_memory(fn: Callable[[], object]) -> int:
    """Peak bytes allocated by PyTorch's CPU allocator while ``fn()`` runs, measured.

    PyTorch's profiler records every allocation and free with its size and the moment it
    happened; the running total's maximum is the peak of memory that ``fn`` allocated on top of
    what existed before. The sizes are those the code requests, so the figure is the same on
    every machine with the same PyTorch version (another version's kernels may ask for other
    sizes), unless a kernel sizes a workspace by the number of threads (PyTorch's fused
    attention kernel does). Memory obtained outside PyTorch's allocator is not seen.

    Raises:
        TypeError: if ``fn`` is not callable.
    """
    current = peak = 0
    # + for an allocation, - for a release, in time order
    for nbytes in _allocations(fn):
        current += nbytes
        peak = max(peak, current)
    return peak


def _allocations(fn: Callable[[], object]) -> list[int]:
    """Sizes of the CPU allocations (> 0) and releases (< 0) while ``fn()`` runs, in time order."""
    from torch._C._autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    if not callable(fn):
        raise TypeError(f"fn must be callable (called without arguments), got "
                        f"{type(fn).__name__}")
    with _quiet_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    # The raw allocation records, not the operators' "self memory" of prof.events(): that puts a
    # buffer an operator allocates and frees inside itself (a kernel's workspace, the tensors
    # the autograd engine releases after a backward step) at the operator's start, netting it out.
    assert prof.profiler is not None and prof.profiler.kineto_results is not None
    records = sorted(
        (e for e in prof.profiler.kineto_results.events()
         if e.name() == "[memory]" and e.device_type() == DeviceType.CPU),
        key=lambda e: e.start_ns(),
    )
    return [record.nbytes() for record in records]


@overload
def median_times(
    *fns: Callable[[], object], repeats: int = ..., warmup: int = ..., clock: str = ...,
    num_threads: int | None = ..., spread: Literal[False] = ...,
) -> list[float]: ...


@overload
def median_times(
    *fns: Callable[[], object], repeats: int = ..., warmup: int = ..., clock: str = ...,
    num_threads: int | None = ..., spread: Literal[True],
) -> list[tuple[float, float, float]]: ...


def median_times(
    *fns: Callable[[], object],
    repeats: int = 5,
    warmup: int = 1,
    clock: str = "wall",
    num_threads: int | None = None,
    spread: bool = False,
) -> list[float] | list[tuple[float, float, float]]:
    """Median seconds of each of ``fns``, timed in alternation after a warm-up.

    Every repetition calls each function once and the order rotates from one repetition to the
    next, so a slow spell on a shared machine, or a cache warmed by the previous call, falls on
    all of them alike. The clock is the wall clock (:func:`time.perf_counter`), which includes
    the work of every thread but also every interruption by other programs, or the CPU time of
    the calling thread (:func:`time.thread_time`), which stands still while other programs have
    the processor; it sees only the calling thread, so it needs PyTorch on one thread. Either
    way the times depend on the machine: print them only where a notebook does not compare
    outputs.

    Args:
        fns: the callables to time, called without arguments.
        repeats: timed calls of each function; the median is returned.
        warmup: untimed calls of each function first (allocator, thread pool, caches).
        clock: ``"wall"`` or ``"thread"``.
        num_threads: PyTorch's intra-op threads during the measurement, restored afterwards;
            None keeps the current setting.
        spread: also return the fastest and the slowest call, to show how far the repeats
            of one measurement differ on a busy machine.

    Returns:
        One median in seconds per function, in the order given; with ``spread``, one
        ``(min, median, max)`` per function.

    Raises:
        ValueError: no function, ``repeats`` < 1, ``warmup`` < 0, an unknown ``clock``,
            ``num_threads`` < 1, or ``clock="thread"`` with more than one thread.
        TypeError: an argument that is not callable, a ``spread`` that is not a bool.
    """
    repeats, warmup, threads = _check_timing_args(fns, repeats, warmup, clock,
                                                  num_threads)
    check_flag("spread", spread)
    previous = torch.get_num_threads()
    now = time.thread_time if clock == "thread" else time.perf_counter
    torch.set_num_threads(threads)
    try:
        for _ in range(warmup):
            for fn in fns:
                fn()
        times: list[list[float]] = [[] for _ in fns]
        for r in range(repeats):
            for j in range(len(fns)):
                i = (r + j) % len(fns)  # rotate who goes first
                start = now()
                fns[i]()
                times[i].append(now() - start)
    finally:
        torch.set_num_threads(previous)
    if spread:
        return [(min(t), statistics.median(t), max(t)) for t in times]
    return [statistics.median(t) for t in times]


def _check_timing_args(
    fns: tuple[Callable[[], object], ...], repeats: int, warmup: int, clock: str,
    num_threads: int | None,
) -> tuple[int, int, int]:
    """The argument checks of :func:`median_times`; returns repeats, warmup and the threads."""
    if not fns:
        raise ValueError("median_times needs at least one function to time")
    for i, fn in enumerate(fns):
        if not callable(fn):
            raise TypeError(f"fns[{i}] must be callable, got {type(fn).__name__}")
    repeats = check_int("repeats", repeats, minimum=1)
    warmup = check_int("warmup", warmup, minimum=0)
    check_choice("clock", clock, ("wall", "thread"))
    threads = torch.get_num_threads() if num_threads is None else check_int("num_threads", num_threads, minimum=1)
    if clock == "thread" and threads != 1:
        raise ValueError(f"clock='thread' measures the calling thread only and needs one thread, "
                         f"got {threads} threads (pass num_threads=1)")
    return repeats, warmup, threads


def cpu_caches(root: str | os.PathLike[str] = "/sys/devices/system/cpu/cpu0/cache") -> dict[str, int]:
    """The data caches of the first processor core, in bytes, as Linux reports them.

    Read from sysfs: each ``index*`` directory under ``root`` holds the cache's ``level``,
    ``type`` and ``size`` (such as ``32K``). Instruction caches are left out; a level-1 data
    cache is named ``"L1d"``, a unified cache ``"L2"``, ``"L3"``. A size is the whole cache,
    whether one core has it or several share it. Where the files do not exist (not Linux, or a
    container that hides them) the result is empty, so a caller must not rely on it.

    Returns:
        ``{name: bytes}`` in order of level, such as
        ``{"L1d": 32768, "L2": 1048576, "L3": 33554432}``.

    Raises:
        TypeError: if ``root`` is not a path.
    """
    if not isinstance(root, (str, os.PathLike)):
        raise TypeError(f"root must be a path (str or os.PathLike), got {type(root).__name__}")
    caches: dict[int, tuple[str, int]] = {}
    try:
        entries = sorted(os.scandir(root), key=lambda entry: entry.name)
    except OSError:
        return {}
    for entry in entries:
        if not entry.name.startswith("index"):
            continue
        try:
            level, kind, size = (_read_text(os.path.join(entry.path, name))
                                 for name in ("level", "type", "size"))
        except OSError:
            continue
        nbytes = _cache_size_bytes(size)
        if kind == "Instruction" or not level.isdigit() or nbytes is None:
            continue
        caches[int(level)] = (f"L{level}d" if kind == "Data" else f"L{level}", nbytes)
    return dict(caches[level] for level in sorted(caches))


def _read_text(path: str) -> str:
    with open(path) as file:
        return file.read().strip()


def _cache_size_bytes(size: str) -> int | None:
    """``"32K"`` -> 32768; None for a size sysfs would not write."""
    factor = {"K": 2**10, "M": 2**20, "G": 2**30}.get(size[-1:], 1)
    digits = size[:-1] if factor > 1 else size
    return int(digits) * factor if digits.isdigit() else None
