r"""Attention that stays stable: QK-norm, logit soft-capping, QK-clip, differential attention.

A softmax saturates when its logits :math:`s_{ij} = \mathbf q_i \cdot \mathbf k_j / \sqrt E`
grow: the weights become one-hot, their gradient vanishes, and a large learning rate can let
the norms of queries and keys grow without bound (Dehghani et al. 2023, "Scaling Vision
Transformers to 22 Billion Parameters"; Wortsman et al. 2023, "Small-scale proxies for
large-scale Transformer training instabilities"). Four remedies of today's models:

* **QK-norm**: an RMSNorm of the queries and of the keys before the scores, so that
  :math:`|s_{ij}| \le \sqrt E\, g_q g_k` is bounded by the norms' gains. Qwen3 and Gemma 3
  normalise each head's vector (:math:`E` features); OLMo 2 (Team OLMo, "2 OLMo 2 Furious",
  2024) normalises the whole projection, all heads together (:math:`H E` features). In both
  the norm comes *before* RoPE (Hugging Face ``modeling_qwen3.py``, ``modular_olmo2.py``: the
  norm, then ``apply_rotary_pos_emb``); a rotation keeps norms, so the order changes nothing
  but the features the gain multiplies. :class:`StableSelfAttention` with ``qk_norm``.
* **Logit soft-capping** (Gemma 2, Gemma Team 2024): :math:`s \mapsto c \tanh(s / c)`, with
  :math:`c = 50` for the attention logits. :func:`soft_cap`, or ``softcap``.
* **QK-clip** (Kimi K2, Kimi Team 2025, the clip of its MuonClip optimizer): after an
  optimizer step, each head :math:`h` whose largest logit :math:`S^h_{\max}` over the batch
  exceeds :math:`\tau` (100 for Kimi K2) has its query and key weights rescaled by
  :math:`\gamma_h = \tau / S^h_{\max}`, :math:`W^h_q \leftarrow \gamma_h^{\alpha} W^h_q`,
  :math:`W^h_k \leftarrow \gamma_h^{1-\alpha} W^h_k` with :math:`\alpha = 1/2`, so the next
  forward pass of the same input tops out at :math:`\tau`. :func:`max_logits`,
  :func:`qk_clip`. For multi-head latent attention (MLA) the paper clips only what belongs
  to one head: the head's query and key components :math:`q^C, k^C` by
  :math:`\sqrt{\gamma_h}`, its rotary query part :math:`q^R` by :math:`\gamma_h`, and leaves the
  rotary key :math:`k^R`, shared by every head, alone (rescaling it would touch all heads).
* **Differential attention** (Ye et al., "Differential Transformer", ICLR 2025): the
  difference of two softmax maps, :math:`(\operatorname{softmax}(Q_1K_1^\top/\sqrt d) -
  \lambda \operatorname{softmax}(Q_2K_2^\top/\sqrt d))\,V`, meant to cancel the weight both
  maps put on irrelevant context. :func:`differential_attention`,
  :class:`DifferentialAttention`.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlib._checks import (
    check_choice,
    check_flag,
    check_floating,
    check_input,
    check_int,
    check_mask,
    check_not_meta,
    check_positive,
    check_qkv,
    check_real,
    check_sequence,
    shape_str,
)
from attnlib.blocks.attention import LOW_PRECISION
from attnlib.blocks.positional import RotaryPositionalEmbedding

__all__ = [
    "DifferentialAttention",
    "StableSelfAttention",
    "differential_attention",
    "max_logits",
    "qk_clip",
    "soft_cap",
]


def soft_cap(scores: Tensor, cap: float) -> Tensor:
    r"""Gemma 2's logit soft-capping: :math:`c \tanh(s / c)`, elementwise.

    Raises:
        TypeError: non-floating ``scores``. ValueError: a ``cap`` not finite and > 0.
    """
    check_floating("scores", scores)
    check_positive("cap", cap)
    cap = float(cap)
    return cap * torch.tanh(scores / cap)


def max_logits(query: Tensor, key: Tensor, is_causal: bool = False) -> Tensor:
    r"""QK-clip's :math:`S^h_{\max}`: per head, the largest scaled logit
    :math:`\mathbf q_i \cdot \mathbf k_j / \sqrt E` over the batch and every (query, key) pair
    (with ``is_causal``, only the pairs :math:`j \le i`).

    Shape:
        query (B, H, L, E), key (B, H, S, E). Returns (H,), in float32 for float16 or
        bfloat16 input (a logit there may exceed float16's largest number).

    Raises:
        TypeError, ValueError: as :func:`attnlib.blocks.attention.scaled_dot_product_attention`
            for the shapes, dtypes and devices; no query or no key (B, L or S = 0).
    """
    check_qkv(query, key, key, layout="heads", is_causal=is_causal, need_keys=True)
    if query.shape[0] == 0 or query.shape[2] == 0:
        raise ValueError(f"query must hold at least one batch row and position, got shape "
                         f"{shape_str(query.shape)}")
    if query.dtype in LOW_PRECISION:  # a float16 logit may pass 65504: float32
        query, key = query.float(), key.float()
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])  # (B, H, L, S)
    if is_causal:
        L, S = scores.shape[-2:]
        allowed = torch.ones(L, S, dtype=torch.bool, device=scores.device).tril()
        scores = scores.masked_fill(~allowed, -math.inf)
    return scores.amax(dim=(0, 2, 3))  # (H,)


def qk_clip(
    w_q: Tensor, w_k: Tensor, max_logit: Tensor, tau: float, alpha: float = 0.5,
) -> tuple[Tensor, Tensor, Tensor]:
    r"""Kimi K2's QK-clip for multi-head attention: the query and key weights, rescaled per head.

    :math:`\gamma_h = \min(1, \tau / S^h_{\max})`; the rows of head :math:`h` (rows
    :math:`hE` to :math:`(h+1)E - 1` of an ``nn.Linear`` weight of shape (H E, D)) of
    ``w_q`` are multiplied by :math:`\gamma_h^{\alpha}`, those of ``w_k`` by
    :math:`\gamma_h^{1-\alpha}`. A head under :math:`\tau` is left alone. Returns new tensors
    (copy them into the layer under ``torch.no_grad()``), and :math:`\gamma`. The paper
    (Kimi Team, "Kimi K2: Open Agentic Intelligence", 2025) writes :math:`\gamma_h`.

    Shape:
        w_q, w_k: (H E, D); max_logit: (H,) (:func:`max_logits`). Returns (H E, D) twice, (H,).

    Raises:
        TypeError: non-floating tensors, or of different dtypes.
        ValueError: shapes that do not fit, a ``tau`` not finite and > 0, ``alpha`` outside
            [0, 1], a ``max_logit`` that is NaN.
    """
    check_floating("w_q", w_q)
    check_input("w_q", w_q, w_q, ndim=2, expected="(H E, D)")
    check_input("w_k", w_k, w_q, ndim=2, expected="(H E, D)", other="w_q")
    check_input("max_logit", max_logit, w_q, ndim=1, expected="(H,)", other="w_q")
    check_positive("tau", tau)
    alpha = check_real("alpha", alpha, minimum=0.0)
    if alpha > 1:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    H = max_logit.shape[0]
    if w_k.shape != w_q.shape or H == 0 or w_q.shape[0] % H:
        raise ValueError(f"w_q and w_k must have one shape (H E, D) with H = {H} heads from "
                         f"max_logit, got w_q {shape_str(w_q.shape)} and w_k "
                         f"{shape_str(w_k.shape)}")
    check_not_meta("max_logit", max_logit, "that it holds no NaN")
    if bool(torch.isnan(max_logit).any()):
        raise ValueError("max_logit holds NaN")
    gamma = (float(tau) / max_logit).clamp(max=1.0)  # (H,)
    gamma = torch.where(max_logit > float(tau), gamma, torch.ones_like(gamma))  # others: 1
    rows = gamma.repeat_interleave(w_q.shape[0] // H).unsqueeze(-1)  # (H E, 1)
    return w_q * rows ** alpha, w_k * rows ** (1 - alpha), gamma


def _rms_norm(x: Tensor, weight: Tensor, eps: float) -> Tensor:
    r""":math:`x / \sqrt{\operatorname{mean}(x^2) + \epsilon} \cdot g` over the last dimension."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


class StableSelfAttention(nn.Module):
    r"""Causal multi-head self-attention with the stabilisers as switches: QK-norm (per head as
    Qwen3, or over all heads as OLMo 2, both before RoPE), logit soft-capping, and the largest
    logit of each head kept for QK-clip.

    .. math::

        \tilde{\mathbf q} = \operatorname{RoPE}(\operatorname{RMSNorm}(\mathbf q)),\quad
        s_{ij} = \operatorname{cap}(\tilde{\mathbf q}_i \cdot \tilde{\mathbf k}_j / \sqrt E)

    After each forward, ``last_max_logits`` holds :math:`S^h_{\max}` (H,) of the logits before
    the cap (detached), the quantity QK-clip watches.

    Args:
        embed_dim: D.
        num_heads: H, dividing D (E = D / H, even when ``rope``).
        qk_norm: ``"none"``, ``"head"`` (RMSNorm over each head's E features, gains of E) or
            ``"all"`` (over the H E features of the projection, gains of H E).
        softcap: the cap c of the logits, or None.
        rope: rotate queries and keys (after the norm).
        eps: the RMSNorm's epsilon (1e-6, Qwen3's).

    Shape:
        x: (B, L, D). Returns (B, L, D).
    """

    def __init__(self, embed_dim: int, num_heads: int, qk_norm: str = "none",
                 softcap: float | None = None, rope: bool = True, eps: float = 1e-6) -> None:
        super().__init__()
        D = check_int("embed_dim", embed_dim, minimum=1)
        H = check_int("num_heads", num_heads, minimum=1)
        if D % H:
            raise ValueError(f"num_heads must divide embed_dim, got {H} and {D}")
        check_choice("qk_norm", qk_norm, ("none", "head", "all"))
        if softcap is not None:
            check_positive("softcap", softcap)
        check_flag("rope", rope)
        check_positive("eps", eps)
        E = D // H
        if rope and E % 2:
            raise ValueError(f"rope needs an even head size E = embed_dim / num_heads, got {E}")
        self.num_heads, self.head_dim, self.qk_norm = H, E, qk_norm
        self.softcap = None if softcap is None else float(softcap)
        self.eps = float(eps)
        self.q_proj, self.k_proj = nn.Linear(D, D, bias=False), nn.Linear(D, D, bias=False)
        self.v_proj, self.out_proj = nn.Linear(D, D, bias=False), nn.Linear(D, D, bias=False)
        width = E if qk_norm == "head" else D
        self.q_norm = nn.Parameter(torch.ones(width)) if qk_norm != "none" else None
        self.k_norm = nn.Parameter(torch.ones(width)) if qk_norm != "none" else None
        self.rope = RotaryPositionalEmbedding(E) if rope else None
        self.last_max_logits: Tensor | None = None

    def _heads(self, x: Tensor, proj: nn.Linear, gain: nn.Parameter | None) -> Tensor:
        B, L, _ = x.shape
        y: Tensor = proj(x)  # (B, L, H E)
        if gain is not None and self.qk_norm == "all":  # OLMo 2: all heads together
            y = _rms_norm(y, gain, self.eps)
        y = y.view(B, L, self.num_heads, self.head_dim).transpose(1, 2)  # (B, H, L, E)
        if gain is not None and self.qk_norm == "head":  # Qwen3, Gemma 3: each head
            y = _rms_norm(y, gain, self.eps)
        if self.rope is not None:  # the norm first, then RoPE
            rotated: Tensor = self.rope(y)
            return rotated
        return y

    def forward(self, x: Tensor) -> Tensor:
        check_sequence("x", x, self.q_proj.in_features, like=self.q_proj.weight)
        B, L, D = x.shape
        q = self._heads(x, self.q_proj, self.q_norm)
        k = self._heads(x, self.k_proj, self.k_norm)
        v = self.v_proj(x).view(B, L, self.num_heads, self.head_dim).transpose(1, 2)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)  # (B, H, L, L)
        causal = torch.ones(L, L, dtype=torch.bool, device=x.device).tril()
        if B and L:
            self.last_max_logits = s.detach().masked_fill(~causal, -math.inf).amax((0, 2, 3))
        if self.softcap is not None:
            s = self.softcap * torch.tanh(s / self.softcap)
        w = torch.softmax(s.masked_fill(~causal, -math.inf), dim=-1)
        out: Tensor = self.out_proj((w @ v).transpose(1, 2).reshape(B, L, D))
        return out


