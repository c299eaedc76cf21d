"""Online softmax and tiled attention: exact equality with the naive forms, and the memory saved."""

from __future__ import annotations

import math
import time

import pytest
import torch
import torch.nn.functional as F

from attnlib.blocks.efficient import (
    cpu_caches,
    median_times,
    naive_attention,
    online_softmax,
    peak_memory,
    tiled_attention,
)


def _qkv(L, S, E=16, Ev=8, batch=(2, 3), dtype=torch.float64, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q = torch.randn(*batch, L, E, generator=gen, dtype=dtype)
    k = torch.randn(*batch, S, E, generator=gen, dtype=dtype)
    v = torch.randn(*batch, S, Ev, generator=gen, dtype=dtype)
    return q, k, v


@pytest.mark.parametrize("block_size", [1, 3, 7, 64, 1000])
def test_online_softmax_equals_softmax(block_size):
    x = torch.randn(4, 5, 37, dtype=torch.float64) * 30
    torch.testing.assert_close(online_softmax(x, block_size), torch.softmax(x, -1), rtol=0, atol=1e-14)


def test_online_softmax_handles_huge_scores_and_masked_entries():
    x = torch.tensor([[1000.0, 999.0, -math.inf, 1001.0]], dtype=torch.float32)
    out = online_softmax(x, block_size=1)
    assert bool(torch.isfinite(out).all())
    torch.testing.assert_close(out, torch.softmax(x, -1))
    assert out[0, 2] == 0


@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize(("L", "S"), [(17, 17), (5, 23), (23, 5), (64, 64)])
@pytest.mark.parametrize(("bq", "bk"), [(4, 4), (3, 8), (64, 64)])
def test_tiled_equals_naive_float64(is_causal, L, S, bq, bk):
    q, k, v = _qkv(L, S)
    tiled = tiled_attention(q, k, v, is_causal=is_causal, block_size_q=bq, block_size_k=bk)
    naive = naive_attention(q, k, v, is_causal=is_causal)
    assert float((tiled - naive).abs().max()) < 1e-10
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    assert float((tiled - ref).abs().max()) < 1e-10


@pytest.mark.parametrize("is_causal", [False, True])
def test_tiled_equals_naive_float32(is_causal):
    q, k, v = _qkv(300, 300, E=32, Ev=32, batch=(2,), dtype=torch.float32)
    tiled = tiled_attention(q, k, v, is_causal=is_causal, block_size_q=64, block_size_k=96)
    naive = naive_attention(q, k, v, is_causal=is_causal)
    assert float((tiled - naive).abs().max()) < 1e-5


@pytest.mark.parametrize("is_causal", [False, True])
def test_tiled_backward_matches_naive(is_causal):
    q, k, v = (t.requires_grad_() for t in _qkv(20, 30))
    out = tiled_attention(q, k, v, is_causal=is_causal, block_size_q=7, block_size_k=6)
    grads = torch.autograd.grad(out.sum(), (q, k, v))
    ref = torch.autograd.grad(naive_attention(q, k, v, is_causal=is_causal).sum(), (q, k, v))
    for g, r in zip(grads, ref, strict=True):
        assert float((g - r).abs().max()) < 1e-10


def test_tiled_needs_a_fraction_of_naive_extra_memory():
    q, k, v = _qkv(1024, 1024, E=64, Ev=64, batch=(1,), dtype=torch.float32)
    naive = peak_memory(lambda: naive_attention(q, k, v))
    tiled = peak_memory(lambda: tiled_attention(q, k, v, block_size_q=128, block_size_k=128))
    scores_bytes = 1024 * 1024 * 4
    assert naive >= 2 * scores_bytes  # scores and weights both exist at once
    assert tiled * 8 <= naive


@pytest.mark.parametrize("is_causal", [False, True])
def test_tiled_holds_one_tile_at_a_time(is_causal):
    # Beyond the output, the peak is one tile of scores plus a few (bq, E) blocks: the previous
    # tile is freed before the next is computed, and the causal mask is applied in place.
    L, E, bq, bk = 1024, 16, 256, 256
    q, k, v = _qkv(L, L, E=E, Ev=E, batch=(1,), dtype=torch.float32)
    peak = peak_memory(lambda: tiled_attention(q, k, v, is_causal=is_causal, block_size_q=bq,
                                               block_size_k=bk))
    out_bytes, tile_bytes = L * E * 4, bq * bk * 4
    assert out_bytes + tile_bytes <= peak < out_bytes + 1.5 * tile_bytes


def test_peak_memory_sees_buffers_freed_inside_an_operator():
    # In the backward pass of naive attention the weights, their gradient and the gradient of
    # the scores exist at once; the autograd engine frees the saved weights inside the step that
    # computes the last, so per-operator accounting would see only two of the three matrices.
    L = 256
    q, k, v = (t.requires_grad_() for t in _qkv(L, L, E=8, Ev=8, batch=(1,), dtype=torch.float32))
    peak = peak_memory(lambda: torch.autograd.grad(naive_attention(q, k, v).sum(), (q, k, v)))
    assert peak >= 3 * L * L * 4


def test_peak_memory_measures_an_allocation():
    assert peak_memory(lambda: torch.empty(1_000_000, dtype=torch.float64)) >= 8_000_000
    assert peak_memory(lambda: None) == 0


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "pattern"),
    [
        ((torch.zeros(2, 4), torch.zeros(3, 5), torch.zeros(3, 2)), {}, ValueError, r"query and key must have the same size E.*\(2, 4\).*\(3, 5\)"),
        ((torch.zeros(2, 4), torch.zeros(3, 4), torch.zeros(5, 2)), {}, ValueError, r"key and value must have the same length S.*\(3, 4\).*\(5, 2\)"),
        ((torch.zeros(4), torch.zeros(3, 4), torch.zeros(3, 2)), {}, ValueError, r"query must have at least 2 dimensions.*\(4"),
        ((torch.zeros(2, 4, dtype=torch.long), torch.zeros(3, 4), torch.zeros(3, 2)), {}, TypeError, r"query must have a floating-point dtype"),
        ((torch.zeros(2, 4), torch.zeros(3, 4), torch.zeros(3, 2)), {"block_size_q": 0}, ValueError, r"block_size_q"),
        ((torch.zeros(2, 4), torch.zeros(0, 4), torch.zeros(0, 2)), {}, ValueError, r"key must hold at least one position"),
    ],
)
def test_bad_input(args, kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        tiled_attention(*args, **kwargs)


def test_online_softmax_bad_input():
    with pytest.raises(ValueError, match="entirely -inf"):
        online_softmax(torch.full((2, 3), -math.inf))
    with pytest.raises(ValueError, match="block_size"):
        online_softmax(torch.zeros(3), block_size=0)
    with pytest.raises(TypeError, match="scores must have a floating-point dtype"):
        online_softmax(torch.zeros(3, dtype=torch.long))


def test_median_times_calls_each_function_in_rotation():
    calls: list[str] = []
    slow = 0.02

    def a():
        calls.append("a")
        time.sleep(slow)

    def b():
        calls.append("b")

    times = median_times(a, b, repeats=3, warmup=2)
    assert len(times) == 2
    assert times[0] >= slow > times[1] >= 0
    assert calls[:4] == ["a", "b", "a", "b"]  # warm-up
    assert calls[4:] == ["a", "b", "b", "a", "a", "b"]  # the first place rotates
    assert calls.count("a") == calls.count("b") == 5


def test_median_times_bad_input():
    with pytest.raises(ValueError, match="at least one function"):
        median_times()
    with pytest.raises(TypeError, match=r"fns\[1\] must be callable"):
        median_times(lambda: None, 3)
    with pytest.raises(ValueError, match="repeats"):
        median_times(lambda: None, repeats=0)
    with pytest.raises(ValueError, match="warmup"):
        median_times(lambda: None, warmup=-1)
    with pytest.raises(ValueError, match="clock must be one of"):
        median_times(lambda: None, clock="cpu")
    with pytest.raises(ValueError, match="num_threads"):
        median_times(lambda: None, num_threads=0)
    with pytest.raises(ValueError, match="needs one thread, got 2 threads"):
        median_times(lambda: None, clock="thread", num_threads=2)


def test_median_times_thread_clock_ignores_sleep_and_restores_threads():
    before = torch.get_num_threads()
    seen: list[int] = []

    def sleep():
        seen.append(torch.get_num_threads())
        time.sleep(0.02)

    wall, = median_times(sleep, repeats=2)
    cpu, = median_times(sleep, repeats=2, clock="thread", num_threads=1)
    assert wall >= 0.02 > 0.01 > cpu  # a sleeping thread uses no CPU time
    assert seen[-1] == 1 and torch.get_num_threads() == before


def _fake_cache(root, index, level, kind, size):
    directory = root / f"index{index}"
    directory.mkdir()
    for name, text in (("level", level), ("type", kind), ("size", size)):
        (directory / name).write_text(f"{text}\n")


def test_cpu_caches_reads_data_caches_in_order_of_level(tmp_path):
    _fake_cache(tmp_path, 3, 3, "Unified", "32768K")
    _fake_cache(tmp_path, 0, 1, "Data", "48K")
    _fake_cache(tmp_path, 1, 1, "Instruction", "32K")
    _fake_cache(tmp_path, 2, 2, "Unified", "2M")
    (tmp_path / "uevent").write_text("")  # not a cache: ignored
    caches = cpu_caches(tmp_path)
    assert caches == {"L1d": 48 * 2**10, "L2": 2 * 2**20, "L3": 32 * 2**20}
    assert list(caches) == ["L1d", "L2", "L3"]
    assert cpu_caches(str(tmp_path)) == caches


def test_cpu_caches_is_empty_where_the_system_says_nothing(tmp_path):
    assert cpu_caches(tmp_path / "missing") == {}
    _fake_cache(tmp_path, 0, 1, "Data", "unknown")  # an unreadable size is left out
    (tmp_path / "index1").mkdir()  # a cache directory without its files
    assert cpu_caches(tmp_path) == {}


def test_cpu_caches_bad_input():
    with pytest.raises(TypeError, match=r"root must be a path .* got int"):
        cpu_caches(3)  # type: ignore[arg-type]


# --- issue 34: a row whose first blocks are all -inf (left padding, a window) ---------------------


def test_online_softmax_of_the_issue_row():
    row = torch.tensor([[-math.inf, -math.inf, 1.0, 2.0]])
    out = online_softmax(row, block_size=2)
    torch.testing.assert_close(out, torch.softmax(row, -1), rtol=0, atol=1e-7)
    assert out[0, 0] == 0 and out[0, 1] == 0


@pytest.mark.parametrize("block_size", [1, 2, 3, 5, 10])
def test_online_softmax_masked_first_blocks_forward_and_backward(block_size):
    """Rows whose first 0, 2, 5 or 9 of 10 scores are -inf, against torch.softmax."""
    gen = torch.Generator().manual_seed(0)
    scores = torch.randn(4, 3, 10, generator=gen, dtype=torch.float64)
    masked = torch.tensor([0, 2, 5, 9])[:, None, None]  # (4, 1, 1) per row group
    scores = scores.masked_fill(torch.arange(10) < masked, -math.inf).requires_grad_()
    weights = torch.randn(4, 3, 10, generator=gen, dtype=torch.float64)
    ours, ref = online_softmax(scores, block_size), torch.softmax(scores, -1)
    torch.testing.assert_close(ours, ref, rtol=0, atol=1e-14)
    (grad,) = torch.autograd.grad((ours * weights).sum(), scores)
    (ref_grad,) = torch.autograd.grad((ref * weights).sum(), scores)
    assert bool(torch.isfinite(grad).all())
    torch.testing.assert_close(grad, ref_grad, rtol=0, atol=1e-14)


def test_online_softmax_still_refuses_a_row_that_is_entirely_minus_inf():
    scores = torch.tensor([[0.0, 1.0, 2.0, 3.0], [-math.inf] * 4])
    with pytest.raises(ValueError, match="entirely -inf"):
        online_softmax(scores, block_size=2)


# tiled_attention takes no mask, and its causal mask never hides a row's first key (key 0):
# its scores are -inf only where q . k * scale overflows. E = 1, a query near 1 and
# SCALE = 1e30: a key of order 1e-30 scores of order 1, a key of -1e10 scores -inf in float32.
SCALE = 1e30


def _masked_start(masked, S=10, L=5, Ev=4):
    """q, k, v whose first ``masked`` keys score -inf; k with 0 there; the bool mask (S,)."""
    gen = torch.Generator().manual_seed(masked)
    q = torch.rand(2, L, 1, generator=gen) + 0.5  # (B, L, 1), > 0
    k = torch.randn(2, S, 1, generator=gen) / SCALE  # (B, S, 1): scores of order 1
    v = torch.randn(2, S, Ev, generator=gen)
    allowed = torch.arange(S) >= masked  # (S,)
    k_inf = torch.where(allowed[:, None], k, torch.tensor(-1e10))  # -1e40 -> -inf
    return q, k_inf, torch.where(allowed[:, None], k, 0.0), v, allowed


@pytest.mark.parametrize("masked", [1, 4, 9, 10])
@pytest.mark.parametrize(("bq", "bk"), [(2, 1), (5, 3), (1, 4), (8, 16)])
def test_tiled_with_masked_first_key_blocks_equals_masked_sdpa(masked, bq, bk):
    """Forward (in place and under autograd) and backward; 10 masked keys: zero output."""
    q, k_inf, k, v, allowed = _masked_start(masked)
    q_scores = (q * SCALE) @ k_inf.transpose(-2, -1)
    assert bool(torch.isneginf(q_scores[..., ~allowed]).all())
    assert bool(torch.isfinite(q_scores[..., allowed]).all())
    mask = allowed.expand(q.shape[1], -1)  # (L, S)
    with torch.no_grad():
        in_place = tiled_attention(q, k_inf, v, scale=SCALE, block_size_q=bq, block_size_k=bk)
    ins = [t.clone().requires_grad_() for t in (q, k_inf, v)]
    out = tiled_attention(*ins, scale=SCALE, block_size_q=bq, block_size_k=bk)
    ref_ins = [t.clone().requires_grad_() for t in (q, k, v)]
    ref = F.scaled_dot_product_attention(*ref_ins, attn_mask=mask, scale=SCALE)
    for ours in (in_place, out):
        assert bool(torch.isfinite(ours).all())
        torch.testing.assert_close(ours, ref, rtol=1e-5, atol=1e-6)
    if masked == 10:  # no key to attend to: a zero output, as PyTorch's
        assert bool((out == 0).all()) and bool((ref == 0).all())
    weights = torch.randn(out.shape, generator=torch.Generator().manual_seed(1))
    grads = torch.autograd.grad((out * weights).sum(), ins)
    ref_grads = torch.autograd.grad((ref * weights).sum(), ref_ins)
    for name, g, r in zip("qkv", grads, ref_grads, strict=True):
        assert bool(torch.isfinite(g).all()), name
        if name == "k":  # d out / d k carries the factor SCALE
            g, r = g / SCALE, r / SCALE
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-5, msg=name)


