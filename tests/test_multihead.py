"""attnlib.blocks.multihead: equality with torch.nn.MultiheadAttention(batch_first=True), and properties.

Mask conventions differ, and every translation below says so: our boolean ``attn_mask`` and
``key_padding_mask`` are True = may attend; PyTorch's module reads both as True = ignore, so it
gets ``~mask``. Our (B, L, S) and (B, H, L, S) masks become PyTorch's (B * H, L, S).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor, nn

from attnlib.blocks.masking import causal_mask, float_mask, lengths_to_mask
from attnlib.blocks.multihead import (
    MultiHeadAttention,
    copy_from_torch,
    merge_heads,
    parameter_count,
    split_heads,
)

# Deterministic in CI: the same examples on every run.
PROPERTY = settings(deadline=None, max_examples=15, derandomize=True)

# float64: tight; float32: loose, since PyTorch sums in another order (packed in-projection).
TOL = {torch.float32: 1e-5, torch.float64: 1e-10}

NAMES = [
    "q_proj.weight",
    "k_proj.weight",
    "v_proj.weight",
    "out_proj.weight",
    "q_proj.bias",
    "k_proj.bias",
    "v_proj.bias",
    "out_proj.bias",
]


@dataclass
class Case:
    """One comparison: module configuration, input sizes, and each side's mask arguments."""

    D: int = 8
    H: int = 2
    B: int = 2
    L: int = 5
    S: int = 5
    kdim: int | None = None
    vdim: int | None = None
    bias: bool = True
    self_attention: bool = False
    ours: dict[str, Any] = field(default_factory=dict)
    theirs: dict[str, Any] = field(default_factory=dict)


def random_bool(*shape: int, seed: int = 1) -> Tensor:
    """A random bool mask whose key 0 is always allowed, so no query row is fully masked."""
    mask = torch.rand(*shape, generator=torch.Generator().manual_seed(seed)) < 0.6
    mask[..., 0] = True
    return mask


def make_case(name: str, dtype: torch.dtype) -> Case:
    B, H, L, S = 2, 2, 4, 6
    ours: dict[str, Any]
    theirs: dict[str, Any]
    kpm = lengths_to_mask(torch.tensor([6, 3]), S)  # (B, S), True = real token
    if name == "self_attention":
        return Case(self_attention=True)
    if name == "cross_attention":
        return Case(L=L, S=S)
    if name == "kdim_vdim":
        return Case(L=L, S=S, kdim=5, vdim=7)
    if name == "bias_false":
        return Case(L=L, S=S, bias=False)
    if name == "kdim_vdim_bias_false":
        return Case(L=L, S=S, kdim=3, vdim=9, bias=False)
    if name == "four_heads":
        return Case(D=12, H=4, L=L, S=S)
    if name == "bool_mask_LS":
        m = random_bool(L, S)
        # PyTorch's boolean attn_mask is True = forbidden: pass ~m.
        return Case(L=L, S=S, ours={"attn_mask": m}, theirs={"attn_mask": ~m})
    if name == "bool_mask_BLS":
        m = random_bool(B, L, S)
        # True = forbidden in PyTorch, and it wants one mask per (batch, head): (B * H, L, S).
        inverted = (~m).repeat_interleave(H, dim=0)  # (B * H, L, S)
        return Case(L=L, S=S, ours={"attn_mask": m}, theirs={"attn_mask": inverted})
    if name == "bool_mask_BHLS":
        m = random_bool(B, H, L, S)
        inverted = (~m).reshape(B * H, L, S)  # (B * H, L, S), True = forbidden
        return Case(L=L, S=S, ours={"attn_mask": m}, theirs={"attn_mask": inverted})
    if name == "float_mask_LS":
        m = torch.randn(L, S, generator=torch.Generator().manual_seed(2), dtype=dtype)
        m[0, 2:] = float("-inf")  # a float mask is added to the scores on both sides
        return Case(L=L, S=S, ours={"attn_mask": m}, theirs={"attn_mask": m})
    if name == "key_padding":
        # Ours: True = real token. PyTorch's key_padding_mask: True = ignore, so pass ~kpm.
        return Case(L=L, S=S, ours={"key_padding_mask": kpm}, theirs={"key_padding_mask": ~kpm})
    if name == "causal":
        # PyTorch's module needs the mask itself; its is_causal is only a hint.
        theirs = {"attn_mask": ~causal_mask(L), "is_causal": True}  # True = forbidden
        return Case(L=L, S=L, self_attention=True, ours={"is_causal": True}, theirs=theirs)
    if name == "causal_key_padding":
        kpm = lengths_to_mask(torch.tensor([5, 2]), 5)  # (B, S)
        ours = {"is_causal": True, "key_padding_mask": kpm}
        # Both masks inverted for PyTorch (True = ignore).
        theirs = {"attn_mask": ~causal_mask(5), "is_causal": True, "key_padding_mask": ~kpm}
        return Case(L=5, S=5, self_attention=True, ours=ours, theirs=theirs)
    if name == "bool_mask_and_key_padding":
        m = random_bool(L, S)
        ours = {"attn_mask": m, "key_padding_mask": kpm}
        theirs = {"attn_mask": ~m, "key_padding_mask": ~kpm}  # both True = ignore in PyTorch
        return Case(L=L, S=S, ours=ours, theirs=theirs)
    if name == "float_mask_and_key_padding":
        m = torch.randn(L, S, generator=torch.Generator().manual_seed(2), dtype=dtype)
        ours = {"attn_mask": m, "key_padding_mask": kpm}
        # A float key_padding_mask is additive (0 / -inf), so it needs no inversion; PyTorch
        # warns when a bool key_padding_mask meets a float attn_mask, so give it the float one.
        theirs = {"attn_mask": m, "key_padding_mask": float_mask(kpm, dtype)}
        return Case(L=L, S=S, ours=ours, theirs=theirs)
    raise AssertionError(name)


