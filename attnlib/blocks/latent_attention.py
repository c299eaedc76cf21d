r"""Multi-head latent attention {DeepSeek-AI 2024, DeepSeek-V2}: cache one latent per token.

Grouped-query attention shrinks the cache by sharing key/value heads. MLA keeps H full heads
but computes all their keys and values from one low-rank latent per token, and caches that:

.. math::

    c_t = W^{DKV} h_t \in \mathbb R^{d_c},

    k^C_{t,i} = W^{UK}_i c_t, \qquad v_{t,i} = W^{UV}_i c_t .

RoPE cannot act on :math:`k^C` (a rotation between :math:`W^Q` and :math:`W^{UK}` would
depend on the position and stop the two from being multiplied together once), so position
goes through extra dimensions: a rotated query part :math:`q^R_{t,i}` per head and one
rotated key part :math:`k^R_t = \mathrm{RoPE}(W^{KR} h_t)` shared by all heads,

.. math::

    a_{tj,i} = \frac{q^C_{t,i} \cdot k^C_{j,i} + q^R_{t,i} \cdot k^R_j}{\sqrt{E + R}},

    u_t = W^O [\textstyle\sum_j \alpha_{tj,1} v_{j,1}; \dots] .

The cache holds :math:`c_t` and :math:`k^R_t`: :math:`d_c + R` numbers per token and layer,
against :math:`2 H_{kv} E` for grouped-query attention. Because
:math:`q^C_{t,i} \cdot W^{UK}_i c_j = (W^{UK\top}_i q^C_{t,i}) \cdot c_j`, the key
up-projection can be folded into the query and the value up-projection into the output
projection: the **absorbed** form scores the latents directly and never builds a key or a
value. ``forward(..., absorbed=True)`` computes it; both forms give the same output.
DeepSeek-V2 also compresses the queries through a latent of its own (:math:`d_c'`), which
saves activations in training but no cache; this module does not.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from attnlib._checks import (
    check_flag,
    check_float_dtype,
    check_input,
    check_int,
    check_positive,
    shape_str,
)
from attnlib.blocks.positional import RotaryPositionalEmbedding

__all__ = ["MultiHeadLatentAttention", "mla_cache_elements"]


def mla_cache_elements(num_layers: int, latent_dim: int, rope_dim: int) -> int:
    r"""Numbers MLA caches per token: :math:`(d_c + R)\, N` (DeepSeek-V2, Table 1).

    Raises:
        TypeError: if an argument is not an int. ValueError: if one is < 1.
    """
    for name, v in (("num_layers", num_layers), ("latent_dim", latent_dim),
                    ("rope_dim", rope_dim)):
        check_int(name, v, minimum=1)
    return (latent_dim + rope_dim) * num_layers


class MultiHeadLatentAttention(nn.Module):
    r"""Causal MLA with decoupled RoPE; naive and absorbed forms (see the module docstring).

    Args:
        embed_dim: D. num_heads: H. head_dim: E, of a content query, key and value.
        latent_dim: :math:`d_c`, the cached latent. rope_dim: R, the decoupled RoPE part (even).

    ``forward(x, state, absorbed)`` returns the output and the cache to continue from: the
    latents (B, S, d_c) and the rotated shared keys (B, S, R) of every token read so far.

    Shape:
        - x: (B, L, D); output: (B, L, D)

    Raises:
        ValueError: if a size is < 1 or ``rope_dim`` is odd; in ``forward``, if ``x`` is not
            (B, L, D) or ``state`` does not fit it.
        TypeError: in ``forward``, ``x`` of another dtype than the parameters', a non-bool
            ``absorbed``, or a ``state`` that is not the pair ``forward`` returned.
    """

    def __init__(self, embed_dim: int, num_heads: int, head_dim: int, latent_dim: int,
                 rope_dim: int, *, rope_base: float = 10000.0,
                 dtype: torch.dtype | None = None) -> None:
        super().__init__()
        check_float_dtype("dtype", dtype, optional=True)
        check_positive("rope_base", rope_base)
        for name, v in (("embed_dim", embed_dim), ("num_heads", num_heads),
                        ("head_dim", head_dim), ("latent_dim", latent_dim),
                        ("rope_dim", rope_dim)):
            check_int(name, v, minimum=1)
        self.embed_dim, self.num_heads, self.head_dim = embed_dim, num_heads, head_dim
        self.latent_dim, self.rope_dim = latent_dim, rope_dim
        H, E, R = num_heads, head_dim, rope_dim
        self.q_proj = nn.Linear(embed_dim, H * E, dtype=dtype)  # q^C
        self.q_rope_proj = nn.Linear(embed_dim, H * R, dtype=dtype)  # q^R, per head
        self.kv_down = nn.Linear(embed_dim, latent_dim, dtype=dtype)  # W^DKV
        self.k_rope_proj = nn.Linear(embed_dim, R, dtype=dtype)  # W^KR, shared
        self.k_up = nn.Linear(latent_dim, H * E, bias=False, dtype=dtype)  # W^UK
        self.v_up = nn.Linear(latent_dim, H * E, bias=False, dtype=dtype)  # W^UV
        self.out_proj = nn.Linear(H * E, embed_dim, dtype=dtype)  # W^O
        self.rope = RotaryPositionalEmbedding(R, rope_base)

    def forward(self, x: Tensor, state: tuple[Tensor, Tensor] | None = None,
                absorbed: bool = False) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        x = check_input("x", x, self.q_proj.weight, 3, "(B, L, D)")
        if x.shape[-1] != self.embed_dim:
            raise ValueError(f"x must have shape (B, L, D) with D = embed_dim = "
                             f"{self.embed_dim}, got shape {shape_str(x.shape)}")
        check_flag("absorbed", absorbed)
        if state is not None:
            self._check_state(state, x)
        B, L, _ = x.shape
        H, E, R = self.num_heads, self.head_dim, self.rope_dim
        P = 0 if state is None else state[0].shape[1]
        latent = self.kv_down(x)  # (B, L, d_c): what is cached
        k_rope = self.rope(self.k_rope_proj(x), offset=P)  # (B, L, R), shared by heads
        if state is not None:
            latent = torch.cat((state[0], latent), dim=1)  # (B, S, d_c)
            k_rope = torch.cat((state[1], k_rope), dim=1)  # (B, S, R)
        q = self.q_proj(x).view(B, L, H, E).transpose(1, 2)  # (B, H, L, E)
        q_rope = self.q_rope_proj(x).view(B, L, H, R).transpose(1, 2)
        q_rope = self.rope(q_rope, offset=P)  # (B, H, L, R)
        S = latent.shape[1]
        mask = torch.ones(L, S, dtype=torch.bool, device=x.device).tril(S - L)  # causal
        position = q_rope @ k_rope[:, None].transpose(-2, -1)  # (B, H, L, S)
        if absorbed:
            out = self._absorbed(q, position, latent, mask)
        else:
            out = self._naive(q, position, latent, mask)
        return out, (latent, k_rope)

    def _check_state(self, state: object, x: Tensor) -> None:
        """A cache this layer could have returned for a batch of ``x``'s size."""
        if not isinstance(state, tuple) or len(state) != 2:
            raise TypeError(f"state must be the (latents, rotated keys) pair forward "
                            f"returned, or None, got {type(state).__name__}")
        B = x.shape[0]
        for name, t, size in (("state[0]", state[0], self.latent_dim),
                              ("state[1]", state[1], self.rope_dim)):
            check_input(name, t, x, 3, "(B, S, d_c)" if size == self.latent_dim
                        else "(B, S, R)", other="x")
            if t.shape[0] != B or t.shape[2] != size or t.shape[1] != state[0].shape[1]:
                raise ValueError(f"{name} must have shape {shape_str((B, 'S', size))} for x "
                                 f"of shape {shape_str(x.shape)} (S the tokens cached), got "
                                 f"{shape_str(t.shape)}")

    def _weights(self, content: Tensor, position: Tensor, mask: Tensor) -> Tensor:
        scale = 1 / math.sqrt(self.head_dim + self.rope_dim)
        scores = (content + position) * scale  # (B, H, L, S)
        return scores.masked_fill(~mask, -math.inf).softmax(dim=-1)

    def _naive(self, q: Tensor, position: Tensor, latent: Tensor, mask: Tensor) -> Tensor:
        """Up-project every cached latent to H keys and values, then attend."""
        B, S, _ = latent.shape
        H, E = self.num_heads, self.head_dim
        k = self.k_up(latent).view(B, S, H, E).transpose(1, 2)  # (B, H, S, E)
        v = self.v_up(latent).view(B, S, H, E).transpose(1, 2)  # (B, H, S, E)
        weights = self._weights(q @ k.transpose(-2, -1), position, mask)
        heads = weights @ v  # (B, H, L, E)
        out: Tensor = self.out_proj(heads.transpose(1, 2).flatten(2))  # (B, L, D)
        return out

    def _absorbed(self, q: Tensor, position: Tensor, latent: Tensor,
                  mask: Tensor) -> Tensor:
        """Score and average the latents themselves; no key or value built."""
        H, E = self.num_heads, self.head_dim
        W_uk = self.k_up.weight.view(H, E, self.latent_dim)  # (H, E, d_c)
        W_uv = self.v_up.weight.view(H, E, self.latent_dim)  # (H, E, d_c)
        W_o = self.out_proj.weight.view(self.embed_dim, H, E)  # (D, H, E)
        q_latent = q @ W_uk  # W^UK folded into the query: (B, H, L, d_c)
        content = q_latent @ latent[:, None].transpose(-2, -1)  # (B, H, L, S)
        weights = self._weights(content, position, mask)
        mixed = weights @ latent[:, None]  # latents averaged: (B, H, L, d_c)
        W_ov = torch.einsum("dhe,hec->hcd", W_o, W_uv)  # W^UV folded into W^O
        out: Tensor = torch.einsum("bhlc,hcd->bld", mixed, W_ov)  # (B, L, D)
        if self.out_proj.bias is not None:
            out = out + self.out_proj.bias
        return out
