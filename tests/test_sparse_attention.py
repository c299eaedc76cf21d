"""Sparse attention against dense attention: DSA's indexer (the formula written here), top-k
keys and attention over them (k = S is dense causal attention; any k is SDPA with the selection
as a dense mask), the indexer's KL loss (its gradient is softmax(I) - p) and MoBA (all blocks
selected is dense causal attention); causality of every selection."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from attnlib.blocks.sparse_attention import (
    indexer_kl_loss,
    lightning_indexer,
    moba_attention,
    moba_mask,
    sparse_attention,
    top_k_keys,
)

F64 = torch.float64
B, H, L, E, HI, DI = 2, 3, 12, 8, 4, 6


def _randn(*shape: int, seed: int) -> Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=F64)


def _indexer_inputs(grad: bool = False) -> tuple[Tensor, Tensor, Tensor]:
    return (_randn(B, L, HI, DI, seed=1).requires_grad_(grad),
            _randn(B, L, DI, seed=2).requires_grad_(grad),
            _randn(B, L, HI, seed=3).requires_grad_(grad))


def _selection_mask(indices: Tensor, valid: Tensor, S: int) -> Tensor:
    mask = torch.zeros(*indices.shape[:2], S, dtype=torch.bool)
    return mask.scatter_(-1, indices, valid)  # (B, L, S)


def test_lightning_indexer_is_the_papers_formula_and_causal() -> None:
    q, k, w = _indexer_inputs()
    got = lightning_indexer(q, k, w)
    for b in range(B):
        for t in range(L):
            for s in range(L):
                want = sum(float(w[b, t, j]) * max(float(q[b, t, j] @ k[b, s]), 0.0)
                           for j in range(HI)) if s <= t else -math.inf
                assert float(got[b, t, s]) == pytest.approx(want, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_top_k_equal_to_S_is_dense_causal_attention(dtype: torch.dtype) -> None:
    q, k, v = (_randn(B, H, L, E, seed=s).to(dtype).requires_grad_() for s in (4, 5, 6))
    indices, valid = top_k_keys(lightning_indexer(*(t.to(dtype) for t in _indexer_inputs())), L)
    ours = sparse_attention(q, k, v, indices, valid)
    dense = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    tol = 1e-12 if dtype == F64 else 2e-6
    torch.testing.assert_close(ours, dense, atol=tol, rtol=tol)
    for g, d in zip(torch.autograd.grad(ours.sum(), (q, k, v)),
                    torch.autograd.grad(dense.sum(), (q, k, v)), strict=True):
        torch.testing.assert_close(g, d, atol=tol, rtol=tol)


def test_top_k_attention_is_sdpa_with_the_selection_as_a_mask_and_respects_causality() -> None:
    q, k, v = (_randn(B, H, L, E, seed=s) for s in (7, 8, 9))
    kk = 4
    indices, valid = top_k_keys(lightning_indexer(*_indexer_inputs()), kk)
    selected = _selection_mask(indices, valid, L)
    assert bool((selected.sum(-1) == torch.arange(1, L + 1).clamp(max=kk)).all())
    assert not bool((selected & torch.ones(L, L, dtype=torch.bool).triu(1)).any())  # no future
    ours = sparse_attention(q, k, v, indices, valid)
    torch.testing.assert_close(ours, F.scaled_dot_product_attention(
        q, k, v, attn_mask=selected.unsqueeze(1)), atol=1e-12, rtol=1e-12)
    # the output at t does not move when the keys and values after t change
    k2, v2 = k.clone(), v.clone()
    k2[:, :, 6:] += 5.0
    v2[:, :, 6:] -= 3.0
    torch.testing.assert_close(sparse_attention(q, k2, v2, indices, valid)[:, :, :6],
                               ours[:, :, :6], atol=0, rtol=0)


def test_indexer_kl_loss_is_the_formula_and_its_gradient_is_softmax_minus_target() -> None:
    q, k, w = _indexer_inputs(grad=True)
    scores = lightning_indexer(q, k, w)
    logits = _randn(B, H, L, L, seed=10).masked_fill(torch.ones(L, L, dtype=torch.bool).triu(1),
                                                     -math.inf).requires_grad_()
    attn = torch.softmax(logits, -1)
    loss = indexer_kl_loss(scores, attn)
    p = attn.detach().sum(1) / H
    log_q = torch.log_softmax(scores.detach(), -1)
    direct = sum(float(p[b, t, s]) * (math.log(float(p[b, t, s])) - float(log_q[b, t, s]))
                 for b in range(B) for t in range(L) for s in range(t + 1)) / (B * L)
    assert float(loss.detach()) == pytest.approx(direct, rel=1e-10)
    (grad_scores,) = torch.autograd.grad(loss, scores, retain_graph=True)
    torch.testing.assert_close(grad_scores, (log_q.exp() - p) / (B * L))
    loss.backward()  # to the indexer's three inputs, never to the main attention
    assert all(t.grad is not None and float(t.grad.abs().sum()) > 0 for t in (q, k, w))
    assert logits.grad is None
    assert float(indexer_kl_loss(torch.log(p).masked_fill(p == 0, -math.inf), attn)) == \
        pytest.approx(0.0, abs=1e-12)


def test_indexer_kl_loss_over_the_selected_keys_renormalises_both_sides() -> None:
    scores = lightning_indexer(*_indexer_inputs())
    attn = torch.softmax(_randn(B, H, L, L, seed=11).masked_fill(
        torch.ones(L, L, dtype=torch.bool).triu(1), -math.inf), -1)
    indices, valid = top_k_keys(scores, 3)
    selected = _selection_mask(indices, valid, L)
    p = attn.sum(1) * selected
    p = p / p.sum(-1, keepdim=True)
    log_q = torch.log_softmax(scores.masked_fill(~selected, -math.inf), -1)
    direct = torch.where(p > 0, p * (p.log() - log_q), 0.0).sum(-1).mean()
    torch.testing.assert_close(indexer_kl_loss(scores, attn, selected), direct)


def test_indexer_trained_with_its_loss_moves_towards_the_attention() -> None:
    """A few steps of Adam on the indexer alone lower the KL loss (its purpose)."""
    q, k, w = _indexer_inputs(grad=True)
    attn = torch.softmax(_randn(B, H, L, L, seed=12).masked_fill(
        torch.ones(L, L, dtype=torch.bool).triu(1), -math.inf), -1)
    opt = torch.optim.Adam([q, k, w], lr=0.05)
    losses = []
    for _ in range(30):
        loss = indexer_kl_loss(lightning_indexer(q, k, w), attn)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.5 * losses[0]


@pytest.mark.parametrize("L_,block_size", [(12, 4), (13, 4), (7, 3)])
def test_moba_with_every_block_chosen_is_dense_causal_attention(L_: int, block_size: int) -> None:
    q, k, v = (_randn(B, H, L_, E, seed=s) for s in (13, 14, 15))
    nb = -(-L_ // block_size)
    torch.testing.assert_close(moba_attention(q, k, v, block_size, nb),
                               F.scaled_dot_product_attention(q, k, v, is_causal=True),
                               atol=1e-12, rtol=1e-12)


def test_moba_choice_is_causal_keeps_the_own_block_and_follows_the_gate() -> None:
    q, k, v = (_randn(B, H, 16, E, seed=s) for s in (16, 17, 18))
    bs, top = 4, 2
    allowed = moba_mask(q, k, bs, top)
    assert not bool((allowed & torch.ones(16, 16, dtype=torch.bool).triu(1)).any())
    own = torch.arange(16) // bs
    for t in range(16):
        assert bool(allowed[..., t, own[t] * bs:t + 1].all())  # its own block, causally
        chosen = allowed[..., t, :].view(B, H, 4, bs).any(-1)  # (B, H, 4 blocks)
        assert bool((chosen.sum(-1) == min(top, own[t] + 1)).all())
    # the gate: the one earlier block chosen by query 15 is the one of largest q . mean(K)
    means = k.view(B, H, 4, bs, E).mean(-2)
    gate = (q[:, :, 15:16] @ means.transpose(-2, -1)).squeeze(-2)[..., :3]  # earlier blocks
    best = gate.argmax(-1)  # (B, H)
    chosen = allowed[:, :, 15].view(B, H, 4, bs).any(-1)[..., :3]
    assert bool((chosen.float().argmax(-1) == best).all())
    torch.testing.assert_close(moba_attention(q, k, v, bs, top), F.scaled_dot_product_attention(
        q, k, v, attn_mask=allowed), atol=1e-12, rtol=1e-12)


def test_bad_arguments_are_refused() -> None:
    scores = lightning_indexer(*_indexer_inputs())
    with pytest.raises(ValueError, match="k"):
        top_k_keys(scores, L + 1)
    q = _randn(B, H, L, E, seed=19)
    indices, valid = top_k_keys(scores, 3)
    with pytest.raises(ValueError, match="indices"):
        sparse_attention(q, q, q, indices + L, valid)
    with pytest.raises(TypeError, match="valid"):
        sparse_attention(q, q, q, indices, valid.float())
    with pytest.raises(ValueError, match="attention_weights"):
        indexer_kl_loss(scores, torch.ones(B, H, L, L + 1, dtype=F64))
    with pytest.raises(ValueError, match="block_size"):
        moba_attention(q, q, q, 0, 1)