CASES = [
    "self_attention",
    "cross_attention",
    "kdim_vdim",
    "bias_false",
    "kdim_vdim_bias_false",
    "four_heads",
    "bool_mask_LS",
    "bool_mask_BLS",
    "bool_mask_BHLS",
    "float_mask_LS",
    "key_padding",
    "causal",
    "causal_key_padding",
    "bool_mask_and_key_padding",
    "float_mask_and_key_padding",
]


def make_modules(
    case: Case, dtype: torch.dtype
) -> tuple[MultiHeadAttention, nn.MultiheadAttention]:
    """PyTorch's module with random biases (its own are 0) and ours with a copy of its weights."""
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(
        case.D, case.H, bias=case.bias, kdim=case.kdim, vdim=case.vdim, batch_first=True,
        dtype=dtype,
    )
    with torch.no_grad():
        for name, p in ref.named_parameters():
            if name.endswith("bias"):
                p.normal_()
    ours = MultiHeadAttention(
        case.D, case.H, bias=case.bias, kdim=case.kdim, vdim=case.vdim, dtype=dtype
    )
    return copy_from_torch(ours, ref), ref


def theirs_by_our_names(ref: nn.MultiheadAttention, grads: dict[str, Tensor]) -> dict[str, Tensor]:
    """PyTorch's parameter gradients, unpacked and renamed to ours."""
    out: dict[str, Tensor] = {}
    if "in_proj_weight" in grads:
        out["q_proj.weight"], out["k_proj.weight"], out["v_proj.weight"] = grads[
            "in_proj_weight"
        ].chunk(3)
    else:
        for x in "qkv":
            out[f"{x}_proj.weight"] = grads[f"{x}_proj_weight"]
    if "in_proj_bias" in grads:
        out["q_proj.bias"], out["k_proj.bias"], out["v_proj.bias"] = grads["in_proj_bias"].chunk(3)
        out["out_proj.bias"] = grads["out_proj.bias"]
    out["out_proj.weight"] = grads["out_proj.weight"]
    return out


