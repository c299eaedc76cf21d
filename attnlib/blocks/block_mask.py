r"""Block masks and score modifications: FlexAttention's idea on top of tiled attention.

FlexAttention (Dong et al., "Flex Attention: A Programming Model for Generating Optimized
Attention Kernels", 2024; ``torch.nn.attention.flex_attention``) writes an attention variant as
two small functions of the indices:

* a **mask function** ``mask_mod(b, h, q_idx, kv_idx) -> bool``: may query ``q_idx`` of batch
  row ``b`` and head ``h`` attend to key ``kv_idx``;
* a **score function** ``score_mod(score, b, h, q_idx, kv_idx) -> score``: the scaled score
  :math:`s = \mathbf q \cdot \mathbf k / \sqrt E` changed before the softmax (a bias, a cap).

From the mask function alone, before any query is seen, :func:`create_block_mask` sorts every
tile of the :math:`L \times S` score grid (``block_size_q`` queries by ``block_size_k`` keys)
into one of three kinds:

* **empty**: the mask is False everywhere in the tile, so the tile is never computed;
* **partial**: the mask is True somewhere and False somewhere: computed, then masked;
* **full**: the mask is True everywhere: computed, no mask evaluated.

:func:`flex_tiled_attention` is chapter 8's tiled attention with the online softmax
(:func:`attnlib.blocks.efficient.tiled_attention`) that visits only the partial and full tiles
of each query tile and applies the mask function only on the partial ones; the score function
runs on every visited tile, before the mask, as in FlexAttention. The mask makers below
(causal, sliding window, documents packed in one sequence, prefix-LM) and the score makers
(soft-capping, ALiBi) are the examples of the FlexAttention paper and its PyTorch blog post.

The mask and score functions are called on whole tiles at once, with index tensors that
broadcast: ``b`` of shape (B, 1, 1, 1), ``h`` (1, H, 1, 1), ``q_idx`` (1, 1, bq, 1) and
``kv_idx`` (1, 1, 1, bk); written with tensor operations (``torch.where``, comparisons, ``&``),
the same function also runs under PyTorch's ``flex_attention``, which calls it on scalars.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from attnlib._checks import (
    check_device_arg,
    check_int,
    check_not_meta,
    check_positive,
    check_qkv,
    check_tensor,
    shape_str,
)
from attnlib.blocks.attention import LOW_PRECISION

__all__ = [
    "BlockMask",
    "alibi_score_mod",
    "causal_mask_mod",
    "create_block_mask",
    "document_mask_mod",
    "flex_tiled_attention",
    "prefix_lm_mask_mod",
    "sliding_window_mask_mod",
    "softcap_score_mod",
]

# mask_mod(b, h, q_idx, kv_idx) -> bool and score_mod(score, b, h, q_idx, kv_idx) -> score
MaskMod = Callable[..., Tensor]
ScoreMod = Callable[..., Tensor]

EMPTY, PARTIAL, FULL = 0, 1, 2  # the kinds of a tile in BlockMask.kinds


# --- mask makers ---------------------------------------------------------------------------------


def causal_mask_mod(offset: int = 0) -> Callable[..., Tensor]:
    r"""The causal mask: query :math:`i` sees key :math:`j` iff :math:`j \le i + \text{offset}`.

    ``offset = 0`` aligns the first query with the first key (upper left, as
    ``is_causal=True`` in :func:`torch.nn.functional.scaled_dot_product_attention`);
    ``offset = S - L`` aligns the last query with the last key (queries that continue a cache).

    Raises:
        TypeError: an ``offset`` that is not an int.
    """
    offset = check_int("offset", offset)

    def causal(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return kv_idx <= q_idx + offset

    return causal


def sliding_window_mask_mod(window: int) -> Callable[..., Tensor]:
    r"""The causal band of ``window`` keys: query :math:`i` sees key :math:`j` iff
    :math:`i - w < j \le i` (as :func:`attnlib.blocks.sliding_window.sliding_window_mask`).

    Raises:
        TypeError: a ``window`` that is not an int. ValueError: ``window`` < 1.
    """
    window = check_int("window", window, minimum=1)

    def sliding_window(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return (kv_idx <= q_idx) & (q_idx - kv_idx < window)

    return sliding_window


def prefix_lm_mask_mod(prefix_length: int) -> Callable[..., Tensor]:
    r"""Prefix-LM (T5, UniLM): the first ``prefix_length`` keys are seen by every query (the
    prefix is read both ways), the rest causally: :math:`j < P` or :math:`j \le i`.

    Raises:
        TypeError: a ``prefix_length`` that is not an int. ValueError: ``prefix_length`` < 0.
    """
    prefix_length = check_int("prefix_length", prefix_length, minimum=0)

    def prefix_lm(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return (kv_idx < prefix_length) | (kv_idx <= q_idx)

    return prefix_lm


def document_mask_mod(document_ids: Tensor, causal: bool = True) -> Callable[..., Tensor]:
    r"""Documents packed in one sequence: a query sees only keys of its own document (and,
    if ``causal``, only those not after it). ``document_ids[b, i]`` is the document of
    position :math:`i` in batch row :math:`b`; queries and keys share the positions
    (self-attention, :math:`L = S`).

    Shape:
        document_ids: (B, L) integers.

    Raises:
        TypeError: a non-tensor, a non-integer dtype, a non-bool ``causal``.
        ValueError: ``document_ids`` not 2-D, on the meta device, or with an id < 0.
    """
    ids = check_tensor("document_ids", document_ids)
    if ids.dtype in (torch.bool,) or ids.is_floating_point() or ids.is_complex():
        raise TypeError(f"document_ids must be an integer tensor, got dtype {ids.dtype}")
    if ids.ndim != 2:
        raise ValueError(f"document_ids must have 2 dimensions (B, L), got shape "
                         f"{shape_str(ids.shape)}")
    check_not_meta("document_ids", ids, "that the ids are >= 0")
    if ids.numel() and int(ids.min()) < 0:
        raise ValueError(f"document_ids must be >= 0, got {int(ids.min())}")
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {type(causal).__name__} {causal!r}")
    ids = ids.clone()  # the mask keeps its own copy

    def document(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        same = ids[b, q_idx] == ids[b, kv_idx]
        return same & (kv_idx <= q_idx) if causal else same

    return document


# --- score makers --------------------------------------------------------------------------------


def softcap_score_mod(cap: float) -> Callable[..., Tensor]:
    r"""Logit soft-capping (Gemma 2, Gemma Team 2024): :math:`s \mapsto c \tanh(s / c)`.

    Near 0 the score is unchanged (:math:`\tanh x \approx x`); no score leaves
    :math:`(-c, c)`. Gemma 2 caps its attention scores at :math:`c = 50`.

    Raises:
        TypeError, ValueError: a ``cap`` that is not one finite number > 0.
    """
    check_positive("cap", cap)
    cap = float(cap)

    def softcap(score: Tensor, b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return cap * torch.tanh(score / cap)

    return softcap


def alibi_score_mod(slopes: Tensor) -> Callable[..., Tensor]:
    r"""ALiBi (Press et al., 2022): :math:`s \mapsto s + m_h\,(j - i)`, a penalty growing with
    the distance from query :math:`i` back to key :math:`j`, with slope :math:`m_h` for head
    :math:`h` (:func:`attnlib.blocks.alibi.alibi_slopes`). Used with a causal mask.

    Shape:
        slopes: (H,) floating.

    Raises:
        TypeError: a non-tensor or non-floating ``slopes``. ValueError: not 1-D, or not finite.
    """
    slopes = check_tensor("slopes", slopes)
    if not slopes.is_floating_point():
        raise TypeError(f"slopes must be a floating-point tensor, got dtype {slopes.dtype}")
    if slopes.ndim != 1:
        raise ValueError(f"slopes must have 1 dimension (H,), got shape {shape_str(slopes.shape)}")
    if slopes.device.type != "meta" and not bool(torch.isfinite(slopes).all()):
        raise ValueError("slopes must be finite, got NaN or inf")
    slopes = slopes.clone()

    def alibi(score: Tensor, b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return score + slopes.to(score.dtype)[h] * (kv_idx - q_idx)

    return alibi


# --- the block mask ------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlockMask:
    """Which tiles of the score grid are empty, partial or full (:func:`create_block_mask`).

    ``kinds[b, h, i, j]`` is :data:`EMPTY` (0), :data:`PARTIAL` (1) or :data:`FULL` (2) for the
    tile of query block ``i`` and key block ``j``; ``b`` and ``h`` have size 1 when the mask
    does not depend on them (it then serves every batch row or head).
    """

    kinds: Tensor  # (B, H, ceil(L / bq), ceil(S / bk)), int8
    mask_mod: Callable[..., Tensor]
    L: int
    S: int
    block_size_q: int
    block_size_k: int

    @property
    def counts(self) -> dict[str, int]:
        """The number of empty, partial and full tiles, over every (b, h) of ``kinds``."""
        return {name: int((self.kinds == kind).sum())
                for name, kind in (("empty", EMPTY), ("partial", PARTIAL), ("full", FULL))}

    @property
    def fraction_skipped(self) -> float:
        """The share of tiles that are empty, so never computed."""
        total = self.kinds.numel()
        return self.counts["empty"] / total if total else 0.0


def create_block_mask(
    mask_mod: Callable[..., Tensor], B: int, H: int, L: int, S: int, block_size_q: int = 128,
    block_size_k: int = 128, device: torch.device | str | None = None,
) -> BlockMask:
    r"""The block mask of ``mask_mod`` for an :math:`L \times S` grid cut into tiles.

    The mask function is evaluated on every (b, h, query, key), one query block at a time (so
    at most ``B * H * block_size_q * S`` booleans exist at once), and each tile is classified:
    empty (no True), full (all True) or partial. ``B`` and ``H`` are the sizes the mask
    depends on: 1 where it is the same for every batch row or head.

    Raises:
        TypeError: a ``mask_mod`` that is not callable, sizes that are not ints, a mask
            function that does not return a bool tensor.
        ValueError: ``B``, ``H``, block sizes < 1, ``L`` or ``S`` < 0, a result that does not
            broadcast to (B, H, bq, S), or a device this machine does not have.
    """
    if not callable(mask_mod):
        raise TypeError(f"mask_mod must be a function (b, h, q_idx, kv_idx) -> bool, got "
                        f"{type(mask_mod).__name__}")
    B, H = check_int("B", B, minimum=1), check_int("H", H, minimum=1)
    L, S = check_int("L", L, minimum=0), check_int("S", S, minimum=0)
    bq = check_int("block_size_q", block_size_q, minimum=1)
    bk = check_int("block_size_k", block_size_k, minimum=1)
    device = check_device_arg("device", device)
    nq, nk = -(-L // bq), -(-S // bk)
    kinds = torch.empty(B, H, nq, nk, dtype=torch.int8, device=device)
    b = torch.arange(B, device=device).view(B, 1, 1, 1)
    h = torch.arange(H, device=device).view(1, H, 1, 1)
    kv_idx = torch.arange(S, device=device).view(1, 1, 1, S)
    for i in range(nq):
        q0, q1 = i * bq, min((i + 1) * bq, L)
        q_idx = torch.arange(q0, q1, device=device).view(1, 1, -1, 1)
        allowed = _evaluate_mask(mask_mod, b, h, q_idx, kv_idx, (B, H, q1 - q0, S))
        pad = nk * bk - S  # the last key tile may be short: pad it so it counts as it is
        tiles_any = torch.cat((allowed, allowed.new_zeros(B, H, q1 - q0, pad)), -1)
        tiles_all = torch.cat((allowed, allowed.new_ones(B, H, q1 - q0, pad)), -1)
        anything = tiles_any.view(B, H, q1 - q0, nk, bk).any(-1).any(-2)  # (B, H, nk)
        everything = tiles_all.view(B, H, q1 - q0, nk, bk).all(-1).all(-2)
        kinds[:, :, i] = torch.where(everything, FULL, torch.where(anything, PARTIAL, EMPTY))
    return BlockMask(kinds, mask_mod, L, S, bq, bk)


def _evaluate_mask(mask_mod: MaskMod, b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor,
                   shape: tuple[int, ...]) -> Tensor:
    """``mask_mod`` on a tile's indices, checked to be bool and broadcast to ``shape``."""
    allowed = mask_mod(b, h, q_idx, kv_idx)
    if not isinstance(allowed, Tensor) or allowed.dtype != torch.bool:
        got = f"dtype {allowed.dtype}" if isinstance(allowed, Tensor) else type(allowed).__name__
        raise TypeError(f"mask_mod must return a bool tensor, got {got}")
    try:
        return allowed.expand(shape)
    except RuntimeError:
        raise ValueError(f"mask_mod returned shape {shape_str(allowed.shape)}, which does not "
                         f"broadcast to {shape_str(shape)}") from None