# --- review of chapter 8: float16 in float32, the detached maximum, the causal fraction ----------


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_online_softmax_computes_low_precision_in_float32(dtype):
    """As naive_attention and tiled_attention: float32 inside, the input's dtype out."""
    gen = torch.Generator().manual_seed(0)
    x = (3 * torch.randn(64, 1000, generator=gen, dtype=torch.float64)).to(dtype)
    exact = torch.softmax(x.double(), -1)  # the softmax of the float16 scores
    ours = online_softmax(x, block_size=128)
    assert ours.dtype == dtype
    # torch.softmax of a float16 tensor also computes in float32
    ref = torch.softmax(x, -1)
    ours_err = float((ours.double() - exact).abs().max())
    ref_err = float((ref.double() - exact).abs().max())
    assert ours_err <= ref_err  # before: 3.3e-4 vs 2.4e-4 (float16)
    torch.testing.assert_close(ours, torch.softmax(x.float(), -1).to(dtype))
    # backward: the gradient of the float32 computation, in the input's dtype
    xs = [x.clone().requires_grad_() for _ in range(2)]
    w = torch.randn(x.shape, generator=gen).to(dtype)
    (g,) = torch.autograd.grad((online_softmax(xs[0], 128) * w).sum(), xs[0])
    (r,) = torch.autograd.grad((torch.softmax(xs[1].float(), -1).to(dtype) * w).sum(), xs[1])
    assert g.dtype == dtype
    torch.testing.assert_close(g, r)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("is_causal", [False, True])
