"""Stable attention against direct formulas written here: soft-capping (also through
flex_tiled_attention's score function), QK-clip's largest logits and rescaling, QK-norm before
RoPE (per head and over all heads), differential attention and its layer."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from attnlib.blocks.block_mask import (
    causal_mask_mod,
    create_block_mask,
    flex_tiled_attention,
    softcap_score_mod,
)
from attnlib.blocks.stable_attention import (
    DifferentialAttention,
    StableSelfAttention,
    differential_attention,
    max_logits,
    qk_clip,
    soft_cap,
)

F64 = torch.float64


def _randn(*shape: int, seed: int = 0, scale: float = 1.0) -> Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=F64) * scale


def test_soft_cap_is_the_formula_and_flex_tiled_attention_with_its_score_mod() -> None:
    s = _randn(3, 7, scale=40.0)
    torch.testing.assert_close(soft_cap(s, 50.0), 50.0 * torch.tanh(s / 50.0), atol=0, rtol=0)
    q, k, v = _randn(2, 2, 20, 8, seed=1, scale=6.0), _randn(2, 2, 20, 8, seed=2, scale=6.0), \
        _randn(2, 2, 20, 8, seed=3)
    scores = soft_cap(q @ k.transpose(-2, -1) / math.sqrt(8), 5.0)
    causal = torch.ones(20, 20, dtype=torch.bool).tril()
    direct = torch.softmax(scores.masked_fill(~causal, -math.inf), -1) @ v
    tiled = flex_tiled_attention(q, k, v, softcap_score_mod(5.0),
                                 create_block_mask(causal_mask_mod(), 1, 1, 20, 20, 8, 8))
    torch.testing.assert_close(tiled, direct, atol=1e-12, rtol=1e-12)


def test_max_logits_is_the_largest_scaled_logit_of_each_head() -> None:
    q, k = _randn(2, 3, 5, 4, seed=4), _randn(2, 3, 6, 4, seed=5)
    for causal in (False, True):
        got = max_logits(q, k, is_causal=causal)
        for h in range(3):
            best = max(float(q[b, h, i] @ k[b, h, j]) / 2.0 for b in range(2)
                       for i in range(5) for j in range(6) if not causal or j <= i)
            assert float(got[h]) == pytest.approx(best, rel=1e-12)


def test_qk_clip_brings_each_head_over_tau_back_to_tau_and_leaves_the_others() -> None:
    H, E, D, L = 3, 4, 12, 10
    w_q, w_k = _randn(H * E, D, seed=6), _randn(H * E, D, seed=7)
    w_q[:E] *= 4.0  # head 0's logits large
    x = _randn(1, L, D, seed=8)

    def heads(w: Tensor) -> Tensor:
        return (x @ w.T).view(1, L, H, E).transpose(1, 2)

    before = max_logits(heads(w_q), heads(w_k))
    tau = float(before.sort().values[1])  # one head under tau, one at it, one over
    new_q, new_k, gamma = qk_clip(w_q, w_k, before, tau)
    after = max_logits(heads(new_q), heads(new_k))
    for h in range(H):
        if float(before[h]) > tau:
            assert float(after[h]) == pytest.approx(tau, rel=1e-12)
            assert float(gamma[h]) == pytest.approx(tau / float(before[h]), rel=1e-12)
            rows = slice(h * E, (h + 1) * E)  # the split: sqrt(gamma) each with alpha = 1/2
            torch.testing.assert_close(new_q[rows], w_q[rows] * math.sqrt(float(gamma[h])))
            torch.testing.assert_close(new_k[rows], w_k[rows] * math.sqrt(float(gamma[h])))
        else:
            assert float(gamma[h]) == 1.0 and float(after[h]) == pytest.approx(float(before[h]))
    assert int((before > tau).sum()) == 1
    _, only_k, _ = qk_clip(w_q, w_k, before, tau, alpha=0.0)  # all of gamma on the keys
    assert float(max_logits(heads(w_q), heads(only_k)).max()) == pytest.approx(tau, rel=1e-12)


def _rope(x: Tensor) -> Tensor:
    """RoFormer's rotation of adjacent pairs (2i, 2i+1) at position m by m * 10000^(-2i/E)."""
    L, E = x.shape[-2], x.shape[-1]
    theta = 10000.0 ** (-torch.arange(0, E, 2, dtype=F64) / E)  # (E/2,)
    angle = torch.arange(L, dtype=F64)[:, None] * theta  # (L, E/2)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = torch.empty_like(x)
    out[..., 0::2] = even * angle.cos() - odd * angle.sin()
    out[..., 1::2] = even * angle.sin() + odd * angle.cos()
    return out


