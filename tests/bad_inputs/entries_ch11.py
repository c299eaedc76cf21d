"""Entries of the catalogue: the blocks of chapter 11 (block masks and score modifications,
stable attention, sparse attention) and its experiments."""

from __future__ import annotations

from typing import Any

import torch

from .harness import (
    Call,
    Choice,
    Count,
    Device,
    Flag,
    Func,
    I,
    Ids,
    M,
    Mask,
    Obj,
    Positive,
    Real,
    Seq,
    X,
    api,
    entry,
    exempt,
    seeded,
)

# --- block masks and score modifications ---------------------------------------------------------

exempt("the result create_block_mask builds; flex_tiled_attention checks it", "BlockMask")


@entry("causal_mask_mod")
def _() -> Call:
    return Call(api("causal_mask_mod"), {"offset": Count(0, None)})


@entry("sliding_window_mask_mod")
def _() -> Call:
    return Call(api("sliding_window_mask_mod"), {"window": Count(3)})


@entry("prefix_lm_mask_mod")
def _() -> Call:
    return Call(api("prefix_lm_mask_mod"), {"prefix_length": Count(2, 0)})


@entry("document_mask_mod")
def _() -> Call:
    return Call(api("document_mask_mod"), {"document_ids": I("B L", None),
                                           "causal": Flag(True)})


@entry("softcap_score_mod")
def _() -> Call:
    return Call(api("softcap_score_mod"), {"cap": Positive(50.0)})


@entry("alibi_score_mod")
def _() -> Call:
    return Call(api("alibi_score_mod"), {"slopes": X("H")})


@entry("create_block_mask")
def _() -> Call:
    return Call(api("create_block_mask"), {
        "mask_mod": Func(api("causal_mask_mod")()), "B": Count(1), "H": Count(1),
        "L": Count(3, 0), "S": Count(5, 0), "block_size_q": Count(2, cost=True),
        "block_size_k": Count(2, cost=True), "device": Device()})


@entry("flex_tiled_attention")
def _() -> Call:
    block_mask = api("create_block_mask")(api("sliding_window_mask_mod")(2), 1, 1, 3, 5, 2, 2)
    return Call(api("flex_tiled_attention"), {
        "query": X("B H L E"), "key": X("B H S E"), "value": X("B H S F"),
        "score_mod": Func(api("softcap_score_mod")(5.0), optional=True),
        "block_mask": Obj(block_mask, optional=True), "scale": Positive(None, optional=True)})


# --- stable attention ----------------------------------------------------------------------------


@entry("soft_cap")
def _() -> Call:
    return Call(api("soft_cap"), {"scores": X("B L S", scale=60.0), "cap": Positive(50.0)})


@entry("max_logits")
def _() -> Call:
    return Call(api("max_logits"), {"query": X("B H L E"), "key": X("B H S E"),
                                    "is_causal": Flag(False)})


@entry("qk_clip")
def _() -> Call:
    max_logit = X("H")
    max_logit.value = torch.tensor([3.0, 0.5])  # one head over tau, one under
    return Call(api("qk_clip"), {"w_q": X("F E"), "w_k": X("F E", scale=2.0),
                                 "max_logit": max_logit, "tau": Positive(1.0),
                                 "alpha": Real(0.5, minimum=0.0)})


@entry("StableSelfAttention")
def _() -> Call:
    def fn(embed_dim, num_heads, qk_norm, softcap, rope, eps, x):  # type: ignore[no-untyped-def]
        return api("StableSelfAttention")(embed_dim, num_heads, qk_norm, softcap, rope, eps)(x)

    return Call(fn, {"embed_dim": Count(8), "num_heads": Count(2), "qk_norm": Choice("head"),
                     "softcap": Positive(50.0, optional=True), "rope": Flag(True),
                     "eps": Positive(1e-6), "x": X("B L D")}, module=True)


@entry("differential_attention")
def _() -> Call:
    return Call(api("differential_attention"), {
        "query": X("B H L E"), "key": X("B H S E"), "value": X("B H S F"),
        "lam": X("H 1 1", scale=0.5), "attn_mask": M("B H L S", additive=False)})


@entry("differential_attention#scalar-lambda")
def _() -> Call:
    return Call(api("differential_attention"), {
        "query": X("B H L E"), "key": X("B H S E"), "value": X("B H S F"), "lam": Real(0.3)})


@entry("DifferentialAttention")
def _() -> Call:
    def fn(embed_dim, num_heads, layer_index, causal, eps, x):  # type: ignore[no-untyped-def]
        return api("DifferentialAttention")(embed_dim, num_heads, layer_index, causal, eps)(x)

    return Call(fn, {"embed_dim": Count(8), "num_heads": Count(2), "layer_index": Count(2),
                     "causal": Flag(True), "eps": Positive(1e-5), "x": X("B L D")},
                module=True)


# --- sparse attention ----------------------------------------------------------------------------


@entry("lightning_indexer")
def _() -> Call:
    return Call(api("lightning_indexer"), {
        "index_query": X("B L H E"), "index_key": X("B S E"), "index_weights": X("B L H"),
        "is_causal": Flag(True)}, allow_inf=True)