@pytest.mark.parametrize(("L", "S"), [(40, 40), (23, 37), (37, 23)])
def test_tiled_forward_and_backward_equal_naive_and_sdpa(dtype, is_causal, L, S):
    """The detached running maximum leaves the gradients those of the naive form."""
    tol = 1e-10 if dtype == torch.float64 else 1e-5
    q, k, v = _qkv(L, S, dtype=dtype)
    w = torch.randn(*q.shape[:-1], v.shape[-1], dtype=dtype,
                    generator=torch.Generator().manual_seed(3))

    def run(fn):
        ins = [t.clone().requires_grad_() for t in (q, k, v)]
        out = fn(*ins)
        return out.detach(), torch.autograd.grad((out * w).sum(), ins)

    tiled = run(lambda *a: tiled_attention(*a, is_causal=is_causal, block_size_q=8,
                                           block_size_k=6))
    for ref in (run(lambda *a: naive_attention(*a, is_causal=is_causal)),
                run(lambda *a: F.scaled_dot_product_attention(*a, is_causal=is_causal))):
        assert float((tiled[0] - ref[0]).abs().max()) < tol
        for g, r in zip(tiled[1], ref[1], strict=True):
            assert float((g - r).abs().max()) < tol


def test_tiled_backward_keeps_one_matrix_of_exponentials():
    """With the maximum detached autograd keeps each tile's exponentials, not also its scores.

    Before, amax's backward kept every score tile too: 2.26 score matrices at this size; now
    1.11 (the exponentials, and the backward's transients).
    """
    L = 1024
    q, k, v = (t.requires_grad_() for t in _qkv(L, L, E=16, Ev=16, batch=(1,),
                                                 dtype=torch.float32))
    peak = peak_memory(lambda: torch.autograd.grad(
        tiled_attention(q, k, v, block_size_q=128, block_size_k=128).sum(), (q, k, v)))
    assert L * L * 4 <= peak < 1.5 * L * L * 4


