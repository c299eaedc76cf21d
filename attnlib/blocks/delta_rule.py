r"""The delta rule {Schlag et al. 2021; Yang et al. 2024}: a fast-weight memory that overwrites.

Causal linear attention (:mod:`attnlib.blocks.linear_attention`) keeps one matrix per head and adds
:math:`k_t v_t^\top` to it at every token, so two values stored under similar keys pile up.
The delta rule first reads what the memory holds under :math:`k_t`, then writes only the
difference, with a strength :math:`\beta_t \in [0, 1]`:

.. math::

    \begin{aligned}
    M_t &= M_{t-1} + \beta_t\, k_t\, (v_t - M_{t-1}^\top k_t)^\top \\
        &= (I - \beta_t k_t k_t^\top)\, M_{t-1} + \beta_t\, k_t v_t^\top,
    \end{aligned}

    o_t = M_t^\top q_t .

With a unit key and :math:`\beta_t = 1` the old value under :math:`k_t` is replaced, not
added to. (The papers write the state transposed, :math:`S_t = M_t^\top`, and
:math:`S_t = S_{t-1}(I - \beta_t k_t k_t^\top) + \beta_t v_t k_t^\top`.) Gated DeltaNet
{Yang et al. 2025} multiplies the old memory by a decay :math:`\alpha_t \in (0, 1]` first:
:math:`M_t = \alpha_t (I - \beta_t k_t k_t^\top) M_{t-1} + \beta_t k_t v_t^\top`.

:func:`delta_rule_recurrent` runs the recurrence token by token (what generation does, with
a state of :math:`E \times E_v` numbers per head whatever the length);
:func:`delta_rule_chunked` computes the same outputs chunk by chunk, with matrix products
inside each chunk (what training does). :class:`DeltaNet` is a layer built on them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlib._checks import (
    check_choice,
    check_flag,
    check_float_dtype,
    check_floating,
    check_input,
    check_int,
    check_ndim,
    shape_str,
)

__all__ = ["DeltaNet", "delta_rule_chunked", "delta_rule_recurrent"]


def _check_inputs(query: Tensor, key: Tensor, value: Tensor, beta: Tensor,
                  decay: Tensor | None, state: Tensor | None) -> None:
    query = check_floating("query", query)
    for name, t in (("key", key), ("value", value), ("beta", beta), ("decay", decay),
                    ("state", state)):
        if t is not None or name not in ("decay", "state"):
            check_input(name, t, query, other="query")
    check_ndim("query", query, 4, "(B, H, L, E)")
    check_ndim("key", key, 4, "(B, H, L, E)")
    check_ndim("value", value, 4, "(B, H, L, Ev)")
    if key.shape != query.shape:
        raise ValueError(f"key must have the shape of query {shape_str(query.shape)}, got "
                         f"{shape_str(key.shape)}")
    if value.shape[:3] != query.shape[:3]:
        raise ValueError(f"value must have shape (B, H, L, Ev) = "
                         f"{shape_str((*query.shape[:3], 'Ev'))}, got {shape_str(value.shape)}")
    if beta.shape != query.shape[:3]:
        raise ValueError(f"beta must have shape (B, H, L) = {shape_str(query.shape[:3])}, got "
                         f"{shape_str(beta.shape)}")
    meta = query.device.type == "meta"
    if not meta and bool(((beta < 0) | (beta > 1)).any()):
        raise ValueError("beta must lie in [0, 1] (a writing strength), got values outside")
    if decay is not None:
        if decay.shape != query.shape[:3]:
            raise ValueError(f"decay must have shape (B, H, L) = {shape_str(query.shape[:3])}, "
                             f"got {shape_str(decay.shape)}")
        if not meta and not bool(((decay > 0) & (decay <= 1)).all()):
            raise ValueError("decay must lie in (0, 1] (a forgetting factor), got values "
                             "outside")
    if state is not None:
        expected = (*query.shape[:2], query.shape[-1], value.shape[-1])
        if state.shape != expected:
            raise ValueError(f"state must have shape (B, H, E, Ev) = {shape_str(expected)}, got "
                             f"{shape_str(state.shape)}")


def delta_rule_recurrent(
    query: Tensor, key: Tensor, value: Tensor, beta: Tensor,
    decay: Tensor | None = None, state: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    r"""The (gated) delta rule, one token at a time: :math:`O(L)` steps, constant memory.

    .. math::

        M_t = \alpha_t M_{t-1} + \beta_t\, k_t (v_t - \alpha_t M_{t-1}^\top k_t)^\top,

        o_t = M_t^\top q_t

    (:math:`\alpha_t = 1` without ``decay``). Keys are used as given; :class:`DeltaNet`
    normalises them to unit length, which the overwriting needs.

    Shape:
        - query, key: (B, H, L, E); value: (B, H, L, Ev); beta, decay: (B, H, L)
        - state: (B, H, E, Ev) or None (zeros)
        - output: (B, H, L, Ev), and the state after the last token (B, H, E, Ev)

    Raises:
        ValueError: if the shapes do not fit, beta is outside [0, 1] or decay outside (0, 1],
            or a tensor is on another device than ``query``.
        TypeError: if an input is not a floating tensor of query's dtype.
    """
    _check_inputs(query, key, value, beta, decay, state)
    B, H, L, E = query.shape
    memory = query.new_zeros(B, H, E, value.shape[-1]) if state is None else state
    if L == 0:
        return value.new_zeros(B, H, 0, value.shape[-1]), memory
    outputs = []
    for t in range(L):
        alpha = None if decay is None else decay[:, :, t]
        memory, out = _delta_step(memory, query[:, :, t], key[:, :, t], value[:, :, t],
                                  beta[:, :, t], alpha)
        outputs.append(out)  # (B, H, Ev)
    return torch.stack(outputs, dim=2), memory  # (B, H, L, Ev), (B, H, E, Ev)


def _delta_step(memory: Tensor, q: Tensor, k: Tensor, v: Tensor, beta: Tensor,
                alpha: Tensor | None) -> tuple[Tensor, Tensor]:
    """One token: memory (B, H, E, Ev); q, k (B, H, E); v (B, H, Ev);
    beta, alpha (B, H)."""
    if alpha is not None:
        memory = alpha[..., None, None] * memory  # forget first
    # what M holds under k: (B, H, Ev)
    read = (k[..., None, :] @ memory)[..., 0, :]
    error = beta[..., None] * (v - read)  # write only the difference
    memory = memory + k[..., :, None] * error[..., None, :]  # (B, H, E, Ev)
    # and o = M^T q: (B, H, Ev)
    return memory, (q[..., None, :] @ memory)[..., 0, :]


def delta_rule_chunked(
    query: Tensor, key: Tensor, value: Tensor, beta: Tensor,
    decay: Tensor | None = None, state: Tensor | None = None, chunk_size: int = 16,
) -> tuple[Tensor, Tensor]:
    r"""The same outputs as :func:`delta_rule_recurrent`, computed chunk by chunk.

    Within a chunk that starts from memory :math:`M_0`, the recurrence writes
    :math:`e_t = \beta_t (v_t - \gamma_t M_0^\top k_t - \sum_{i<t} \frac{\gamma_t}{\gamma_i}
    (k_i^\top k_t)\, e_i)` (:math:`\gamma_t` the product of the decays so far in the chunk),
    a lower-triangular system for all the :math:`e_t` at once. With
    :math:`\Gamma_{ti} = \gamma_t / \gamma_i`:

    .. math::

        (I + \mathrm{tril}_{-1}(\mathrm{diag}(\beta)\,(\Gamma \odot K K^\top)))\, E_c
            = \mathrm{diag}(\beta)\,(V - \mathrm{diag}(\gamma) K M_0),

        O = \mathrm{diag}(\gamma)\, Q M_0 + (\Gamma \odot \mathrm{tril}(Q K^\top))\, E_c,

        M_C = \gamma_C M_0 + (\tfrac{\gamma_C}{\gamma} \odot K)^\top E_c .

    One triangular solve and a few C x C products per chunk; a loop over the L / C chunks
    carries the memory. Only ratios :math:`\gamma_t / \gamma_i \le 1` are formed.

    Shape:
        as :func:`delta_rule_recurrent`.

    float16 and bfloat16 inputs are computed in float32 (the triangular solve has no
    half-precision kernel on the CPU) and the results returned in the input's dtype.

    Raises:
        as :func:`delta_rule_recurrent`; ValueError if ``chunk_size`` < 1.
    """
    _check_inputs(query, key, value, beta, decay, state)
    check_int("chunk_size", chunk_size, minimum=1)
    if query.dtype in (torch.float16, torch.bfloat16):
        out, memory = delta_rule_chunked(
            query.float(), key.float(), value.float(), beta.float(),
            None if decay is None else decay.float(), None if state is None else state.float(),
            chunk_size)
        return out.to(query.dtype), memory.to(query.dtype)
    B, H, n, E = query.shape
    if n == 0:
        memory = query.new_zeros(B, H, E, value.shape[-1]) if state is None else state
        return value.new_zeros(B, H, 0, value.shape[-1]), memory
    Ev = value.shape[-1]
    C = min(chunk_size, n)
    chunks = -(-n // C)
    pad = chunks * C - n
    log_decay = (torch.zeros_like(beta) if decay is None else decay.log())  # (B, H, n)

    def split(t: Tensor) -> Tensor:  # (B, H, n, ...) -> (B, H, chunks, C, ...)
        t = F.pad(t, (0, 0, 0, pad)) if t.ndim == 4 else F.pad(t, (0, pad))
        return t.view(B, H, chunks, C, *t.shape[3:])

    q, k, v, b, g = (split(t) for t in (query, key, value, beta, log_decay))
    g = g.cumsum(-1)  # log gamma_t within each chunk: (B, H, chunks, C)
    ratio = (g[..., :, None] - g[..., None, :]).tril().exp().tril()  # Gamma: (..., C, C)
    strict = (b[..., :, None] * ratio * (k @ k.transpose(-2, -1))).tril(-1)  # (..., C, C)
    system = strict + torch.eye(C, dtype=query.dtype, device=query.device)
    # U and W solve the system for the values and for the memory's part: (..., C, Ev | E)
    U = torch.linalg.solve_triangular(system, b[..., None] * v, upper=False,
                                      unitriangular=True)
    W = torch.linalg.solve_triangular(system, (b * g.exp())[..., None] * k, upper=False,
                                      unitriangular=True)
    scores = ratio * (q @ k.transpose(-2, -1)).tril()  # (B, H, chunks, C, C)
    to_end = (g[..., -1:] - g).exp()[..., None] * k  # (gamma_C / gamma_t) k_t: (..., C, E)
    memory = query.new_zeros(B, H, E, Ev) if state is None else state
    outputs = []
    for c in range(chunks):
        errors = U[:, :, c] - W[:, :, c] @ memory  # e_t: (B, H, C, Ev)
        start = g[:, :, c].exp()[..., None] * q[:, :, c]  # gamma_t q_t: (B, H, C, E)
        outputs.append(start @ memory + scores[:, :, c] @ errors)  # (B, H, C, Ev)
        memory = g[:, :, c, -1].exp()[..., None, None] * memory \
            + to_end[:, :, c].transpose(-2, -1) @ errors  # (B, H, E, Ev)
    out = torch.cat(outputs, dim=2)[:, :, :n]  # (B, H, n, Ev)
    return out, memory


class DeltaNet(nn.Module):
    r"""A DeltaNet layer: projections, a short causal convolution, the delta rule, an output.

    .. math::

        q_t = \frac{\phi(W_Q \tilde x_t)}{\lVert\cdot\rVert}, \quad
        k_t = \frac{\phi(W_K \tilde x_t)}{\lVert\cdot\rVert}, \quad
        v_t = \phi(W_V \tilde x_t),

        \beta_t = \sigma(w_\beta^\top x_t), \quad
        \alpha_t = \sigma(w_\alpha^\top x_t + b_\alpha)

    per head, with :math:`\phi` = SiLU and :math:`\tilde x_t` each projection passed through
    a depthwise causal convolution over the last ``conv_size`` tokens (Yang et al.'s short
    convolution, which lets a key at token t see token t - 1). ``gated`` adds the decay
    :math:`\alpha_t` (Gated DeltaNet); ``rule="linear"`` replaces the delta rule by chapter 9's
    causal linear attention (:math:`\phi` = elu + 1, normalised), the baseline it improves on;
    ``rule="accumulate"`` keeps DeltaNet's keys, values and :math:`\beta_t` but adds instead of
    overwriting, :math:`M_t = M_{t-1} + \beta_t k_t v_t^\top` (the ablation that isolates the
    update rule; no decay). ``forward(x, state)`` returns the output and the state to continue from: the memory
    (B, H, E, Ev) and the convolution's last ``conv_size - 1`` inputs (for ``rule="delta"``).

    Shape:
        - x: (B, L, D); output: (B, L, D)

    Raises:
        ValueError: if ``num_heads`` does not divide ``embed_dim`` or a size is < 1; in
            ``forward``, if ``x`` is not (B, L, D) with L >= 1, or ``state`` does not fit it.
        TypeError: a non-bool ``gated``; in ``forward``, ``x`` of another dtype than the
            parameters', or a ``state`` that is not the pair ``forward`` returned.
    """

    def __init__(self, embed_dim: int, num_heads: int, *, gated: bool = False,
                 conv_size: int = 4, rule: str = "delta", chunk_size: int = 16,
                 dtype: torch.dtype | None = None) -> None:
        super().__init__()
        check_float_dtype("dtype", dtype, optional=True)
        check_int("embed_dim", embed_dim, minimum=1)
        check_int("num_heads", num_heads, minimum=1)
        check_int("conv_size", conv_size, minimum=1)
        check_int("chunk_size", chunk_size, minimum=1)
        check_flag("gated", gated)
        check_choice("rule", rule, ("delta", "linear", "accumulate"))
        if gated and rule != "delta":
            raise ValueError(f"gated needs rule = 'delta', got rule = {rule!r}")
        if embed_dim % num_heads:
            raise ValueError(f"num_heads must divide embed_dim, got embed_dim = {embed_dim} "
                             f"and num_heads = {num_heads}")
        self.embed_dim, self.num_heads, self.rule = embed_dim, num_heads, rule
        self.gated, self.conv_size, self.chunk_size = gated, conv_size, chunk_size
        self.qkv_proj = nn.Linear(embed_dim, 3 * embed_dim, bias=False, dtype=dtype)
        # depthwise: one filter of conv_size taps per channel, causal by left padding
        self.conv = nn.Conv1d(3 * embed_dim, 3 * embed_dim, conv_size, groups=3 * embed_dim,
                              bias=False, dtype=dtype)
        self.beta_proj = nn.Linear(embed_dim, num_heads, dtype=dtype)
        self.decay_proj = nn.Linear(embed_dim, num_heads, dtype=dtype) if gated else None
        if self.decay_proj is not None:
            nn.init.constant_(self.decay_proj.bias, 3.0)  # start near alpha = 0.95
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=False, dtype=dtype)

    def _heads(self, t: Tensor) -> Tensor:
        B, L, D = t.shape
        return t.view(B, L, self.num_heads, D // self.num_heads).transpose(1, 2)  # (B, H, L, E)

    def forward(self, x: Tensor, state: tuple[Tensor, Tensor] | None = None
                ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        x = check_input("x", x, self.qkv_proj.weight, 3, "(B, L, D)")
        if x.shape[-1] != self.embed_dim or x.shape[1] == 0:
            raise ValueError(f"x must have shape (B, L, D) with L >= 1 and D = embed_dim = "
                             f"{self.embed_dim}, got shape {shape_str(x.shape)}")
        if state is not None:
            self._check_state(state, x)
        B, L, D = x.shape
        projected = self.qkv_proj(x)  # (B, L, 3D)
        past = (projected.new_zeros(B, self.conv_size - 1, 3 * D) if state is None
                else state[1])  # the convolution's earlier inputs
        padded = torch.cat((past, projected), dim=1)  # (B, c - 1 + L, 3D)
        mixed = self.conv(padded.transpose(1, 2)).transpose(1, 2)  # (B, L, 3D)
        q, k, v = (self._heads(t) for t in mixed.chunk(3, dim=-1))  # (B, H, L, E) each
        memory = None if state is None else state[0]
        if self.rule == "linear":
            out, memory = self._linear(q, k, v, memory)
        else:
            q, k = F.normalize(F.silu(q), dim=-1), F.normalize(F.silu(k), dim=-1)
            beta = torch.sigmoid(self.beta_proj(x)).transpose(1, 2)  # (B, H, L)
            decay = None
            if self.decay_proj is not None:
                decay = torch.sigmoid(self.decay_proj(x)).transpose(1, 2)  # (B, H, L)
                # sigmoid underflows to 0 below about -100; keep alpha > 0
                decay = decay.clamp_min(torch.finfo(decay.dtype).tiny)
            if self.rule == "accumulate":
                out, memory = self._accumulate(q, k, F.silu(v), beta, memory)
            else:
                run = delta_rule_chunked if L > 1 else delta_rule_recurrent
                kwargs = {"chunk_size": self.chunk_size} if L > 1 else {}
                out, memory = run(q, k, F.silu(v), beta, decay, memory, **kwargs)
        tail = padded[:, padded.shape[1] - (self.conv_size - 1):]  # (B, c - 1, 3D)
        merged = out.transpose(1, 2).reshape(B, L, D)  # (B, L, D)
        return self.out_proj(merged), (memory, tail)

    def _check_state(self, state: object, x: Tensor) -> None:
        """A state this layer could have returned for a batch of ``x``'s size."""
        if not isinstance(state, tuple) or len(state) != 2:
            raise TypeError(f"state must be the (memory, conv inputs) pair forward returned, "
                            f"or None, got {type(state).__name__}")
        B, D, H = x.shape[0], self.embed_dim, self.num_heads
        E = D // H
        Ev = E + 1 if self.rule == "linear" else E
        for name, t, shape in (("state[0]", state[0], (B, H, E, Ev)),
                               ("state[1]", state[1], (B, self.conv_size - 1, 3 * D))):
            check_input(name, t, x, other="x")
            if tuple(t.shape) != shape:
                raise ValueError(f"{name} must have shape {shape_str(shape)} for x of shape "
                                 f"{shape_str(x.shape)}, got {shape_str(t.shape)}")

    @staticmethod
    def _accumulate(q: Tensor, k: Tensor, v: Tensor, beta: Tensor, memory: Tensor | None
                    ) -> tuple[Tensor, Tensor]:
        """:math:`M_t = M_{t-1} + \beta_t k_t v_t^\top`, :math:`o_t = M_t^\top q_t`, in the
        quadratic order within the call, (Q K^T masked, times beta by column) V."""
        bv = beta[..., None] * v  # (B, H, L, Ev)
        out = (q @ k.transpose(-2, -1)).tril() @ bv  # (B, H, L, Ev)
        sums = k.transpose(-2, -1) @ bv  # (B, H, E, Ev)
        if memory is not None:
            out = out + q @ memory
            sums = sums + memory
        return out, sums

    @staticmethod
    def _linear(q: Tensor, k: Tensor, v: Tensor, memory: Tensor | None
                ) -> tuple[Tensor, Tensor]:
        """Causal linear attention with a running state [sum phi(k) v^T | sum phi(k)].

        Within the call the sums are taken in the quadratic order, (phi(Q) phi(K)^T masked)
        [V | 1], which is cheaper than L outer products of E x Ev for the short lines here.
        """
        fq, fk = F.elu(q) + 1, F.elu(k) + 1  # (B, H, L, E)
        v1 = torch.cat((v, torch.ones_like(v[..., :1])), -1)  # (B, H, L, Ev + 1)
        both = (fq @ fk.transpose(-2, -1)).tril() @ v1  # (B, H, L, Ev + 1)
        sums = fk.transpose(-2, -1) @ v1  # this call's sum of phi(k) [v | 1]^T: (B, H, E, Ev+1)
        if memory is not None:
            both = both + fq @ memory
            sums = sums + memory
        return both[..., :-1] / both[..., -1:], sums
