"""Sliding-window attention: the block version against PyTorch's SDPA with the band mask."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnlib.blocks import sliding_window as sw
from attnlib.blocks.efficient import peak_memory
from attnlib.blocks.masking import causal_mask

pytestmark = pytest.mark.usefixtures("one_thread")

F32, F64 = torch.float32, torch.float64
TOL = {F64: 1e-10, F32: 1e-5}


def test_mask_is_the_band() -> None:
    mask = sw.sliding_window_mask(6, 3)
    for i in range(6):
        for j in range(6):
            assert bool(mask[i, j]) == (i - 3 < j <= i)
    assert torch.equal(sw.sliding_window_mask(5, 5), causal_mask(5))
    assert torch.equal(sw.sliding_window_mask(5, 50), causal_mask(5))
    assert sw.sliding_window_mask(4, 2, S=6).shape == (4, 6)


@pytest.mark.parametrize("dtype", [F64, F32])
@pytest.mark.parametrize(("n", "w"), [(1, 1), (5, 1), (8, 4), (10, 3), (7, 10), (33, 5), (64, 16)])
def test_blocks_equal_masked_sdpa_forward_and_backward(dtype: torch.dtype, n: int, w: int) -> None:
    g = torch.Generator().manual_seed(n * 100 + w)
    q, k = (torch.randn(2, 3, n, 8, generator=g, dtype=dtype, requires_grad=True) for _ in range(2))
    v = torch.randn(2, 3, n, 5, generator=g, dtype=dtype, requires_grad=True)
    ours = sw.sliding_window_attention(q, k, v, w)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=sw.sliding_window_mask(n, w))
    tol = TOL[dtype]
    torch.testing.assert_close(ours, ref, atol=tol, rtol=tol)
    weight = torch.linspace(-1, 1, ours.numel(), dtype=dtype).view_as(ours)
    for a, b in zip(torch.autograd.grad((ours * weight).sum(), (q, k, v)),
                    torch.autograd.grad((ref * weight).sum(), (q, k, v)), strict=True):
        torch.testing.assert_close(a, b, atol=tol, rtol=tol)


def test_window_as_long_as_sequence_is_causal_attention() -> None:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 12, 4, generator=g, dtype=F64) for _ in range(3))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    torch.testing.assert_close(sw.sliding_window_attention(q, k, v, 12), ref)


def test_inputs_are_not_modified() -> None:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, 9, 4, generator=g) for _ in range(3))
    copies = [t.clone() for t in (q, k, v)]
    sw.sliding_window_attention(q, k, v, 4)
    for t, c in zip((q, k, v), copies, strict=True):
        assert torch.equal(t, c)


def test_memory_grows_linearly() -> None:
    """Doubling n doubles the peak memory (to 2%); masked full attention quadruples it."""
    def peak(n: int) -> int:
        g = torch.Generator().manual_seed(0)
        q, k, v = (torch.randn(1, 1, n, 16, generator=g) for _ in range(3))
        return peak_memory(lambda: sw.sliding_window_attention(q, k, v, 32))

    small, large = peak(1024), peak(2048)
    assert 1.98 < large / small < 2.02


def test_window_reach() -> None:
    assert sw.window_reach(8, 2) == 14
    assert sw.window_reach(1, 5) == 0


BAD = [
    (lambda: sw.sliding_window_attention(torch.randn(1, 2, 5, 4), torch.randn(1, 2, 6, 4),
                                         torch.randn(1, 2, 6, 4), 2),
     ["key", "(1, 2, 6, 4)", "(1, 2, 5, 4)"]),
    (lambda: sw.sliding_window_attention(torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4),
                                         torch.randn(1, 2, 4, 4), 2),
     ["value", "(1, 2, 4, 4)", "(1, 2, 5, Ev)"]),
    (lambda: sw.sliding_window_attention(torch.randn(2, 5, 4), torch.randn(2, 5, 4),
                                         torch.randn(2, 5, 4), 2),
     ["query", "(2, 5, 4)", "(B, H, L, E)"]),
    (lambda: sw.sliding_window_attention(*(torch.randn(1, 1, 3, 2) for _ in range(3)), 0),
     ["window", ">= 1", "0"]),
    (lambda: sw.sliding_window_mask(4, 0), ["window", "0"]),
    (lambda: sw.window_reach(4, 0), ["num_layers", "0"]),
]


@pytest.mark.parametrize(("call", "fragments"), BAD)
def test_bad_input_names_argument_got_and_expected(call, fragments) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
