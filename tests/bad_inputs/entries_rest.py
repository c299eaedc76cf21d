"""Entries of the catalogue: data, training, comparisons, runs, the experiments of single
chapters, and the notebook helpers."""

from __future__ import annotations

import os
import random
from typing import Any

import torch
from torch import nn

from .entries_models import _lm, _s2s_config, _tf_config
from .harness import (
    Bad,
    Call,
    Choice,
    Count,
    Flag,
    Func,
    I,
    Ids,
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

# --- data ---------------------------------------------------------------------------------------

exempt("a node of the grammar's trees, or a lexicon record: realize() checks a tree as a whole",
       "Clause", "NounPhrase", "RelativeClause", "Sentence", "Pair", "Place", "Pronoun",
       "Thing", "TimeWord", "Verb", "VerbForms")
exempt("a result the corpus, batching and task functions build; nothing to check",
       "Batch", "Corpus", "Splits", "RegionTask", "RetrievalTask")
exempt("a typing Protocol: a signature, never called", "TokenPair", "GreedyDecoder", "Trainable")


def _note() -> Any:
    return api("realize")(api("Sentence")(api("Clause")(api("NounPhrase")("我"), "爱",
                                                        api("NounPhrase")("机器学习"))))


def _vocabs() -> tuple[Any, Any]:
    pairs = _pairs()
    Vocab = api("Vocab")
    return Vocab.build(p.src for p in pairs), Vocab.build(p.tgt for p in pairs)


def _pairs() -> list[Any]:
    return api("generate_pairs")(8, difficulty=0)


@entry("Difficulty")
def _() -> Call:
    return Call(api("Difficulty"), {"depth": Count(1, 0), "p_modifier": Real(0.5, 0.0),
                                    "p_two_clauses": Real(1.0, 0.0), "max_src_len": Count(20)},
                bad=[Bad("probability-above-1", {"p_modifier": 1.5}, names=("p_modifier",))])


@entry("Vocab")
def _() -> Call:
    specials = tuple(api("Vocab")((*("<pad>", "<bos>", "<eos>", "<unk>"), "a")).itos[:4])
    return Call(api("Vocab"), {"itos": Seq((*specials, "a", "b"))}, bad=[
        Bad("itos-a-string", {"itos": "<pad><bos><eos><unk>ab"}, names=("itos",)),
        Bad("itos-with-a-number", {"itos": (*specials, 3)}, names=("itos",))])


@entry("Vocab.build")
def _() -> Call:
    return Call(api("Vocab").build, {"sentences": Seq([["a", "b"], ["c"]], "any")}, bad=[
        Bad("sentences-a-string", {"sentences": "a b"}, expect="either", names=("sentences",)),
        Bad("sentences-of-numbers", {"sentences": [[1, 2]]}, names=("sentences",))])


@entry("Vocab.encode")
def _() -> Call:
    vocab = api("Vocab").build([["a", "b"]])
    return Call(vocab.encode, {"tokens": Seq(["a", "b", "zzz"])}, bad=[
        Bad("tokens-of-numbers", {"tokens": [1, 2]}, names=("tokens",))])


@entry("Vocab.decode")
def _() -> Call:
    vocab = api("Vocab").build([["a", "b"]])
    ids = I("L", 6, list_ok=True)
    return Call(vocab.decode, {"ids": ids, "strip_special": Flag(True)})


@entry("batches")
def _() -> Call:
    src_vocab, tgt_vocab = _vocabs()

    def fn(pairs, src_vocab, tgt_vocab, batch_size, shuffle, seed, max_len, by_length):  # type: ignore[no-untyped-def]
        return list(api("batches")(pairs, src_vocab, tgt_vocab, batch_size, shuffle, seed,
                                   max_len, by_length))

    return Call(fn, {"pairs": Plain(_pairs()), "src_vocab": Obj(src_vocab),
                     "tgt_vocab": Obj(tgt_vocab), "batch_size": Count(3),
                     "shuffle": Flag(False), "seed": Count(0, 0),
                     "max_len": Count(None, optional=True), "by_length": Flag(False)})


@entry("pad_batch")
def _() -> Call:
    return Call(api("pad_batch"), {"sequences": Seq([[1, 2, 3], [4]], "any"),
                                   "pad_id": Count(0, 0)},
                bad=[Bad("a-float-id", {"sequences": [[1.5, 2]]}, names=("sequences",))])


@entry("classes_of")
def _() -> Call:
    return Call(api("classes_of"), {"head": Text("苹果")})


@entry("iter_subtrees")
def _() -> Call:
    NP = api("NounPhrase")
    return Call(lambda np: list(api("iter_subtrees")(np)),
                {"np": Obj(NP("朋友", possessor=NP("我")))})


@entry("lexicon_words")
def _() -> Call:
    return Call(api("lexicon_words"), {})


for _name in ("realize", "references", "reference_count", "source_length"):
    entry(_name)(lambda n=_name: Call(api(n), {"sentence": Obj(_note().tree)}))


@entry("sample_sentence")
def _() -> Call:
    return Call(api("sample_sentence"), {"rng": Obj(lambda: random.Random(0), fresh=True),
                                         "difficulty": Count(1, 0, 3)})


@entry("generate_pairs")
def _() -> Call:
    return Call(api("generate_pairs"), {"n_pairs": Count(4), "seed": Count(0, 0),
                                        "difficulty": Count(0, 0, 3),
                                        "max_src_len": Count(None, optional=True)})


@entry("make_corpus")
def _() -> Call:
    return Call(api("make_corpus"), {"seed": Count(0, 0), "n_pairs": Count(30),
                                     "valid_frac": Prob(0.1), "test_frac": Prob(0.1),
                                     "difficulty": Count(0, 0, 3),
                                     "max_src_len": Count(None, optional=True)})


@entry("split")
def _() -> Call:
    return Call(api("split"), {"pairs": Seq(api("generate_pairs")(30, difficulty=0), "any"),
                               "seed": Count(0, 0), "valid_frac": Prob(0.1),
                               "test_frac": Prob(0.1)})


for _name in ("copy_task", "reverse_task"):
    entry(_name)(lambda n=_name: Call(api(n), {"n": Count(3), "length": Count(4),
                                               "num_symbols": Count(5), "seed": Count(0, 0)}))


@entry("key_retrieval_task")
def _() -> Call:
    return Call(api("key_retrieval_task"), {
        "n": Count(3), "num_keys": Count(4), "key_size": Count(8), "value_size": Count(4),
        "mapping": Plain(None), "noise": Real(0.5, 0.0), "seed": Count(0, 0)})


@entry("object_region_task")
def _() -> Call:
    return Call(api("object_region_task"), {
        "n": Count(3), "grid": Count(3), "feature_size": Count(8, 2), "objectness": Real(4.0),
        "separation": Real(2.0), "seed": Count(0, 0)})


@entry("RetrievalTask.accuracy")
def _() -> Call:
    task = api("key_retrieval_task")(3, num_keys=4)
    weights = X("3 4 4")
    weights.value = weights.value.softmax(-1)
    return Call(task.accuracy, {"weights": weights})


# --- training -----------------------------------------------------------------------------------

HYPS = ["a b c", "a b"]
REFS = ["a b c", "a c"]

exempt("a result the training and evaluation functions build; nothing to check",
       "History", "TransformerHistory", "LengthAccuracy", "LengthBLEU", "LengthGroup",
       "Translation", "RunResult")


@entry("accuracy_by_length")
def _() -> Call:
    return Call(api("accuracy_by_length"), {"hypotheses": Seq(HYPS), "references": Seq(REFS),
                                            "lengths": Seq([3, 2], "int", 0),
                                            "bins": Seq([1, 3, 5], "int", 0, optional=True)})


@entry("bleu")
def _() -> Call:
    return Call(api("bleu"), {"hypotheses": Seq(HYPS), "references": Seq(REFS)}, bad=[
        Bad("a-number-for-a-sentence", {"hypotheses": ["a b", 3]}, names=("hypotheses",))])


@entry("bleu_by_length")
def _() -> Call:
    return Call(api("bleu_by_length"), {"hypotheses": Seq(HYPS),
                                         "reference_sets": Seq([[r] for r in REFS], "any"),
                                         "lengths": Seq([3, 2], "int", 0),
                                         "bins": Seq([1, 3, 5], "int", 0, optional=True)})


@entry("bleu_signature")
def _() -> Call:
    return Call(api("bleu_signature"), {})


for _name in ("exact_match",):
    entry(_name)(lambda n=_name: Call(api(n), {"hypotheses": Seq(HYPS),
                                               "references": Seq(REFS)}))
for _name in ("exact_match_any", "multi_reference_bleu"):
    entry(_name)(lambda n=_name: Call(api(n), {"hypotheses": Seq(HYPS),
                                               "reference_sets": Seq([[r] for r in REFS],
                                                                     "any")}))


@entry("length_groups")
def _() -> Call:
    return Call(api("length_groups"), {"lengths": Seq([3, 2], "int", 0),
                                       "bins": Seq([1, 3, 5], "int", 0, optional=True),
                                       "n_items": Count(2, 0)})


@entry("train_seq2seq")
def _() -> Call:
    src_vocab, tgt_vocab = _vocabs()
    config = api("Seq2SeqConfig")(len(src_vocab), len(tgt_vocab), 4, 4, 4)
    model = lambda: seeded(lambda: api("Seq2Seq")(config))  # noqa: E731
    return Call(api("train_seq2seq"), {
        "model": Obj(model, fresh=True), "pairs": Seq(_pairs(), "any"),
        "src_vocab": Obj(src_vocab),
        "tgt_vocab": Obj(tgt_vocab), "epochs": Count(1), "batch_size": Count(4),
        "lr": Positive(3e-3), "clip": Positive(1.0, optional=True), "seed": Count(0, 0),
        "by_length": Flag(False), "lr_schedule": Choice("constant")}, module=True)


@entry("translate")
def _() -> Call:
    src_vocab, tgt_vocab = _vocabs()
    config = api("Seq2SeqConfig")(len(src_vocab), len(tgt_vocab), 4, 4, 4)
    model = seeded(lambda: api("Seq2Seq")(config)).eval()
    return Call(api("translate"), {
        "model": Obj(model), "sentences": Seq([p.src for p in _pairs()[:2]], "any"),
        "src_vocab": Obj(src_vocab), "tgt_vocab": Obj(tgt_vocab),
        "max_len": Count(5, optional=True), "batch_size": Count(2)}, module=True)


@entry("LabelSmoothingLoss")
def _() -> Call:
    def fn(smoothing, ignore_index, reduction, logits, target):  # type: ignore[no-untyped-def]
        return api("LabelSmoothingLoss")(smoothing, ignore_index, reduction)(logits, target)

    return Call(fn, {"smoothing": Prob(0.1), "ignore_index": Count(0, None),
                     "reduction": Choice("mean"), "logits": X("B L V"),
                     "target": I("B L", 12)}, bad=[
        Bad("ignore_index-a-string", {"ignore_index": "pad"}, names=("ignore_index",)),
        Bad("every-target-ignored", {"target": torch.zeros(2, 3, dtype=torch.long)},
            expect="either", names=("target",))])


@entry("noam_lr")
def _() -> Call:
    return Call(api("noam_lr"), {"step": Count(3), "d_model": Count(8), "warmup": Count(4),
                                 "factor": Positive(1.0)})


@entry("noam_schedule")
def _() -> Call:
    return Call(lambda d_model, warmup, factor: api("noam_schedule")(d_model, warmup, factor)(3),
                {"d_model": Count(8), "warmup": Count(4), "factor": Positive(1.0)})


@entry("train_transformer")
def _() -> Call:
    src_vocab, tgt_vocab = _vocabs()
    config = api("TransformerConfig")(len(src_vocab), len(tgt_vocab), d_model=8, num_heads=2,
                                      num_encoder_layers=1, num_decoder_layers=1, d_ff=16,
                                      max_len=16)
    model = lambda: seeded(lambda: api("Transformer")(config))  # noqa: E731
    return Call(api("train_transformer"), {
        "model": Obj(model, fresh=True), "pairs": Seq(_pairs(), "any"),
        "src_vocab": Obj(src_vocab),
        "tgt_vocab": Obj(tgt_vocab), "epochs": Count(1), "batch_size": Count(4),
        "warmup": Count(2), "lr_factor": Positive(1.0), "label_smoothing": Prob(0.1),
        "clip": Positive(1.0, optional=True), "seed": Count(0, 0), "by_length": Flag(False)},
        module=True)


# --- comparison and runs ------------------------------------------------------------------------


@entry("ReferenceBLEU")
def _() -> Call:
    return Call(lambda reference_sets: api("ReferenceBLEU")(reference_sets).bleu(HYPS),
                {"reference_sets": Seq([[r] for r in REFS], "any")}, bad=[
        Bad("reference_sets-of-numbers", {"reference_sets": [[1], [2]]},
            names=("reference_sets",))])


@entry("ReferenceBLEU.bleu")
def _() -> Call:
    scorer = api("ReferenceBLEU")([[r] for r in REFS])
    return Call(scorer.bleu, {"hypotheses": Seq(HYPS)}, bad=[
        Bad("one-hypothesis-too-many", {"hypotheses": [*HYPS, "a"]}, names=("hypotheses",))])


@entry("ReferenceBLEU.bleu_by_length")
def _() -> Call:
    scorer = api("ReferenceBLEU")([[r] for r in REFS])
    return Call(scorer.bleu_by_length, {"hypotheses": Seq(HYPS),
                                        "lengths": Seq([3, 2], "int", 0),
                                        "bins": Seq([1, 3, 5], "int", 0, optional=True)})


@entry("closest_width")
def _() -> Call:
    return Call(api("closest_width"), {"build": Func(lambda w: nn.Linear(w, 1)),
                                       "target": Count(5), "widths": Seq([3, 7], "int", 1)})


@entry("count_parameters")
def _() -> Call:
    return Call(api("count_parameters"), {"model": Obj(nn.Linear(3, 2), any_module=True)})


@entry("tokens_per_second")
def _() -> Call:
    return Call(api("tokens_per_second"), {"pairs": Seq(_pairs(), "any"), "epochs": Count(2),
                                           "seconds": Positive(1.5)})


@entry("training_tokens")
def _() -> Call:
    return Call(api("training_tokens"), {"pairs": Seq(_pairs(), "any")})


@entry("Run")
def _() -> Call:
    return Call(lambda name, config, init_seed, options: api("Run")(
        name, config, init_seed, options).build(), {
        "name": Text("attention"), "config": Obj(_s2s_config()), "init_seed": Count(1, 0),
        "options": Plain({})})


@entry("Run.build")
def _() -> Call:
    return Call(api("Run")("transformer", _tf_config(), 3).build, {})


@entry("default_workers")
def _() -> Call:
    return Call(api("default_workers"), {})


@entry("train_runs")
def _() -> Call:
    src_vocab, tgt_vocab = _vocabs()
    config = api("Seq2SeqConfig")(len(src_vocab), len(tgt_vocab), 4, 4, 4)
    run = api("Run")("attention", config, 1, {"epochs": 1, "batch_size": 4})
    return Call(api("train_runs"), {
        "runs": Seq([run], "any"), "pairs": Seq(_pairs(), "any"), "src_vocab": Obj(src_vocab),
        "tgt_vocab": Obj(tgt_vocab), "sources": Plain([_pairs()[0].src]),
        "workers": Count(1, optional=True)})


# --- complexity ---------------------------------------------------------------------------------


def _layer_call(cls: str, **args: Any) -> Call:
    def fn(x, **kw):  # type: ignore[no-untyped-def]
        return api(cls)(**kw)(x)

    # SelfAttentionLayer has no parameters: any device is its own
    return Call(fn, {**args, "x": X("B L D")}, module=cls != "SelfAttentionLayer")


entry("ConvolutionalLayer")(lambda: _layer_call("ConvolutionalLayer", d=Count(8),
                                                kernel_size=Count(3), dilation=Count(1)))
entry("MultiHeadSelfAttentionLayer")(lambda: _layer_call("MultiHeadSelfAttentionLayer",
                                                         d=Count(8), num_heads=Count(2)))
entry("RecurrentLayer")(lambda: _layer_call("RecurrentLayer", d=Count(8)))
entry("SelfAttentionLayer")(lambda: _layer_call("SelfAttentionLayer"))


@entry("flop_crossover")
def _() -> Call:
    return Call(api("flop_crossover"), {"layer_type": Choice("recurrent"), "d": Count(8),
                                        "kernel_size": Count(3)})


@entry("gradient_norms")
def _() -> Call:
    layer = seeded(lambda: api("SelfAttentionLayer")())
    return Call(api("gradient_norms"), {"layers": Seq([layer, layer], "any"), "x": X("B L D")})


@entry("layer_flops")
def _() -> Call:
    return Call(api("layer_flops"), {"layer_type": Choice("recurrent"), "n": Count(5),
                                     "d": Count(8), "kernel_size": Count(3)})


@entry("layers_to_reach")
def _() -> Call:
    norms = X("N L")
    norms.value = norms.value.abs()
    return Call(api("layers_to_reach"), {"norms": norms, "position": Count(0, -3, 2)})


@entry("make_layer")
def _() -> Call:
    return Call(api("make_layer"), {"layer_type": Choice("convolutional"), "d": Count(8),
                                    "kernel_size": Count(3), "dilation": Count(1),
                                    "num_heads": Count(2)})


@entry("measured_crossover")
def _() -> Call:
    return Call(api("measured_crossover"), {"lengths": Seq([2, 4, 8], "int", 1),
                                            "times_a": Seq([1e-6, 1e-5, 1.0], "float"),
                                            "times_b": Seq([1e-5, 1e-5, 1e-5], "float")}, bad=[
        Bad("a-nan-time", {"times_a": [1e-6, float("nan"), 1.0]}, names=("times_a",))])


@entry("time_layer")
def _() -> Call:
    layer = seeded(lambda: api("SelfAttentionLayer")())
    return Call(api("time_layer"), {"layer": Obj(layer), "x": X("B L D"), "repeats": Count(1),
                                    "clock": Choice("thread"),
                                    "num_threads": Count(1, optional=True)}, compare=False)


# --- offset copy --------------------------------------------------------------------------------


def _offset_model() -> Any:
    return seeded(lambda: api("OffsetCopyModel")(8, 8, 2, embed_dim=8)).eval()


def _offset_data() -> tuple[Any, Any]:
    return api("offset_copy_task")(4)


@entry("OffsetCopyModel")
def _() -> Call:
    def fn(length, num_symbols, num_offsets, embed_dim, num_heads, tokens):  # type: ignore[no-untyped-def]
        return api("OffsetCopyModel")(length, num_symbols, num_offsets, embed_dim,
                                      num_heads)(tokens)

    tokens = I("B 8", 8)
    return Call(fn, {"length": Count(8), "num_symbols": Count(8), "num_offsets": Count(2),
                     "embed_dim": Count(8), "num_heads": Count(2), "tokens": tokens},
                module=True)


@entry("attention_by_offset")
def _() -> Call:
    weights = X("B H 8 8")
    weights.value = weights.value.softmax(-1)
    return Call(api("attention_by_offset"), {"weights": weights})


@entry("fit_offset_copy")
def _() -> Call:
    tokens, targets = _offset_data()
    return Call(api("fit_offset_copy"), {
        "model": Obj(_offset_model, fresh=True), "tokens": Plain(tokens),
        "targets": Plain(targets), "steps": Count(2), "lr": Positive(0.01),
        "batch_size": Count(2), "seed": Count(0, 0)}, module=True)


@entry("offset_accuracy")
def _() -> Call:
    tokens, targets = _offset_data()
    return Call(api("offset_accuracy"), {"model": Obj(_offset_model()),
                                         "tokens": Ids(tokens, "N L", 8),
                                         "targets": Ids(targets, "N L 2", 8)},
                module=True, bad=[Bad("tokens-and-targets-of-different-counts",
                                      {"tokens": tokens[:2]}, names=("tokens", "targets"))])


@entry("offset_copy_task")
def _() -> Call:
    return Call(api("offset_copy_task"), {"n": Count(4), "length": Count(8),
                                          "num_symbols": Count(8),
                                          "offsets": Seq((-1, 1), "int"),
                                          "seed": Count(0, 0)})


# --- extrapolation and long context -------------------------------------------------------------


def _lookback_config(**changes: Any) -> Any:
    return api("LookbackConfig")(**{"d_model": 8, "max_len": 8, **changes})


def _lookback(**changes: Any) -> Any:
    return seeded(lambda: api("LookbackModel")(_lookback_config(**changes))).eval()


@entry("LookbackConfig")
def _() -> Call:
    return Call(api("LookbackConfig"), {
        "encoding": Choice("sinusoidal"), "num_symbols": Count(16), "d_model": Count(8),
        "num_heads": Count(1), "max_len": Count(8), "base": Positive(10000.0)})


@entry("LookbackModel")
def _() -> Call:
    def fn(config, tokens, need_weights):  # type: ignore[no-untyped-def]
        return api("LookbackModel")(config).eval()(tokens, need_weights)

    return Call(fn, {"config": Obj(_lookback_config()), "tokens": I("B 6", 16),
                     "need_weights": Flag(False)}, module=True)


@entry("LookbackModel.scores")
def _() -> Call:
    return Call(_lookback(encoding="rope").scores, {"tokens": I("B 6", 16)}, module=True)


for _name in ("lookback_accuracy", "lookback_accuracy_by_position"):
    entry(_name)(lambda n=_name: Call(api(n), {
        "model": Obj(_lookback()), "length": Count(6), "shift": Count(3), "n": Count(4),
        "seed": Count(0, 0)}, module=True))


@entry("lookback_task")
def _() -> Call:
    return Call(api("lookback_task"), {"n": Count(3), "length": Count(6), "shift": Count(3),
                                       "num_symbols": Count(16), "seed": Count(0, 0)})


@entry("mean_score_by_offset")
def _() -> Call:
    return Call(api("mean_score_by_offset"), {"model": Obj(_lookback(encoding="rope")),
                                              "length": Count(6), "n": Count(4),
                                              "seed": Count(0, 0)}, module=True)


@entry("train_lookback")
def _() -> Call:
    return Call(api("train_lookback"), {
        "model": Obj(lambda: _lookback(), fresh=True), "length": Count(6), "shift": Count(3),
        "steps": Count(2), "batch_size": Count(4), "lr": Positive(0.01), "seed": Count(0, 0)},
        module=True)


# --- cache memory -------------------------------------------------------------------------------


@entry("AttentionShape")
def _() -> Call:
    return Call(lambda **kw: api("AttentionShape")(**kw).cache_bytes(), {
        "name": Text("toy"), "num_layers": Count(2), "num_heads": Count(4),
        "num_kv_heads": Count(2), "head_dim": Count(8), "context": Count(16),
        "window": Count(None, optional=True)})


@entry("AttentionShape.cache_bytes")
def _() -> Call:
    shape = api("AttentionShape")("toy", 2, 4, 2, 8, 16)
    return Call(shape.cache_bytes, {"tokens": Count(None, 0, optional=True), "batch": Count(1),
                                    "bytes_per_number": Count(2), "window": Flag(True)})


@entry("kv_cache_bytes")
def _() -> Call:
    return Call(api("kv_cache_bytes"), {
        "num_layers": Count(2), "num_kv_heads": Count(2), "head_dim": Count(8),
        "tokens": Count(16, 0), "batch": Count(1), "bytes_per_number": Count(2),
        "window": Count(None, optional=True)})


# --- speculative decoding and the LM tasks ------------------------------------------------------

exempt("the result of speculative_decode; nothing to check", "SpeculativeResult")


@entry("speculative_decode")
def _() -> Call:
    return Call(api("speculative_decode"), {
        "model": Obj(_lm()), "draft": Obj(_lm(num_kv_heads=2)), "prompt": I("1 L", 12),
        "steps": Count(3, 0), "k": Count(2)}, module=True, bad=[
        Bad("past-max_len", {"prompt": torch.ones(1, 3, dtype=torch.long), "steps": 10},
            names=("steps", "prompt"))])


@entry("echo_targets")
def _() -> Call:
    return Call(api("echo_targets"), {"tokens": I("B 8", 26), "period": Count(2)})


@entry("echo_text")
def _() -> Call:
    return Call(api("echo_text"), {"n": Count(2), "length": Count(8), "period": Count(2),
                                   "seed": Count(0, 0)})


@entry("to_text")
def _() -> Call:
    return Call(api("to_text"), {"tokens": I("B 8", 26)})


# --- notebook helpers ---------------------------------------------------------------------------


@entry("use_book_style")
def _() -> Call:
    return Call(api("use_book_style"), {})


@entry("heatmap")
def _() -> Call:
    weights = X("L S", any_real=True)
    weights.value = weights.value.softmax(-1)
    return Call(api("heatmap"), {"weights": weights, "title": Text(None, optional=True),
                                 "xticklabels": Plain(None), "colorbar": Flag(True),
                                 "vmin": Real(0.0, optional=True),
                                 "vmax": Real(1.0, optional=True),
                                 "xtick_rotation": Real(90.0)})


@entry("heatmaps")
def _() -> Call:
    return Call(api("heatmaps"), {"matrices": Seq([torch.rand(3, 5), torch.rand(3, 5)], "any"),
                                  "titles": Seq(["a", "b"]), "ncols": Count(None, optional=True),
                                  "share_scale": Flag(True)})


@entry("SourceCode")
def _() -> Call:
    return Call(lambda source, title: repr(api("SourceCode")(source, title)),
                {"source": Text("x = 1"), "title": Text("example")})


@entry("Table")
def _() -> Call:
    return Call(lambda headers, rows: repr(api("Table")(headers, rows)),
                {"headers": Seq(["a", "b"]), "rows": Seq([["1", "2"]], "any")}, bad=[
        Bad("a-row-too-short", {"rows": [["1"]]}, names=("rows",))])


@entry("show_source")
def _() -> Call:
    return Call(api("show_source"), {"obj": Obj(api("causal_mask")),
                                     "docstring": Flag(True)})


@entry("table")
def _() -> Call:
    return Call(api("table"), {"headers": Seq(["a", "b"]), "rows": Seq([[1, 2.5]], "any"),
                               "digits": Count(3, 0)}, bad=[
        Bad("a-row-too-long", {"rows": [[1, 2, 3]]}, names=("rows",))])


@entry("progress")
def _() -> Call:
    return Call(lambda iterable, total, desc: list(api("progress")(iterable, total, desc)),
                {"iterable": Seq([1, 2], "any"), "total": Count(None, 0, optional=True),
                 "desc": Text(None, optional=True)})


@entry("progress_enabled")
def _() -> Call:
    return Call(api("progress_enabled"), {})


@entry("reproducible")
def _() -> Call:
    def fn(seed, num_threads):  # type: ignore[no-untyped-def]
        threads = torch.get_num_threads()
        state = torch.random.get_rng_state()
        try:
            return api("reproducible")(seed, num_threads)
        finally:
            torch.set_num_threads(threads)
            torch.random.set_rng_state(state)

    return Call(fn, {"seed": Count(0, 0), "num_threads": Count(1, optional=True)})


@entry("fix_cpu_kernels")
def _() -> Call:
    def fn(cpuinfo):  # type: ignore[no-untyped-def]
        # the variables spawned workers inherit (tests/test_runs.py starts some later),
        # and the oneDNN switch of this process
        names = ("ATEN_CPU_CAPABILITY", "MKL_CBWR")
        before = {name: os.environ.get(name) for name in names}
        onednn = bool(torch.backends.mkldnn.enabled)
        try:
            return api("fix_cpu_kernels")(cpuinfo)
        finally:
            api("set_onednn")(onednn)
            for name, value in before.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value

    return Call(fn, {"cpuinfo": Text("/proc/cpuinfo")})


@entry("mkl_branch_taken")
def _() -> Call:
    return Call(api("mkl_branch_taken"), {"vendor": Text("AuthenticAMD"),
                                          "requested": Choice("AVX2")})


exempt("the code paths fix_cpu_kernels reports (a dataclass it builds); nothing to check",
       "CodePath")


@entry("set_onednn")
def _() -> Call:
    def fn(enabled):  # type: ignore[no-untyped-def]
        before = bool(torch.backends.mkldnn.enabled)
        try:
            return api("set_onednn")(enabled)
        finally:
            api("set_onednn")(before)

    return Call(fn, {"enabled": Flag(True)})