@entry("top_k_keys")
def _() -> Call:
    return Call(api("top_k_keys"), {"index_scores": X("B L S"), "k": Count(2)})


def _indices() -> tuple[torch.Tensor, torch.Tensor]:
    """Four of the S = 5 keys for each (b, query), the last one masked in a few rows."""
    gen = torch.Generator().manual_seed(11)
    indices = torch.rand(2, 3, 5, generator=gen).argsort(-1)[..., :4]  # (B, L, T)
    valid = torch.ones(2, 3, 4, dtype=torch.bool)
    valid[0, :2, -1] = False
    return indices, valid


@entry("sparse_attention")
def _() -> Call:
    indices, valid = _indices()
    return Call(api("sparse_attention"), {
        "query": X("B H L E"), "key": X("B H S E"), "value": X("B H S F"),
        "indices": Ids(indices, "B L T", 5), "valid": Mask(valid, "B L T", additive=False),
        "scale": Positive(None, optional=True)})


@entry("indexer_kl_loss")
def _() -> Call:
    weights = X("B H L S")
    weights.value = weights.value.softmax(-1)
    return Call(api("indexer_kl_loss"), {
        "index_scores": X("B L S"), "attention_weights": weights,
        "selected": M("B L S", additive=False)})


@entry("moba_mask")
def _() -> Call:
    return Call(api("moba_mask"), {
        "query": X("B H L E"), "key": X("B H L E", scale=0.5),
        "block_size": Count(2, cost=True), "top_k": Count(1, cost=True)})


@entry("moba_attention")
def _() -> Call:
    return Call(api("moba_attention"), {
        "query": X("B H L E"), "key": X("B H L E", scale=0.5), "value": X("B H L F"),
        "block_size": Count(2), "top_k": Count(1)})


# --- chapter 11's experiments: sparse retrieval ----------------------------------------------

exempt("the scores retrieval_accuracy returns", "RetrievalScore")


@entry("retrieval_task")
def _() -> Call:
    return Call(api("retrieval_task"), {"n": Count(2), "length": Count(12), "queries": Count(2),
                                        "num_keys": Count(6), "num_values": Count(3),
                                        "seed": Count(0, 0)})


def _retrieval_model() -> Any:
    return seeded(lambda: api("RetrievalModel")("topk", 3, 8, 6, 3, 1, 2, 2)).eval()


def _retrieval_line() -> tuple[torch.Tensor, torch.Tensor]:
    keys, values, _ = api("retrieval_task")(2, 12, 2, 6, 3)
    return keys, values


@entry("RetrievalModel")
def _() -> Call:
    keys, values = _retrieval_line()

    def fn(mode, keys_per_query, dim, num_keys, num_values, block_size,  # type: ignore[no-untyped-def]
           index_heads, index_dim, keys, values, queries):
        torch.manual_seed(0)
        return api("RetrievalModel")(mode, keys_per_query, dim, num_keys, num_values,
                                     block_size, index_heads, index_dim)(keys, values, queries)

    return Call(fn, {"mode": Choice("moba"), "keys_per_query": Count(4), "dim": Count(8),
                     "num_keys": Count(6), "num_values": Count(3), "block_size": Count(2),
                     "index_heads": Count(2), "index_dim": Count(2),
                     "keys": Ids(keys, "B L", 6), "values": Ids(values, "B L", 4),
                     "queries": Count(2)}, module=True)


@entry("RetrievalConfig")
def _() -> Call:
    return Call(api("RetrievalConfig"), {"mode": Choice("topk"), "keys_per_query": Count(4),
                                         "dim": Count(8), "block_size": Count(2)})


@entry("train_retrieval")
def _() -> Call:
    return Call(api("train_retrieval"), {
        "model": Obj(_retrieval_model, fresh=True), "warmup": Count(1, 0), "steps": Count(1, 0),
        "length": Count(12), "queries": Count(2), "batch": Count(2), "lr": Positive(0.01),
        "seed": Count(0, 0)}, module=True)


@entry("retrieval_runs")
def _() -> Call:
    return Call(api("retrieval_runs"), {"seeds": Seq([0, 1], item="int", minimum=0),
                                        "keys_per_query": Count(4)})


@entry("retrieval_accuracy")
def _() -> Call:
    return Call(api("retrieval_accuracy"), {
        "model": Obj(_retrieval_model()), "length": Count(12), "queries": Count(2),
        "n": Count(2), "seed": Count(0, 0)}, module=True)


@entry("attention_macs")
def _() -> Call:
    return Call(api("attention_macs"), {
        "length": Count(64), "mode": Choice("topk"), "keys_per_query": Count(8),
        "dim": Count(4), "heads": Count(2), "index_heads": Count(2), "index_dim": Count(2),
        "block_size": Count(4), "value_dim": Count(3, optional=True), "decode": Flag(False)})