@pytest.mark.parametrize("qk_norm", ["none", "head", "all"])
@pytest.mark.parametrize("softcap", [None, 2.0])
def test_stable_self_attention_is_the_direct_formula(qk_norm: str, softcap: float | None) -> None:
    torch.manual_seed(0)
    B, L, D, H = 2, 7, 16, 4
    E = D // H
    layer = StableSelfAttention(D, H, qk_norm=qk_norm, softcap=softcap).double()
    with torch.no_grad():  # gains other than 1, so the order of norm and RoPE matters
        for g in (layer.q_norm, layer.k_norm):
            if g is not None:
                g.copy_(_randn(g.shape[0], seed=g.shape[0] + (g is layer.k_norm)).abs() + 0.5)
    x = _randn(B, L, D, seed=9)

    def project(w: Tensor, gain: Tensor | None) -> Tensor:
        y = x @ w.T
        if qk_norm == "all":
            y = F.rms_norm(y, (D,), gain, 1e-6)
        y = y.view(B, L, H, E).transpose(1, 2)
        if qk_norm == "head":
            y = F.rms_norm(y, (E,), gain, 1e-6)
        return _rope(y)

    q, k = project(layer.q_proj.weight, layer.q_norm), project(layer.k_proj.weight, layer.k_norm)
    v = (x @ layer.v_proj.weight.T).view(B, L, H, E).transpose(1, 2)
    if softcap is None:
        heads = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    else:
        s = softcap * torch.tanh(q @ k.transpose(-2, -1) / math.sqrt(E) / softcap)
        causal = torch.ones(L, L, dtype=torch.bool).tril()
        heads = torch.softmax(s.masked_fill(~causal, -math.inf), -1) @ v
    direct = heads.transpose(1, 2).reshape(B, L, D) @ layer.out_proj.weight.T
    torch.testing.assert_close(layer(x), direct, atol=1e-12, rtol=1e-12)
    assert layer.last_max_logits is not None
    torch.testing.assert_close(layer.last_max_logits, max_logits(q, k, is_causal=True))


def test_qk_norm_bounds_the_logits_whatever_the_weights() -> None:
    """With unit gains, |q.k|/sqrt(E) <= sqrt(E): large weights cannot push the logits up."""
    torch.manual_seed(0)
    plain, normed = StableSelfAttention(16, 2), StableSelfAttention(16, 2, qk_norm="head")
    normed.load_state_dict(plain.state_dict(), strict=False)
    x = torch.randn(2, 9, 16) * 30
    plain(x), normed(x)
    assert plain.last_max_logits is not None and normed.last_max_logits is not None
    assert float(normed.last_max_logits.max()) <= math.sqrt(8) + 1e-5
    assert float(plain.last_max_logits.max()) > 100


def test_differential_attention_is_the_difference_of_two_softmaxes() -> None:
    B, H, L, S, E = 2, 3, 5, 6, 8
    q, k, v = _randn(B, H, L, E, seed=10), _randn(B, H, S, E, seed=11), _randn(B, H, S, 5, seed=12)
    lam = _randn(H, 1, 1, seed=13)
    mask = _randn(L, S, seed=14) > -0.5
    mask[:, 0] = True

    def softmax_map(qh: Tensor, kh: Tensor) -> Tensor:
        s = qh @ kh.transpose(-2, -1) / math.sqrt(E // 2)
        return torch.softmax(s.masked_fill(~mask, -math.inf), -1)

    a1 = softmax_map(q[..., :4], k[..., :4])
    a2 = softmax_map(q[..., 4:], k[..., 4:])
    torch.testing.assert_close(differential_attention(q, k, v, lam, mask), (a1 - lam * a2) @ v,
                               atol=1e-13, rtol=1e-13)
    torch.testing.assert_close(differential_attention(q, k, v, 0.0),  # lambda = 0: one softmax
                               F.scaled_dot_product_attention(q[..., :4], k[..., :4], v))


def test_differential_attention_layer_is_the_papers_formula() -> None:
    torch.manual_seed(0)
    B, L, H, d = 2, 6, 2, 4
    D = 2 * H * d
    layer = DifferentialAttention(D, H, layer_index=3).double()
    lam_init = 0.8 - 0.6 * math.exp(-0.3 * 2)
    assert layer.lambda_init == pytest.approx(lam_init)
    lam = (torch.exp(layer.lambda_q1 @ layer.lambda_k1) - torch.exp(layer.lambda_q2 @ layer.lambda_k2)
           + lam_init)
    x = _randn(B, L, D, seed=15)
    q = (x @ layer.q_proj.weight.T).view(B, L, 2 * H, d).transpose(1, 2)  # 2H sub-heads
    k = (x @ layer.k_proj.weight.T).view(B, L, 2 * H, d).transpose(1, 2)
    v = (x @ layer.v_proj.weight.T).view(B, L, H, 2 * d).transpose(1, 2)
    causal = torch.ones(L, L, dtype=torch.bool).tril()
    w = torch.softmax((q @ k.transpose(-2, -1) / math.sqrt(d)).masked_fill(~causal, -math.inf), -1)
    w = w.view(B, H, 2, L, L)  # the paper's code: sub-heads 2h and 2h+1 make head h
    heads = (w[:, :, 0] - lam * w[:, :, 1]) @ v  # (B, H, L, 2d)
    heads = heads / heads.pow(2).mean(-1, keepdim=True).add(1e-5).sqrt() * layer.norm_weight
    direct = ((1 - lam_init) * heads).transpose(1, 2).reshape(B, L, D) @ layer.out_proj.weight.T
    out = layer(x)
    torch.testing.assert_close(out, direct, atol=1e-12, rtol=1e-12)
    out.sum().backward()
    assert layer.lambda_q1.grad is not None and bool(layer.lambda_q1.grad.abs().sum() > 0)


def test_bad_arguments_are_refused() -> None:
    q = _randn(1, 2, 3, 4)
    with pytest.raises(ValueError, match="alpha"):
        qk_clip(_randn(8, 4), _randn(8, 4), torch.ones(2, dtype=F64), 1.0, alpha=1.5)
    with pytest.raises(ValueError, match="w_q"):
        qk_clip(_randn(8, 4), _randn(8, 4), torch.ones(3, dtype=F64), 1.0)
    with pytest.raises(ValueError, match="even"):
        differential_attention(q[..., :3], q[..., :3], q, 0.5)
    with pytest.raises(ValueError, match="qk_norm"):
        StableSelfAttention(8, 2, qk_norm="rms")
    with pytest.raises(ValueError, match="embed_dim"):
        DifferentialAttention(6, 2)
