"""Chapter 10's blocks against references that share no code with them.

The MLA module is checked against PyTorch's ``scaled_dot_product_attention`` over the
concatenated content and rotary parts (its default scale is 1/sqrt(E + R), the paper's), with
RoPE written out here as complex multiplication; the delta rule against the papers' transposed
state :math:`S_t = \alpha_t S_{t-1}(I - \beta_t k_t k_t^\top) + \beta_t v_t k_t^\top`, built with
explicit matrices. A wrong scale, a key rotated at the wrong position or a transposed memory
would pass the tests that compare one of attnlib's paths with another, and fails these.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnlib.blocks.delta_rule import DeltaNet, delta_rule_chunked, delta_rule_recurrent
from attnlib.blocks.latent_attention import MultiHeadLatentAttention

pytestmark = pytest.mark.usefixtures("one_thread")
F64 = torch.float64
TIGHT = {"atol": 1e-10, "rtol": 1e-10}


def _rope(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Adjacent pairs (2i, 2i + 1) as complex numbers, times exp(i m theta_i); positions 0..L-1."""
    L, R = x.shape[-2], x.shape[-1]
    theta = base ** (-torch.arange(0, R, 2, dtype=F64) / R)  # (R/2,)
    angle = torch.arange(L, dtype=F64)[:, None] * theta  # (L, R/2)
    z = torch.view_as_complex(x.reshape(*x.shape[:-1], R // 2, 2).contiguous())
    return torch.view_as_real(z * torch.polar(torch.ones_like(angle), angle)).flatten(-2)


def _mla_reference(mla: MultiHeadLatentAttention, x: torch.Tensor) -> torch.Tensor:
    """DeepSeek-V2's equations with the module's weight matrices, attended by SDPA."""
    B, L, _ = x.shape
    H, E, R = mla.num_heads, mla.head_dim, mla.rope_dim

    def lin(layer: torch.nn.Linear, t: torch.Tensor) -> torch.Tensor:
        out = t @ layer.weight.T
        return out if layer.bias is None else out + layer.bias

    c = lin(mla.kv_down, x)  # (B, L, d_c)
    heads = lambda t, e: t.view(B, L, H, e).transpose(1, 2)  # noqa: E731
    q = torch.cat((heads(lin(mla.q_proj, x), E),
                   _rope(heads(lin(mla.q_rope_proj, x), R))), -1)  # (B, H, L, E + R)
    k_rope = _rope(lin(mla.k_rope_proj, x))[:, None].expand(B, H, L, R)  # shared by heads
    k = torch.cat((heads(lin(mla.k_up, c), E), k_rope), -1)  # (B, H, L, E + R)
    v = heads(lin(mla.v_up, c), E)
    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # scale 1/sqrt(E + R)
    return lin(mla.out_proj, o.transpose(1, 2).reshape(B, L, H * E))


@pytest.mark.parametrize("absorbed", [False, True])
def test_mla_equals_sdpa_over_content_and_rotary_parts(absorbed: bool) -> None:
    torch.manual_seed(0)
    mla = MultiHeadLatentAttention(24, 3, 8, 10, 6, dtype=F64)
    x = torch.randn(2, 13, 24, dtype=F64)
    ours, _ = mla(x, absorbed=absorbed)
    torch.testing.assert_close(ours, _mla_reference(mla, x), **TIGHT)


def test_mla_reference_sees_a_wrong_scale() -> None:
    # the reference is sharp enough: scaling the content part as 1/sqrt(E) would be caught
    torch.manual_seed(1)
    mla = MultiHeadLatentAttention(16, 2, 8, 6, 4, dtype=F64)
    x = torch.randn(1, 9, 16, dtype=F64)
    with torch.no_grad():
        mla.q_proj.weight.mul_((12 / 8) ** 0.5)  # as if q^C were scaled by 1/sqrt(E)
        mla.q_proj.bias.mul_((12 / 8) ** 0.5)
    wrong, _ = mla(x)
    with torch.no_grad():
        mla.q_proj.weight.div_((12 / 8) ** 0.5)
        mla.q_proj.bias.div_((12 / 8) ** 0.5)
    assert (wrong - _mla_reference(mla, x)).abs().max() > 1e-3


def _delta_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, beta: torch.Tensor,
                     decay: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """S_t = alpha_t S_{t-1} (I - beta_t k_t k_t^T) + beta_t v_t k_t^T, o_t = S_t q_t."""
    B, H, L, E = q.shape
    Ev = v.shape[-1]
    out = torch.zeros(B, H, L, Ev, dtype=q.dtype)
    S = torch.zeros(B, H, Ev, E, dtype=q.dtype)
    eye = torch.eye(E, dtype=q.dtype)
    for t in range(L):
        kt, vt, b = k[:, :, t], v[:, :, t], beta[:, :, t, None, None]
        a = 1.0 if decay is None else decay[:, :, t, None, None]
        S = a * S @ (eye - b * kt[..., :, None] * kt[..., None, :]) \
            + b * vt[..., :, None] * kt[..., None, :]
        out[:, :, t] = (S @ q[:, :, t, :, None])[..., 0]
    return out, S.transpose(-2, -1)  # attnlib keeps M = S^T


@pytest.mark.parametrize("gated", [False, True])
def test_delta_rule_equals_the_papers_transposed_state(gated: bool) -> None:
    g = torch.Generator().manual_seed(4)
    q = torch.randn(2, 3, 21, 6, generator=g, dtype=F64)
    k = F.normalize(torch.randn(2, 3, 21, 6, generator=g, dtype=F64), dim=-1)
    v = torch.randn(2, 3, 21, 5, generator=g, dtype=F64)
    beta = torch.rand(2, 3, 21, generator=g, dtype=F64)
    decay = 0.5 + 0.5 * torch.rand(2, 3, 21, generator=g, dtype=F64) if gated else None
    ref, memory = _delta_reference(q, k, v, beta, decay)
    for run in (delta_rule_recurrent, delta_rule_chunked):
        out, m = run(q, k, v, beta, decay)
        torch.testing.assert_close(out, ref, **TIGHT)
        torch.testing.assert_close(m, memory, **TIGHT)


def test_deltanet_accumulate_rule_is_a_sum_of_outer_products() -> None:
    # the ablation of the recall experiment: M_t = M_{t-1} + beta_t k_t v_t^T, o_t = M_t^T q_t
    g = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(2, 3, 12, 4, generator=g, dtype=F64) for _ in range(3))
    beta = torch.rand(2, 3, 12, generator=g, dtype=F64)
    start = torch.randn(2, 3, 4, 4, generator=g, dtype=F64)
    memory, expected = start.clone(), []
    for t in range(12):
        memory = memory + beta[:, :, t, None, None] * k[:, :, t, :, None] * v[:, :, t, None, :]
        expected.append((q[:, :, t, None, :] @ memory)[..., 0, :])
    out, final = DeltaNet._accumulate(q, k, v, beta, start)
    torch.testing.assert_close(out, torch.stack(expected, 2), **TIGHT)
    torch.testing.assert_close(final, memory, **TIGHT)
    # and the layer streams token by token as it reads a whole line
    torch.manual_seed(5)
    layer = DeltaNet(16, 2, rule="accumulate", dtype=F64)
    x = torch.randn(2, 11, 16, dtype=F64)
    whole, _ = layer(x)
    steps, state = [], None
    for t in range(11):
        o, state = layer(x[:, t:t + 1], state)
        steps.append(o)
    torch.testing.assert_close(torch.cat(steps, 1), whole, **TIGHT)
