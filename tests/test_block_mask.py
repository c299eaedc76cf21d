"""Block masks and flex_tiled_attention against their twins: PyTorch's flex_attention (eager, on
the CPU, forward only: it has no CPU backward) and its create_block_mask, and
F.scaled_dot_product_attention with the same mask given densely (forward and gradients)."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn.attention import flex_attention as flex

from attnlib.blocks.alibi import alibi_slopes
from attnlib.blocks.block_mask import (
    EMPTY,
    FULL,
    PARTIAL,
    alibi_score_mod,
    causal_mask_mod,
    create_block_mask,
    document_mask_mod,
    flex_tiled_attention,
    prefix_lm_mask_mod,
    sliding_window_mask_mod,
    softcap_score_mod,
)

B, H, E = 2, 2, 8


def _documents(L: int) -> Tensor:
    gen = torch.Generator().manual_seed(3)
    return torch.sort(torch.randint(0, 4, (B, L), generator=gen), dim=1).values


def _cases(L: int, S: int) -> dict[str, tuple[object, object, tuple[int, int]]]:
    """name: (mask_mod, score_mod, the (B, H) the mask depends on)."""
    cases = {
        "causal": (causal_mask_mod(), None, (1, 1)),
        "causal-bottom-right": (causal_mask_mod(S - L), None, (1, 1)),
        "sliding-window+softcap": (sliding_window_mask_mod(9), softcap_score_mod(2.0), (1, 1)),
        "prefix-lm+alibi": (prefix_lm_mask_mod(13), alibi_score_mod(alibi_slopes(H)), (1, 1)),
    }
    if L == S:
        cases["document"] = (document_mask_mod(_documents(L)), None, (B, 1))
    return cases


def _qkv(L: int, S: int, dtype: torch.dtype, grad: bool = False) -> tuple[Tensor, ...]:
    gen = torch.Generator().manual_seed(L * 1000 + S)
    return tuple(torch.randn(B, H, n, E, generator=gen, dtype=dtype).requires_grad_(grad)
                 for n in (L, S, S))


def _dense(mask_mod, score_mod, q: Tensor, k: Tensor, v: Tensor) -> Tensor:  # type: ignore[no-untyped-def]
    """The direct formula on the whole grid: scores, score_mod, mask, softmax (0 for a row with
    no key), weights times values."""
    L, S = q.shape[2], k.shape[2]
    b = torch.arange(B).view(B, 1, 1, 1)
    h = torch.arange(H).view(1, H, 1, 1)
    i = torch.arange(L).view(1, 1, L, 1)
    j = torch.arange(S).view(1, 1, 1, S)
    s = q @ k.transpose(-2, -1) / math.sqrt(E)
    if score_mod is not None:
        s = score_mod(s, b, h, i, j)
    allowed = mask_mod(b, h, i, j).expand(B, H, L, S)
    w = torch.softmax(s.masked_fill(~allowed, -math.inf), -1).nan_to_num(0.0)
    return w @ v


@pytest.mark.parametrize("L,S,dtype", [(32, 32, torch.float64), (19, 35, torch.float32)])
def test_forward_equals_flex_attention(L: int, S: int, dtype: torch.dtype) -> None:
    q, k, v = _qkv(L, S, dtype)
    for name, (mask_mod, score_mod, (Bm, Hm)) in _cases(L, S).items():
        ours = flex_tiled_attention(q, k, v, score_mod, create_block_mask(mask_mod, Bm, Hm, L, S, 16, 8))  # type: ignore[arg-type]
        theirs_mask = flex.create_block_mask(mask_mod, Bm if Bm > 1 else None, None, L, S,  # type: ignore[arg-type]
                                             device="cpu", BLOCK_SIZE=16)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "called without torch.compile"
            theirs = flex.flex_attention(q, k, v, score_mod=score_mod, block_mask=theirs_mask)  # type: ignore[arg-type]
        assert isinstance(theirs, Tensor)
        tol = 1e-12 if dtype == torch.float64 else 1e-5
        torch.testing.assert_close(ours, theirs, atol=tol, rtol=tol, msg=name)


@pytest.mark.parametrize("L,S", [(32, 32), (25, 19), (19, 35)])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_forward_and_gradients_equal_the_dense_formula_and_sdpa(L: int, S: int,
                                                                  dtype: torch.dtype) -> None:
    tol = 1e-12 if dtype == torch.float64 else 2e-5
    for name, (mask_mod, score_mod, (Bm, Hm)) in _cases(L, S).items():
        q, k, v = _qkv(L, S, dtype, grad=True)
        ours = flex_tiled_attention(q, k, v, score_mod, create_block_mask(mask_mod, Bm, Hm, L, S, 16, 8))  # type: ignore[arg-type]
        grads = torch.autograd.grad(ours.pow(2).sum(), (q, k, v))
        dense = _dense(mask_mod, score_mod, q, k, v)
        dense_grads = torch.autograd.grad(dense.pow(2).sum(), (q, k, v))
        torch.testing.assert_close(ours, dense, atol=tol, rtol=tol, msg=name)
        for g, d in zip(grads, dense_grads, strict=True):
            torch.testing.assert_close(g, d, atol=tol, rtol=tol, msg=name)
        if score_mod is None:  # SDPA with the mask given densely
            allowed = mask_mod(torch.arange(B).view(B, 1, 1, 1), torch.zeros(1, 1, 1, 1, dtype=torch.long),  # type: ignore[operator]
                               torch.arange(L).view(1, 1, L, 1), torch.arange(S).view(1, 1, 1, S))
            sdpa = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
            sdpa_grads = torch.autograd.grad(sdpa.pow(2).sum(), (q, k, v))
            rows = allowed.expand(B, H, L, S).any(-1, keepdim=True)  # SDPA: NaN or 0 elsewhere
            torch.testing.assert_close(ours * rows, sdpa.nan_to_num(0.0) * rows, atol=tol,
                                       rtol=tol, msg=name)
            if bool(rows.all()):
                for g, d in zip(grads, sdpa_grads, strict=True):
                    torch.testing.assert_close(g, d, atol=tol, rtol=tol, msg=name)


@pytest.mark.parametrize("mask_mod,L,S", [(causal_mask_mod(), 384, 384),
                                          (sliding_window_mask_mod(100), 384, 384),
                                          (prefix_lm_mask_mod(130), 256, 384),
                                          (document_mask_mod(_documents(256)), 256, 256)])
def test_block_kinds_equal_pytorchs_create_block_mask(mask_mod, L: int, S: int) -> None:  # type: ignore[no-untyped-def]
    """Tiles of 128: PyTorch's partial (kv_num_blocks) and full (full_kv_num_blocks) counts.

    Lengths are multiples of 128: PyTorch counts every tile of a query block cut short by the
    end of the sequence as partial (its kernel masks the padding); create_block_mask classifies
    such a tile by its real rows and columns."""
    Bm = B if mask_mod.__name__ == "document" else 1
    ours = create_block_mask(mask_mod, Bm, 1, L, S)
    theirs = flex.create_block_mask(mask_mod, Bm, 1, L, S, device="cpu")
    assert theirs.full_kv_num_blocks is not None
    torch.testing.assert_close((ours.kinds == PARTIAL).sum(-1), theirs.kv_num_blocks.long(),
                               atol=0, rtol=0)
    torch.testing.assert_close((ours.kinds == FULL).sum(-1), theirs.full_kv_num_blocks.long(),
                               atol=0, rtol=0)


def test_causal_counts_and_the_fraction_skipped() -> None:
    """L = S = n b with square tiles: n(n-1)/2 empty, n partial (the diagonal), the rest full."""
    n, b = 8, 16
    bm = create_block_mask(causal_mask_mod(), 1, 1, n * b, n * b, b, b)
    assert bm.counts == {"empty": n * (n - 1) // 2, "partial": n, "full": n * (n - 1) // 2}
    assert bm.fraction_skipped == pytest.approx((n - 1) / (2 * n))
    assert (bm.kinds[0, 0].diagonal() == PARTIAL).all()
    assert (bm.kinds[0, 0].triu(1) == EMPTY).all()


def test_mask_function_runs_only_on_partial_tiles_and_empty_tiles_are_skipped() -> None:
    calls: list[tuple[int, int]] = []

    def counting(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        calls.append((int(q_idx.min()), int(kv_idx.min())))
        return kv_idx <= q_idx

    L = 64
    bm = create_block_mask(counting, 1, 1, L, L, 16, 16)
    calls.clear()
    scores_seen: list[int] = []

    def spy(score: Tensor, b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        scores_seen.append(int(kv_idx.min()) // 16)
        return score

    q, k, v = _qkv(L, L, torch.float64)
    flex_tiled_attention(q, k, v, spy, bm)
    assert len(calls) == bm.counts["partial"] == 4  # the diagonal tiles only
    assert len(scores_seen) == bm.counts["partial"] + bm.counts["full"] == 10


def test_a_row_whose_first_visited_tile_is_fully_masked_gives_no_nan() -> None:
    """Sliding window of 3 with tiles of 16 queries by 4 keys: the last rows of a query tile
    see nothing of the first key tile visited; and a row with no key at all gives 0."""
    L = 32
    q, k, v = _qkv(L, L, torch.float64, grad=True)
    window = sliding_window_mask_mod(3)

    def none_for_row_5(b: Tensor, h: Tensor, q_idx: Tensor, kv_idx: Tensor) -> Tensor:
        return window(b, h, q_idx, kv_idx) & (q_idx != 5)

    out = flex_tiled_attention(q, k, v, None, create_block_mask(none_for_row_5, 1, 1, L, L, 16, 4))
    (out.sum()).backward()
    assert torch.isfinite(out).all() and (out[:, :, 5] == 0).all()
    assert q.grad is not None and torch.isfinite(q.grad).all() and (q.grad[:, :, 5] == 0).all()
    torch.testing.assert_close(out, _dense(none_for_row_5, None, q, k, v))


def test_without_block_mask_it_is_dense_attention_and_float16_runs_in_float32() -> None:
    q, k, v = _qkv(20, 30, torch.float64)
    torch.testing.assert_close(flex_tiled_attention(q, k, v),
                               F.scaled_dot_product_attention(q, k, v))
    half = flex_tiled_attention(q.half(), k.half(), v.half(),
                                block_mask=create_block_mask(causal_mask_mod(), 1, 1, 20, 30, 8, 8))
    assert half.dtype == torch.float16
    torch.testing.assert_close(half.double(), F.scaled_dot_product_attention(
        q.half().double(), k.half().double(), v.half().double(), is_causal=True),
        atol=2e-3, rtol=2e-3)


def test_softcap_keeps_scores_inside_the_cap() -> None:
    cap = softcap_score_mod(5.0)
    s = torch.linspace(-15, 15, 11, dtype=torch.float64)
    z = torch.zeros((), dtype=torch.long)
    capped = cap(s, z, z, z, z)
    assert capped.abs().max() < 5.0
    torch.testing.assert_close(capped, 5.0 * torch.tanh(s / 5.0))


def test_bad_arguments_are_refused() -> None:
    q, k, v = _qkv(8, 8, torch.float64)
    with pytest.raises(ValueError, match="block_mask"):
        flex_tiled_attention(q, k, v, block_mask=create_block_mask(causal_mask_mod(), 1, 1, 8, 9))
    with pytest.raises(TypeError, match="mask_mod"):
        create_block_mask(lambda b, h, i, j: (j <= i).long(), 1, 1, 8, 8)
    with pytest.raises(TypeError, match="score_mod"):
        flex_tiled_attention(q, k, v, lambda s, b, h, i, j: s[..., :1])
    with pytest.raises(ValueError, match="window"):
        sliding_window_mask_mod(0)
    with pytest.raises(TypeError, match="document_ids"):
        document_mask_mod(torch.zeros(2, 8))