def differential_attention(
    query: Tensor, key: Tensor, value: Tensor, lam: Tensor | float,
    attn_mask: Tensor | None = None,
) -> Tensor:
    r"""DIFF Transformer's attention (Ye et al. 2025, eq. 1): two maps, one subtracted.

    The query and key features are split in two halves, :math:`[Q_1; Q_2]`, :math:`[K_1; K_2]`
    (d = E / 2 each, as the paper's code splits one projection), and

    .. math::

        \operatorname{DiffAttn} = \Bigl(\operatorname{softmax}\Bigl(\frac{Q_1K_1^\top}
        {\sqrt d}\Bigr) - \lambda\,\operatorname{softmax}\Bigl(\frac{Q_2K_2^\top}{\sqrt d}
        \Bigr)\Bigr) V

    Shape:
        query (B, H, L, E), key (B, H, S, E), value (B, H, S, Ev), E even; ``lam`` a number or
        a tensor that broadcasts to (B, H, 1, 1) (one per head: (H, 1, 1)); ``attn_mask`` bool,
        broadcastable to (B, H, L, S), True = may attend. Returns (B, H, L, Ev).

    Raises:
        TypeError, ValueError: shapes, dtypes and devices as for attention; an odd E; a
            ``lam`` that is not finite or does not broadcast; a non-bool mask; float16 or
            bfloat16 input (computed in float32) whose output does not fit that dtype.
    """
    check_qkv(query, key, value, layout="heads", need_keys=True)
    E = query.shape[-1]
    if E % 2:
        raise ValueError(f"query and key need an even E to split in two halves, got query of "
                         f"shape {shape_str(query.shape)}")
    lam_t = _check_lambda(lam, query)
    if attn_mask is not None:
        check_mask("attn_mask", attn_mask, (*query.shape[:3], key.shape[2]),
                   expected="(B, H, L, S)", device=query.device, bool_only=True)
    if query.dtype in LOW_PRECISION:  # scores and softmax in float32
        out = differential_attention(query.float(), key.float(), value.float(),
                                     lam_t.float(), attn_mask)
        if out.numel() and float(out.abs().max()) > torch.finfo(query.dtype).max:
            raise ValueError(f"the output of differential attention reaches "
                             f"{float(out.abs().max()):.3g}, past {query.dtype}'s largest "
                             f"number: lam times value is too large; give query, key, value "
                             f"and lam in float32")
        return out.to(query.dtype)
    d = E // 2
    maps = []
    for half in (slice(0, d), slice(d, E)):
        s = query[..., half] @ key[..., half].transpose(-2, -1) / math.sqrt(d)  # (B, H, L, S)
        if attn_mask is not None:
            s = s.masked_fill(~attn_mask, -math.inf)
        maps.append(torch.softmax(s, dim=-1).nan_to_num(0.0))  # a row with no key: 0
    return (maps[0] - lam_t * maps[1]) @ value  # (B, H, L, Ev)


