r"""Causal self-attention as today's models run it: output gates, sinks, windows, a cache.

Three small changes to chapter 9's attention, each one option of :class:`CausalSelfAttention`:

- **Gated attention** {Qiu et al. 2025}: each head's output is multiplied, element by element,
  by a sigmoid of the layer's input, :math:`\tilde o_{t,h} = o_{t,h} \odot \sigma(x_t W^G_h)`,
  before the output projection (:func:`gated_attention`). A head can then say "nothing" by
  closing its gate, instead of by putting its weight on a token whose value is empty.
- **A learned sink** (gpt-oss): one more logit :math:`s_h` per head in the softmax's
  denominator, with a zero value (:func:`attention_with_sink`):
  :math:`\alpha_{tj} = e^{a_{tj}} / (e^{s_h} + \sum_{j'} e^{a_{tj'}})`. The weights on the
  real keys may then sum to less than one.
- **A window with kept sink tokens** (StreamingLLM, Xiao et al. 2024): ``window`` keys at
  most per query, the first ``sink_tokens`` of the text and the most recent ones. The cache
  keeps exactly those; the keys are stored before RoPE and rotated by their place in the
  cache at every step, as StreamingLLM does, so that a kept first token sits just before
  the window rather than thousands of positions back. With sink tokens, a call may therefore
  not read more than ``window + 1`` keys at once (a whole text longer than that in one pass
  would rotate its keys by their places in the text, not in the cache, and compute another
  function than the token-by-token stream): feed such a text one token at a time.

A fourth option, ``conv_size``, passes the query, key and value projections through a short
depthwise causal convolution, as :class:`~attnlib.blocks.delta_rule.DeltaNet` does, so that a
key at token t can carry token t - 1 (off by default).

``forward(x, state)`` returns the output and the cache to continue from (:class:`KVState`);
``state=None`` reads a whole sequence from position 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from attnlib._checks import (
    check_flag,
    check_float_dtype,
    check_input,
    check_instance,
    check_int,
    check_mask,
    check_positive,
    check_qkv,
    shape_str,
)
from attnlib.blocks.masking import _masked_softmax
from attnlib.blocks.positional import RotaryPositionalEmbedding

__all__ = ["CausalSelfAttention", "KVState", "attention_with_sink", "gated_attention"]


def _check_args(query: Tensor, key: Tensor, value: Tensor, name: str, logits: Tensor,
                attn_mask: Tensor | None) -> None:
    """The shared query/key/value check, then ``logits`` (query's dtype and device; (H,) for
    the sink, (B, H, L, Ev) for the gate) and a bool ``attn_mask`` that broadcasts to the
    scores (B, H, L, S)."""
    check_qkv(query, key, value, layout="heads")
    check_input(name, logits, query, other="query")
    if name == "sink_logits":
        expected, shape = f"(H,) = ({query.shape[1]},), one per head", (query.shape[1],)
    else:
        shape = (*query.shape[:3], value.shape[-1])
        expected = f"(B, H, L, Ev) = {shape_str(shape)}"
    if logits.shape != shape:
        raise ValueError(f"{name} must have shape {expected}, got {shape_str(logits.shape)}")
    if attn_mask is not None:
        scores = (*query.shape[:3], key.shape[2])
        check_mask("attn_mask", attn_mask, scores, expected="(B, H, L, S)",
                   device=query.device, bool_only=True)


def _scores(query: Tensor, key: Tensor, attn_mask: Tensor | None) -> Tensor:
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])  # (B, H, L, S)
    if attn_mask is not None:
        scores = scores.masked_fill(~attn_mask, -math.inf)
    return scores


def attention_with_sink(
    query: Tensor, key: Tensor, value: Tensor, sink_logits: Tensor,
    attn_mask: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    r"""Softmax attention with one extra logit per head that takes weight but gives nothing.

    .. math::

        \alpha_{ij} = \frac{e^{a_{ij}}}{e^{s_h} + \sum_{j'} e^{a_{ij'}}},

        o_i = \sum_j \alpha_{ij} v_j,

        a_{ij} = \frac{q_i \cdot k_j}{\sqrt E}

    the same as ordinary attention over one more key whose score is :math:`s_h` and whose
    value is zero (the unit tests compare with PyTorch's attention so extended).

    Shape:
        - query: (B, H, L, E); key: (B, H, S, E); value: (B, H, S, Ev); sink_logits: (H,)
        - attn_mask: bool, broadcastable to (B, H, L, S), True = may attend
        - output: (B, H, L, Ev), and the weights on the real keys (B, H, L, S)

    Raises:
        ValueError: if the shapes do not fit (E = 0 included), or a tensor is on another
            device than ``query``. TypeError: for non-floating inputs, dtypes other than
            ``query``'s, or a non-bool mask.
    """
    _check_args(query, key, value, "sink_logits", sink_logits, attn_mask)
    H = query.shape[1]
    scores = _scores(query, key, attn_mask)  # (B, H, L, S)
    sink = sink_logits.view(1, H, 1, 1).expand(*scores.shape[:3], 1)  # (B, H, L, 1)
    weights = torch.cat((scores, sink), dim=-1).softmax(dim=-1)[..., :-1]  # (B, H, L, S)
    return weights @ value, weights  # (B, H, L, Ev), (B, H, L, S)


def gated_attention(
    query: Tensor, key: Tensor, value: Tensor, gate_logits: Tensor,
    attn_mask: Tensor | None = None,
) -> Tensor:
    r"""Softmax attention whose output is gated element by element: :math:`o \odot \sigma(g)`.

    Qiu et al.'s G1 position: after scaled dot-product attention, per head, each element of
    the head's output multiplied by its own sigmoid gate, computed from the layer's input.

    Shape:
        - query: (B, H, L, E); key: (B, H, S, E); value: (B, H, S, Ev)
        - gate_logits: (B, H, L, Ev); output: (B, H, L, Ev)
        - attn_mask: bool, broadcastable to (B, H, L, S), True = may attend; a query that
          may attend to no key gets zero weights and a zero output

    Raises:
        ValueError: if the shapes do not fit (E = 0 included), or a tensor is on another
            device than ``query``. TypeError: for non-floating inputs, dtypes other than
            ``query``'s, or a non-bool mask.
    """
    _check_args(query, key, value, "gate_logits", gate_logits, attn_mask)
    weights = _masked_softmax(_scores(query, key, None), attn_mask)  # (B, H, L, S)
    return (weights @ value) * torch.sigmoid(gate_logits)  # (B, H, L, Ev)


@dataclass
class KVState:
    """What a :class:`CausalSelfAttention` layer caches: keys before RoPE, and values.

    ``seen`` counts the tokens read so far; the cache holds the first ``sink_tokens`` of them
    and the most recent, ``window`` in all (every one without a window). With a short
    convolution, ``conv_tail`` holds its last ``conv_size - 1`` inputs.

    Shape:
        - keys, values: (B, H_kv, S, E), S = min(seen, window)
        - conv_tail: (B, conv_size - 1, D + 2 H_kv E) or None
    """

    keys: Tensor
    values: Tensor
    seen: int
    conv_tail: Tensor | None = None


class CausalSelfAttention(nn.Module):
    r"""Causal self-attention with RoPE and grouped key/value heads, and today's options.

    With the defaults it computes what :class:`attnlib.blocks.gqa.GroupedQueryAttention` computes in
    chapter 9's decoder (the unit tests compare the two with copied weights).

    Args:
        embed_dim, num_heads, num_kv_heads: D, H, H_kv (H_kv divides H; E = D / H even).
        window: None, or the most keys a query reads (itself included).
        sink_tokens: with a window, how many first tokens are always kept (StreamingLLM).
        gate: a sigmoid gate on each head's output (Qiu et al.).
        learned_sink: one learned sink logit per head (gpt-oss).
        conv_size: 0 (none), or the taps of a short causal convolution on q, k and v.
        rope_base: RoPE's base.

    Shape:
        - x: (B, L, D); output: (B, L, D)

    Raises:
        ValueError: if the heads do not divide, E is odd, or ``sink_tokens`` is not below
            ``window``; in ``forward`` and ``attention_weights``, if ``x`` is not (B, L, D),
            ``state`` is not a cache this layer could have returned for ``x``'s batch, or,
            with ``sink_tokens``, the call would read more than ``window + 1`` keys at once
            (the cached keys and ``x``'s tokens; see the module's docstring).
        TypeError: non-bool ``gate`` or ``learned_sink``; in ``forward``, ``x`` of another
            dtype than the parameters', or a ``state`` that is not a :class:`KVState`.
    """

    def __init__(self, embed_dim: int, num_heads: int, num_kv_heads: int | None = None, *,
                 window: int | None = None, sink_tokens: int = 0, gate: bool = False,
                 learned_sink: bool = False, conv_size: int = 0,
                 rope_base: float = 10000.0, dtype: torch.dtype | None = None) -> None:
        super().__init__()
        check_float_dtype("dtype", dtype, optional=True)
        check_positive("rope_base", rope_base)
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        for name, v in (("embed_dim", embed_dim), ("num_heads", num_heads),
                        ("num_kv_heads", num_kv_heads)):
            check_int(name, v, minimum=1)
        if embed_dim % num_heads or num_heads % num_kv_heads:
            raise ValueError(f"num_heads must divide embed_dim and num_kv_heads must divide "
                             f"num_heads, got embed_dim = {embed_dim}, num_heads = "
                             f"{num_heads}, num_kv_heads = {num_kv_heads}")
        if (embed_dim // num_heads) % 2:
            raise ValueError(f"the head size E = embed_dim / num_heads must be even for RoPE, "
                             f"got {embed_dim} / {num_heads}")
        if window is not None:
            check_int("window", window, minimum=1)
        check_int("sink_tokens", sink_tokens, minimum=0)
        check_int("conv_size", conv_size, minimum=0)
        check_flag("gate", gate)
        check_flag("learned_sink", learned_sink)
        if sink_tokens and (window is None or sink_tokens >= window):
            raise ValueError(f"sink_tokens must be below window (the sinks are part of it), "
                             f"got sink_tokens = {sink_tokens} and window = {window}")
        self.embed_dim, self.num_heads, self.num_kv_heads = embed_dim, num_heads, num_kv_heads
        self.head_dim = E = embed_dim // num_heads
        self.window, self.sink_tokens = window, sink_tokens
        kv = num_kv_heads * E
        self.q_proj = nn.Linear(embed_dim, embed_dim, dtype=dtype)
        self.k_proj = nn.Linear(embed_dim, kv, dtype=dtype)
        self.v_proj = nn.Linear(embed_dim, kv, dtype=dtype)
        self.out_proj = nn.Linear(embed_dim, embed_dim, dtype=dtype)
        self.g_proj = nn.Linear(embed_dim, embed_dim, dtype=dtype) if gate else None
        self.sink_logits = nn.Parameter(torch.zeros(num_heads, dtype=dtype)) \
            if learned_sink else None
        self.rope = RotaryPositionalEmbedding(E, rope_base)
        self.conv_size = conv_size
        channels = embed_dim + 2 * kv  # depthwise: one filter per channel of q, k and v
        self.conv = nn.Conv1d(channels, channels, conv_size, groups=channels, bias=False,
                              dtype=dtype) if conv_size else None

    def _split(self, t: Tensor, heads: int) -> Tensor:
        B, L, _ = t.shape
        return t.view(B, L, heads, self.head_dim).transpose(1, 2)  # (B, heads, L, E)

    def _mask(self, q_pos: Tensor, k_pos: Tensor) -> Tensor:
        """True = may attend, from absolute positions: causal, in the window or a sink."""
        allowed = k_pos[None, :] <= q_pos[:, None]  # (L, S)
        if self.window is not None:
            recent = k_pos[None, :] > q_pos[:, None] - (self.window - self.sink_tokens)
            allowed = allowed & (recent | (k_pos[None, :] < self.sink_tokens))
        return allowed

    def _attend(self, x: Tensor, state: KVState | None
                ) -> tuple[Tensor, Tensor, KVState]:
        x = check_input("x", x, self.q_proj.weight, 3, "(B, L, D)")
        if x.shape[-1] != self.embed_dim:
            raise ValueError(f"x must have shape (B, L, D) with D = embed_dim = "
                             f"{self.embed_dim}, got shape {shape_str(x.shape)}")
        if state is not None:
            self._check_state(state, x)
        B, L, _ = x.shape
        q, k, v = self.q_proj(x), self.k_proj(x), self.v_proj(x)
        tail = None
        if self.conv is not None:  # a short causal convolution over the last conv_size tokens
            qkv = torch.cat((q, k, v), dim=-1)  # (B, L, D + 2 kv)
            past = (qkv.new_zeros(B, self.conv_size - 1, qkv.shape[-1])
                    if state is None or state.conv_tail is None else state.conv_tail)
            padded = torch.cat((past, qkv), dim=1)  # (B, c - 1 + L, D + 2 kv)
            tail = padded[:, padded.shape[1] - (self.conv_size - 1):]
            qkv = self.conv(padded.transpose(1, 2)).transpose(1, 2)  # (B, L, D + 2 kv)
            kv = k.shape[-1]
            q, k, v = qkv.split((self.embed_dim, kv, kv), dim=-1)
        q = self._split(q, self.num_heads)  # (B, H, L, E)
        k = self._split(k, self.num_kv_heads)  # (B, H_kv, L, E), before RoPE
        v = self._split(v, self.num_kv_heads)
        seen = 0 if state is None else state.seen
        if state is not None:
            k = torch.cat((state.keys, k), dim=2)  # (B, H_kv, S, E)
            v = torch.cat((state.values, v), dim=2)
        S = k.shape[2]
        if self.sink_tokens and self.window is not None and S > self.window + 1:
            # a token-by-token stream never holds more than window + 1 keys; past that, one
            # pass would rotate the keys by text position where the stream rotates by slot
            raise ValueError(
                f"with sink_tokens = {self.sink_tokens}, a call may read at most window + 1 = "
                f"{self.window + 1} keys (the cache and x's tokens), got {S - L} cached and "
                f"{L} in x: keys are rotated by their place in the cache (StreamingLLM), so "
                f"feed a text longer than the window one token at a time")
        # absolute positions of the cached keys: the sinks, then a contiguous run
        kept = min(self.sink_tokens, S - L)
        k_abs = torch.cat((torch.arange(kept), torch.arange(seen + L - (S - kept), seen + L)))
        q_abs = torch.arange(seen, seen + L)
        # RoPE by place in the cache (= absolute position until something is evicted)
        slots = torch.arange(S)
        q_rot = self.rope(q, positions=slots[S - L:].to(x.device))
        k_rot = self.rope(k, positions=slots.to(x.device))
        G = self.num_heads // self.num_kv_heads
        k_rot, v_rep = k_rot.repeat_interleave(G, 1), v.repeat_interleave(G, 1)  # H heads
        mask = self._mask(q_abs, k_abs).to(x.device)  # (L, S)
        heads, weights = self._heads(x, q_rot, k_rot, v_rep, mask)  # (B, H, L, E)
        out = self.out_proj(heads.transpose(1, 2).reshape(B, L, self.embed_dim))
        if self.window is not None and S > self.window:  # evict: keep sinks + recent
            s, recent = self.sink_tokens, self.window - self.sink_tokens
            keep = torch.cat((torch.arange(s), torch.arange(S - recent, S))).to(x.device)
            k, v = k.index_select(2, keep), v.index_select(2, keep)
        return out, weights, KVState(k, v, seen + L, tail)

    def _check_state(self, state: KVState, x: Tensor) -> None:
        """A cache this layer could have returned for a batch of ``x``'s size."""
        check_instance("state", state, KVState, "a KVState (from this layer) or None")
        shape = (x.shape[0], self.num_kv_heads)
        for name, t in (("state.keys", state.keys), ("state.values", state.values)):
            check_input(name, t, x, 4, "(B, H_kv, S, E)", other="x")
            if tuple(t.shape[:2]) != shape or t.shape[3] != self.head_dim:
                raise ValueError(f"{name} must have shape (B, H_kv, S, E) = "
                                 f"{shape_str((*shape, 'S', self.head_dim))} for x of shape "
                                 f"{shape_str(x.shape)}, got {shape_str(t.shape)}")
        check_int("state.seen", state.seen, minimum=0)
        S = state.keys.shape[2]
        full = state.seen if self.window is None else min(state.seen, self.window)
        if state.values.shape[2] != S or S != full:
            raise ValueError(f"state holds {S} keys and {state.values.shape[2]} values after "
                             f"{state.seen} tokens; this layer keeps {full}")

    def _heads(self, x: Tensor, q: Tensor, k: Tensor, v: Tensor, mask: Tensor
               ) -> tuple[Tensor, Tensor]:
        """Each head's output and weights: softmax (or with the sink), then
        the gate."""
        if self.sink_logits is not None:  # gpt-oss: one more logit, value zero
            heads, weights = attention_with_sink(q, k, v, self.sink_logits,
                                                 mask)
        else:
            weights = _scores(q, k, mask).softmax(dim=-1)  # (B, H, L, S)
            heads = weights @ v  # (B, H, L, E)
        if self.g_proj is not None:  # Qiu et al.: a sigmoid of the input
            gate = torch.sigmoid(self._split(self.g_proj(x), self.num_heads))
            heads = heads * gate  # element by element, per head
        return heads, weights

    def forward(self, x: Tensor, state: KVState | None = None) -> tuple[Tensor, KVState]:
        out, _, new_state = self._attend(x, state)
        return out, new_state

    def attention_weights(self, x: Tensor) -> Tensor:
        """The weights of a whole sequence read from position 0 (the sink excluded).

        With ``sink_tokens``, ``x`` may hold at most ``window + 1`` tokens (see the class).

        Shape:
            - x: (B, L, D); output: (B, H, L, L)
        """
        return self._attend(x, None)[1]
