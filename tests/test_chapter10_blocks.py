"""Chapter 10's blocks, each against its twin: the delta rule's two forms, MLA's two forms,
attention with a learned sink and with a gate against PyTorch, the mixer LM against chapter
9's decoder, and the caches against the full pass."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from attnlib.blocks import linear_attention as la
from attnlib.blocks.delta_rule import DeltaNet, delta_rule_chunked, delta_rule_recurrent
from attnlib.blocks.gated_attention import CausalSelfAttention, attention_with_sink, gated_attention
from attnlib.blocks.latent_attention import MultiHeadLatentAttention, mla_cache_elements
from attnlib.experiments import recall as rc
from attnlib.experiments import sinks as sk
from attnlib.models.decoder_lm import DecoderLM, DecoderLMConfig
from attnlib.models.mixer_lm import MixerCache, MixerLM

pytestmark = pytest.mark.usefixtures("one_thread")
F64, F32 = torch.float64, torch.float32
TIGHT = {"atol": 1e-10, "rtol": 1e-10}


def _delta_inputs(dtype: torch.dtype = F64, L: int = 23) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 3, L, 8, generator=g, dtype=dtype)
    k = F.normalize(torch.randn(2, 3, L, 8, generator=g, dtype=dtype), dim=-1)
    v = torch.randn(2, 3, L, 5, generator=g, dtype=dtype)
    beta = torch.rand(2, 3, L, generator=g, dtype=dtype)
    decay = 0.5 + 0.5 * torch.rand(2, 3, L, generator=g, dtype=dtype)
    state = torch.randn(2, 3, 8, 5, generator=g, dtype=dtype)
    return q, k, v, beta, decay, state


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("chunk", [1, 4, 16, 64])
def test_delta_rule_chunked_equals_recurrent_forward_and_backward(gated: bool, chunk: int
                                                                   ) -> None:
    q, k, v, beta, decay, state = _delta_inputs()
    used = (q, k, v, beta, decay, state) if gated else (q, k, v, beta, state)
    inputs = [t.requires_grad_() for t in used]
    dec = decay if gated else None
    a, ma = delta_rule_recurrent(q, k, v, beta, dec, state)
    b, mb = delta_rule_chunked(q, k, v, beta, dec, state, chunk_size=chunk)
    torch.testing.assert_close(a, b, **TIGHT)
    torch.testing.assert_close(ma, mb, **TIGHT)
    ga = torch.autograd.grad(a.square().sum() + ma.sum(), inputs)
    gb = torch.autograd.grad(b.square().sum() + mb.sum(), inputs)
    for x, y in zip(ga, gb, strict=True):
        torch.testing.assert_close(x, y, **TIGHT)


def test_delta_rule_float32_loose_and_overwrites_a_unit_key() -> None:
    q, k, v, beta, decay, state = _delta_inputs(F32)
    a, _ = delta_rule_recurrent(q, k, v, beta, decay, state)
    b, _ = delta_rule_chunked(q, k, v, beta, decay, state)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    # the same unit key twice with beta = 1: the memory holds the second value only
    key = F.normalize(torch.randn(1, 1, 1, 4, dtype=F64), dim=-1).expand(1, 1, 2, 4)
    values = torch.tensor([[[[1.0, 2.0], [5.0, -3.0]]]], dtype=F64)
    _, memory = delta_rule_recurrent(key, key, values, torch.ones(1, 1, 2, dtype=F64))
    torch.testing.assert_close(key[0, 0, 0] @ memory[0, 0], values[0, 0, 1], **TIGHT)


@pytest.mark.parametrize("kwargs", [{}, {"gated": True}, {"rule": "linear"}])
def test_deltanet_streaming_equals_whole_sequence(kwargs: dict[str, object]) -> None:
    torch.manual_seed(0)
    layer = DeltaNet(16, 2, dtype=F64, **kwargs)  # type: ignore[arg-type]
    x = torch.randn(2, 19, 16, dtype=F64)
    whole, _ = layer(x)
    state, steps = None, []
    for t in range(19):
        out, state = layer(x[:, t:t + 1], state)
        steps.append(out)
    torch.testing.assert_close(torch.cat(steps, 1), whole, **TIGHT)
    assert state is not None and state[0].shape[-2:] == ((8, 8) if not kwargs.get("rule")
                                                         else (8, 9))


def test_deltanet_linear_rule_equals_chapter_9_linear_attention() -> None:
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, 3, 30, 8, generator=g, dtype=F64) for _ in range(3))
    out, _ = DeltaNet._linear(q, k, v, None)
    torch.testing.assert_close(out, la.linear_attention(q, k, v, True), **TIGHT)


@pytest.mark.parametrize("dtype", [F64, F32])
def test_mla_absorbed_equals_naive_forward_and_backward(dtype: torch.dtype) -> None:
    torch.manual_seed(0)
    mla = MultiHeadLatentAttention(32, 4, 8, 12, 4, dtype=dtype)
    x = torch.randn(2, 9, 32, dtype=dtype, requires_grad=True)
    tol = TIGHT if dtype == F64 else {"atol": 1e-5, "rtol": 1e-5}
    naive, (latent, k_rope) = mla(x)
    absorbed, _ = mla(x, absorbed=True)
    torch.testing.assert_close(absorbed, naive, **tol)
    params = [x, *mla.parameters()]
    ga = torch.autograd.grad(naive.square().sum(), params)
    gb = torch.autograd.grad(absorbed.square().sum(), params)
    for a, b in zip(ga, gb, strict=True):
        torch.testing.assert_close(a, b, **tol)
    assert latent.shape == (2, 9, 12) and k_rope.shape == (2, 9, 4)


def test_mla_cache_steps_equal_full_pass_and_formula() -> None:
    torch.manual_seed(0)
    model = MixerLM(26, [MultiHeadLatentAttention(32, 4, 8, 12, 4, dtype=F64)
                         for _ in range(2)], d_ff=16, dtype=F64)
    tokens = torch.randint(0, 26, (3, 11))
    cache = MixerCache()
    steps = [model(tokens[:, :4], cache)] + [model(tokens[:, t:t + 1], cache)
                                             for t in range(4, 11)]
    torch.testing.assert_close(torch.cat(steps, 1), model(tokens), **TIGHT)
    assert cache.nbytes() == mla_cache_elements(2, 12, 4) * 11 * 3 * 8


def test_attention_with_sink_equals_sdpa_with_a_zero_key() -> None:
    g = torch.Generator().manual_seed(2)
    q = torch.randn(2, 3, 5, 8, generator=g, dtype=F64)
    k, v = (torch.randn(2, 3, 7, 8, generator=g, dtype=F64) for _ in range(2))
    sink = torch.randn(3, generator=g, dtype=F64)
    mask = torch.rand(5, 7, generator=g) > 0.3
    ours, weights = attention_with_sink(q, k, v, sink, mask)
    zero = torch.zeros(2, 3, 1, 8, dtype=F64)
    extra = torch.cat((torch.zeros(5, 7, dtype=F64).masked_fill(~mask, -math.inf)
                       .expand(3, 5, 7), sink.view(3, 1, 1).expand(3, 5, 1)), -1)
    ref = F.scaled_dot_product_attention(q, torch.cat((k, zero), 2), torch.cat((v, zero), 2),
                                         extra)
    torch.testing.assert_close(ours, ref, **TIGHT)
    assert bool((weights.sum(-1) < 1).all())


def test_gated_attention_equals_sdpa_times_sigmoid() -> None:
    g = torch.Generator().manual_seed(3)
    q, k, v, gate = (torch.randn(2, 3, 6, 8, generator=g, dtype=F64) for _ in range(4))
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=True) * torch.sigmoid(gate)
    mask = torch.ones(6, 6, dtype=torch.bool).tril()
    torch.testing.assert_close(gated_attention(q, k, v, gate, mask), ref, **TIGHT)


def _decoder_and_mixer(kv_heads: int) -> tuple[DecoderLM, MixerLM]:
    config = DecoderLMConfig(vocab_size=26, d_model=32, num_heads=4, num_kv_heads=kv_heads,
                             num_layers=2, d_ff=64, max_len=64)
    torch.manual_seed(1)
    decoder = DecoderLM(config, dtype=F64)
    mixer = MixerLM(26, [CausalSelfAttention(32, 4, kv_heads, dtype=F64) for _ in range(2)],
                    d_ff=64, dtype=F64)
    state = {k.replace(".attn.", ".mixer."): v for k, v in decoder.state_dict().items()}
    mixer.load_state_dict(state)
    return decoder, mixer


@pytest.mark.parametrize("kv_heads", [4, 2, 1])
def test_mixer_lm_with_attention_equals_chapter_9_decoder(kv_heads: int) -> None:
    decoder, mixer = _decoder_and_mixer(kv_heads)
    tokens = torch.randint(0, 26, (3, 20))
    with torch.no_grad():
        torch.testing.assert_close(mixer(tokens), decoder(tokens), **TIGHT)
        cache = MixerCache()
        steps = [mixer(tokens[:, t:t + 1], cache) for t in range(20)]
    torch.testing.assert_close(torch.cat(steps, 1), decoder(tokens), **TIGHT)
    assert cache.nbytes() == 2 * 2 * kv_heads * 8 * 20 * 3 * 8


def test_window_cache_equals_band_mask_and_sinks_keep_the_first_tokens() -> None:
    torch.manual_seed(0)
    layer = CausalSelfAttention(16, 2, window=5, dtype=F64)
    x = torch.randn(2, 14, 16, dtype=F64)
    whole, _ = layer(x)
    state, steps = None, []
    for t in range(14):
        out, state = layer(x[:, t:t + 1], state)
        steps.append(out)
    torch.testing.assert_close(torch.cat(steps, 1), whole, **TIGHT)
    assert state is not None and state.keys.shape[2] == 5
    # with 2 sink tokens the cache holds tokens 0, 1 and the last 3; until the window is
    # full the steps equal the whole pass
    sinky = CausalSelfAttention(16, 2, window=5, sink_tokens=2, dtype=F64)
    sinky.load_state_dict(layer.state_dict())
    state, steps = None, []
    for t in range(14):
        out, state = sinky(x[:, t:t + 1], state)
        steps.append(out)
    assert state is not None and state.seen == 14
    k_full = sinky._split(sinky.k_proj(x), 2)  # (B, 2, 14, 8), before RoPE
    kept = k_full[:, :, [0, 1, 11, 12, 13]]
    torch.testing.assert_close(state.keys, kept, **TIGHT)
    torch.testing.assert_close(torch.cat(steps, 1)[:, :5], whole[:, :5], **TIGHT)


def test_sink_tokens_one_pass_refuses_what_it_would_rotate_otherwise() -> None:
    """With sinks the stream rotates keys by their slot in the cache; a one-pass call over
    more than window + 1 keys would rotate them by text position (another function), so it
    raises. Up to window + 1 keys the two paths agree."""
    torch.manual_seed(0)
    layer = CausalSelfAttention(16, 2, window=4, sink_tokens=1, dtype=F64)
    x = torch.randn(2, 12, 16, dtype=F64)
    state, steps = None, []
    for t in range(12):
        out, state = layer(x[:, t:t + 1], state)
        steps.append(out)
    streamed = torch.cat(steps, 1)
    whole, _ = layer(x[:, :5])  # window + 1 tokens: no eviction before the last
    torch.testing.assert_close(whole, streamed[:, :5], **TIGHT)
    assert layer.attention_weights(x[:, :5]).shape == (2, 2, 5, 5)
    with pytest.raises(ValueError, match=r"window \+ 1 = 5 keys.*0 cached and 12 in x"):
        layer(x)
    with pytest.raises(ValueError, match="one token at a time"):
        layer.attention_weights(x[:, :6])
    # a state that is already full, then two tokens at once: 6 keys
    _, full = layer(x[:, :4])
    with pytest.raises(ValueError, match="4 cached and 2 in x"):
        layer(x[:, 4:6], full)
    # without sinks a one-pass call equals the stream at any length
    plain = CausalSelfAttention(16, 2, window=4, dtype=F64)
    plain.load_state_dict(layer.state_dict())
    state, steps = None, []
    for t in range(12):
        out, state = plain(x[:, t:t + 1], state)
        steps.append(out)
    torch.testing.assert_close(plain(x)[0], torch.cat(steps, 1), **TIGHT)


def test_attention_convolution_equals_shifted_projections_and_streams() -> None:
    torch.manual_seed(0)
    layer = CausalSelfAttention(16, 2, 1, conv_size=3, dtype=F64)
    x = torch.randn(2, 11, 16, dtype=F64)
    whole, _ = layer(x)
    # the convolution by hand: tap j of each channel times that channel j tokens back
    plain = CausalSelfAttention(16, 2, 1, dtype=F64)
    plain.load_state_dict(layer.state_dict(), strict=False)
    w = layer.conv.weight[:, 0]  # type: ignore[union-attr]  # (channels, 3)
    qkv = torch.cat((layer.q_proj(x), layer.k_proj(x), layer.v_proj(x)), -1)
    padded = F.pad(qkv, (0, 0, 2, 0))
    mixed = sum(padded[:, j:j + 11] * w[:, j] for j in range(3))
    q, k, v = mixed.split((16, 8, 8), -1)
    rope = layer.rope
    q, k, v = plain._split(q, 2), plain._split(k, 1), plain._split(v, 1)
    heads = F.scaled_dot_product_attention(rope(q), rope(k).expand(-1, 2, -1, -1),
                                           v.expand(-1, 2, -1, -1), is_causal=True)
    expected = layer.out_proj(heads.transpose(1, 2).reshape(2, 11, 16))
    torch.testing.assert_close(whole, expected, **TIGHT)
    state, steps = None, []
    for t in range(11):
        out, state = layer(x[:, t:t + 1], state)
        steps.append(out)
    torch.testing.assert_close(torch.cat(steps, 1), whole, **TIGHT)
    assert state is not None and state.conv_tail is not None
    assert state.conv_tail.shape == (2, 2, 32)


def test_deltanet_linear_rule_continues_from_a_state_as_one_pass() -> None:
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(2, 3, 30, 8, generator=g, dtype=F64) for _ in range(3))
    first, memory = DeltaNet._linear(q[:, :, :13], k[:, :, :13], v[:, :, :13], None)
    second, memory = DeltaNet._linear(q[:, :, 13:], k[:, :, 13:], v[:, :, 13:], memory)
    whole, total = DeltaNet._linear(q, k, v, None)
    torch.testing.assert_close(torch.cat((first, second), 2), whole, **TIGHT)
    torch.testing.assert_close(memory, total, **TIGHT)


def test_tasks_are_what_they_say() -> None:
    text = sk.backcopy_text(50, 40, seed=1)
    assert bool((text[:, 0] == sk.BOS).all())
    trig = sk.is_trigger(text)
    t_idx = trig[:, 2:-1].nonzero()
    assert len(t_idx) > 0
    for b, t in t_idx.tolist():
        assert text[b, t + 3] == text[b, t + 1]  # the letter after a trigger copies
    tokens, targets = rc.recall_task(20, 6, 4, seed=2)
    assert tokens.shape == (20, 16)
    keys, values = tokens[:, 0:12:2], tokens[:, 1:12:2]
    for row in range(20):
        for j in range(12, 16):
            pair = (keys[row] == tokens[row, j]).nonzero()[0, 0]
            assert targets[row, j] == values[row, pair]
    sums, deltas = rc.write_and_read(32, 16, "sum"), rc.write_and_read(32, 16, "delta")
    assert deltas[-1] < 1e-10 < sums[-1]


def test_recall_models_share_the_convolution_and_training_lowers_the_loss() -> None:
    hybrid = rc.recall_model("hybrid", conv_size=3)
    first, second = (block.mixer for block in hybrid.blocks)
    assert isinstance(first, DeltaNet) and isinstance(second, CausalSelfAttention)
    assert first.conv.kernel_size == second.conv.kernel_size == (3,)  # type: ignore[union-attr]
    assert isinstance(rc.recall_model("linear").blocks[0].mixer, DeltaNet)
    model = rc.recall_model("softmax", seed=0)
    losses = rc.train_recall(model, steps=40, max_pairs=4, lr=1e-2, batch=16)
    assert len(losses) == 40 and not model.training
    assert sum(losses[-5:]) < sum(losses[:5])


@pytest.mark.parametrize("taps", [1, 2, 4])
def test_recall_models_short_convolution_is_nn_conv1d(taps: int) -> None:
    """recall_model computes its depthwise convolution as shifted products: the same function
    and the same parameter as the nn.Conv1d it replaces, forward and backward, and the cache
    that reads one token at a time gives the full pass."""
    torch.manual_seed(0)
    conv = torch.nn.Conv1d(6, 6, taps, groups=6, bias=False, dtype=F64)
    short = rc._ShortConv.of(conv)
    assert short.weight is conv.weight
    x = torch.randn(3, 6, taps - 1 + 9, dtype=F64, requires_grad=True)
    expected, got = conv(x), short(x)
    torch.testing.assert_close(got, expected, **TIGHT)
    grads = [torch.autograd.grad(y.square().sum(), (x, conv.weight)) for y in (expected, got)]
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(b, a, **TIGHT)
    with pytest.raises(ValueError, match="depthwise"):
        rc._ShortConv.of(torch.nn.Conv1d(6, 6, taps, bias=False))
    model = rc.recall_model("hybrid", conv_size=taps, seed=0)
    assert all(isinstance(block.mixer.conv, rc._ShortConv) for block in model.blocks)
    tokens, _ = rc.recall_task(2, 5, 3, seed=1)
    cache = MixerCache()
    with torch.no_grad():
        stepped = torch.cat([model(tokens[:, t:t + 1], cache) for t in range(tokens.shape[1])],
                            dim=1)
        torch.testing.assert_close(stepped, model(tokens), atol=1e-5, rtol=1e-5)


def test_loss_by_position_keeps_each_layers_own_window() -> None:
    """A layer's own window is part of the model: a cache wider than it (or none) must not
    widen it. Two blocks with windows of 8: read one token at a time with a cache of 8, of
    16 or of every token, the loss equals the one-pass loss at every position."""
    torch.manual_seed(0)
    model = MixerLM(sk.BOS + 1, [CausalSelfAttention(16, 2, window=8, dtype=F64)
                                 for _ in range(2)], d_ff=8, dtype=F64)
    tokens = sk.backcopy_text(3, 30, seed=1)
    with torch.no_grad():
        logits = model(tokens)
    one_pass = F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")
    for window in (8, 16, None):
        torch.testing.assert_close(sk.loss_by_position(model, tokens, window), one_pass,
                                   **TIGHT)
    assert all(block.mixer.window == 8 for block in model.blocks)
    # a global layer after a window-8 one: a cache of 16 changes only the global layer, so
    # the loss equals the one pass up to position 15, where the cache is not yet full
    mixed = MixerLM(sk.BOS + 1, [CausalSelfAttention(16, 2, window=8, dtype=F64),
                                 CausalSelfAttention(16, 2, dtype=F64)], d_ff=8, dtype=F64)
    with torch.no_grad():
        logits = mixed(tokens)
    one_pass = F.cross_entropy(logits[:, :-1].transpose(1, 2), tokens[:, 1:], reduction="none")
    streamed = sk.loss_by_position(mixed, tokens, 16)
    torch.testing.assert_close(streamed[:, :16], one_pass[:, :16], **TIGHT)
    assert (streamed[:, 16:] - one_pass[:, 16:]).abs().max() > 1e-6
