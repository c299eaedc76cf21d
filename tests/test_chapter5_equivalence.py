"""Chapter 5's claims about attnlib's MultiHeadAttention against torch.nn.MultiheadAttention.

Chapter 5 (section "The same numbers as torch.nn.MultiheadAttention") states that the two
modules compute the same numbers once the arguments are translated, and lists the deliberate
differences; on the page it shows one case (a causal boolean ``attn_mask`` with a key-padding
mask, in float64) and the trap (PyTorch given our mask unchanged). These tests are the checks
behind those sentences: the equality, forward and backward, on the
chapter's cases including a boolean ``attn_mask`` and ``is_causal``, and each difference,
PyTorch's side included (if a PyTorch release changes one, a test here fails and the
chapter's table must change with it).

PyTorch's module reads a boolean ``attn_mask`` and ``key_padding_mask`` as True = ignore, so it
gets ``~mask`` wherever ours gets ``mask``.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
from torch import Tensor, nn

from attnlib.blocks.masking import causal_mask, lengths_to_mask
from attnlib.blocks.multihead import MultiHeadAttention

# float64: tight; float32: loose, since PyTorch sums in another order (packed in-projection).
TOL = {torch.float32: 1e-5, torch.float64: 1e-10}
D, H, B, L = 16, 4, 3, 4

CASES = [
    "self-attention",
    "cross-attention",
    "padded keys",
    "bool attn_mask (L, S)",
    "bool attn_mask (B, L, S)",
    "bool attn_mask and padded keys",
    "causal",
    "causal and padded keys",
]


def modules(dtype: torch.dtype) -> tuple[MultiHeadAttention, nn.MultiheadAttention]:
    """PyTorch's module with random biases (its own start at 0) and ours with a copy."""
    torch.manual_seed(1)
    ref = nn.MultiheadAttention(D, H, batch_first=True, dtype=dtype)
    with torch.no_grad():
        for name, p in ref.named_parameters():
            if name.endswith("bias"):
                p.normal_()
    return MultiHeadAttention.from_torch(ref), ref


def allowed(*shape: int, seed: int = 2) -> Tensor:
    """A random boolean mask, True = may attend; key 0 always allowed (no empty row)."""
    mask = torch.rand(*shape, generator=torch.Generator().manual_seed(seed)) < 0.6
    mask[..., 0] = True
    return mask


def arguments(case: str) -> tuple[int, bool, dict[str, Any], dict[str, Any]]:
    """S, whether it is self-attention, and the mask arguments for ours and for PyTorch's."""
    S = 7
    kpm = lengths_to_mask(torch.tensor([7, 5, 2]), S)  # (B, S), True = real token
    if case == "self-attention":
        return L, True, {}, {}
    if case == "cross-attention":
        return S, False, {}, {}
    if case == "padded keys":
        return S, False, {"key_padding_mask": kpm}, {"key_padding_mask": ~kpm}
    if case == "bool attn_mask (L, S)":
        m = allowed(L, S)
        return S, False, {"attn_mask": m}, {"attn_mask": ~m}
    if case == "bool attn_mask (B, L, S)":
        m = allowed(B, L, S)
        # PyTorch wants one mask per sequence and head, (B * H, L, S), True = forbidden.
        theirs = (~m).repeat_interleave(H, dim=0)  # (B * H, L, S)
        return S, False, {"attn_mask": m}, {"attn_mask": theirs}
    if case == "bool attn_mask and padded keys":
        m = allowed(L, S)
        return (S, False, {"attn_mask": m, "key_padding_mask": kpm},
                {"attn_mask": ~m, "key_padding_mask": ~kpm})
    if case == "causal":
        # Ours applies the causal mask itself; PyTorch's is_causal is a hint that needs the mask.
        return L, True, {"is_causal": True}, {"attn_mask": ~causal_mask(L), "is_causal": True}
    if case == "causal and padded keys":
        kpm = lengths_to_mask(torch.tensor([4, 3, 1]), L)  # (B, L)
        return (L, True, {"is_causal": True, "key_padding_mask": kpm},
                {"attn_mask": ~causal_mask(L), "is_causal": True, "key_padding_mask": ~kpm})
    raise AssertionError(case)


