"""Linear attention: the O(n) form against the same model written with its (L, S) weights."""

from __future__ import annotations

import pytest
import torch

from attnlib.blocks import linear_attention as la

pytestmark = pytest.mark.usefixtures("one_thread")

F32, F64 = torch.float32, torch.float64
TOL = {F64: 1e-10, F32: 1e-5}


@pytest.mark.parametrize("dtype", [F64, F32])
@pytest.mark.parametrize(("L", "S", "causal", "chunk"), [
    (7, 7, True, 64), (7, 7, False, 64), (5, 9, False, 64), (1, 1, True, 64),
    (10, 10, True, 4), (12, 12, True, 3), (9, 9, True, 1)])
def test_linear_equals_quadratic_forward_and_backward(
    dtype: torch.dtype, L: int, S: int, causal: bool, chunk: int
) -> None:
    g = torch.Generator().manual_seed(L * 10 + S)
    q = torch.randn(2, 3, L, 8, generator=g, dtype=dtype, requires_grad=True)
    k = torch.randn(2, 3, S, 8, generator=g, dtype=dtype, requires_grad=True)
    v = torch.randn(2, 3, S, 5, generator=g, dtype=dtype, requires_grad=True)
    fast = la.linear_attention(q, k, v, is_causal=causal, chunk_size=chunk)
    slow = la.linear_attention_quadratic(q, k, v, is_causal=causal)
    tol = TOL[dtype]
    torch.testing.assert_close(fast, slow, atol=tol, rtol=tol)
    weight = torch.linspace(-1, 1, fast.numel(), dtype=dtype).view_as(fast)
    for a, b in zip(torch.autograd.grad((fast * weight).sum(), (q, k, v)),
                    torch.autograd.grad((slow * weight).sum(), (q, k, v)), strict=True):
        torch.testing.assert_close(a, b, atol=tol, rtol=tol)


def test_causal_prefix_does_not_see_the_future() -> None:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, 6, 4, generator=g, dtype=F64) for _ in range(3))
    full = la.linear_attention(q, k, v, is_causal=True)
    prefix = la.linear_attention(q[:, :, :4], k[:, :, :4], v[:, :, :4], is_causal=True)
    torch.testing.assert_close(full[:, :, :4], prefix)


def test_weights_are_a_convex_combination() -> None:
    """Values all equal to c give output c: the weights are positive and sum to 1."""
    g = torch.Generator().manual_seed(0)
    q, k = (torch.randn(1, 2, 5, 4, generator=g, dtype=F64) * 30 for _ in range(2))
    v = torch.full((1, 2, 5, 3), 2.5, dtype=F64)
    for causal in (True, False):
        torch.testing.assert_close(la.linear_attention(q, k, v, is_causal=causal),
                                   torch.full((1, 2, 5, 3), 2.5, dtype=F64))


@pytest.mark.parametrize("dtype", [F64, F32])
def test_recurrent_state_equals_the_chunked_form(dtype: torch.dtype) -> None:
    g = torch.Generator().manual_seed(3)
    q, k, v = (torch.randn(2, 3, 11, 4, generator=g, dtype=dtype) for _ in range(3))
    v = v[..., :3]  # E_v != E
    torch.testing.assert_close(la.linear_attention_recurrent(q, k, v),
                               la.linear_attention(q, k, v, True, chunk_size=4),
                               atol=TOL[dtype], rtol=TOL[dtype])


def test_self_attention_module_is_the_projections_and_linear_attention() -> None:
    from attnlib.blocks.gqa import repeat_kv
    from attnlib.blocks.multihead import merge_heads, split_heads

    torch.manual_seed(0)
    module = la.LinearSelfAttention(16, 4, 2, dtype=F64)
    x = torch.randn(2, 7, 16, dtype=F64)
    out, k, v = module(x)
    q = split_heads(module.q_proj(x), 4)
    keys, values = split_heads(module.k_proj(x), 2), split_heads(module.v_proj(x), 2)
    heads = la.linear_attention_quadratic(q, repeat_kv(keys, 2), repeat_kv(values, 2), True)
    torch.testing.assert_close(out, module.out_proj(merge_heads(heads)), atol=1e-12, rtol=0)
    assert torch.equal(k, keys) and torch.equal(v, values)


BAD = [
    (lambda: la.LinearSelfAttention(8, 2, 2)(torch.randn(1, 3, 8),
                                             past=(torch.ones(1), torch.ones(1))),
     ["past", "None", "cache"]),
    (lambda: la.LinearSelfAttention(8, 2, 2)(torch.randn(1, 3, 6)), ["x", "(1, 3, 6)", "D = "]),
    (lambda: la.linear_attention_recurrent(*(torch.randn(1, 1, 4, 2) for _ in range(2)),
                                           torch.randn(1, 1, 5, 2)), ["value", "(1, 1, 5, 2)"]),
    (lambda: la.linear_attention(torch.randn(1, 2, 5, 4), torch.randn(1, 2, 6, 3),
                                 torch.randn(1, 2, 6, 3)), ["key", "(1, 2, 6, 3)", "(1, 2, S, 4)"]),
    (lambda: la.linear_attention(torch.randn(1, 2, 5, 4), torch.randn(1, 2, 6, 4),
                                 torch.randn(1, 2, 5, 3)), ["value", "(1, 2, 5, 3)", "(1, 2, 6, Ev)"]),
    (lambda: la.linear_attention(torch.randn(1, 2, 5, 4), torch.randn(1, 2, 6, 4),
                                 torch.randn(1, 2, 6, 4), is_causal=True), ["L == S", "(1, 2, 5, 4)"]),
    (lambda: la.linear_attention(torch.randn(2, 5, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 4)),
     ["query", "(2, 5, 4)", "(B, H, L, E)"]),
    (lambda: la.linear_attention(*(torch.randn(1, 1, 4, 2) for _ in range(3)), True, 0),
     ["chunk_size", "0"]),
]


@pytest.mark.parametrize(("call", "fragments"), BAD)
def test_bad_input_names_argument_got_and_expected(call, fragments) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
