"""The paged cache: attention through block tables equals attention over contiguous keys."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnlib.experiments.cache_memory import allocation_waste
from attnlib.models.paged_cache import PagedKVCache, paged_attention

pytestmark = pytest.mark.usefixtures("one_thread")


def _fill(dtype: torch.dtype, lengths: dict[int, int], block_size: int = 4,
          chunks: int = 3) -> tuple[PagedKVCache, dict[int, tuple[torch.Tensor, torch.Tensor]]]:
    g = torch.Generator().manual_seed(0)
    cache = PagedKVCache(40, block_size, 2, 8, dtype=dtype)
    kept = {}
    for seq, n in lengths.items():
        k, v = (torch.randn(2, n, 8, generator=g, dtype=dtype) for _ in range(2))
        for part in range(chunks):  # appended in pieces, as decoding does
            lo, hi = part * n // chunks, (part + 1) * n // chunks
            if hi > lo:
                cache.append(seq, k[:, lo:hi], v[:, lo:hi])
        kept[seq] = (k, v)
    return cache, kept


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float64, 1e-10), (torch.float32, 1e-5)])
def test_paged_attention_equals_contiguous_attention(dtype: torch.dtype, tol: float) -> None:
    lengths = {3: 7, 0: 13, 9: 1, 4: 8}
    cache, kept = _fill(dtype, lengths)
    seqs = [0, 9, 3, 4]
    q = torch.randn(4, 6, 1, 8, generator=torch.Generator().manual_seed(1), dtype=dtype)
    ours = paged_attention(q, cache, seqs)
    for i, s in enumerate(seqs):
        k, v = kept[s]
        ref = F.scaled_dot_product_attention(q[i:i + 1], k[None], v[None], enable_gqa=True)
        torch.testing.assert_close(ours[i:i + 1], ref, atol=tol, rtol=tol)
        gathered = cache.gather(s)
        assert torch.equal(gathered[0], k) and torch.equal(gathered[1], v)


def test_no_sequence_gives_an_empty_result() -> None:
    """Review of chapter 9, finding 20: seqs=[] failed with "max() arg is an empty sequence"."""
    cache, _ = _fill(torch.float64, {0: 5})
    out = paged_attention(torch.zeros(0, 6, 1, 8, dtype=torch.float64), cache, [])
    assert out.shape == (0, 6, 1, 8) and out.dtype == torch.float64


def test_blocks_are_taken_as_needed_and_given_back() -> None:
    cache, _ = _fill(torch.float32, {0: 9, 1: 4}, block_size=4)
    assert [len(cache.tables[s]) for s in (0, 1)] == [3, 1]
    assert cache.blocks_in_use() == 4 and len(cache.free) == 36
    cache.release(0)
    assert cache.blocks_in_use() == 1 and len(cache.free) == 39
    cache.append(2, torch.ones(2, 12, 8), torch.ones(2, 12, 8))  # reuses the freed blocks
    assert cache.blocks_in_use() == 4


def test_appending_zero_positions_changes_nothing() -> None:
    """Issue 34: zero positions to a sequence with no block raised IndexError."""
    cache = PagedKVCache(4, 2, 1, 3)
    cache.append(0, torch.zeros(1, 0, 3), torch.zeros(1, 0, 3))  # a new sequence
    assert cache.tables == {} and cache.lengths == {} and cache.free == [0, 1, 2, 3]
    k, v = torch.randn(1, 3, 3), torch.randn(1, 3, 3)
    cache.append(0, k, v)
    before = ({s: list(t) for s, t in cache.tables.items()}, dict(cache.lengths),
              list(cache.free), cache.key_blocks.clone())
    cache.append(0, k[:, :0], v[:, :0])  # a sequence that holds positions
    after = (cache.tables, cache.lengths, cache.free, cache.key_blocks)
    assert after[:3] == before[:3] and torch.equal(after[3], before[3])
    assert torch.equal(cache.gather(0)[0], k) and torch.equal(cache.gather(0)[1], v)


def test_a_refused_append_leaves_the_cache_unchanged() -> None:
    """A new sequence the pool cannot hold is not half-added (no table without a length)."""
    cache = PagedKVCache(2, 2, 1, 3)
    with pytest.raises(ValueError, match="free blocks"):
        cache.append(5, torch.ones(1, 5, 3), torch.ones(1, 5, 3))
    assert cache.tables == {} and cache.lengths == {} and cache.free == [0, 1]
    cache.append(5, torch.ones(1, 4, 3), torch.ones(1, 4, 3))
    assert cache.tables == {5: [0, 1]} and cache.lengths == {5: 4}


def test_paged_attention_masks_the_padded_slots_forward_and_backward() -> None:
    """The slots past a short sequence's length are masked; the query's gradient too."""
    cache, kept = _fill(torch.float64, {0: 13, 1: 1, 2: 5})
    q = torch.randn(3, 6, 1, 8, generator=torch.Generator().manual_seed(2),
                    dtype=torch.float64, requires_grad=True)
    out = paged_attention(q, cache, [0, 1, 2])
    (grad,) = torch.autograd.grad(out.square().sum(), q)
    for i in range(3):
        qi = q[i:i + 1].detach().requires_grad_()
        ref = F.scaled_dot_product_attention(qi, kept[i][0][None], kept[i][1][None],
                                             enable_gqa=True)
        torch.testing.assert_close(out[i:i + 1], ref, atol=1e-12, rtol=0)
        (ref_grad,) = torch.autograd.grad(ref.square().sum(), qi)
        torch.testing.assert_close(grad[i:i + 1], ref_grad, atol=1e-12, rtol=0)


def test_allocation_counts() -> None:
    report = allocation_waste([5, 16, 17, 1], max_len=32, block_size=8)
    assert report.used == 39
    assert report.contiguous == 4 * 32
    assert report.paged == (1 + 2 + 3 + 1) * 8
    assert report.waste(report.paged) == pytest.approx(1 - 39 / 56)


BAD = [
    (lambda: PagedKVCache(0, 4, 2, 8), ["num_blocks", "0", ">= 1"]),
    (lambda: PagedKVCache(2, 4, 2, 8).append(0, torch.ones(3, 1, 8), torch.ones(3, 1, 8)),
     ["key", "H_kv = 2", "(3, 1, 8)"]),
    (lambda: PagedKVCache(1, 4, 2, 8).append(0, torch.ones(2, 9, 8), torch.ones(2, 9, 8)),
     ["pool", "1 free", "num_blocks"]),
    (lambda: paged_attention(torch.ones(2, 2, 1, 8), _fill(torch.float32, {0: 3})[0], [0]),
     ["query", "len(seqs) = 1", "(2, 2, 1, 8)"]),
    (lambda: paged_attention(torch.ones(1, 2, 1, 8), _fill(torch.float32, {0: 3})[0], [5]),
     ["seqs", "5", "in the cache"]),
    (lambda: allocation_waste([4, 40], max_len=32), ["lengths[1]", "40", "<= max_len = 32"]),
]


@pytest.mark.parametrize(("call", "fragments"), BAD)
def test_bad_input_names_argument_got_and_expected(call, fragments) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