def run(
    module: nn.Module, case: Case, dtype: torch.dtype, kwargs: dict[str, Any]
) -> dict[str, Tensor]:
    """Forward and backward; returns output, weights and every gradient, by name."""
    g = torch.Generator().manual_seed(3)
    kd, vd = case.kdim or case.D, case.vdim or case.D
    query = torch.randn(case.B, case.L, case.D, generator=g, dtype=dtype).requires_grad_()
    if case.self_attention:
        key = value = query
        inputs = {"query": query}
    else:
        key = torch.randn(case.B, case.S, kd, generator=g, dtype=dtype).requires_grad_()
        value = torch.randn(case.B, case.S, vd, generator=g, dtype=dtype).requires_grad_()
        inputs = {"query": query, "key": key, "value": value}
    out, weights = module(query, key, value, **kwargs)
    loss = (out * torch.randn(out.shape, generator=g, dtype=dtype)).sum()
    if weights is not None:
        loss = loss + (weights * torch.randn(weights.shape, generator=g, dtype=dtype)).sum()
    params = dict(module.named_parameters())
    grads = torch.autograd.grad(loss, [*inputs.values(), *params.values()])
    result = {"output": out.detach()}
    if weights is not None:
        result["weights"] = weights.detach()
    result.update({f"grad {n}": gr for n, gr in zip(inputs, grads, strict=False)})
    param_grads = dict(zip(params, grads[len(inputs) :], strict=True))
    if isinstance(module, nn.MultiheadAttention):
        param_grads = theirs_by_our_names(module, param_grads)
    result.update({f"grad {n}": gr for n, gr in param_grads.items()})
    return result