def forward_backward(
    module: nn.Module, q: Tensor, kv: Tensor, self_attention: bool, kwargs: dict[str, Any]
) -> tuple[Tensor, Tensor, list[Tensor], dict[str, Tensor]]:
    """Output, per-head weights, input gradients and parameter gradients by name."""
    qi = q.clone().requires_grad_(True)
    kvi = qi if self_attention else kv.clone().requires_grad_(True)  # X, X, X
    out, w = module(qi, kvi, kvi, need_weights=True, average_attn_weights=False, **kwargs)
    g = torch.Generator().manual_seed(3)
    loss = (out * torch.randn(out.shape, generator=g, dtype=out.dtype)).sum()
    loss = loss + (w * torch.randn(w.shape, generator=g, dtype=w.dtype)).sum()
    inputs = [qi] if self_attention else [qi, kvi]
    params = dict(module.named_parameters())
    grads = torch.autograd.grad(loss, [*inputs, *params.values()])
    return out.detach(), w.detach(), list(grads[: len(inputs)]), dict(
        zip(params, grads[len(inputs):], strict=True))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case", CASES)
def test_same_numbers_forward_and_backward(case: str, dtype: torch.dtype) -> None:
    """Output, per-head weights, input and parameter gradients within 1e-5 (f32), 1e-10 (f64)."""
    ours, ref = modules(dtype)
    S, self_attention, ours_kwargs, theirs_kwargs = arguments(case)
    g = torch.Generator().manual_seed(4)
    q = torch.randn(B, L, D, generator=g, dtype=dtype)  # (B, L, D)
    kv = torch.randn(B, S, D, generator=g, dtype=dtype)  # (B, S, D)
    o1, w1, x1, p1 = forward_backward(ours, q, kv, self_attention, ours_kwargs)
    o2, w2, x2, p2 = forward_backward(ref, q, kv, self_attention, theirs_kwargs)
    close = {"atol": TOL[dtype], "rtol": 0.0}
    torch.testing.assert_close(o1, o2, **close, msg="output")
    torch.testing.assert_close(w1, w2, **close, msg="per-head weights")
    for a, b in zip(x1, x2, strict=True):
        torch.testing.assert_close(a, b, **close, msg="input gradient")
    # PyTorch packs W^Q, W^K, W^V (and their biases) in one in_proj: unpack to compare.
    packed_w = torch.cat([p1[f"{x}_proj.weight"] for x in "qkv"])  # (3D, D)
    packed_b = torch.cat([p1[f"{x}_proj.bias"] for x in "qkv"])  # (3D,)
    torch.testing.assert_close(packed_w, p2["in_proj_weight"], **close)
    torch.testing.assert_close(packed_b, p2["in_proj_bias"], **close)
    for name in ("out_proj.weight", "out_proj.bias"):
        torch.testing.assert_close(p1[name], p2[name], **close, msg=name)


def test_our_masks_unchanged_mean_the_opposite_to_pytorch() -> None:
    """Both boolean masks: what ours allows, PyTorch's module forbids."""
    ours, ref = modules(torch.float64)
    q, kv = torch.randn(B, L, D, dtype=torch.float64), torch.randn(B, 7, D, dtype=torch.float64)
    m = allowed(L, 7)
    kpm = lengths_to_mask(torch.tensor([7, 5, 2]), 7)  # (B, S)
    with torch.no_grad():
        _, w_attn = ref(q, kv, kv, attn_mask=m, average_attn_weights=False)  # (B, H, L, S)
        _, w_kpm = ref(q, kv, kv, key_padding_mask=kpm, average_attn_weights=False)
        _, w_ours = ours(q, kv, kv, attn_mask=m, need_weights=True)
    assert bool((w_attn[:, :, m] == 0).all())  # PyTorch puts no weight where ours may attend
    assert bool((w_ours[:, :, ~m] == 0).all())  # and ours none where PyTorch may
    real = kpm[1:, None, None, :].expand_as(w_kpm[1:])  # (2, H, L, S): sequences 2 and 3
    assert float(w_kpm[1:][real].sum()) == 0.0  # all weight on the padding


