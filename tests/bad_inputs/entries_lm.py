"""Entries of the catalogue: the blocks, caches and experiments of chapters 9 and 10 (RoPE
scaling, ALiBi, linear and latent attention, gated attention and sinks, the delta rule, the
mixer LM, quantized and paged caches, speculative sampling, the memory wall, long context,
attention sinks and recall)."""

from __future__ import annotations

from typing import Any

import torch

from .entries_models import _lm, _lm_config
from .harness import (
    Bad,
    Call,
    Choice,
    Count,
    DType,
    Flag,
    I,
    Ids,
    M,
    Mask,
    Obj,
    Plain,
    Positive,
    Real,
    Seq,
    Text,
    X,
    api,
    entry,
    exempt,
    seeded,
)

F64 = torch.float64

exempt("a result or state a function or module of chapters 9 and 10 builds; nothing to check",
       "ContextRun", "StepCost", "KVState", "SpeculativeResult")
exempt("a frozen description of chapter 10's models for train_runs; the layers it builds "
       "check their own arguments", "BackcopyModel", "EchoModel")

# --- RoPE scaling and ALiBi ---------------------------------------------------------------------

_SCALING = {"head_dim": Count(8), "base": Positive(10000.0), "method": Choice("yarn"),
            "scale": Positive(2.0), "train_length": Count(16, optional=True),
            "alpha": Real(1.0, 0.0), "beta": Real(32.0, 0.0)}


@entry("ScaledRotaryEmbedding")
def _() -> Call:
    def fn(x, positions, offset, **kw):  # type: ignore[no-untyped-def]
        return api("ScaledRotaryEmbedding")(**kw)(x, positions, offset)

    return Call(fn, {**_SCALING, "x": X("B H L 8"), "positions": Plain(None),
                     "offset": Count(0, 0, cost=True, huge=10**6)})


@entry("scaled_frequencies")
def _() -> Call:
    return Call(api("scaled_frequencies"), dict(_SCALING))


@entry("ntk_base")
def _() -> Call:
    return Call(api("ntk_base"), {"base": Positive(10000.0), "scale": Positive(2.0),
                                  "head_dim": Count(8, 4)})


@entry("yarn_attention_factor")
def _() -> Call:
    return Call(api("yarn_attention_factor"), {"scale": Positive(2.0)})


@entry("yarn_ramp")
def _() -> Call:
    return Call(api("yarn_ramp"), {"head_dim": Count(8), "base": Positive(10000.0),
                                   "train_length": Count(16), "alpha": Real(1.0, 0.0),
                                   "beta": Real(32.0, 0.0)})


@entry("alibi_slopes")
def _() -> Call:
    return Call(api("alibi_slopes"), {"num_heads": Count(4)})


@entry("alibi_bias")
def _() -> Call:
    slopes = X("H")
    slopes.value = slopes.value.abs()
    q_pos, k_pos = I("L", None), I("S", None)
    q_pos.value, k_pos.value = torch.arange(2, 5), torch.arange(5)
    allowed = M("L S", broadcast=False)
    return Call(api("alibi_bias"), {"q_pos": q_pos, "k_pos": k_pos, "slopes": slopes,
                                    "allowed": allowed, "dtype": DType(torch.float32)},
                allow_inf=True)


# --- linear, latent, gated attention and the delta rule -----------------------------------------


@entry("linear_attention_recurrent")
def _() -> Call:
    return Call(api("linear_attention_recurrent"), {
        "query": X("B H L E"), "key": X("B H L E", 0.5), "value": X("B H L F")})


def _gqa_like(cls: str, **extra: Any) -> Call:
    def fn(embed_dim, num_heads, num_kv_heads, x, attn_mask, past, offset):  # type: ignore[no-untyped-def]
        return api(cls)(embed_dim, num_heads, num_kv_heads)(x, attn_mask, past, offset)

    return Call(fn, {"embed_dim": Count(8), "num_heads": Count(2), "num_kv_heads": Count(1),
                     "x": X("B L D"), "attn_mask": Plain(None), "past": Plain(None),
                     "offset": Count(0, 0)}, module=True, **extra)


entry("LinearSelfAttention")(lambda: _gqa_like("LinearSelfAttention", bad=[
    Bad("a-cache", call=lambda: seeded(lambda: api("LinearSelfAttention")(8, 2, 1))(
        torch.ones(1, 3, 8), None, (torch.ones(1, 1, 2, 4), torch.ones(1, 1, 2, 4))),
        names=("past",))]))