# --- attention over the tiles a block mask keeps -------------------------------------------------


def flex_tiled_attention(
    query: Tensor, key: Tensor, value: Tensor, score_mod: Callable[..., Tensor] | None = None,
    block_mask: BlockMask | None = None, scale: float | None = None,
) -> Tensor:
    r"""Attention that visits only the tiles ``block_mask`` keeps, with ``score_mod`` applied.

    For each query tile, the online softmax of :func:`attnlib.blocks.efficient.tiled_attention`
    runs over the key tiles that are partial or full; the score function runs on each, the mask
    function only on the partial ones. A row whose scores so far are all masked keeps its
    running maximum at :math:`-\infty` and takes exponents relative to 0 (no
    :math:`e^{-\infty+\infty}`), and a query that may attend to no key gets output 0, as
    ``flex_attention`` gives it. Without ``block_mask`` every tile is full (tiles of 128).

    Where ``block_mask`` depends on the batch row or the head (its ``kinds`` has B or H > 1),
    each of its (b, h) is walked apart, so each skips its own empty tiles; where it does not,
    one walk serves every row and head at once.

    Shape:
        query (B, H, L, E), key (B, H, S, E), value (B, H, S, Ev). Returns (B, H, L, Ev).

    float16 and bfloat16 are computed in float32 and returned in the input's dtype. Gradients
    flow through every visited tile (autograd keeps each tile's exponentials).

    Raises:
        TypeError: a non-tensor, a non-floating tensor, key or value of another dtype than
            query, a ``score_mod`` that is not callable or returns another shape, a
            ``block_mask`` that is not a :class:`BlockMask`.
        ValueError: mismatched shapes, no key, E = 0, another device, a ``scale`` that is not
            finite and > 0, or a ``block_mask`` made for another L, S, B or H.
    """
    check_qkv(query, key, value, layout="heads", need_keys=True, scale=scale)
    if score_mod is not None and not callable(score_mod):
        raise TypeError(f"score_mod must be a function (score, b, h, q_idx, kv_idx) -> score, "
                        f"got {type(score_mod).__name__}")
    B, H, L, _ = query.shape
    S = key.shape[2]
    if block_mask is None:
        block_mask = create_block_mask(lambda b, h, q, kv: q >= 0, 1, 1, L, S,
                                       device=query.device)
    _check_block_mask(block_mask, B, H, L, S, query.device)
    if query.dtype in LOW_PRECISION:  # scores and softmax in float32
        return flex_tiled_attention(query.float(), key.float(), value.float(), score_mod,
                                    block_mask, scale).to(query.dtype)
    scale = 1 / math.sqrt(query.shape[-1]) if scale is None else float(scale)
    Bm, Hm = block_mask.kinds.shape[:2]
    parts = []  # one output per (b, h) of the block mask, or one for all
    for bm in range(Bm):
        rows = slice(bm, bm + 1) if Bm > 1 else slice(0, B)
        heads = []
        for hm in range(Hm):
            cols = slice(hm, hm + 1) if Hm > 1 else slice(0, H)
            heads.append(_walk(query[rows, cols], key[rows, cols], value[rows, cols],
                               block_mask, bm, hm, rows, cols, score_mod, scale))
        parts.append(torch.cat(heads, dim=1))
    return torch.cat(parts, dim=0)  # (B, H, L, Ev)