@pytest.mark.parametrize("weights", ["none", "per_head", "average"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("name", CASES)
def test_matches_pytorch_forward_and_backward(name: str, dtype: torch.dtype, weights: str) -> None:
    case = make_case(name, dtype)
    ours, ref = make_modules(case, dtype)
    flags = {"need_weights": weights != "none", "average_attn_weights": weights == "average"}
    a = run(ours, case, dtype, {**case.ours, **flags})
    b = run(ref, case, dtype, {**case.theirs, **flags})
    expected = {"output", *(f"grad {n}" for n in ("query", "key", "value"))}
    expected = {"output", "grad query"} if case.self_attention else expected
    expected |= {f"grad {n}" for n in NAMES if case.bias or n.endswith("weight")}
    if weights != "none":
        expected.add("weights")
    assert set(a) == set(b) == expected
    for key in sorted(expected):
        assert a[key].shape == b[key].shape, key
        torch.testing.assert_close(a[key], b[key], atol=TOL[dtype], rtol=0, msg=key)
    if weights == "per_head":
        assert a["weights"].shape == (case.B, case.H, case.L, case.S)
    if weights == "average":
        assert a["weights"].shape == (case.B, case.L, case.S)


@pytest.mark.parametrize("need_weights", [False, True], ids=["fused", "explicit"])
def test_dropout_matches_pytorch_under_the_same_seed(need_weights: bool) -> None:
    """Dropout draws the same random numbers as PyTorch's module: same outputs, same weights."""
    ref = nn.MultiheadAttention(8, 2, dropout=0.3, batch_first=True, dtype=torch.float64)
    ours = MultiHeadAttention.from_torch(ref)
    assert ours.dropout == 0.3
    x = torch.randn(2, 5, 8, dtype=torch.float64)
    torch.manual_seed(7)
    a, wa = ours(x, x, x, need_weights=need_weights)
    torch.manual_seed(7)
    b, wb = ref(x, x, x, need_weights=need_weights, average_attn_weights=False)
    torch.testing.assert_close(a, b, atol=1e-10, rtol=0)
    if need_weights:
        assert wa is not None and wb is not None and bool((wa == 0).any())
        torch.testing.assert_close(wa, wb, atol=1e-10, rtol=0)


def test_dropout_only_in_training() -> None:
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, dropout=0.5).double()
    plain = MultiHeadAttention(8, 2).double()
    plain.load_state_dict(mha.state_dict())
    x = torch.randn(2, 6, 8, dtype=torch.float64)
    mha.train()
    out1, w1 = mha(x, x, x, need_weights=True)
    out2, _ = mha(x, x, x, need_weights=True)
    assert w1 is not None and bool((w1 == 0).any())
    assert not torch.allclose(out1, out2)
    mha.eval()
    out3, w3 = mha(x, x, x, need_weights=True)
    out4, _ = mha(x, x, x)
    ref, w_ref = plain(x, x, x, need_weights=True)
    torch.testing.assert_close(out3, out4, atol=1e-12, rtol=0)
    torch.testing.assert_close(out3, ref, atol=0, rtol=0)
    assert w3 is not None and w_ref is not None
    torch.testing.assert_close(w3.sum(-1), torch.ones(2, 2, 6, dtype=torch.float64))


@pytest.mark.parametrize(
    ("kdim", "vdim", "bias"), [(None, None, True), (5, 7, True), (None, None, False), (3, 8, False)]
)
def test_initialisation_is_pytorchs_under_the_same_seed(
    kdim: int | None, vdim: int | None, bias: bool
) -> None:
    torch.manual_seed(0)
    ours = MultiHeadAttention(8, 2, bias=bias, kdim=kdim, vdim=vdim)
    torch.manual_seed(0)
    ref = nn.MultiheadAttention(8, 2, bias=bias, kdim=kdim, vdim=vdim, batch_first=True)
    copied = copy_from_torch(MultiHeadAttention(8, 2, bias=bias, kdim=kdim, vdim=vdim), ref)
    for (name, a), (_, b) in zip(
        ours.named_parameters(), copied.named_parameters(), strict=True
    ):
        assert torch.equal(a, b), name
    if bias:
        assert all(bool((p == 0).all()) for n, p in ours.named_parameters() if "bias" in n)


def test_from_torch_gives_an_equal_module() -> None:
    ref = nn.MultiheadAttention(6, 3, kdim=4, vdim=5, batch_first=True, dtype=torch.float64)
    ours = MultiHeadAttention.from_torch(ref)
    assert (ours.embed_dim, ours.num_heads, ours.head_dim, ours.kdim, ours.vdim) == (6, 3, 2, 4, 5)
    assert ours.q_proj.weight.dtype == torch.float64
    q = torch.randn(2, 3, 6, dtype=torch.float64)
    k, v = torch.randn(2, 4, 4, dtype=torch.float64), torch.randn(2, 4, 5, dtype=torch.float64)
    torch.testing.assert_close(ours(q, k, v)[0], ref(q, k, v)[0], atol=1e-10, rtol=0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"embed_dim": 12}, r"embed_dim differs.*8.*12"),
        ({"num_heads": 4}, r"num_heads differs.*2.*4"),
        ({"kdim": 5}, r"kdim differs.*8.*5"),
        ({"vdim": 3}, r"vdim differs.*8.*3"),
        ({"bias": False}, r"bias differs"),
        ({"add_bias_kv": True}, r"add_bias_kv"),
    ],
)
def test_copy_from_torch_refuses_a_different_configuration(
    kwargs: dict[str, Any], message: str
) -> None:
    config: dict[str, Any] = {"embed_dim": 8, "num_heads": 2, **kwargs}
    ref = nn.MultiheadAttention(**config, batch_first=True)
    with pytest.raises(ValueError, match=message):
        copy_from_torch(MultiHeadAttention(8, 2), ref)


@pytest.mark.parametrize(
    ("D", "H", "kdim", "vdim", "bias"),
    [(8, 2, None, None, True), (8, 8, None, None, True), (12, 3, 5, 7, True),
     (16, 4, None, None, False), (6, 1, 2, 9, False)],
)
def test_parameter_count(D: int, H: int, kdim: int | None, vdim: int | None, bias: bool) -> None:
    n = parameter_count(D, H, kdim, vdim, bias)
    ours = MultiHeadAttention(D, H, bias=bias, kdim=kdim, vdim=vdim)
    ref = nn.MultiheadAttention(D, H, bias=bias, kdim=kdim, vdim=vdim, batch_first=True)
    assert n == sum(p.numel() for p in ours.parameters())
    assert n == sum(p.numel() for p in ref.parameters())
    if kdim is None and vdim is None:
        assert n == 4 * D * D + (4 * D if bias else 0)
    # The number of heads does not change the count.
    assert n == parameter_count(D, 1, kdim, vdim, bias)