@entry("MultiHeadLatentAttention")
def _() -> Call:
    MLA = api("MultiHeadLatentAttention")

    def fn(embed_dim, num_heads, head_dim, latent_dim, rope_dim, x, state, absorbed):  # type: ignore[no-untyped-def]
        return MLA(embed_dim, num_heads, head_dim, latent_dim, rope_dim)(x, state, absorbed)

    model = seeded(lambda: MLA(8, 2, 4, 4, 2))
    _, state = model(torch.randn(2, 3, 8))
    _, other = model(torch.randn(1, 3, 8))
    return Call(fn, {"embed_dim": Count(8), "num_heads": Count(2), "head_dim": Count(4),
                     "latent_dim": Count(4), "rope_dim": Count(2), "x": X("B L D"),
                     "state": Obj(None, optional=True, others=(other, (state[0],))),
                     "absorbed": Flag(False)}, module=True)


@entry("mla_cache_elements")
def _() -> Call:
    return Call(api("mla_cache_elements"), {"num_layers": Count(2), "latent_dim": Count(4),
                                            "rope_dim": Count(2, 0)})


@entry("attention_with_sink")
def _() -> Call:
    return Call(api("attention_with_sink"), {
        "query": X("B H L E"), "key": X("B H S E"), "value": X("B H S F"),
        "sink_logits": X("H"), "attn_mask": M("B H L S")})


@entry("gated_attention")
def _() -> Call:
    return Call(api("gated_attention"), {
        "query": X("B H L E"), "key": X("B H S E"), "value": X("B H S F"),
        "gate_logits": X("B H L F"), "attn_mask": M("B H L S")})


@entry("CausalSelfAttention")
def _() -> Call:
    CSA = api("CausalSelfAttention")

    def fn(embed_dim, num_heads, num_kv_heads, window, sink_tokens, gate, learned_sink, x,  # type: ignore[no-untyped-def]
           state):
        layer = CSA(embed_dim, num_heads, num_kv_heads, window=window, sink_tokens=sink_tokens,
                    gate=gate, learned_sink=learned_sink)
        return layer(x, state)

    layer = seeded(lambda: CSA(8, 2, 1, window=4, sink_tokens=1))
    _, other = layer(torch.randn(1, 3, 8))
    return Call(fn, {"embed_dim": Count(8), "num_heads": Count(2),
                     "num_kv_heads": Count(1, optional=True),
                     "window": Count(4, optional=True), "sink_tokens": Count(1, 0),
                     "gate": Flag(True), "learned_sink": Flag(False), "x": X("B L D"),
                     "state": Obj(None, optional=True, others=(other,))}, module=True)


@entry("CausalSelfAttention.attention_weights")
def _() -> Call:
    layer = seeded(lambda: api("CausalSelfAttention")(8, 2, 1, window=4))
    return Call(layer.attention_weights, {"x": X("B L D")}, module=True)


def _delta(name: str, **extra: Any) -> Call:
    beta = X("B H L")
    beta.value = beta.value.sigmoid()
    decay = X("B H L")
    decay.value = 0.5 + 0.5 * decay.value.sigmoid()
    decay.optional = True
    key = X("B H L E")
    key.value = torch.nn.functional.normalize(key.value, dim=-1)
    return Call(api(name), {"query": X("B H L E"), "key": key, "value": X("B H L F"),
                            "beta": beta, "decay": decay, "state": Plain(None), **extra},
                bad=[Bad("beta-above-1", {"beta": torch.full((2, 2, 3), 2.0)},
                         names=("beta",)),
                     Bad("state-of-another-shape", {"state": torch.zeros(2, 2, 6, 4)},
                         names=("state",))])


entry("delta_rule_recurrent")(lambda: _delta("delta_rule_recurrent"))
entry("delta_rule_chunked")(lambda: _delta("delta_rule_chunked",
                                           chunk_size=Count(2, cost=True, huge=10**6)))