class _CountMatmuls(torch.overrides.TorchFunctionMode):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func is torch.Tensor.matmul:
            self.count += 1
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("n", [1, 2, 3, 8])
def test_causal_tiled_attention_computes_n_n_plus_1_over_2_tiles(n):
    """The docstring's fraction (n + 1) / 2n: two matrix products per computed tile."""
    b = 4
    q, k, v = _qkv(n * b, n * b, batch=(1,))
    with _CountMatmuls() as counter:
        tiled_attention(q, k, v, is_causal=True, block_size_q=b, block_size_k=b)
    assert counter.count == 2 * n * (n + 1) // 2


def test_median_times_spread_gives_fastest_median_and_slowest_call():
    delays = iter([0.0, 0.1, 0.01, 0.05])  # the warm-up call, then three timed ones

    def varying():
        time.sleep(next(delays))

    (low, mid, high), = median_times(varying, repeats=3, spread=True)
    assert low <= mid <= high  # sleep may overshoot, never undershoot
    assert low >= 0.01 and mid >= 0.05 and high >= 0.1
    (mid_only,) = median_times(lambda: None, repeats=2)
    assert isinstance(mid_only, float)
    with pytest.raises(TypeError, match="spread must be a bool"):
        median_times(lambda: None, spread="yes")  # type: ignore[call-overload]
