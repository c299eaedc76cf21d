"""Chapter 3's claim that attnlib's scaled_dot_product_attention equals PyTorch's.

Chapter 3 (section "Equal to PyTorch, forward and backward") states that, on the nine cases
below, in float32 and float64, both paths of :func:`attnlib.blocks.attention.scaled_dot_product_attention`
give the output and the gradients with respect to query, key and value of
:func:`torch.nn.functional.scaled_dot_product_attention`: the fused path (``need_weights=False``)
bit for bit, since it calls PyTorch, and the explicit path (``need_weights=True``), which
computes in another order, to rounding. The chapter names the cases and this file; the
comparison, which once ran as a cell of the chapter, is here, where a difference fails.
``tests/test_attention.py`` has more masks and shapes, and the properties.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from attnlib.blocks.attention import scaled_dot_product_attention
from attnlib.blocks.masking import padding_mask

# float64: tight; float32: loose, since the explicit path sums in another order than PyTorch.
TOL = {torch.float32: 1e-5, torch.float64: 1e-10}


def _qkv(L: int, S: int, Ev: int = 8) -> list[Tensor]:
    """(B, H, L, E), (B, H, S, E), (B, H, S, Ev) in float64, with B = 2, H = 3, E = 8."""
    g = torch.Generator().manual_seed(4)
    shapes = ((2, 3, L, 8), (2, 3, S, 8), (2, 3, S, Ev))
    return [torch.randn(shape, generator=g, dtype=torch.float64) for shape in shapes]


def _bias() -> Tensor:
    """A float (L, S) = (4, 6) mask: random scores added, -inf for keys 3..5 of query 0."""
    bias = torch.randn(4, 6, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    bias[0, 3:] = float("-inf")
    return bias


# The chapter's cases, by the names it lists: (L, S, Ev, keyword arguments).
CASES: dict[str, tuple[int, int, int, dict[str, Any]]] = {
    "no mask, L = S": (6, 6, 8, {}),
    "no mask, L != S, Ev != E": (4, 6, 5, {}),
    "bool padding mask (B, 1, 1, S)": (
        4, 6, 8, {"attn_mask": padding_mask(torch.tensor([6, 2]), 6)}),
    "float mask (L, S) with -inf": (4, 6, 8, {"attn_mask": _bias()}),
    "is_causal, L = S": (6, 6, 8, {"is_causal": True}),
    "is_causal, L < S": (3, 6, 8, {"is_causal": True}),
    "is_causal, L > S": (6, 3, 8, {"is_causal": True}),
    "fully masked rows": (4, 6, 8, {"attn_mask": padding_mask(torch.tensor([6, 0]), 6)}),
    "scale = 0.3": (4, 6, 8, {"scale": 0.3}),
}


def _forward_backward(fn: Any, qkv: list[Tensor], kwargs: dict[str, Any]) -> list[Tensor]:
    """The output and the gradients of a fixed random loss with respect to q, k and v."""
    q, k, v = (t.clone().requires_grad_() for t in qkv)
    out = fn(q, k, v, **kwargs)
    out = out[0] if isinstance(out, tuple) else out
    g = torch.Generator().manual_seed(2)
    grad_out = torch.randn(out.shape, generator=g, dtype=out.dtype)
    return [out.detach(), *torch.autograd.grad(out, (q, k, v), grad_out)]


def _inputs(case: str, dtype: torch.dtype) -> tuple[list[Tensor], dict[str, Any]]:
    L, S, Ev, kwargs = CASES[case]
    kw = {key: val.to(dtype) if isinstance(val, Tensor) and val.is_floating_point() else val
          for key, val in kwargs.items()}
    return [t.to(dtype) for t in _qkv(L, S, Ev)], kw


NAMES = ["output", "grad query", "grad key", "grad value"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case", list(CASES))
def test_fused_path_is_bit_identical_to_pytorch(case: str, dtype: torch.dtype) -> None:
    qkv, kw = _inputs(case, dtype)
    reference = _forward_backward(F.scaled_dot_product_attention, qkv, kw)
    fused = _forward_backward(scaled_dot_product_attention, qkv, kw)
    for name, ours, theirs in zip(NAMES, fused, reference, strict=True):
        assert torch.equal(ours, theirs), f"{case}, {dtype}: {name} differs"


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case", list(CASES))
def test_explicit_path_agrees_with_pytorch_to_rounding(case: str, dtype: torch.dtype) -> None:
    qkv, kw = _inputs(case, dtype)
    reference = _forward_backward(F.scaled_dot_product_attention, qkv, kw)
    explicit = _forward_backward(
        lambda q, k, v, **kwargs: scaled_dot_product_attention(q, k, v, **kwargs,
                                                               need_weights=True),
        qkv, kw)
    for name, ours, theirs in zip(NAMES, explicit, reference, strict=True):
        assert not torch.isnan(theirs).any(), f"{case}: PyTorch gives NaN in {name}"
        torch.testing.assert_close(ours, theirs, atol=TOL[dtype], rtol=0,
                                   msg=f"{case}, {dtype}: {name}")