@entry("DeltaNet")
def _() -> Call:
    def fn(embed_dim, num_heads, gated, conv_size, rule, chunk_size, x, state):  # type: ignore[no-untyped-def]
        return api("DeltaNet")(embed_dim, num_heads, gated=gated, conv_size=conv_size,
                               rule=rule, chunk_size=chunk_size)(x, state)

    layer = seeded(lambda: api("DeltaNet")(8, 2))
    _, other = layer(torch.randn(1, 3, 8))
    return Call(fn, {"embed_dim": Count(8), "num_heads": Count(2), "gated": Flag(True),
                     "conv_size": Count(3), "rule": Choice("delta"),
                     "chunk_size": Count(2, cost=True, huge=10**6), "x": X("B L D"),
                     "state": Obj(None, optional=True, others=(other,))}, module=True)


# --- the mixer LM -------------------------------------------------------------------------------


def _mixer(**changes: Any) -> Any:
    CSA = api("CausalSelfAttention")
    return seeded(lambda: api("MixerLM")(12, [CSA(8, 2, 1), CSA(8, 2, 1)], d_ff=16)).eval()


@entry("MixerLM")
def _() -> Call:
    model = _mixer()
    cache = api("MixerCache")()
    model(torch.ones(1, 2, dtype=torch.long), cache)

    def fn(vocab_size, mixers, d_ff, tokens, cache):  # type: ignore[no-untyped-def]
        return api("MixerLM")(vocab_size, mixers, d_ff=d_ff).eval()(tokens, cache)

    CSA = api("CausalSelfAttention")
    return Call(fn, {"vocab_size": Count(12), "mixers": Seq([seeded(lambda: CSA(8, 2, 1))],
                                                            "any"),
                     "d_ff": Count(16), "tokens": I("B L", 12),
                     "cache": Obj(None, optional=True, others=(cache,))}, module=True)


@entry("MixerLM.parameter_count")
def _() -> Call:
    return Call(_mixer().parameter_count, {})


@entry("MixerBlock")
def _() -> Call:
    def fn(mixer, d_ff, x, state):  # type: ignore[no-untyped-def]
        return api("MixerBlock")(mixer, d_ff)(x, state)

    CSA = api("CausalSelfAttention")
    return Call(fn, {"mixer": Obj(seeded(lambda: CSA(8, 2, 1))), "d_ff": Count(16),
                     "x": X("B L D"), "state": Plain(None)}, module=True)


@entry("MixerCache")
def _() -> Call:
    return Call(lambda states, length: api("MixerCache")(states, length).nbytes(),
                {"states": Seq([], "any"), "length": Count(0, 0)})


@entry("MixerCache.nbytes")
def _() -> Call:
    cache = api("MixerCache")()
    _mixer()(torch.ones(2, 3, dtype=torch.long), cache)
    return Call(cache.nbytes, {})


@entry("state_nbytes")
def _() -> Call:
    return Call(api("state_nbytes"), {"state": Obj((torch.ones(2, 3), [torch.ones(4)]),
                                                   optional=True, others=(3.5,))})


# --- quantized and paged caches -----------------------------------------------------------------


@entry("QuantizedLMCache")
def _() -> Call:
    def fn(format, window):  # type: ignore[no-untyped-def]
        cache = api("QuantizedLMCache")(format=format, window=window)
        _lm()(torch.ones(2, 3, dtype=torch.long), cache)
        return cache.nbytes()

    return Call(fn, {"format": Choice("int8"), "window": Count(None, optional=True)})


@entry("QuantizedLMCache.nbytes")
def _() -> Call:
    cache = api("QuantizedLMCache")(format="int4")
    _lm()(torch.ones(2, 3, dtype=torch.long), cache)
    return Call(cache.nbytes, {})


@entry("QuantizedStore")
def _() -> Call:
    return Call(lambda format: api("QuantizedStore")(format).nbytes(),
                {"format": Choice("fp8")})


@entry("QuantizedStore.nbytes")
def _() -> Call:
    return Call(api("QuantizedStore")("int8").nbytes, {})


@entry("bytes_per_vector")
def _() -> Call:
    return Call(api("bytes_per_vector"), {"head_dim": Count(8), "format": Choice("int8")})


@entry("quantize_per_token")
def _() -> Call:
    return Call(api("quantize_per_token"), {"x": X("B L E"), "bits": Count(8)})


@entry("dequantize_per_token")
def _() -> Call:
    codes, scale = api("quantize_per_token")(torch.randn(2, 3, 4))
    return Call(api("dequantize_per_token"), {
        "codes": Ids(codes.short(), "B L E", 128, signed=True), "scale": Plain(scale),
        "dtype": DType(torch.float32)})