def test_split_and_merge_heads() -> None:
    x = torch.randn(2, 5, 12)
    heads = split_heads(x, 3)
    assert heads.shape == (2, 3, 5, 4)
    for h in range(3):
        assert torch.equal(heads[:, h], x[..., 4 * h : 4 * (h + 1)])
    assert torch.equal(merge_heads(heads), x)
    y = torch.randn(2, 3, 5, 4)
    assert torch.equal(split_heads(merge_heads(y), 3), y)


def test_per_head_weights() -> None:
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 4).double()
    q, kv = torch.randn(2, 3, 8, dtype=torch.float64), torch.randn(2, 6, 8, dtype=torch.float64)
    kpm = lengths_to_mask(torch.tensor([6, 4]), 6)
    out, w = mha(q, kv, kv, key_padding_mask=kpm, need_weights=True)
    _, w_avg = mha(q, kv, kv, key_padding_mask=kpm, need_weights=True, average_attn_weights=True)
    assert w is not None and w_avg is not None and w.shape == (2, 4, 3, 6)
    torch.testing.assert_close(w.sum(-1), torch.ones(2, 4, 3, dtype=torch.float64))
    assert bool((w[1, :, :, 4:] == 0).all())
    torch.testing.assert_close(w_avg, w.mean(dim=1), atol=1e-12, rtol=0)
    # The output is out_proj of the heads' weighted values, concatenated.
    v = split_heads(mha.v_proj(kv), 4)  # (B, H, S, E)
    torch.testing.assert_close(out, mha.out_proj(merge_heads(w @ v)), atol=1e-12, rtol=0)


def test_query_with_no_key_gets_zero_weights_not_nan() -> None:
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 4, 8, requires_grad=True)
    kpm = lengths_to_mask(torch.tensor([4, 0]), 4)  # the second sequence has no real token
    out, w = mha(x, x, x, key_padding_mask=kpm, need_weights=True)
    assert w is not None and bool((w[1] == 0).all())
    torch.testing.assert_close(out[1], mha.out_proj.bias.expand(4, 8).detach())
    out.sum().backward()
    assert x.grad is not None and bool(torch.isfinite(x.grad).all())
    # What the class docstring says of PyTorch: NaN there when asked for weights.
    ref = nn.MultiheadAttention(8, 2, batch_first=True)
    _, ref_w = ref(x, x, x, key_padding_mask=~kpm)  # PyTorch: True = ignore
    assert bool(torch.isnan(ref_w[1]).all())


@PROPERTY
@given(seed=st.integers(0, 2**16), L=st.integers(2, 7), H=st.sampled_from([1, 2, 4]))
def test_self_attention_is_permutation_equivariant(seed: int, L: int, H: int) -> None:
    """Without positions, shuffling the tokens shuffles the outputs and the weights alike."""
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    mha = MultiHeadAttention(8, H).double()
    x = torch.randn(2, L, 8, generator=g, dtype=torch.float64)
    lengths = torch.randint(1, L + 1, (2,), generator=g)
    kpm = lengths_to_mask(lengths, L)
    perm = torch.randperm(L, generator=g)
    out, w = mha(x, x, x, key_padding_mask=kpm, need_weights=True)
    xp = x[:, perm]
    out_p, w_p = mha(xp, xp, xp, key_padding_mask=kpm[:, perm], need_weights=True)
    assert w is not None and w_p is not None
    torch.testing.assert_close(out_p, out[:, perm], atol=1e-10, rtol=0)
    torch.testing.assert_close(w_p, w[:, :, perm][..., perm], atol=1e-10, rtol=0)


