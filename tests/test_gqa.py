"""Grouped-query attention against PyTorch's SDPA with enable_gqa=True and repeated heads."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnlib.blocks import gqa
from attnlib.blocks.multihead import MultiHeadAttention

pytestmark = pytest.mark.usefixtures("one_thread")

F32, F64 = torch.float32, torch.float64
TOL = {F64: 1e-10, F32: 1e-5}


def _qkv(B: int, H: int, H_kv: int, L: int, S: int, E: int, Ev: int, dtype: torch.dtype,
         seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, H, L, E, generator=g, dtype=dtype, requires_grad=True)
    k = torch.randn(B, H_kv, S, E, generator=g, dtype=dtype, requires_grad=True)
    v = torch.randn(B, H_kv, S, Ev, generator=g, dtype=dtype, requires_grad=True)
    return q, k, v


def _grads(out: torch.Tensor, inputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    weight = torch.linspace(-1, 1, out.numel(), dtype=out.dtype).view_as(out)
    return torch.autograd.grad((out * weight).sum(), inputs)


@pytest.mark.parametrize("dtype", [F64, F32])
@pytest.mark.parametrize(("H", "H_kv"), [(4, 4), (4, 2), (4, 1), (8, 2), (6, 3)])
@pytest.mark.parametrize("masking", ["none", "bool", "causal", "broadcast", "heads", "float"])
def test_equals_sdpa_enable_gqa_and_repeated_heads(
    dtype: torch.dtype, H: int, H_kv: int, masking: str
) -> None:
    B, L, S, E, Ev = 2, 5, 7, 8, 6
    q, k, v = _qkv(B, H, H_kv, L, S, E, Ev, dtype)
    g = torch.Generator().manual_seed(1)
    mask = None
    if masking == "bool":
        mask = torch.rand(B, H, L, S, generator=g) > 0.3
    elif masking == "broadcast":
        mask = torch.rand(B, 1, 1, S, generator=g) > 0.3
    elif masking == "heads":
        mask = torch.rand(H, L, S, generator=g) > 0.3  # (H, L, S): per head, every batch row
    elif masking == "float":
        mask = torch.randn(L, S, generator=g).to(dtype)  # added to the scores
    causal = masking == "causal"
    ours = gqa.grouped_query_attention(q, k, v, mask, is_causal=causal)
    ref = F.scaled_dot_product_attention(q, k, v, mask, is_causal=causal, enable_gqa=True)
    rep = F.scaled_dot_product_attention(q, gqa.repeat_kv(k, H // H_kv),
                                         gqa.repeat_kv(v, H // H_kv), mask, is_causal=causal)
    tol = TOL[dtype]
    assert ours.shape == (B, H, L, Ev)
    torch.testing.assert_close(ours, ref, atol=tol, rtol=tol)
    torch.testing.assert_close(ours, rep, atol=tol, rtol=tol)
    for a, b in zip(_grads(ours, (q, k, v)), _grads(ref, (q, k, v)), strict=True):
        torch.testing.assert_close(a, b, atol=tol, rtol=tol)


def test_fully_masked_query_gives_zero_not_nan() -> None:
    q, k, v = _qkv(1, 4, 2, 3, 4, 8, 8, F64)
    mask = torch.ones(3, 4, dtype=torch.bool)
    mask[1] = False
    out = gqa.grouped_query_attention(q, k, v, mask)
    assert bool(torch.isfinite(out).all())
    assert bool((out[:, :, 1] == 0).all())


def test_repeat_kv_order() -> None:
    x = torch.arange(2 * 3, dtype=F64).view(1, 2, 3, 1)  # two heads
    r = gqa.repeat_kv(x, 2)
    assert r.shape == (1, 4, 3, 1)
    assert torch.equal(r[:, 0], x[:, 0]) and torch.equal(r[:, 1], x[:, 0])
    assert torch.equal(r[:, 2], x[:, 1]) and torch.equal(r[:, 3], x[:, 1])


def test_module_with_all_heads_equals_multihead_attention() -> None:
    """H_kv = H: the module is multi-head attention (same weights, causal mask)."""
    torch.manual_seed(0)
    ours = gqa.GroupedQueryAttention(16, 4, 4, dtype=F64)
    mha = MultiHeadAttention(16, 4, dtype=F64)
    with torch.no_grad():
        for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
            mha.get_submodule(name).load_state_dict(ours.get_submodule(name).state_dict())
    x = torch.randn(2, 5, 16, dtype=F64)
    mask = torch.ones(5, 5, dtype=torch.bool).tril()
    out, _, _ = ours(x, mask)
    ref, _ = mha(x, x, x, attn_mask=mask)
    torch.testing.assert_close(out, ref, atol=1e-12, rtol=1e-12)


def test_parameter_count_matches_module() -> None:
    for H_kv in (1, 2, 4):
        module = gqa.GroupedQueryAttention(32, 4, H_kv)
        assert sum(p.numel() for p in module.parameters()) == gqa.gqa_parameter_count(32, 4, H_kv)
    assert gqa.gqa_parameter_count(32, 4, 4, bias=False) == 4 * 32 * 32


def test_past_keys_equal_full_sequence() -> None:
    """Attending with past keys and values gives the outputs of the whole sequence."""
    torch.manual_seed(0)
    module = gqa.GroupedQueryAttention(16, 4, 2, dtype=F64)
    x = torch.randn(1, 6, 16, dtype=F64)
    full, k, v = module(x, torch.ones(6, 6, dtype=torch.bool).tril())
    last, _, _ = module(x[:, 5:], None, past=(k[:, :, :5], v[:, :, :5]))
    torch.testing.assert_close(last, full[:, 5:], atol=1e-12, rtol=1e-12)


def test_mean_pool_kv_averages_heads() -> None:
    torch.manual_seed(0)
    module = gqa.GroupedQueryAttention(16, 4, 4, dtype=F64)
    pooled = gqa.mean_pool_kv(module, 2)
    E = 4
    w = module.k_proj.weight.view(4, E, 16)
    torch.testing.assert_close(pooled.k_proj.weight.view(2, E, 16), (w[0::2] + w[1::2]) / 2)
    assert torch.equal(pooled.q_proj.weight, module.q_proj.weight)
    # pooling to the same count is the identity
    same = gqa.mean_pool_kv(module, 4)
    x = torch.randn(1, 3, 16, dtype=F64)
    torch.testing.assert_close(same(x)[0], module(x)[0])


BAD = [
    (lambda: gqa.grouped_query_attention(torch.randn(1, 4, 3, 8), torch.randn(1, 3, 5, 8),
                                         torch.randn(1, 3, 5, 8)),
     ["key", "(1, 3, 5, 8)", "H_kv", "divide"]),
    (lambda: gqa.grouped_query_attention(torch.randn(1, 4, 3, 8), torch.randn(1, 2, 5, 6),
                                         torch.randn(1, 2, 5, 8)),
     ["key", "(1, 2, 5, 6)", "(1, H_kv, S, 8)"]),
    (lambda: gqa.grouped_query_attention(torch.randn(1, 4, 3, 8), torch.randn(1, 2, 5, 8),
                                         torch.randn(1, 2, 4, 8)),
     ["value", "(1, 2, 4, 8)", "(1, 2, 5, Ev)"]),
    (lambda: gqa.grouped_query_attention(torch.randn(4, 3, 8), torch.randn(1, 2, 5, 8),
                                         torch.randn(1, 2, 5, 8)),
     ["query", "(4, 3, 8)", "(B, H, L, E)"]),
    (lambda: gqa.grouped_query_attention(torch.randn(1, 4, 3, 8), torch.randn(1, 2, 5, 8),
                                         torch.randn(1, 2, 5, 8), torch.ones(3, 4, dtype=torch.bool)),
     ["attn_mask", "(3, 4)", "(1, 4, 3, 5)"]),
    (lambda: gqa.GroupedQueryAttention(16, 4, 3), ["num_kv_heads", "num_heads = 4", "3"]),
    (lambda: gqa.GroupedQueryAttention(16, 4, 2)(torch.randn(2, 5, 12)),
     ["x", "(2, 5, 12)", "embed_dim = 16"]),
    (lambda: gqa.repeat_kv(torch.randn(2, 3, 4), 2), ["x", "(2, 3, 4)", "(B, H_kv, S, E)"]),
    (lambda: gqa.mean_pool_kv(gqa.GroupedQueryAttention(16, 4, 4), 3),
     ["num_kv_heads", "4", "3"]),
]


@pytest.mark.parametrize(("call", "fragments"), BAD)
def test_bad_input_names_argument_got_and_expected(call, fragments) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