def _check_lambda(lam: object, query: Tensor) -> Tensor:
    if isinstance(lam, int | float) and not isinstance(lam, bool):
        check_real("lam", lam)
        return query.new_tensor(float(lam))
    lam_t = check_input("lam", lam, query, other="query")
    target = (*query.shape[:2], 1, 1)
    try:
        fits = torch.broadcast_shapes(lam_t.shape, target) == target  # type: ignore[no-untyped-call]
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(f"lam must broadcast to (B, H, 1, 1) = {shape_str(target)}, got "
                         f"{shape_str(lam_t.shape)}")
    if lam_t.device.type != "meta" and not bool(torch.isfinite(lam_t).all()):
        raise ValueError("lam must be finite")
    return lam_t


class DifferentialAttention(nn.Module):
    r"""The DIFF Transformer's causal multi-head differential attention (Ye et al. 2025).

    Each of H heads has two query and two key halves of d features and a value of 2d
    (D = 2 H d, as the paper halves the head count to keep the parameters of a Transformer
    with 2H heads of size d). Per layer, four vectors of d features re-parametrise

    .. math::

        \lambda = e^{\lambda_{q_1} \cdot \lambda_{k_1}} - e^{\lambda_{q_2} \cdot \lambda_{k_2}}
        + \lambda_{\text{init}},

        \lambda_{\text{init}} = 0.8 - 0.6\, e^{-0.3 (l - 1)}

    for layer :math:`l \ge 1` (the paper's section 2.1; its code, ``lambda_init_fn(depth)``,
    counts depth from 0). Each head's output is normalised apart (the paper's GroupNorm; its
    code uses an RMSNorm of 2d features with a gain shared by the heads), multiplied by
    :math:`1 - \lambda_{\text{init}}`, and the heads are concatenated and projected:

    .. math::

        \operatorname{head}_h = (1 - \lambda_{\text{init}})\,
        \operatorname{RMSNorm}(\operatorname{DiffAttn}_h(X))

    Args:
        embed_dim: D.
        num_heads: H (2H divides D).
        layer_index: l, from 1.
        causal: mask the keys after each query.
        eps: the RMSNorm's epsilon (1e-5, the paper's code).

    Shape:
        x: (B, L, D). Returns (B, L, D).
    """

    def __init__(self, embed_dim: int, num_heads: int, layer_index: int = 1,
                 causal: bool = True, eps: float = 1e-5) -> None:
        super().__init__()
        D = check_int("embed_dim", embed_dim, minimum=1)
        H = check_int("num_heads", num_heads, minimum=1)
        if D % (2 * H):
            raise ValueError(f"2 num_heads must divide embed_dim, got {H} heads and {D}")
        layer = check_int("layer_index", layer_index, minimum=1)
        self.causal = check_flag("causal", causal)
        check_positive("eps", eps)
        self.num_heads, self.d, self.eps = H, D // (2 * H), float(eps)
        self.lambda_init = 0.8 - 0.6 * math.exp(-0.3 * (layer - 1))
        self.q_proj, self.k_proj = nn.Linear(D, D, bias=False), nn.Linear(D, D, bias=False)
        self.v_proj, self.out_proj = nn.Linear(D, D, bias=False), nn.Linear(D, D, bias=False)
        self.lambda_q1, self.lambda_k1, self.lambda_q2, self.lambda_k2 = (
            nn.Parameter(torch.randn(self.d) * 0.1) for _ in range(4))  # the paper's N(0, 0.1)
        self.norm_weight = nn.Parameter(torch.ones(2 * self.d))

    @property
    def lam(self) -> Tensor:
        r""":math:`\lambda` of this layer, a 0-d tensor (differentiable in its four vectors)."""
        return (torch.exp(self.lambda_q1 @ self.lambda_k1)
                - torch.exp(self.lambda_q2 @ self.lambda_k2) + self.lambda_init)

    def forward(self, x: Tensor) -> Tensor:
        check_sequence("x", x, self.q_proj.in_features, like=self.q_proj.weight)
        B, L, D = x.shape
        H, d = self.num_heads, self.d
        if L == 0:  # no position: nothing to attend from or to
            empty: Tensor = self.out_proj(x.new_zeros(B, 0, D))
            return empty
        # each head's 2d query features are its two halves Q1, Q2 (the same for keys)
        q = self.q_proj(x).view(B, L, H, 2 * d).transpose(1, 2)  # (B, H, L, 2d)
        k = self.k_proj(x).view(B, L, H, 2 * d).transpose(1, 2)
        v = self.v_proj(x).view(B, L, H, 2 * d).transpose(1, 2)
        mask = torch.ones(L, L, dtype=torch.bool, device=x.device).tril() if self.causal \
            else None
        heads = differential_attention(q, k, v, self.lam, mask)  # (B, H, L, 2d)
        heads = F.rms_norm(heads, (2 * d,), self.norm_weight, self.eps)
        heads = (1 - self.lambda_init) * heads
        out: Tensor = self.out_proj(heads.transpose(1, 2).reshape(B, L, D))
        return out