def test_causal_mask_is_not_permutation_equivariant() -> None:
    """The control for the test above: a causal mask makes order matter, so it can fail."""
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2).double()
    x = torch.randn(1, 5, 8, dtype=torch.float64)
    perm = torch.tensor([4, 3, 2, 1, 0])
    out, _ = mha(x, x, x, is_causal=True)
    out_p, _ = mha(x[:, perm], x[:, perm], x[:, perm], is_causal=True)
    assert not torch.allclose(out_p, out[:, perm])


def call(mha: MultiHeadAttention, q: tuple[int, ...], k: tuple[int, ...],
         v: tuple[int, ...], **kwargs: Any) -> None:
    mha(torch.randn(q), torch.randn(k), torch.randn(v), **kwargs)


BAD_CALLS: list[tuple[str, Any, type[Exception], str]] = [
    ("rank_query", lambda m: call(m, (5, 8), (2, 6, 5), (2, 6, 7)), ValueError,
     r"query must have 3 dimensions \(B, L, embed_dim\), got shape \(5, 8\)"),
    ("rank_key", lambda m: call(m, (2, 5, 8), (1, 2, 6, 5), (2, 6, 7)), ValueError,
     r"key must have 3 dimensions.*\(1, 2, 6, 5\)"),
    ("embed_dim", lambda m: call(m, (2, 5, 6), (2, 6, 5), (2, 6, 7)), ValueError,
     r"query must have shape \(B, L, embed_dim\) with embed_dim = 8, got shape \(2, 5, 6\)"),
    ("kdim", lambda m: call(m, (2, 5, 8), (2, 6, 8), (2, 6, 7)), ValueError,
     r"key must have shape \(B, S, kdim\) with kdim = 5, got shape \(2, 6, 8\)"),
    ("vdim", lambda m: call(m, (2, 5, 8), (2, 6, 5), (2, 6, 8)), ValueError,
     r"value must have shape \(B, S, vdim\) with vdim = 7, got shape \(2, 6, 8\)"),
    ("length", lambda m: call(m, (2, 5, 8), (2, 6, 5), (2, 4, 7)), ValueError,
     r"same length S.*key of shape \(2, 6, 5\) and value of shape \(2, 4, 7\)"),
    ("batch", lambda m: call(m, (3, 5, 8), (2, 6, 5), (2, 6, 7)), ValueError,
     r"same batch size B.*query of shape \(3, 5, 8\)"),
    ("mask_LS", lambda m: call(m, (2, 5, 8), (2, 6, 5), (2, 6, 7),
                               attn_mask=torch.ones(5, 7, dtype=torch.bool)), ValueError,
     r"attn_mask of shape \(5, 7\) does not broadcast.*\(L, S\) \(5, 6\)"),
    ("mask_heads", lambda m: call(m, (2, 5, 8), (2, 6, 5), (2, 6, 7),
                                  attn_mask=torch.ones(2, 3, 5, 6, dtype=torch.bool)), ValueError,
     r"attn_mask of shape \(2, 3, 5, 6\).*\(B, H, L, S\) \(2, 2, 5, 6\)"),
    ("mask_BLS", lambda m: call(m, (2, 5, 8), (2, 6, 5), (2, 6, 7),
                                attn_mask=torch.ones(3, 5, 6, dtype=torch.bool)), ValueError,
     r"attn_mask of shape \(3, 5, 6\).*\(B, L, S\) \(2, 5, 6\)"),
    ("mask_rank", lambda m: call(m, (2, 5, 8), (2, 6, 5), (2, 6, 7),
                                 attn_mask=torch.ones(1, 2, 2, 5, 6, dtype=torch.bool)),
     ValueError, r"attn_mask must have 2, 3 or 4 dimensions.*\(1, 2, 2, 5, 6\)"),
    ("mask_int", lambda m: call(m, (2, 5, 8), (2, 6, 5), (2, 6, 7),
                                attn_mask=torch.ones(5, 6, dtype=torch.int64)), TypeError,
     r"attn_mask must be a bool tensor.*got dtype torch.int64"),
    ("mask_float_dtype", lambda m: call(m, (2, 5, 8), (2, 6, 5), (2, 6, 7),
                                        attn_mask=torch.zeros(5, 6, dtype=torch.float64)),
     TypeError, r"attn_mask is a float mask of dtype torch.float64"),
    ("kpm_shape", lambda m: call(m, (2, 5, 8), (2, 6, 5), (2, 6, 7),
                                 key_padding_mask=torch.ones(2, 5, dtype=torch.bool)),
     ValueError, r"key_padding_mask must have shape \(B, S\) = \(2, 6\), got shape \(2, 5\)"),
    ("kpm_dtype", lambda m: call(m, (2, 5, 8), (2, 6, 5), (2, 6, 7),
                                 key_padding_mask=torch.zeros(2, 6)),
     TypeError, r"key_padding_mask must be a bool tensor, True = real token"),
    ("mask_and_causal", lambda m: call(m, (2, 5, 8), (2, 6, 5), (2, 6, 7), is_causal=True,
                                       attn_mask=torch.ones(5, 6, dtype=torch.bool)),
     ValueError, r"attn_mask and is_causal=True cannot both be given"),
    ("input_dtype", lambda m: m(torch.randn(2, 5, 8, dtype=torch.float64),
                                torch.randn(2, 6, 5), torch.randn(2, 6, 7)),
     TypeError, r"query must have the parameters' dtype torch.float32, got torch.float64"),
    ("integer_input", lambda m: m(torch.ones(2, 5, 8, dtype=torch.int64),
                                  torch.randn(2, 6, 5), torch.randn(2, 6, 7)),
     TypeError, r"query must have a floating-point dtype"),
    ("positional_kpm", lambda m: m(torch.randn(2, 5, 8), torch.randn(2, 6, 5),
                                   torch.randn(2, 6, 7), torch.ones(2, 6, dtype=torch.bool)),
     TypeError, r"positional argument"),
]