def test_the_chapters_trap_gives_nan_for_a_sequence_without_padding() -> None:
    """The chapter's trap: our key_padding_mask given to PyTorch unchanged masks every key of a
    full-length sequence, and PyTorch's module returns NaN there (in eval mode, with or without
    weights, and in training mode with weights); ours gives such a query zero weights and out_proj's bias."""
    torch.manual_seed(1)
    ref = nn.MultiheadAttention(16, 4, batch_first=True).eval()
    x = torch.randn(2, 7, 16)  # (B, S, D)
    mask = lengths_to_mask(torch.tensor([7, 5]), 7)  # (B, S), True = real token
    for need_weights in (True, False):
        with torch.no_grad():
            wrong, _ = ref(x, x, x, key_padding_mask=mask, need_weights=need_weights)
        assert bool(wrong[0].isnan().all()) and not bool(wrong[1].isnan().any())
    ref.train()  # no dropout: the module was built with dropout 0
    with torch.no_grad():
        wrong, _ = ref(x, x, x, key_padding_mask=mask, need_weights=True)
    ref.eval()
    assert bool(wrong[0].isnan().all())
    ours = MultiHeadAttention.from_torch(ref)
    with torch.no_grad():
        out, w = ours(x, x, x, key_padding_mask=~mask, need_weights=True)  # row 1: no key
    assert w is not None and bool((w[0] == 0).all())
    torch.testing.assert_close(out[0], ours.out_proj.bias.expand(7, 16))


def test_is_causal_is_the_mask_here_and_a_hint_in_pytorch() -> None:
    ours, ref = modules(torch.float32)
    x = torch.randn(B, L, D)  # (B, L, D)
    everything = torch.ones(L, L, dtype=torch.bool)  # ours: every key allowed
    with torch.no_grad():
        causal, _ = ours(x, x, x, is_causal=True)
        unmasked, _ = ours(x, x, x)
        with pytest.raises(RuntimeError, match="Need attn_mask"):
            ref(x, x, x, is_causal=True)  # PyTorch: the hint needs the mask itself
        # A wrong hint: on the path taken in training mode without weights, PyTorch applies
        # the causal pattern and ignores the (non-causal) mask it was given.
        ref.train()
        hinted, _ = ref(x, x, x, attn_mask=~everything, is_causal=True, need_weights=False)
        ref.eval()
    torch.testing.assert_close(hinted, causal, atol=1e-5, rtol=0)
    assert float((hinted - unmasked).abs().max()) > 0.1
    with pytest.raises(ValueError, match="cannot both be given"):
        ours(x, x, x, is_causal=True, attn_mask=everything)


def test_attn_mask_shapes_differ() -> None:
    """Ours takes a (B, L, S) mask; PyTorch's module wants (L, S) or (B * H, L, S)."""
    ours, ref = modules(torch.float32)
    x = torch.randn(B, L, D)
    m = allowed(B, L, L)  # (B, L, S)
    with torch.no_grad():
        ours(x, x, x, attn_mask=m)
        with pytest.raises(RuntimeError, match="3D attn_mask"):
            ref(x, x, x, attn_mask=~m)


def test_defaults_and_keyword_only_arguments_differ() -> None:
    ours, ref = modules(torch.float32)
    x = torch.randn(B, L, D)
    with torch.no_grad():
        assert ours(x, x, x)[1] is None  # need_weights=False by default here
        w = ref(x, x, x)[1]  # PyTorch: need_weights=True, averaged over heads by default
        assert w is not None and w.shape == (B, L, L)
        mask = torch.ones(B, L, dtype=torch.bool)
        ref(x, x, x, ~mask)  # PyTorch's fourth positional argument is key_padding_mask
        with pytest.raises(TypeError):
            ours(x, x, x, mask)  # type: ignore[misc]  # keyword-only here
