r"""A decoder-only language model: chapter 7's decoder without cross-attention.

Today's language models keep one half of the Transformer. Each block is the decoder layer of
chapter 7 without its cross-attention, so a token reads only the tokens before it (the causal
mask), and the model is trained to predict every next token at once:

.. math::

    \mathbf H^{(0)} = E[\mathbf x],

    \mathbf Z = \mathbf H^{(n-1)} + \mathrm{Attn}(\mathrm{LN}_1(\mathbf H^{(n-1)})),

    \mathbf H^{(n)} = \mathbf Z + \mathrm{FFN}(\mathrm{LN}_2(\mathbf Z)),

    p(x_{t+1} \mid x_{\le t}) = \mathrm{softmax}(\mathrm{LN}(\mathbf H^{(N)}_t)\, E^\top),

    \mathcal L = -\frac{1}{T}\sum_t \log p(x_{t+1} \mid x_{\le t}).

Three choices follow the models of 2023-2025 rather than the 2017 paper, each one flag:
pre-LN blocks with a final LayerNorm; RoPE on queries and keys instead of added sinusoids; and
self-attention with ``num_kv_heads`` key/value heads (:mod:`attnlib.blocks.gqa`; equal to
``num_heads`` it is multi-head attention). ``window`` restricts every query to the last
``window`` positions (:mod:`attnlib.blocks.sliding_window`).

Two options change the attention for chapter 9's comparisons, both off by default:
``alibi=True`` replaces RoPE by ALiBi's distance penalty (:mod:`attnlib.blocks.alibi`), and
``attention="linear"`` replaces the softmax by causal linear attention
(:class:`attnlib.blocks.linear_attention.LinearSelfAttention`), which keeps no cache.

At generation time :class:`LMCache` keeps each layer's keys and values; with a window it keeps
only the last ``window`` of them, Mistral's rolling buffer.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlib._checks import (
    check_choice,
    check_flag,
    check_float_dtype,
    check_input,
    check_instance,
    check_int,
    check_mask,
    check_positive,
    check_tensor,
    check_token_ids,
    shape_str,
)
from attnlib.blocks.alibi import alibi_bias, alibi_slopes
from attnlib.blocks.gqa import GroupedQueryAttention, gqa_parameter_count, mean_pool_kv
from attnlib.blocks.linear_attention import LinearSelfAttention
from attnlib.blocks.positional import RotaryPositionalEmbedding
from attnlib.models.mixer_lm import MixerLM
from attnlib.models.transformer.layers import FeedForward

__all__ = [
    "DecoderBlock",
    "DecoderLM",
    "DecoderLMConfig",
    "LMCache",
    "generate",
    "lm_loss",
    "train_lm",
]


@dataclass(frozen=True)
class DecoderLMConfig:
    """Sizes of a :class:`DecoderLM`.

    Args:
        vocab_size: V.
        d_model: D.
        num_heads: H, the query heads; must divide D, and E = D / H must be even (RoPE).
        num_kv_heads: H_kv, the key/value heads; must divide H (H: multi-head, 1: multi-query).
        num_layers: N.
        d_ff: the feed-forward hidden size.
        max_len: the longest sequence accepted.
        window: None: causal attention; w: each query sees its last w positions (itself
            included).
        rope_base: the RoPE base.
        alibi: True: no RoPE; ALiBi's bias :math:`-m_h (i - j)` on the scores instead.
        attention: ``"softmax"``, or ``"linear"`` for causal linear attention (no cache, no
            window).

    Raises:
        ValueError: if a size is < 1, the heads do not divide, ``attention`` is unknown, or
            linear attention is asked for with a window.
    """

    vocab_size: int
    d_model: int = 32
    num_heads: int = 4
    num_kv_heads: int = 4
    num_layers: int = 2
    d_ff: int = 64
    max_len: int = 256
    window: int | None = None
    rope_base: float = 10000.0
    alibi: bool = False
    attention: str = "softmax"

    def __post_init__(self) -> None:
        for name in ("vocab_size", "d_model", "d_ff", "num_layers", "max_len"):
            check_int(name, getattr(self, name), minimum=1)
        gqa_parameter_count(self.d_model, self.num_heads, self.num_kv_heads)  # validates
        if (self.d_model // self.num_heads) % 2:
            raise ValueError(f"the head size E = d_model / num_heads must be even for RoPE, got "
                             f"{self.d_model} / {self.num_heads} = {self.d_model // self.num_heads}")
        if self.window is not None:
            check_int("window", self.window, minimum=1)
        check_positive("rope_base", self.rope_base)
        if not isinstance(self.alibi, bool):
            raise TypeError(f"alibi must be a bool, got {type(self.alibi).__name__}")
        check_choice("attention", self.attention, ("softmax", "linear"))
        if self.attention == "linear" and self.window is not None:
            raise ValueError(f"linear attention has no window: window must be None with "
                             f"attention = 'linear', got window = {self.window}")

    @property
    def head_dim(self) -> int:
        """E = D / H."""
        return self.d_model // self.num_heads


@dataclass
class LMCache:
    """The keys and values of every layer for the positions generated so far.

    With a ``window`` only the last ``window`` positions are kept (a rolling buffer): older
    ones can never be attended to again.

    Shape:
        - keys[n], values[n]: (B, H_kv, min(t, window), E) after t positions
    """

    keys: list[Tensor] = field(default_factory=list)
    values: list[Tensor] = field(default_factory=list)
    length: int = 0
    window: int | None = None

    def __post_init__(self) -> None:
        check_int("length", self.length, minimum=0)
        if self.window is not None:
            check_int("window", self.window, minimum=1)

    def nbytes(self) -> int:
        """Bytes held by the cached tensors."""
        return sum(t.numel() * t.element_size() for t in (*self.keys, *self.values))


def _attention_mask(q_pos: Tensor, k_pos: Tensor, window: int | None) -> Tensor:
    """Causal (and windowed) mask from absolute positions, True = may attend.

    Shape:
        - q_pos: (L,); k_pos: (S,); output: (L, S)
    """
    allowed = k_pos[None, :] <= q_pos[:, None]  # (L, S)
    if window is not None:
        allowed = allowed & (k_pos[None, :] > q_pos[:, None] - window)
    return allowed


class DecoderBlock(nn.Module):
    r"""Pre-LN block: :math:`z = x + \mathrm{Attn}(\mathrm{LN}_1 x)`, :math:`y = z + \mathrm{FFN}(\mathrm{LN}_2 z)`.

    Shape:
        - x: (B, L, D); attn_mask: (L, S) bool; past: two (B, H_kv, P, E) or None
        - output: (B, L, D), and the new keys and values (B, H_kv, L, E)
    """

    def __init__(self, config: DecoderLMConfig, *, dtype: torch.dtype | None = None) -> None:
        super().__init__()
        check_float_dtype("dtype", dtype, optional=True)
        check_instance("config", config, DecoderLMConfig, "a DecoderLMConfig")
        c = config
        rope = None if c.alibi else RotaryPositionalEmbedding(c.head_dim, c.rope_base)
        kind = LinearSelfAttention if c.attention == "linear" else GroupedQueryAttention
        self.attn = kind(c.d_model, c.num_heads, c.num_kv_heads, rope=rope, dtype=dtype)
        self.feed_forward = FeedForward(c.d_model, c.d_ff, activation="gelu", dtype=dtype)
        self.norm1 = nn.LayerNorm(c.d_model, dtype=dtype)
        self.norm2 = nn.LayerNorm(c.d_model, dtype=dtype)

    def forward(
        self, x: Tensor, attn_mask: Tensor,
        past: tuple[Tensor, Tensor] | None = None, offset: int = 0,
    ) -> tuple[Tensor, Tensor, Tensor]:
        _check_block_input(self, x, attn_mask)
        # (B, L, D), and this block's keys and values (B, H_kv, L, E)
        attended, k, v = self.attn(self.norm1(x), attn_mask, past, offset)
        x = x + attended
        x = x + self.feed_forward(self.norm2(x))  # (B, L, D)
        return x, k, v


class DecoderLM(nn.Module):
    """The decoder-only language model; see the module docstring.

    The output projection is the token embedding (tied), as in the book's Transformer.

    Shape:
        - tokens: (B, L) ids in [0, V)
        - output: logits (B, L, V)

    Raises:
        ValueError: if ``tokens`` is not (B, L) with ids in [0, V), or the sequence (with the
            cache's positions) would pass ``max_len``.
        TypeError: if ``tokens`` is not an integer tensor.
    """

    def __init__(self, config: DecoderLMConfig, *, dtype: torch.dtype | None = None) -> None:
        super().__init__()
        check_float_dtype("dtype", dtype, optional=True)
        if not isinstance(config, DecoderLMConfig):
            raise TypeError(f"config must be a DecoderLMConfig, got {type(config).__name__}")
        self.config = c = config
        self.embedding = nn.Embedding(c.vocab_size, c.d_model, dtype=dtype)
        nn.init.normal_(self.embedding.weight, std=c.d_model ** -0.5)
        self.blocks = nn.ModuleList(DecoderBlock(c, dtype=dtype) for _ in range(c.num_layers))
        self.norm = nn.LayerNorm(c.d_model, dtype=dtype)

    def with_kv_heads(self, num_kv_heads: int) -> DecoderLM:
        """A copy whose attention layers have ``num_kv_heads`` key/value heads, mean-pooled.

        See :func:`attnlib.blocks.gqa.mean_pool_kv`; everything else is copied.
        """
        clone = copy.deepcopy(self)
        object.__setattr__(clone, "config", replace(self.config, num_kv_heads=num_kv_heads))
        for block in clone.blocks:
            assert isinstance(block, DecoderBlock)
            block.attn = mean_pool_kv(block.attn, num_kv_heads)
        return clone

    def _check_cache(self, cache: object, B: int) -> None:
        """None, or an :class:`LMCache` this model filled for B sequences."""
        if cache is None:
            return
        check_instance("cache", cache, LMCache, "an LMCache")
        assert isinstance(cache, LMCache)
        c = self.config
        check_int("cache.length", cache.length, minimum=0)
        if cache.length and cache.window != c.window:
            raise ValueError(f"cache was filled by a model with window = {cache.window}, this "
                             f"one has window = {c.window}")
        if len(cache.keys) != len(cache.values) or len(cache.keys) > c.num_layers:
            raise ValueError(f"cache must hold keys and values of at most {c.num_layers} layers, "
                             f"got {len(cache.keys)} keys and {len(cache.values)} values")
        if cache.length and len(cache.keys) != c.num_layers:
            raise ValueError(f"cache holds {len(cache.keys)} layers, this model has "
                             f"{c.num_layers}: use a fresh LMCache for this model")
        weight = self.embedding.weight
        want = (B, c.num_kv_heads, c.head_dim)
        for n, (k, v) in enumerate(zip(cache.keys, cache.values, strict=True)):
            for part, t in (("keys", k), ("values", v)):
                t = check_input(f"cache.{part}[{n}]", t, weight, 4, "(B, H_kv, P, E)")
                if (t.shape[0], t.shape[1], t.shape[3]) != want:
                    raise ValueError(f"cache.{part}[{n}] must have shape (B, H_kv, P, E) = "
                                     f"({B}, {want[1]}, P, {want[2]}) for tokens of batch "
                                     f"B = {B}, got {shape_str(t.shape)}")

    def parameter_count(self) -> int:
        """Learnable parameters (the tied embedding counted once)."""
        return sum(p.numel() for p in self.parameters())

    def forward(self, tokens: Tensor, cache: LMCache | None = None) -> Tensor:
        c = self.config
        tokens = check_token_ids("tokens", tokens, c.vocab_size,
                                 device=self.embedding.weight.device)
        L = tokens.shape[1]
        self._check_cache(cache, tokens.shape[0])
        offset = 0 if cache is None else cache.length
        if offset + L > c.max_len:
            raise ValueError(f"tokens of shape {shape_str(tokens.shape)} at position {offset} "
                             f"(the positions in the cache) would pass max_len = {c.max_len}")
        q_pos = torch.arange(offset, offset + L, device=tokens.device)  # (L,)
        x = self.embedding(tokens)  # (B, L, D)
        for n, block in enumerate(self.blocks):
            past = None
            if cache is not None and n < len(cache.keys):
                past = (cache.keys[n], cache.values[n])  # (B, H_kv, P, E) x 2
            P = 0 if past is None else past[0].shape[2]
            k_pos = torch.arange(offset - P, offset + L, device=tokens.device)  # (P + L,)
            mask = _attention_mask(q_pos, k_pos, c.window)  # (L, P + L)
            if c.alibi:  # -m_h (i - j) where allowed, -inf elsewhere: (H, L, P + L)
                mask = alibi_bias(q_pos, k_pos, alibi_slopes(c.num_heads), mask, x.dtype)
            x, k, v = block(x, mask, past, offset)
            if cache is not None:
                keys = k if past is None else torch.cat((past[0], k), dim=2)  # (B, H_kv, P+L, E)
                values = v if past is None else torch.cat((past[1], v), dim=2)
                if c.window is not None:
                    keys, values = keys[:, :, -c.window:], values[:, :, -c.window:]
                if n < len(cache.keys):
                    cache.keys[n], cache.values[n] = keys, values
                else:
                    cache.keys.append(keys)
                    cache.values.append(values)
        if cache is not None:
            cache.length += L
            cache.window = c.window
        logits: Tensor = self.norm(x) @ self.embedding.weight.T  # (B, L, V)
        return logits


def lm_loss(logits: Tensor, targets: Tensor) -> Tensor:
    """Mean next-token cross-entropy over the targets that are not -100.

    0 (with a gradient of zeros) when every target is -100: there is nothing to score, and the
    mean of nothing would be NaN.

    Shape:
        - logits: (B, L, V); targets: (B, L)

    Raises:
        TypeError: if ``logits`` is not floating point or ``targets`` not integer ids.
        ValueError: if the shapes do not agree, the tensors are on different devices, or a
            target is outside [0, V) and not -100.
    """
    logits, targets = _check_loss_args(logits, targets)
    if not bool((targets != -100).any()):  # no target to score: 0, not the mean of nothing
        return logits.sum() * 0.0
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)


@torch.no_grad()
def generate(model: DecoderLM, prompt: Tensor, steps: int, *, use_cache: bool = True) -> Tensor:
    r"""Continue ``prompt`` greedily by ``steps`` tokens: :math:`x_{t+1} = \arg\max_x p(x \mid x_{\le t})`.

    With ``use_cache`` the prompt is read once and every step feeds only the newest token;
    without, every step re-runs the model on the whole sequence. Both give the same tokens.

    Shape:
        - prompt: (B, L0); output: (B, L0 + steps)

    Raises:
        ValueError: if ``steps`` < 0 or the result would pass ``max_len``; as the model's
            forward for a bad prompt.
    """
    check_instance("model", model, DecoderLM, "a DecoderLM")
    prompt = check_token_ids("prompt", prompt, model.config.vocab_size,
                             device=model.embedding.weight.device)
    check_int("steps", steps, minimum=0)
    check_flag("use_cache", use_cache)
    if prompt.shape[1] == 0:
        raise ValueError(f"prompt must hold at least one token, got shape "
                         f"{shape_str(prompt.shape)}")
    if prompt.shape[1] + steps > model.config.max_len:
        raise ValueError(f"steps = {steps} new tokens after a prompt of {prompt.shape[1]} would "
                         f"pass max_len = {model.config.max_len}")
    was_training = model.training
    model.eval()
    try:
        tokens = prompt
        cache = LMCache() if use_cache else None
        new = prompt
        for _ in range(steps):
            logits = model(new if use_cache else tokens, cache)  # (B, l, V)
            nxt = logits[:, -1].argmax(dim=-1, keepdim=True)  # (B, 1)
            tokens = torch.cat((tokens, nxt), dim=1)  # (B, t + 1)
            new = nxt
        return tokens
    finally:
        model.train(was_training)


def train_lm(
    model: DecoderLM,
    batch: Callable[[int], tuple[Tensor, Tensor]],
    *,
    steps: int,
    lr: float = 3e-3,
    constant_lr: bool = False,
) -> list[float]:
    """Train with Adam on ``batch(step)`` = (tokens, targets), the rate cosine-decayed to 0.

    ``constant_lr=True`` keeps the rate at ``lr`` throughout (chapter 9's long-context runs,
    where a model must first find the right heads, and a short fine-tuning).

    Returns:
        The training loss of every step.

    Raises:
        ValueError: if ``steps`` < 1 or ``lr`` <= 0. TypeError: if ``model`` is not a
            :class:`DecoderLM` or :class:`~attnlib.models.mixer_lm.MixerLM`.
    """
    check_instance("model", model, (DecoderLM, MixerLM), "a language model (a DecoderLM or "
                   "a MixerLM)")
    if not callable(batch):
        raise TypeError(f"batch must be callable, batch(step) -> (tokens, targets), got "
                        f"{type(batch).__name__}")
    check_int("steps", steps, minimum=1)
    check_positive("lr", lr)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    schedule = (torch.optim.lr_scheduler.ConstantLR(optimizer, factor=1.0) if constant_lr
                else torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps))
    model.train()
    losses: list[float] = []
    for step in range(steps):
        tokens, targets = batch(step)
        loss = lm_loss(model(tokens), targets)
        optimizer.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]  # untyped in torch 2.13
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
    model.eval()
    return losses


def _check_block_input(block: DecoderBlock, x: Tensor, attn_mask: Tensor) -> None:
    """x (B, L, D) like the block's parameters, and a mask (L, P + L) (``attn_mask`` is
    required: without one a block would attend to later positions)."""
    x = check_input("x", x, block.norm1.weight, 3, "(B, L, D)")
    if x.shape[-1] != block.norm1.normalized_shape[0]:
        raise ValueError(f"x must have shape (B, L, D) with D = {block.norm1.normalized_shape[0]}, "
                         f"got {shape_str(x.shape)}")
    if attn_mask is None:
        raise TypeError("attn_mask must be a tensor (the causal mask, True = may attend), got "
                        "None: a decoder block never attends to later positions")
    attn_mask = check_tensor("attn_mask", attn_mask)
    check_mask("attn_mask", attn_mask, attn_mask.shape, device=x.device)  # the shape: GQA's


def _check_loss_args(logits: Tensor, targets: Tensor) -> tuple[Tensor, Tensor]:
    """Logits (B, L, V) and targets (B, L), ids in [0, V) or -100 (ignored)."""
    logits = check_tensor("logits", logits)
    if not logits.is_floating_point():
        raise TypeError(f"logits must have a floating-point dtype, got {logits.dtype}")
    if logits.ndim != 3 or logits.shape[-1] == 0:
        raise ValueError(f"logits must have shape (B, L, V) with V >= 1, got "
                         f"{shape_str(logits.shape)}")
    targets = check_tensor("targets", targets)
    if targets.is_floating_point() or targets.is_complex() or targets.dtype == torch.bool:
        raise TypeError(f"targets must hold integer ids, got dtype {targets.dtype}")
    if targets.device != logits.device:
        raise ValueError(f"targets is on device {targets.device}, but logits is on "
                         f"{logits.device}")
    if targets.shape != logits.shape[:2]:
        raise ValueError(f"targets must have shape (B, L) = {shape_str(logits.shape[:2])} of "
                         f"logits of shape {shape_str(logits.shape)}, got "
                         f"{shape_str(targets.shape)}")
    V = logits.shape[-1]
    outside = ((targets < 0) | (targets >= V)) & (targets != -100)
    if bool(outside.any()):
        raise ValueError(f"targets must hold ids in [0, V) = [0, {V}) or -100 (ignored), got "
                         f"{int(targets[outside][0])}")
    return logits, targets.long()