@pytest.mark.parametrize(("bad", "error", "message"), [c[1:] for c in BAD_CALLS],
                         ids=[c[0] for c in BAD_CALLS])
def test_bad_forward_inputs(bad: Any, error: type[Exception], message: str) -> None:
    mha = MultiHeadAttention(8, 2, kdim=5, vdim=7)
    with pytest.raises(error, match=message):
        bad(mha)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"embed_dim": 10, "num_heads": 3}, ValueError,
         r"embed_dim must be divisible by num_heads, got embed_dim = 10 and num_heads = 3"),
        ({"embed_dim": 8, "num_heads": 0}, ValueError, r"num_heads must be >= 1, got 0"),
        ({"embed_dim": 8.0, "num_heads": 2}, TypeError, r"embed_dim must be an int"),
        ({"embed_dim": 8, "num_heads": 2, "dropout": 1.5}, ValueError,
         r"dropout must be in \[0, 1\), got 1.5"),
        ({"embed_dim": 8, "num_heads": 2, "dropout": -0.1}, ValueError, r"dropout.*-0.1"),
        ({"embed_dim": 8, "num_heads": 2, "kdim": 0}, ValueError, r"kdim must be >= 1, got 0"),
    ],
)
def test_bad_construction(kwargs: dict[str, Any], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        MultiHeadAttention(**kwargs)


def test_bad_helper_inputs() -> None:
    with pytest.raises(ValueError, match=r"x's last size D = 8 and num_heads = 3"):
        split_heads(torch.randn(2, 5, 8), 3)
    with pytest.raises(
        ValueError, match=r"x must have 3 dimensions \(B, L, D\), got shape \(5, 8\)"
    ):
        split_heads(torch.randn(5, 8), 2)
    with pytest.raises(ValueError, match=r"x must have 4 dimensions \(B, H, L, E\).*\(2, 5, 8\)"):
        merge_heads(torch.randn(2, 5, 8))
    with pytest.raises(ValueError, match=r"embed_dim = 10 and num_heads = 4"):
        parameter_count(10, 4)