def _walk(q: Tensor, k: Tensor, v: Tensor, block_mask: BlockMask, bm: int, hm: int,
          rows: slice, cols: slice, score_mod: ScoreMod | None, scale: float) -> Tensor:
    """Tiled attention of one (b, h) of the block mask (or of all, when it has one)."""
    L, S, Ev = q.shape[2], k.shape[2], v.shape[-1]
    bq, bk = block_mask.block_size_q, block_mask.block_size_k
    device = q.device
    b = torch.arange(rows.start, rows.stop, device=device).view(-1, 1, 1, 1)
    h = torch.arange(cols.start, cols.stop, device=device).view(1, -1, 1, 1)
    out = []
    for i in range(block_mask.kinds.shape[2]):
        q0, q1 = i * bq, min((i + 1) * bq, L)
        q_blk = q[:, :, q0:q1] * scale  # (b, h, bq, E)
        q_idx = torch.arange(q0, q1, device=device).view(1, 1, -1, 1)
        row_max = q.new_full(q_blk.shape[:-1], -math.inf)  # (b, h, bq)
        row_sum = torch.zeros_like(row_max)
        acc = q.new_zeros(*q_blk.shape[:-1], Ev)  # (b, h, bq, Ev)
        for j in range(block_mask.kinds.shape[3]):
            kind = int(block_mask.kinds[bm, hm, i, j])
            if kind == EMPTY:
                continue  # the whole point: this tile is never computed
            k0, k1 = j * bk, min((j + 1) * bk, S)
            kv_idx = torch.arange(k0, k1, device=device).view(1, 1, 1, -1)
            s = q_blk @ k[:, :, k0:k1].transpose(-2, -1)  # (b, h, bq, bk)
            if score_mod is not None:
                s = _apply_score_mod(score_mod, s, b, h, q_idx, kv_idx)
            if kind == PARTIAL:  # only here is the mask function evaluated
                allowed = _evaluate_mask(block_mask.mask_mod, b, h, q_idx, kv_idx,
                                         tuple(s.shape))
                s = s.masked_fill(~allowed, -math.inf)
            new_max = torch.maximum(row_max, s.detach().amax(-1))  # (b, h, bq)
            ref = torch.where(torch.isneginf(new_max), 0.0, new_max)  # all masked so far
            p = torch.exp(s - ref.unsqueeze(-1))  # (b, h, bq, bk)
            correction = torch.exp(row_max - ref)
            row_sum = row_sum * correction + p.sum(-1)
            acc = acc * correction.unsqueeze(-1) + p @ v[:, :, k0:k1]
            row_max = new_max
        row_sum = torch.where(row_sum == 0, 1.0, row_sum)  # no key at all: output 0
        out.append(acc / row_sum.unsqueeze(-1))
    if not out:  # L = 0
        return q.new_zeros(*q.shape[:-1], Ev)
    return torch.cat(out, dim=2)