def _paged(**kw: Any) -> Any:
    cache = api("PagedKVCache")(8, 2, 1, 4)
    cache.append(0, torch.randn(1, 3, 4), torch.randn(1, 3, 4))  # (H_kv, L, E)
    cache.append(1, torch.randn(1, 2, 4), torch.randn(1, 2, 4))
    return cache


@entry("PagedKVCache")
def _() -> Call:
    return Call(lambda num_blocks, block_size, num_kv_heads, head_dim, dtype: (
        api("PagedKVCache")(num_blocks, block_size, num_kv_heads, head_dim, dtype)
        .blocks_in_use()), {"num_blocks": Count(4), "block_size": Count(2),
                            "num_kv_heads": Count(1), "head_dim": Count(4),
                            "dtype": DType(torch.float32)})


@entry("PagedKVCache.append")
def _() -> Call:
    def fn(seq, key, value):  # type: ignore[no-untyped-def]
        cache = _paged()
        cache.append(seq, key, value)
        return cache.gather(seq)

    return Call(fn, {"seq": Count(0, 0), "key": X("1 T 4"), "value": X("1 T 4", 2.0)},
                module=True)


@entry("PagedKVCache.release")
def _() -> Call:
    def fn(seq):  # type: ignore[no-untyped-def]
        cache = _paged()
        cache.release(seq)
        return cache.blocks_in_use()

    return Call(fn, {"seq": Count(1, 0)}, bad=[
        Bad("a-sequence-never-appended", {"seq": 7}, names=("seq",))])


@entry("PagedKVCache.gather")
def _() -> Call:
    return Call(lambda seq: _paged().gather(seq), {"seq": Count(0, 0)}, bad=[
        Bad("a-sequence-never-appended", {"seq": 7}, names=("seq",))])


@entry("PagedKVCache.blocks_in_use")
def _() -> Call:
    return Call(_paged().blocks_in_use, {})


@entry("paged_attention")
def _() -> Call:
    return Call(api("paged_attention"), {
        "query": X("B 2 1 4"), "cache": Obj(lambda: seeded(_paged), fresh=True), "seqs": Seq([0, 1], "int", 0)},
        module=True)


# --- speculative sampling -----------------------------------------------------------------------


@entry("accept_or_resample")
def _() -> Call:
    p = X("N V")
    p.value = p.value.softmax(-1)
    q = X("N V", 2.0)
    q.value = q.value.softmax(-1)
    proposal = I("N", 12)
    return Call(api("accept_or_resample"), {"p": p, "q": q, "proposal": proposal,
                                            "generator": Plain(None)})


@entry("expected_tokens_per_pass")
def _() -> Call:
    return Call(api("expected_tokens_per_pass"), {"alpha": Real(0.5, 0.0), "k": Count(4)},
                bad=[Bad("alpha-above-1", {"alpha": 1.5}, names=("alpha",))])


@entry("goodness_of_fit")
def _() -> Call:
    counts = X("V")
    counts.value = torch.tensor([30.0, 20, 25, 25, 10, 15, 20, 25, 30, 20, 30, 50])
    counts.any_real = True  # integer counts are right too
    probs = X("V", 2.0)
    probs.value = probs.value.softmax(-1)
    return Call(api("goodness_of_fit"), {"counts": counts, "probs": probs})


@entry("speculative_sample")
def _() -> Call:
    return Call(api("speculative_sample"), {
        "model": Obj(_lm()), "draft": Obj(_lm(num_kv_heads=2)), "prompt": I("1 L", 12),
        "steps": Count(3, 0), "k": Count(2), "temperature": Positive(1.0),
        "generator": Plain(None)}, module=True)


# --- the memory wall, cache allocation, latent shapes -------------------------------------------


def _shape() -> Any:
    return api("ModelShape")("toy", 2, 8, 2, 1, 4, 16, 12)


@entry("ModelShape")
def _() -> Call:
    return Call(lambda **kw: api("ModelShape")(**kw).parameters(), {
        "name": Text("toy"), "num_layers": Count(2), "d_model": Count(8), "num_heads": Count(2),
        "num_kv_heads": Count(1), "head_dim": Count(4), "d_ff": Count(16),
        "vocab_size": Count(12), "gated_ffn": Flag(True), "tied": Flag(False),
        "window": Count(None, optional=True)})


@entry("ModelShape.from_config")
def _() -> Call:
    return Call(api("ModelShape").from_config, {"config": Obj(_lm_config()),
                                                "name": Text("toy")})


