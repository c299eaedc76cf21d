"""Entries of the catalogue: the models (seq2seq, the Transformer and its layers, the key/value
caches, the decoder-only language model) and the searches that drive them."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from .harness import (
    Bad,
    Call,
    Choice,
    Count,
    Device,
    Flag,
    Func,
    I,
    Lengths,
    M,
    Obj,
    Plain,
    Positive,
    Prob,
    Real,
    X,
    api,
    entry,
    exempt,
    seeded,
)

# Small sizes everywhere: V_src = 10, V_tgt = 12, D = 8, S = 5 source tokens, L = 3 targets.
SRC = torch.tensor([[3, 4, 5, 6, 7], [6, 8, 9, 0, 0]])  # (B, S), sentence 1 padded
SRC_LENGTHS = torch.tensor([5, 3])
TGT = torch.tensor([[1, 7, 8], [1, 5, 0]])  # (B, L)
TGT_LENGTHS = torch.tensor([3, 2])


def src() -> Any:
    arg = I("B S", 10, low=1)
    arg.value = SRC.clone()
    return arg


def src_lengths() -> Lengths:
    return Lengths(SRC_LENGTHS.clone(), 5)


def tgt(optional: bool = False) -> Any:
    arg = I("B L", 12, optional=optional)
    arg.value = TGT.clone()
    return arg


# --- seq2seq ------------------------------------------------------------------------------------


def _s2s_config(**changes: Any) -> Any:
    kw = {"src_vocab_size": 10, "tgt_vocab_size": 12, "embed_dim": 4, "hidden_size": 4,
          "attention_size": 4, "max_src_len": 8, **changes}
    return api("Seq2SeqConfig")(**kw)


def _s2s(**changes: Any) -> Any:
    return seeded(lambda: api("Seq2Seq")(_s2s_config(**changes))).eval()


@entry("Seq2SeqConfig")
def _() -> Call:
    return Call(api("Seq2SeqConfig"), {
        "src_vocab_size": Count(10, 2), "tgt_vocab_size": Count(12, 2), "embed_dim": Count(4),
        "hidden_size": Count(4), "attention_size": Count(4), "use_attention": Flag(True),
        "fixed_context": Choice("final"), "max_src_len": Count(8), "pad_id": Count(0, 0)}, bad=[
        Bad("pad_id-outside-the-source-vocabulary", {"pad_id": 10}, names=("pad_id",)),
        Bad("pad_id-outside-the-target-vocabulary",
            {"pad_id": 11, "tgt_vocab_size": 11}, names=("pad_id",))])


@entry("Seq2Seq")
def _() -> Call:
    def fn(config, src, src_lengths, tgt_in):  # type: ignore[no-untyped-def]
        return api("Seq2Seq")(config).eval()(src, src_lengths, tgt_in)

    return Call(fn, {"config": Obj(_s2s_config()), "src": src(), "src_lengths": src_lengths(),
                     "tgt_in": tgt()}, module=True)


@entry("Seq2Seq#fixed-context")
def _() -> Call:
    model = _s2s(use_attention=False, fixed_context="mean")
    return Call(model, {"src": src(), "src_lengths": src_lengths(), "tgt_in": tgt()},
                module=True)


@entry("Seq2Seq.encode")
def _() -> Call:
    return Call(_s2s().encode, {"src": src(), "src_lengths": src_lengths()}, module=True)


@entry("seq2seq.Encoder")
def _() -> Call:
    def fn(vocab_size, embed_dim, hidden_size, pad_id, src, src_lengths):  # type: ignore[no-untyped-def]
        return api("seq2seq.Encoder")(vocab_size, embed_dim, hidden_size, pad_id)(src,
                                                                                  src_lengths)

    return Call(fn, {"vocab_size": Count(10, 2), "embed_dim": Count(4), "hidden_size": Count(4),
                     "pad_id": Count(0, 0), "src": src(), "src_lengths": src_lengths()},
                module=True)


exempt("what Seq2Seq.encode hands the decoder; AttentionDecoder checks it where it reads it",
       "Memory")


def _decoder_call(method: str, use_attention: bool = True, **args: Any) -> Call:
    model = _s2s(use_attention=use_attention)
    memory, _ = model.encode(SRC, SRC_LENGTHS)
    decoder = model.decoder
    other = _s2s()
    other_memory, _ = other.encode(SRC[:1], SRC_LENGTHS[:1])
    return Call(getattr(decoder, method), {
        "state": X("B 4"), "memory": Obj(memory, others=(other_memory,)), **args}, module=True)


@entry("AttentionDecoder")
def _() -> Call:
    def fn(vocab_size, embed_dim, hidden_size, key_size, attention_size, use_attention,  # type: ignore[no-untyped-def]
           pad_id, y_prev, state):
        decoder = api("AttentionDecoder")(vocab_size, embed_dim, hidden_size, key_size,
                                          attention_size, use_attention, pad_id)
        states = torch.ones(2, 5, key_size if isinstance(key_size, int) else 8)
        mask = torch.ones(2, 5, dtype=torch.bool)
        if decoder.score is not None:
            memory = api("Memory")(states, mask, keys=decoder.score.k_proj(states))
        else:
            memory = api("Memory")(states, mask, context=states[:, 0],
                                   weights=torch.zeros(2, 5))
        return decoder.step(y_prev, state, memory)

    return Call(fn, {"vocab_size": Count(12, 2), "embed_dim": Count(4), "hidden_size": Count(4),
                     "key_size": Count(8), "attention_size": Count(4),
                     "use_attention": Flag(True), "pad_id": Count(0, 0),
                     "y_prev": I("B", 12), "state": X("B 4")}, module=True)


entry("AttentionDecoder.attend")(lambda: _decoder_call("attend"))
entry("AttentionDecoder.step")(lambda: _decoder_call("step", y_prev=I("B", 12)))
entry("AttentionDecoder.teacher_forced")(lambda: _decoder_call("teacher_forced", tgt_in=tgt()))
entry("AttentionDecoder.fixed_forward")(
    lambda: _decoder_call("fixed_forward", use_attention=False, tgt_in=tgt()))


@entry("check_source")
def _() -> Call:
    return Call(api("check_source"), {"src": src(), "src_lengths": src_lengths(),
                                      "vocab_size": Count(10), "max_src_len": Count(
                                          None, optional=True), "device": Device()})


def _seq2seq_greedy() -> Call:
    return Call(api("seq2seq.greedy_decode"), {
        "model": Obj(_s2s(), others=(seeded(lambda: api("Transformer")(_tf_config())),)),
        "src": src(), "src_lengths": src_lengths(), "max_len": Count(4),
        "bos_id": Count(1, 0, 11), "eos_id": Count(2, 0, 11)}, module=True)


entry("seq2seq.greedy_decode")(_seq2seq_greedy)

# --- Transformer --------------------------------------------------------------------------------

TINY = {"src_vocab_size": 10, "tgt_vocab_size": 12, "d_model": 8, "num_heads": 2,
        "num_encoder_layers": 1, "num_decoder_layers": 1, "d_ff": 16, "dropout": 0.0,
        "max_len": 8}


def _tf_config(**changes: Any) -> Any:
    return api("TransformerConfig")(**{**TINY, **changes})


def _tf(**changes: Any) -> Any:
    return seeded(lambda: api("Transformer")(_tf_config(**changes))).eval()


@entry("TransformerConfig")
def _() -> Call:
    return Call(api("TransformerConfig"), {
        "src_vocab_size": Count(10, 2), "tgt_vocab_size": Count(12, 2), "d_model": Count(8),
        "num_heads": Count(2), "num_encoder_layers": Count(1), "num_decoder_layers": Count(1),
        "d_ff": Count(16), "dropout": Prob(0.0), "max_len": Count(8), "norm_first": Flag(False),
        "tie_embeddings": Flag(True), "share_all_embeddings": Flag(False),
        "activation": Choice("relu"), "layer_norm_eps": Positive(1e-5), "pad_id": Count(0, 0),
        "bos_id": Count(1, 0), "eos_id": Count(2, 0)}, bad=[
        Bad("bos_id-outside-the-vocabulary", {"bos_id": 12}, names=("bos_id",)),
        Bad("eos_id-outside-the-vocabulary", {"eos_id": 12}, names=("eos_id",))])


@entry("TransformerConfig.parameter_count")
def _() -> Call:
    return Call(_tf_config().parameter_count, {})


def _transformer_call(method: str | None, **args: Any) -> Call:
    model = _tf()
    fn = model if method is None else getattr(model, method)
    return Call(fn, args, module=True)


@entry("Transformer")
def _() -> Call:
    def fn(config, src, src_lengths, tgt_in, tgt_lengths):  # type: ignore[no-untyped-def]
        return api("Transformer")(config).eval()(src, src_lengths, tgt_in, tgt_lengths)

    return Call(fn, {"config": Obj(_tf_config()), "src": src(), "src_lengths": src_lengths(),
                     "tgt_in": tgt(), "tgt_lengths": Lengths(TGT_LENGTHS.clone(), 3,
                                                             optional=True)}, module=True)


entry("Transformer.encode")(
    lambda: _transformer_call("encode", src=src(), src_lengths=src_lengths()))
entry("Transformer.attention_weights")(lambda: _transformer_call(
    "attention_weights", src=src(), src_lengths=src_lengths(), tgt_in=tgt(),
    tgt_lengths=Lengths(TGT_LENGTHS.clone(), 3, optional=True)))


def _encoded(model: Any, rows: int = 2) -> Any:
    with torch.no_grad():
        return model.encode(SRC[:rows], SRC_LENGTHS[:rows])


@entry("Transformer.decode")
def _() -> Call:
    model = _tf()
    return Call(model.decode, {
        "tgt_in": tgt(), "encoded": Obj(_encoded(model), others=(_encoded(model, 1),)),
        "tgt_lengths": Lengths(TGT_LENGTHS.clone(), 3, optional=True),
        "need_weights": Flag(False)}, module=True)


@entry("Transformer.init_cache")
def _() -> Call:
    model = _tf()
    return Call(model.init_cache, {"encoded": Obj(_encoded(model))}, module=True)


@entry("Transformer.decode_step")
def _() -> Call:
    model = _tf()
    encoded = _encoded(model)

    def used(steps: int, rows: int = 2) -> Any:
        cache = model.init_cache(_encoded(model, rows))
        for _ in range(steps):
            model.decode_step(torch.ones(rows, dtype=torch.long), cache)
        return cache

    return Call(model.decode_step, {
        "tokens": I("B", 12), "cache": Obj(lambda: model.init_cache(encoded), fresh=True,
                                           others=(used(0, 1),)),
        "need_weights": Flag(False)}, module=True, bad=[
        Bad("cache-used-past-max_len", call=lambda: model.decode_step(
            torch.ones(2, dtype=torch.long), used(8)), names=("cache",)),
    ])


@entry("stacks.Encoder")
def _() -> Call:
    def fn(config, x, key_padding_mask, need_weights):  # type: ignore[no-untyped-def]
        return api("stacks.Encoder")(config)(x, key_padding_mask,
                                                  need_weights=need_weights)

    return Call(fn, {"config": Obj(_tf_config()), "x": X("B S D"),
                     "key_padding_mask": M("B S", additive=False), "need_weights": Flag(False)},
                module=True)


@entry("Decoder")
def _() -> Call:
    def fn(config, x, memory, attn_mask, memory_key_padding_mask, need_weights):  # type: ignore[no-untyped-def]
        return api("Decoder")(config)(x, memory, attn_mask=attn_mask,
                                      memory_key_padding_mask=memory_key_padding_mask,
                                      need_weights=need_weights)

    return Call(fn, {"config": Obj(_tf_config()), "x": X("B L D"), "memory": X("B S D"),
                     "attn_mask": M("L L"), "memory_key_padding_mask": M("B S", additive=False),
                     "need_weights": Flag(False)}, module=True)


def _layer_args() -> dict[str, Any]:
    return {"d_model": Count(8), "num_heads": Count(2), "d_ff": Count(16), "dropout": Prob(0.0),
            "activation": Choice("relu"), "norm_first": Flag(False),
            "layer_norm_eps": Positive(1e-5)}


def _encoder_layer(norm_first: bool) -> Call:
    def fn(d_model, num_heads, d_ff, dropout, activation, norm_first, layer_norm_eps,  # type: ignore[no-untyped-def]
           x, key_padding_mask, need_weights):
        layer = api("EncoderLayer")(d_model, num_heads, d_ff, dropout, activation, norm_first,
                                    layer_norm_eps)
        return layer(x, key_padding_mask, need_weights=need_weights)

    args = {**_layer_args(), "x": X("B S D"), "key_padding_mask": M("B S", additive=False),
            "need_weights": Flag(False)}
    args["norm_first"] = Flag(norm_first)
    return Call(fn, args, module=True)


entry("EncoderLayer")(lambda: _encoder_layer(False))
entry("EncoderLayer#pre-ln")(lambda: _encoder_layer(True))


@entry("EncoderLayer.from_torch")
def _() -> Call:
    ref = seeded(lambda: nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True))
    return Call(api("EncoderLayer").from_torch, {"ref": Obj(ref)})


@entry("DecoderLayer.from_torch")
def _() -> Call:
    ref = seeded(lambda: nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True))
    return Call(api("DecoderLayer").from_torch, {"ref": Obj(ref)})


def _decoder_layer(norm_first: bool) -> Call:
    def fn(d_model, num_heads, d_ff, dropout, activation, norm_first, layer_norm_eps,  # type: ignore[no-untyped-def]
           x, memory, attn_mask, memory_key_padding_mask, need_weights):
        layer = api("DecoderLayer")(d_model, num_heads, d_ff, dropout, activation, norm_first,
                                    layer_norm_eps)
        return layer(x, memory, attn_mask=attn_mask,
                     memory_key_padding_mask=memory_key_padding_mask, need_weights=need_weights)

    args = {**_layer_args(), "x": X("B L D"), "memory": X("B S D"), "attn_mask": M("L L"),
            "memory_key_padding_mask": M("B S", additive=False), "need_weights": Flag(False)}
    args["norm_first"] = Flag(norm_first)
    return Call(fn, args, module=True)


entry("DecoderLayer")(lambda: _decoder_layer(False))
entry("DecoderLayer#pre-ln")(lambda: _decoder_layer(True))


def _cached_layer() -> tuple[Any, Any]:
    layer = seeded(lambda: api("DecoderLayer")(8, 2, 16, dropout=0.0)).eval()
    memory = torch.randn(2, 5, 8)
    return layer, memory


@entry("DecoderLayer#cached")
def _() -> Call:
    layer, memory = _cached_layer()
    pad = torch.tensor([[True, True, True, True, False], [True, True, True, False, False]])

    def step(mask: Any) -> Any:
        x = torch.randn(2, 1, 8)
        return layer(x, None, cache=layer.init_cache(memory), memory_key_padding_mask=mask)

    def uncached(mask: Any) -> Any:
        x = torch.randn(2, 1, 8)
        return layer(x, memory, memory_key_padding_mask=mask)

    def fn(x, memory_key_padding_mask, cache):  # type: ignore[no-untyped-def]
        return layer(x, None, memory_key_padding_mask=memory_key_padding_mask, cache=cache)

    other_layer = seeded(lambda: api("DecoderLayer")(8, 2, 16, dropout=0.0))
    return Call(fn, {
        "x": X("B 1 D"), "memory_key_padding_mask": M("B S", additive=False),
        "cache": Obj(lambda: layer.init_cache(memory), fresh=True,
                     others=(other_layer.init_cache(memory[:1]),))}, module=True, bad=[
        Bad("float-0-1-padding-mask-read-as-the-uncached-path-reads-it",
            call=lambda: step(pad.float()), twin=lambda: uncached(pad), expect="either",
            names=("memory_key_padding_mask",)),
    ])


@entry("DecoderLayer.init_cache")
def _() -> Call:
    layer, _ = _cached_layer()
    return Call(layer.init_cache, {"memory": X("B S D")}, module=True)


@entry("FeedForward")
def _() -> Call:
    def fn(d_model, d_ff, dropout, activation, x):  # type: ignore[no-untyped-def]
        return api("FeedForward")(d_model, d_ff, dropout, activation)(x)

    return Call(fn, {"d_model": Count(8), "d_ff": Count(16), "dropout": Prob(0.0),
                     "activation": Choice("relu"), "x": X("B L D")}, module=True)


exempt("a result the Transformer builds (a NamedTuple or dataclass of tensors); nothing to check",
       "AttentionWeights", "DecoderOutput", "Encoded", "StepOutput", "Masks")


@entry("make_masks")
def _() -> Call:
    return Call(api("make_masks"), {
        "src_lengths": Lengths(SRC_LENGTHS.clone(), 5, minimum=0), "S": Count(5, 0),
        "tgt_lengths": Lengths(TGT_LENGTHS.clone(), 3, minimum=0, optional=True),
        "L": Count(3, 0, optional=True)}, bad=[
        Bad("batches-of-different-sizes", {"tgt_lengths": torch.tensor([3, 2, 1])},
            names=("tgt_lengths",))])


# --- key/value caches ---------------------------------------------------------------------------

exempt("a cache DecoderLayer.init_cache and Transformer.init_cache build; the layers check it",
       "LayerCache", "DecoderCache")


@entry("LayerCache.reorder")
def _() -> Call:
    layer, memory = _cached_layer()

    def fn(index):  # type: ignore[no-untyped-def]
        cache = layer.init_cache(memory)
        cache.reorder(index)
        return cache

    index = I("B", 2)
    index.value = torch.tensor([1, 1])
    return Call(fn, {"index": index})


@entry("DecoderCache.reorder")
def _() -> Call:
    model = _tf()

    def fn(index):  # type: ignore[no-untyped-def]
        cache = model.init_cache(_encoded(model))
        cache.reorder(index)
        return cache

    index = I("B", 2)
    index.value = torch.tensor([1, 0])
    return Call(fn, {"index": index})


# --- decoding -----------------------------------------------------------------------------------

exempt("the result of a search (tokens and weights); nothing to check", "Decoded")


def _search_args() -> dict[str, Any]:
    return {"model": Obj(_tf(), others=(_s2s(),)), "src": src(), "src_lengths": src_lengths(),
            "max_len": Count(4), "bos_id": Count(None, 0, 11, optional=True),
            "eos_id": Count(None, 0, 11, optional=True)}


@entry("beam_search")
def _() -> Call:
    return Call(api("beam_search"), {**_search_args(), "beam_size": Count(2),
                                     "length_penalty": Real(0.6, 0.0),
                                     "use_cache": Flag(True), "stop_at_eos": Flag(True)},
                module=True)


@entry("decoding.greedy_decode")
def _() -> Call:
    return Call(api("decoding.greedy_decode"), {**_search_args(), "use_cache": Flag(True),
                                                "stop_at_eos": Flag(True)}, module=True)


@entry("sequence_log_prob")
def _() -> Call:
    args = _search_args()
    del args["max_len"]
    tokens = I("B L", 12)
    tokens.value = torch.tensor([[7, 8, 2], [5, 2, 0]])
    return Call(api("sequence_log_prob"), {**args, "tokens": tokens}, module=True)


@entry("gnmt_length_penalty")
def _() -> Call:
    return Call(api("gnmt_length_penalty"), {
        "length": Lengths(torch.tensor([3, 5]), None, minimum=0, any_shape=True),
        "alpha": Real(0.6, 0.0)})


# --- the decoder-only language model ------------------------------------------------------------


def _lm_config(**changes: Any) -> Any:
    kw = {"vocab_size": 12, "d_model": 8, "num_heads": 2, "num_kv_heads": 1, "num_layers": 1,
          "d_ff": 16, "max_len": 12, **changes}
    return api("DecoderLMConfig")(**kw)


def _lm(**changes: Any) -> Any:
    return seeded(lambda: api("DecoderLM")(_lm_config(**changes))).eval()


@entry("DecoderLMConfig")
def _() -> Call:
    return Call(api("DecoderLMConfig"), {
        "vocab_size": Count(12), "d_model": Count(8), "num_heads": Count(2),
        "num_kv_heads": Count(1), "num_layers": Count(1), "d_ff": Count(16),
        "max_len": Count(12), "window": Count(None, optional=True),
        "rope_base": Positive(10000.0)})


@entry("DecoderLM")
def _() -> Call:
    model = _lm()
    LMCache = api("LMCache")

    def fed(rows: int, tokens: int) -> Any:
        cache = LMCache()
        model(torch.ones(rows, tokens, dtype=torch.long), cache)
        return cache

    def fn(config, tokens, cache):  # type: ignore[no-untyped-def]
        return api("DecoderLM")(config).eval()(tokens, cache)

    return Call(fn, {"config": Obj(_lm_config()), "tokens": I("B L", 12),
                     "cache": Obj(None, optional=True, others=(fed(1, 2),))}, module=True, bad=[
        Bad("cache-of-another-batch-size", call=lambda: model(torch.ones(2, 1, dtype=torch.long),
                                                              fed(1, 2)), names=("cache",)),
        Bad("cache-used-past-max_len", call=lambda: model(torch.ones(2, 1, dtype=torch.long),
                                                          fed(2, 12)), names=("cache",)),
        Bad("cache-a-dict", call=lambda: model(torch.ones(2, 1, dtype=torch.long), {}),
            names=("cache",)),
        Bad("cache-of-another-model", call=lambda: _lm(num_kv_heads=2)(
            torch.ones(2, 1, dtype=torch.long), fed(2, 2)), names=("cache",)),
    ])


@entry("DecoderLM.with_kv_heads")
def _() -> Call:
    return Call(_lm(num_kv_heads=2).with_kv_heads, {"num_kv_heads": Count(1)}, module=True)


@entry("DecoderLM.parameter_count")
def _() -> Call:
    return Call(_lm().parameter_count, {})


@entry("DecoderBlock")
def _() -> Call:
    def fn(config, x, attn_mask, past, offset):  # type: ignore[no-untyped-def]
        return api("DecoderBlock")(config)(x, attn_mask, past, offset)

    return Call(fn, {"config": Obj(_lm_config()), "x": X("B L D"),
                     "attn_mask": M("L L", optional=False), "past": Plain(None),
                     "offset": Count(0, 0)}, module=True)


exempt("the cache DecoderLM fills; DecoderLM checks it at its entry", "LMCache")


@entry("LMCache.nbytes")
def _() -> Call:
    cache = api("LMCache")()
    _lm()(torch.ones(2, 3, dtype=torch.long), cache)
    return Call(cache.nbytes, {})


@entry("generate")
def _() -> Call:
    model = _lm()
    return Call(api("generate"), {"model": Obj(model, others=(_tf(),)), "prompt": I("B L", 12),
                                  "steps": Count(3, 0), "use_cache": Flag(True)}, module=True,
                bad=[Bad("past-max_len", {"prompt": torch.ones(2, 3, dtype=torch.long),
                                          "steps": 10}, names=("steps", "prompt"))])


@entry("lm_loss")
def _() -> Call:
    return Call(api("lm_loss"), {"logits": X("B L V"), "targets": I("B L", 12)}, bad=[
        Bad("every-target-ignored", {"targets": torch.full((2, 3), -100)}, expect="either",
            names=("targets",)),
        Bad("targets-of-another-shape", {"targets": torch.ones(2, 4, dtype=torch.long)},
            names=("targets",))])


@entry("train_lm")
def _() -> Call:
    tokens = torch.randint(0, 12, (2, 4), generator=torch.Generator().manual_seed(0))
    return Call(api("train_lm"), {
        "model": Obj(lambda: _lm(), fresh=True), "batch": Func(lambda step: (tokens, tokens)),
        "steps": Count(2), "lr": Positive(3e-3)}, module=True)


__all__: list[str] = []