def _apply_score_mod(score_mod: ScoreMod, s: Tensor, b: Tensor, h: Tensor, q_idx: Tensor,
                     kv_idx: Tensor) -> Tensor:
    modified = score_mod(s, b, h, q_idx, kv_idx)
    if not isinstance(modified, Tensor) or modified.shape != s.shape:
        got = shape_str(modified.shape) if isinstance(modified, Tensor) else \
            type(modified).__name__
        raise TypeError(f"score_mod must return a tensor of the score tile's shape "
                        f"{shape_str(s.shape)}, got {got}")
    return modified.to(s.dtype)


def _check_block_mask(block_mask: object, B: int, H: int, L: int, S: int,
                      device: torch.device) -> None:
    if not isinstance(block_mask, BlockMask):
        raise TypeError(f"block_mask must be a BlockMask (from create_block_mask), got "
                        f"{type(block_mask).__name__}")
    Bm, Hm = block_mask.kinds.shape[:2]
    if (block_mask.L, block_mask.S) != (L, S) or Bm not in (1, B) or Hm not in (1, H):
        raise ValueError(f"block_mask was made for B = {Bm}, H = {Hm}, L = {block_mask.L}, "
                         f"S = {block_mask.S}, but query and key have B = {B}, H = {H}, "
                         f"L = {L}, S = {S} (B and H of the block mask: 1 or the same)")
    if block_mask.kinds.device != device:
        raise ValueError(f"block_mask is on device {block_mask.kinds.device}, but query is on "
                         f"{device}: make it with create_block_mask(..., device=query.device)")