for _method in ("matmul_weights", "parameters"):
    entry(f"ModelShape.{_method}")(lambda m=_method: Call(getattr(_shape(), m), {}))

for _name, _arg in (("decode_cost", "context"), ("prefill_cost", "tokens")):
    entry(_name)(lambda n=_name, a=_arg: Call(api(n), {
        "shape": Obj(_shape()), a: Count(16), "batch": Count(1),
        "bytes_per_number": Count(2)}))


@entry("decode_step_times")
def _() -> Call:
    return Call(api("decode_step_times"), {
        "model": Obj(_lm()), "batch_sizes": Seq([1, 2], "int", 1), "context": Count(4),
        "new_tokens": Count(1), "repeats": Count(1), "seed": Count(0, 0)}, module=True,
        compare=False)


@entry("Allocation")
def _() -> Call:
    return Call(lambda used, contiguous, paged: api("Allocation")(used, contiguous,
                                                                  paged).waste(contiguous),
                {"used": Count(10, 0), "contiguous": Count(16), "paged": Count(12)})


@entry("Allocation.waste")
def _() -> Call:
    return Call(api("Allocation")(10, 16, 12).waste, {"held": Count(16)})


@entry("allocation_waste")
def _() -> Call:
    return Call(api("allocation_waste"), {"lengths": Seq([4, 9], "int", 1), "max_len": Count(16),
                                          "block_size": Count(4), "num_kv_heads": Count(1),
                                          "head_dim": Count(1)})


@entry("LatentShape")
def _() -> Call:
    return Call(lambda **kw: api("LatentShape")(**kw).per_token(), {
        "name": Text("toy"), "num_layers": Count(2), "num_heads": Count(2), "head_dim": Count(4),
        "latent_dim": Count(4), "rope_dim": Count(2, 0), "context": Count(16),
        "source": Text("")})


@entry("LatentShape.per_token")
def _() -> Call:
    return Call(api("LatentShape")("toy", 2, 2, 4, 4, 2, 16, "").per_token, {})


# --- long context -------------------------------------------------------------------------------


def _setup(**changes: Any) -> Any:
    config = api("DecoderLMConfig")(vocab_size=16, d_model=8, num_heads=2, num_kv_heads=2,
                                    num_layers=1, d_ff=16, max_len=32)
    return api("ContextSetup")(**{"config": config, "train_length": 8, "steps": 2,
                                  "batch_size": 2, "tune_steps": 1, "tune_batch_size": 2,
                                  "test_lines": 2, **changes})


@entry("ContextSetup")
def _() -> Call:
    config = api("DecoderLMConfig")(vocab_size=16, d_model=8, num_heads=2, num_kv_heads=2,
                                    num_layers=1, d_ff=16, max_len=32)
    return Call(api("ContextSetup"), {
        "config": Obj(config), "train_length": Count(8), "steps": Count(2),
        "batch_size": Count(2), "lr": Positive(3e-3), "tune_steps": Count(1, 0),
        "tune_batch_size": Count(2), "test_lines": Count(2), "yarn_alpha": Real(1.0, 0.0),
        "yarn_beta": Real(4.0, 0.0)})


@entry("context_run")
def _() -> Call:
    return Call(api("context_run"), {"setup": Obj(_setup()), "seed": Count(0, 0),
                                     "positions": Choice("rope")})


@entry("context_study")
def _() -> Call:
    return Call(api("context_study"), {"setup": Obj(_setup()), "seeds": Seq([0], "int", 0),
                                       "workers": Count(1, optional=True),
                                       "pool": Obj(None, optional=True)})


@entry("echo_accuracy")
def _() -> Call:
    model = seeded(lambda: api("DecoderLM")(api("DecoderLMConfig")(
        vocab_size=12, d_model=8, num_heads=2, num_kv_heads=2, num_layers=1, d_ff=16,
        max_len=32))).eval()
    return Call(api("echo_accuracy"), {"model": Obj(model), "length": Count(8, 4),
                                       "lines": Count(2), "seed": Count(0, 0),
                                       "min_period": Count(2, 1, 8, optional=True),
                                       "max_period": Count(4, 2, 8, optional=True)},
                module=True)