@entry("macs_crossover")
def _() -> Call:
    return Call(api("macs_crossover"), {"mode": Choice("topk"), "longest": Count(4096),
                                        "keys_per_query": Count(8), "dim": Count(4),
                                        "value_dim": Count(3, optional=True),
                                        "decode": Flag(True)})


@entry("attention_seconds")
def _() -> Call:
    return Call(api("attention_seconds"), {
        "length": Count(16), "mode": Choice("topk"), "keys_per_query": Count(4),
        "dim": Count(4), "heads": Count(2), "index_heads": Count(2), "index_dim": Count(2),
        "decode": Flag(False), "repeats": Count(1), "seed": Count(0, 0)}, compare=False)


# --- chapter 11's experiments: stability ---------------------------------------------------------

exempt("the summary stability_summary returns", "StabilitySummary")


def _stability_model() -> Any:
    return seeded(lambda: api("StabilityLM")("qk-clip", 26, 8, 2, 2, 2, 5.0, 1.0))


@entry("StabilityLM")
def _() -> Call:
    tokens = api("echo_text")(2, 8, 3)

    def fn(variant, vocab_size, dim, heads, layers, steps, cap, tau,  # type: ignore[no-untyped-def]
           tokens):
        torch.manual_seed(0)
        return api("StabilityLM")(variant, vocab_size, dim, heads, layers, steps, cap,
                                  tau)(tokens)

    return Call(fn, {"variant": Choice("softcap"), "vocab_size": Count(26), "dim": Count(8),
                     "heads": Count(2), "layers": Count(2), "steps": Count(2),
                     "cap": Positive(5.0), "tau": Positive(5.0),
                     "tokens": Ids(tokens, "B L", 26)}, module=True)


@entry("StabilityConfig")
def _() -> Call:
    return Call(api("StabilityConfig"), {"variant": Choice("qk-norm"), "steps": Count(3),
                                         "dim": Count(8), "heads": Count(2), "layers": Count(2)})


@entry("train_stability")
def _() -> Call:
    return Call(api("train_stability"), {
        "model": Obj(_stability_model, fresh=True), "steps": Count(2), "lr": Positive(0.1),
        "batch": Count(2), "length": Count(8), "period": Count(3), "seed": Count(0, 0)},
        module=True)


@entry("count_spikes")
def _() -> Call:
    # item "any": NaN is a valid loss (a diverged step, counted as a spike)
    return Call(api("count_spikes"), {"losses": Seq([3.0, 0.5, 2.0, 0.4], item="any"),
                                      "jump": Positive(1.0)})


@entry("stability_summary")
def _() -> Call:
    def model() -> Any:
        m = _stability_model()
        api("train_stability")(m, steps=2, batch=2, length=8, period=3)
        return m

    return Call(api("stability_summary"), {"model": Obj(model()), "last": Count(1, maximum=2),
                                           "jump": Positive(1.0)}, module=True)


@entry("stability_runs")
def _() -> Call:
    return Call(api("stability_runs"), {"seeds": Seq([0, 1], item="int", minimum=0),
                                        "variants": Seq(["plain", "qk-norm"]),
                                        "steps": Count(3)})


# --- chapter 11's experiments: differential attention among distractors ---------------------


@entry("distractor_task")
def _() -> Call:
    return Call(api("distractor_task"), {"n": Count(2), "length": Count(8),
                                         "distractors": Count(2, 0), "parts": Count(3, 2),
                                         "num_values": Count(4), "seed": Count(0, 0)})


def _distractor_model() -> Any:
    return seeded(lambda: api("DistractorModel")("diff", 8, 3, 4)).eval()


@entry("DistractorModel")
def _() -> Call:
    halves, values, _ = api("distractor_task")(2, 8, 2, 3, 4)

    def fn(kind, dim, parts, num_values, halves, values):  # type: ignore[no-untyped-def]
        torch.manual_seed(0)
        return api("DistractorModel")(kind, dim, parts, num_values)(halves, values)

    return Call(fn, {"kind": Choice("diff"), "dim": Count(8), "parts": Count(3, 2),
                     "num_values": Count(4), "halves": Ids(halves, "B L 2", 3),
                     "values": Ids(values, "B L", 5)}, module=True)


@entry("DistractorConfig")
def _() -> Call:
    return Call(api("DistractorConfig"), {"kind": Choice("diff"), "dim": Count(8)})


@entry("train_distractors")
def _() -> Call:
    return Call(api("train_distractors"), {
        "model": Obj(_distractor_model, fresh=True), "steps": Count(2), "length": Count(8),
        "distractors": Count(2, 0), "batch": Count(2), "lr": Positive(0.01),
        "seed": Count(0, 0)}, module=True)


exempt("the weights answer_weights returns", "DistractorWeights")


@entry("answer_weights")
def _() -> Call:
    return Call(api("answer_weights"), {"model": Obj(_distractor_model()), "length": Count(8),
                                      "distractors": Count(2, 0), "n": Count(2),
                                      "seed": Count(0, 0)}, module=True)


@entry("distractor_runs")
def _() -> Call:
    return Call(api("distractor_runs"), {"seeds": Seq([0, 1], item="int", minimum=0)})
