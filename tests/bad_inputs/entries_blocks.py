"""Entries of the catalogue: the building blocks (kernel regression, masking, scoring,
attention, multi-head attention, positions, efficient attention, GQA, sliding windows, linear
attention). Each builds one valid call; the harness makes the mistakes."""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from .harness import (
    Bad,
    Call,
    Choice,
    Count,
    Device,
    DType,
    Flag,
    Func,
    I,
    Ids,
    Lengths,
    M,
    Obj,
    Plain,
    Positive,
    Prob,
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

# --- kernel regression --------------------------------------------------------------------------

for _kernel in ("gaussian_kernel", "boxcar_kernel", "epanechnikov_kernel"):
    entry(_kernel)(lambda k=_kernel: Call(api(k), {"u": X("L S E")}))


@entry("kernel_scores")
def _() -> Call:
    return Call(api("kernel_scores"), {
        "queries": X("L E"), "keys": X("S E"), "bandwidth": Positive(1.0),
        "kernel": Choice("gaussian")}, bad=[
        Bad("per-feature-bandwidth", {"bandwidth": torch.ones(4)}, names=("bandwidth",)),
        Bad("bandwidth-0-d-tensor", {"bandwidth": torch.tensor(1.0)}, expect="either",
            names=("bandwidth",))])


@entry("kernel_scores#boxcar")
def _() -> Call:
    return Call(api("kernel_scores"), {
        "queries": X("L E"), "keys": X("S E"), "bandwidth": Positive(3.0),
        "kernel": Choice("boxcar")}, allow_inf=True)


@entry("nadaraya_watson")
def _() -> Call:
    return Call(api("nadaraya_watson"), {
        "queries": X("L"), "keys": X("S"), "values": X("S"), "bandwidth": Positive(1.0),
        "kernel": Choice("gaussian"), "attn_mask": M("L S", additive=False)}, bad=[
        Bad("per-feature-bandwidth", {"bandwidth": torch.ones(3)}, names=("bandwidth",))])


@entry("nadaraya_watson#batched")
def _() -> Call:
    return Call(api("nadaraya_watson"), {
        "queries": X("B L E"), "keys": X("B S E"), "values": X("B S F"),
        "bandwidth": Positive(2.0), "attn_mask": M("B L S", additive=False)})


@entry("leave_one_out_mask")
def _() -> Call:
    return Call(api("leave_one_out_mask"), {"n": Count(4, 2), "device": Device()})


@entry("NadarayaWatson")
def _() -> Call:
    def fn(bandwidth, kernel, queries, keys, values, attn_mask):  # type: ignore[no-untyped-def]
        return api("NadarayaWatson")(bandwidth, kernel)(queries, keys, values, attn_mask)

    return Call(fn, {"bandwidth": Positive(1.0), "kernel": Choice("gaussian"),
                     "queries": X("L E"), "keys": X("S E"), "values": X("S F"),
                     "attn_mask": M("L S", additive=False)}, module=True)


exempt("a result attnlib builds (fit_bandwidth returns it); no argument to check",
       "FitResult", "RegressionData")


@entry("fit_bandwidth")
def _() -> Call:
    NW = api("NadarayaWatson")
    return Call(api("fit_bandwidth"), {
        "model": Obj(lambda: NW(0.5), fresh=True), "x": X("N", dtype=F64),
        "y": X("N", dtype=F64), "steps": Count(2), "lr": Positive(0.05),
        "leave_one_out": Flag(True)}, module=True)


@entry("target_function")
def _() -> Call:
    return Call(api("target_function"), {"x": X("N")})


@entry("make_regression_data")
def _() -> Call:
    return Call(api("make_regression_data"), {
        "n_train": Count(5, 2), "n_test": Count(3), "noise": Real(0.5, 0.0),
        "x_max": Positive(5.0), "seed": Count(0, 0), "dtype": DType(F64)})


# --- masking ------------------------------------------------------------------------------------


@entry("causal_mask")
def _() -> Call:
    return Call(api("causal_mask"), {"L": Count(3, 0), "S": Count(5, 0, optional=True),
                                     "device": Device()})


@entry("check_mask")
def _() -> Call:
    return Call(api("check_mask"), {"name": Plain("mask"), "mask": M("B L S", broadcast=False),
                                    "target_shape": Plain((2, 3, 5)),
                                    "dtype": DType(torch.float32), "device": Device()},
                allow_inf=True, compare=False)


@entry("float_mask")
def _() -> Call:
    return Call(api("float_mask"), {"mask": M("L S", additive=False, optional=False,
                                              broadcast=False),
                                    "dtype": DType(torch.float32)}, allow_inf=True)


for _name in ("lengths_to_mask", "padding_mask"):
    entry(_name)(lambda n=_name: Call(api(n), {
        "lengths": Lengths(torch.tensor([2, 3]), 3, minimum=0), "max_len": Count(3, 0)}))


@entry("masked_softmax")
def _() -> Call:
    return Call(api("masked_softmax"), {"scores": X("B L S"), "mask": M("B L S"),
                                        "dim": Count(-1, -3, 2)})


@entry("softmax_with_temperature")
def _() -> Call:
    return Call(api("softmax_with_temperature"), {
        "scores": X("B L S"), "temperature": Positive(0.5), "mask": M("B L S"),
        "dim": Count(-1, -3, 2)})


# --- scoring ------------------------------------------------------------------------------------


@entry("AdditiveScore")
def _() -> Call:
    def fn(query_size, key_size, hidden_size, bias, query, key):  # type: ignore[no-untyped-def]
        return api("AdditiveScore")(query_size, key_size, hidden_size, bias)(query, key)

    return Call(fn, {"query_size": Count(4), "key_size": Count(6), "hidden_size": Count(5),
                     "bias": Flag(False), "query": X("B L E"), "key": X("B S F")}, module=True)


@entry("BilinearScore")
def _() -> Call:
    def fn(query_size, key_size, query, key):  # type: ignore[no-untyped-def]
        return api("BilinearScore")(query_size, key_size)(query, key)

    return Call(fn, {"query_size": Count(4), "key_size": Count(6), "query": X("B L E"),
                     "key": X("B S F")}, module=True)


for _name in ("DotScore", "ScaledDotScore"):
    entry(_name)(lambda n=_name: Call(lambda query, key, n=n: api(n)()(query, key),
                                      {"query": X("B L E"), "key": X("B S E")}))


@entry("KeyValueAttention")
def _() -> Call:
    def fn(score, dropout, query, key, value, mask):  # type: ignore[no-untyped-def]
        return api("KeyValueAttention")(score, dropout)(query, key, value, mask)

    return Call(fn, {"score": Obj(api("ScaledDotScore")()), "dropout": Prob(0.0),
                     "query": X("B L E"), "key": X("B S E"), "value": X("B S F"),
                     "mask": M("B L S", additive=False)})


@entry("KeyValueAttention#additive")
def _() -> Call:
    def fn(query, key, value, mask):  # type: ignore[no-untyped-def]
        score = api("AdditiveScore")(4, 6, 5)
        return api("KeyValueAttention")(score)(query, key, value, mask)

    return Call(fn, {"query": X("B L E"), "key": X("B S F"), "value": X("B S F"),
                     "mask": M("B L S", additive=False)}, module=True)


@entry("AttentionPooling")
def _() -> Call:
    def fn(input_size, inputs, mask):  # type: ignore[no-untyped-def]
        return api("AttentionPooling")(input_size)(inputs, mask)

    return Call(fn, {"input_size": Count(4), "inputs": X("B S E"),
                     "mask": M("B S", additive=False)}, module=True)


@entry("hard_attention")
def _() -> Call:
    return Call(api("hard_attention"), {"scores": X("B L S"), "value": X("B S F"),
                                        "mask": M("B L S", additive=False)})


# --- attention ----------------------------------------------------------------------------------


def _sdpa(need_weights: bool) -> Call:
    return Call(api("scaled_dot_product_attention"), {
        "query": X("B H L E"), "key": X("B H S E"), "value": X("B H S F"),
        "attn_mask": M("B H L S"), "is_causal": Flag(False), "dropout_p": Prob(0.0),
        "scale": Positive(None, optional=True), "need_weights": Flag(need_weights)})


entry("scaled_dot_product_attention")(lambda: _sdpa(False))
entry("scaled_dot_product_attention#weights")(lambda: _sdpa(True))

# --- multi-head attention -----------------------------------------------------------------------


def _mha(need_weights: bool) -> Call:
    def fn(embed_dim, num_heads, dropout, bias, query, key, value, attn_mask,  # type: ignore[no-untyped-def]
           key_padding_mask, is_causal, need_weights, average_attn_weights):
        mha = api("MultiHeadAttention")(embed_dim, num_heads, dropout, bias)
        return mha(query, key, value, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                   is_causal=is_causal, need_weights=need_weights,
                   average_attn_weights=average_attn_weights)

    return Call(fn, {
        "embed_dim": Count(8), "num_heads": Count(2), "dropout": Prob(0.0), "bias": Flag(True),
        "query": X("B L D"), "key": X("B S D"), "value": X("B S D"), "attn_mask": M("L S"),
        "key_padding_mask": M("B S", additive=False), "is_causal": Flag(False),
        "need_weights": Flag(need_weights), "average_attn_weights": Flag(False)}, module=True)


entry("MultiHeadAttention")(lambda: _mha(False))
entry("MultiHeadAttention#weights")(lambda: _mha(True))


@entry("MultiHeadAttention#kdim-vdim")
def _() -> Call:
    def fn(kdim, vdim, query, key, value):  # type: ignore[no-untyped-def]
        return api("MultiHeadAttention")(8, 2, kdim=kdim, vdim=vdim)(query, key, value)

    return Call(fn, {"kdim": Count(4, optional=True), "vdim": Count(6, optional=True),
                     "query": X("B L D"), "key": X("B S E"), "value": X("B S F")}, module=True)


def _torch_mha() -> nn.MultiheadAttention:
    return seeded(lambda: nn.MultiheadAttention(8, 2, batch_first=True))


@entry("MultiHeadAttention.from_torch")
def _() -> Call:
    return Call(api("MultiHeadAttention").from_torch, {"ref": Obj(_torch_mha())})


@entry("copy_from_torch")
def _() -> Call:
    MHA = api("MultiHeadAttention")
    return Call(api("copy_from_torch"), {"mha": Obj(lambda: MHA(8, 2), fresh=True),
                                         "ref": Obj(_torch_mha())}, module=True)


@entry("merge_heads")
def _() -> Call:
    return Call(api("merge_heads"), {"x": X("B H L E")})


@entry("split_heads")
def _() -> Call:
    return Call(api("split_heads"), {"x": X("B L D"), "num_heads": Count(2)})


@entry("parameter_count")
def _() -> Call:
    return Call(api("parameter_count"), {
        "embed_dim": Count(8), "num_heads": Count(2), "kdim": Count(None, optional=True),
        "vdim": Count(None, optional=True), "bias": Flag(True)})


# --- positions ----------------------------------------------------------------------------------


@entry("LearnedPositionalEmbedding")
def _() -> Call:
    def fn(max_len, d_model, x, offset):  # type: ignore[no-untyped-def]
        return api("LearnedPositionalEmbedding")(max_len, d_model)(x, offset)

    return Call(fn, {"max_len": Count(8), "d_model": Count(8), "x": X("B L D"),
                     "offset": Count(0, 0)}, module=True)


@entry("RotaryPositionalEmbedding")
def _() -> Call:
    def fn(head_dim, base, x, positions, offset):  # type: ignore[no-untyped-def]
        return api("RotaryPositionalEmbedding")(head_dim, base)(x, positions, offset)

    return Call(fn, {"head_dim": Count(4), "base": Positive(10000.0), "x": X("B H L E"),
                     "positions": Plain(None), "offset": Count(0, 0, cost=True, huge=10**6)})


@entry("RotaryPositionalEmbedding#positions")
def _() -> Call:
    def fn(x, positions):  # type: ignore[no-untyped-def]
        return api("RotaryPositionalEmbedding")(4)(x, positions)

    return Call(fn, {"x": X("B H L E"), "positions": I("L", None, optional=True)})


@entry("SinusoidalPositionalEncoding")
def _() -> Call:
    def fn(d_model, max_len, dropout, base, x, offset):  # type: ignore[no-untyped-def]
        return api("SinusoidalPositionalEncoding")(d_model, max_len, dropout, base)(x, offset)

    return Call(fn, {"d_model": Count(8), "max_len": Count(16, 0), "dropout": Prob(0.0),
                     "base": Positive(10000.0), "x": X("B L D"),
                     "offset": Count(0, 0, cost=True, huge=10**6)}, module=True)


@entry("relative_shift_matrix")
def _() -> Call:
    return Call(api("relative_shift_matrix"), {"k": Count(3, None), "d_model": Count(8),
                                               "base": Positive(10000.0),
                                               "dtype": DType(torch.float32),
                                               "device": Device()})


@entry("sinusoidal_encoding")
def _() -> Call:
    return Call(api("sinusoidal_encoding"), {"max_len": Count(6, 0), "d_model": Count(8),
                                             "base": Positive(10000.0),
                                             "dtype": DType(torch.float32),
                                             "device": Device()})


# --- efficient attention ------------------------------------------------------------------------


@entry("online_softmax")
def _() -> Call:
    return Call(api("online_softmax"), {"scores": X("B L S"),
                                        "block_size": Count(2, cost=True, huge=10**6)})


@entry("naive_attention")
def _() -> Call:
    return Call(api("naive_attention"), {
        "query": X("B H L E"), "key": X("B H S E"), "value": X("B H S F"),
        "is_causal": Flag(False), "scale": Positive(None, optional=True)})


@entry("tiled_attention")
def _() -> Call:
    return Call(api("tiled_attention"), {
        "query": X("B H L E"), "key": X("B H S E"), "value": X("B H S F"),
        "is_causal": Flag(False), "scale": Positive(None, optional=True),
        "block_size_q": Count(2, cost=True, huge=10**6),
        "block_size_k": Count(2, cost=True, huge=10**6)})


@entry("triton_flash_attention")
def _() -> Call:
    return Call(api("triton_flash_attention"), {
        "query": X("B H L E"), "key": X("B H S E"), "value": X("B H S F"),
        "is_causal": Flag(False), "scale": Positive(None, optional=True),
        "block_size_q": Count(16, minimum=16, maximum=256),
        "block_size_k": Count(16, minimum=16, maximum=256),
        "interpret": Flag(True), "return_lse": Flag(False)})


@entry("peak_memory")
def _() -> Call:
    return Call(api("peak_memory"), {"fn": Func(lambda: torch.ones(3))})


@entry("median_times")
def _() -> Call:
    def fn(fns, repeats, warmup, clock, num_threads, spread):  # type: ignore[no-untyped-def]
        return api("median_times")(fns, repeats=repeats, warmup=warmup, clock=clock,
                                   num_threads=num_threads, spread=spread)

    return Call(fn, {"fns": Func(lambda: None), "repeats": Count(1), "warmup": Count(0, 0),
                     "clock": Choice("wall"), "num_threads": Count(1, optional=True),
                     "spread": Flag(False)})


@entry("cpu_caches")
def _() -> Call:
    return Call(api("cpu_caches"), {"root": Text("/sys/devices/system/cpu/cpu0/cache")})


# --- grouped-query attention --------------------------------------------------------------------


@entry("GroupedQueryAttention")
def _() -> Call:
    GQA = api("GroupedQueryAttention")

    def fn(embed_dim, num_heads, num_kv_heads, bias, x, attn_mask, past, offset):  # type: ignore[no-untyped-def]
        return GQA(embed_dim, num_heads, num_kv_heads, bias)(x, attn_mask, past, offset)

    past = (torch.randn(2, 1, 2, 4), torch.randn(2, 1, 2, 4))  # (B, H_kv, P, E)
    wide = torch.ones(3, 5, dtype=torch.bool)  # (L, P + L)

    def cached(p, mask=wide):  # type: ignore[no-untyped-def]
        return lambda: seeded(lambda: GQA(8, 2, 1)(torch.randn(2, 3, 8), mask, p))

    return Call(fn, {"embed_dim": Count(8), "num_heads": Count(2), "num_kv_heads": Count(1),
                     "bias": Flag(True), "x": X("B L D"), "attn_mask": M("L L"),
                     "past": Plain(None), "offset": Count(0, 0)}, module=True, bad=[
        Bad("past-of-another-batch", call=cached((past[0][:1], past[1][:1])), names=("past",)),
        Bad("past-a-list", call=cached([past[0], past[1]]), expect="either", names=("past",)),
        Bad("past-of-another-head-count", call=cached((past[0].repeat(1, 2, 1, 1),
                                                       past[1].repeat(1, 2, 1, 1))),
            names=("past",)),
        Bad("past-keys-and-values-of-different-length",
            call=cached((past[0], past[1][:, :, :1])), names=("past",)),
        Bad("past-float64", call=cached((past[0].double(), past[1].double())),
            names=("past",)),
        Bad("past-one-tensor", call=cached(past[0]), names=("past",)),
        Bad("mask-ignoring-the-past", call=cached(past, torch.ones(3, 3, dtype=torch.bool)),
            names=("attn_mask",)),
    ])


@entry("gqa_parameter_count")
def _() -> Call:
    return Call(api("gqa_parameter_count"), {"embed_dim": Count(8), "num_heads": Count(2),
                                             "num_kv_heads": Count(1), "bias": Flag(True)})


@entry("grouped_query_attention")
def _() -> Call:
    return Call(api("grouped_query_attention"), {
        "query": X("B H L E"), "key": X("B K S E"), "value": X("B K S F"),
        "attn_mask": M("B H L S"), "is_causal": Flag(False)})


@entry("mean_pool_kv")
def _() -> Call:
    GQA = api("GroupedQueryAttention")
    return Call(api("mean_pool_kv"), {"attention": Obj(seeded(lambda: GQA(8, 2, 2))),
                                      "num_kv_heads": Count(1)}, module=True)


@entry("repeat_kv")
def _() -> Call:
    return Call(api("repeat_kv"), {"x": X("B K S E"), "groups": Count(2)})


# --- sliding window -----------------------------------------------------------------------------


@entry("sliding_window_attention")
def _() -> Call:
    return Call(api("sliding_window_attention"), {
        "query": X("B H L E"), "key": X("B H L E", 0.5), "value": X("B H L F"),
        "window": Count(2, cost=True)})


@entry("sliding_window_mask")
def _() -> Call:
    return Call(api("sliding_window_mask"), {"L": Count(3, 0), "window": Count(2),
                                             "S": Count(None, 0, optional=True),
                                             "device": Device()})


@entry("window_reach")
def _() -> Call:
    return Call(api("window_reach"), {"window": Count(2), "num_layers": Count(3)})


# --- linear attention ---------------------------------------------------------------------------


@entry("elu_feature_map")
def _() -> Call:
    return Call(api("elu_feature_map"), {"x": X("B H L E")})


@entry("linear_attention")
def _() -> Call:
    return Call(api("linear_attention"), {
        "query": X("B H L E"), "key": X("B H S E"), "value": X("B H S F"),
        "is_causal": Flag(False), "chunk_size": Count(2, cost=True, huge=10**6)})


@entry("linear_attention#causal")
def _() -> Call:
    return Call(api("linear_attention"), {
        "query": X("B H L E"), "key": X("B H L E", 0.5), "value": X("B H L F"),
        "is_causal": Flag(True), "chunk_size": Count(2, cost=True, huge=10**6)})


@entry("linear_attention_quadratic")
def _() -> Call:
    return Call(api("linear_attention_quadratic"), {
        "query": X("B H L E"), "key": X("B H S E"), "value": X("B H S F"),
        "is_causal": Flag(False)})



# --- the argument checks themselves -------------------------------------------------------------


@entry("shape_str")
def _() -> Call:
    return Call(api("shape_str"), {"shape": Seq((2, 3), "any", 0)})


def _check(name: str, **args: object) -> Call:
    """A check called as attnlib calls it: the name it reports is the argument's own."""
    first = next(iter(args))
    return Call(lambda **kw: api(name)(first, **kw), dict(args))


entry("check_tensor")(lambda: _check("check_tensor", value=Obj(torch.ones(2),
                                                                others=([1.0, 2.0],))))
entry("check_floating")(lambda: _check("check_floating", value=X("N")))
entry("check_ndim")(lambda: _check("check_ndim", value=Obj(torch.ones(2, 3), others=([1.0],)),
                                   ndims=Count(2, 0),
                                   expected=Text("(N, L)")))
entry("check_positive")(lambda: _check("check_positive", value=Positive(1.0)))
entry("check_finite")(lambda: _check("check_finite", value=X("N")))
entry("check_choice")(lambda: _check("check_choice", value=Choice("a"),
                                     choices=Seq(["a", "b"])))
entry("check_int")(lambda: _check("check_int", value=Count(3, None),
                                  minimum=Count(0, None, optional=True),
                                  maximum=Count(5, None, optional=True)))
entry("check_probability")(lambda: _check("check_probability", value=Prob(0.1)))
entry("check_sequence")(lambda: _check("check_sequence", x=X("B L D"), d_model=Count(8)))
entry("check_token_ids")(lambda: _check("check_token_ids", tokens=I("B L", 12),
                                        num_symbols=Count(12), ndim=Count(2, 0),
                                        device=Device()))
entry("check_positions")(lambda: _check("check_positions", value=Ids(torch.arange(4), "L", None),
                                        expected=Text("(L,)"),
                                        device=Device(torch.device("cpu")),
                                        other=Text("the model")))


@entry("positive_int_from_env")
def _() -> Call:
    return Call(api("positive_int_from_env"), {"name": Text("ATTNLIB_CATALOGUE_UNSET"),
                                               "default": Count(2)})


@entry("check_qkv")
def _() -> Call:
    return Call(api("check_qkv"), {
        "query": X("B H L E"), "key": X("B H S E"), "value": X("B H S F"),
        "layout": Choice("heads"), "attn_mask": M("B H L S", broadcast=False),
        "is_causal": Flag(False), "causal_needs_l_eq_s": Flag(False), "need_keys": Flag(False)},
        compare=False, allow_inf=True)


entry("check_flag")(lambda: _check("check_flag", value=Flag(True)))
entry("check_real")(lambda: _check("check_real", value=Real(0.5, 0.0),
                                   minimum=Real(0.0, optional=True)))
entry("check_float_dtype")(lambda: _check("check_float_dtype", dtype=DType(torch.float32),
                                          optional=Flag(False)))
entry("check_tokens")(lambda: _check("check_tokens", value=Seq(["a", "b"])))
entry("check_sentences")(lambda: _check("check_sentences", value=Seq(["a b", ["c"]], "any")))
entry("check_ints")(lambda: _check("check_ints", value=Seq([1, 2], "int", 0),
                                   minimum=Count(0, None, optional=True)))
entry("check_instance")(lambda: _check("check_instance", value=Obj(torch.ones(1)),
                                       cls=Plain(torch.Tensor), what=Text("a tensor")))


@entry("check_device")
def _() -> Call:
    def fn(value, device, other):  # type: ignore[no-untyped-def]
        return api("check_device")("value", value, device, other)

    return Call(fn, {"value": Obj(torch.ones(2), others=([1.0],)),
                     "device": Device(torch.device("cpu"), optional=False),
                     "other": Text("the model")})


@entry("check_device_arg")
def _() -> Call:
    call = _check("check_device_arg", value=Device(), optional=Flag(True))
    # optional=False refuses the value None: the error names the value
    return dataclasses.replace(call, aliases={"optional": ("value",)})


@entry("check_not_meta")
def _() -> Call:
    return Call(lambda value, what: api("check_not_meta")("value", value, what), {
        "value": Obj(torch.ones(2), others=([1.0],)), "what": Text("the values")}, bad=[
        Bad("on-the-meta-device", {"value": torch.ones(2, device="meta")}, names=("value",))])


@entry("check_input")
def _() -> Call:
    def fn(value, like, ndim, expected):  # type: ignore[no-untyped-def]
        return api("check_input")("value", value, like, ndim, expected)

    # value and like must agree: an error about either may name the other
    return Call(fn, {"value": X("B L D"), "like": X("D"), "ndim": Count(3, 0, optional=True),
                     "expected": Text("(B, L, D)")}, compare=False,
                aliases={"like": ("value",), "value": ("like",)})