@entry("EchoTraining")
def _() -> Call:
    config = api("DecoderLMConfig")(vocab_size=26, d_model=8, num_heads=2, num_kv_heads=2,
                                    num_layers=1, d_ff=16, max_len=12)
    return Call(api("EchoTraining"), {
        "config": Obj(config), "steps": Count(2), "lr": Positive(0.01), "batch_size": Count(2),
        "length": Count(12, 1, 12), "period": Count(4), "dtype": DType(torch.float32)})


@entry("extend_context")
def _() -> Call:
    return Call(api("extend_context"), {
        "model": Obj(lambda: _lm(), fresh=True), "method": Choice("yarn"),
        "scale": Positive(2.0), "train_length": Count(8), "alpha": Real(1.0, 0.0),
        "beta": Real(32.0, 0.0)}, module=True)


@entry("varied_echo")
def _() -> Call:
    return Call(api("varied_echo"), {"n": Count(2), "length": Count(10), "min_period": Count(2),
                                     "max_period": Count(3), "vocab_size": Count(12),
                                     "seed": Count(0, 0)})


# --- attention sinks and recall -----------------------------------------------------------------


@entry("backcopy_text")
def _() -> Call:
    return Call(api("backcopy_text"), {"n": Count(2), "length": Count(6, 2), "seed": Count(0, 0)})


def _backcopy() -> Any:
    return api("backcopy_text")(2, 6)


@entry("backcopy_targets")
def _() -> Call:
    return Call(api("backcopy_targets"), {"tokens": Ids(_backcopy(), "B L", 27)})


@entry("is_trigger")
def _() -> Call:
    return Call(api("is_trigger"), {"tokens": Ids(_backcopy(), "B L", 27)})


def _sink_model() -> Any:
    CSA = api("CausalSelfAttention")
    return seeded(lambda: api("MixerLM")(27, [CSA(8, 2, 1)], d_ff=16)).eval()


@entry("first_token_mass")
def _() -> Call:
    tokens = _backcopy()
    where = torch.ones_like(tokens, dtype=torch.bool)
    return Call(api("first_token_mass"), {"model": Obj(_sink_model()),
                                          "tokens": Ids(tokens, "B L", 27),
                                          "where": Mask(where, "B L", additive=False,
                                                        optional=False, broadcast=False)},
                module=True)


@entry("loss_by_position")
def _() -> Call:
    return Call(api("loss_by_position"), {"model": Obj(_sink_model()),
                                          "tokens": Ids(_backcopy(), "B L", 27),
                                          "window": Count(None, optional=True),
                                          "sink_tokens": Count(0, 0)}, module=True)


@entry("train")
def _() -> Call:
    return Call(api("train"), {"model": Obj(_sink_model, fresh=True), "length": Count(6, 2),
                               "steps": Count(2), "lr": Positive(0.01), "batch": Count(2)},
                module=True)


def _recall_model() -> Any:
    CSA = api("CausalSelfAttention")
    return seeded(lambda: api("MixerLM")(140, [CSA(8, 2, 1)], d_ff=16)).eval()


@entry("recall_task")
def _() -> Call:
    return Call(api("recall_task"), {"n": Count(2), "pairs": Count(3), "queries": Count(2),
                                     "num_keys": Count(8), "num_values": Count(8),
                                     "seed": Count(0, 0)})


@entry("recall_accuracy")
def _() -> Call:
    return Call(api("recall_accuracy"), {"model": Obj(_recall_model()), "pairs": Count(3),
                                         "n": Count(2), "seed": Count(0, 0)}, module=True)


@entry("recall_model")
def _() -> Call:
    return Call(api("recall_model"), {"kind": Choice("hybrid"), "dim": Count(8),
                                      "num_heads": Count(2), "conv_size": Count(2),
                                      "seed": Count(0, 0, optional=True)}, module=True)


@entry("RecallConfig")
def _() -> Call:
    return Call(api("RecallConfig"), {"kind": Choice("delta"), "dim": Count(8),
                                      "num_heads": Count(2), "conv_size": Count(2)})


@entry("train_recall")
def _() -> Call:
    return Call(api("train_recall"), {"model": Obj(_recall_model, fresh=True),
                                      "steps": Count(2), "max_pairs": Count(3, maximum=64),
                                      "lr": Positive(0.01), "batch": Count(2),
                                      "seed": Count(0, 0)}, module=True)


@entry("write_and_read")
def _() -> Call:
    return Call(api("write_and_read"), {"pairs": Count(4), "dim": Count(8),
                                        "rule": Choice("delta"), "seed": Count(0, 0)})
