"""Bad input across attnlib, in one catalogue, and a sweep for NaN over its public functions.

Issue 8 asks two things of the library:

1. **Every bad input gets a useful error.** :data:`CATALOGUE` holds one record per distinct
   mistake (a wrong rank, two tensors that disagree, a wrong dtype, a non-tensor, a
   probability outside [0, 1), a head count that does not divide, a negative length, a mask of
   the wrong shape, lengths longer than the sequence, an id outside the vocabulary, ...), over
   every module. Each record says what the message must show the reader: the argument's name,
   what it got and what it expected. The fragments are written from what a reader needs, not
   copied from the messages; where a message lacked one, the message was improved.
2. **No public function returns NaN for finite input.** :data:`SWEEP` calls every public
   function and module that computes numbers on finite but hard input: logits of 1e4 and
   -1e4, a query whose keys are all masked out, a sequence fully padded, sequences of length
   1, float32 and float64. Each case states its outcome: every number finite, or (where minus
   infinity is the defined answer, as the log of a zero kernel) no NaN, or a ``ValueError``
   whose message names the cause. A case that still gave NaN would be a strict ``xfail`` with
   its reason (``known_nan``), failing loudly once fixed; none is left.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import Tensor, nn

import attnlib
from attnlib import data
from attnlib.blocks import alibi as al
from attnlib.blocks import attention as at
from attnlib.blocks import delta_rule as dr
from attnlib.blocks import efficient as ef
from attnlib.blocks import gated_attention as ga
from attnlib.blocks import latent_attention as mla
from attnlib.blocks import linear_attention as la
from attnlib.blocks import masking as mk
from attnlib.blocks import multihead as mh
from attnlib.blocks import positional as pe
from attnlib.blocks import rope_scaling as rs
from attnlib.blocks import scoring as sc
from attnlib.book import plot
from attnlib.experiments import cache_memory as cm
from attnlib.experiments import complexity as cx
from attnlib.experiments import extrapolation as ex
from attnlib.experiments import lm_tasks
from attnlib.experiments import long_context as lc
from attnlib.experiments import memory_wall as mw
from attnlib.experiments import offset_copy as oc
from attnlib.experiments import recall as rc
from attnlib.experiments import sinks as sk
from attnlib.models import decoder_lm as dlm
from attnlib.models import kernel_regression as kr
from attnlib.models import mixer_lm as mx
from attnlib.models import paged_cache as pc
from attnlib.models import quantized_cache as qc
from attnlib.models import seq2seq as s2s
from attnlib.models import transformer as tf
from attnlib.train import decoding as dec
from attnlib.train import metrics, recipe, seq2seq_loop, transformer_loop, translation
from attnlib.train import speculative as sp

F32, F64 = torch.float32, torch.float64

# Deterministic in CI: the same examples on every run.
PROPERTY = settings(deadline=None, max_examples=25, derandomize=True)


@pytest.fixture(autouse=True)
def one_thread() -> Iterator[None]:
    """The tensors are tiny: a second thread only adds synchronisation."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# ---------------------------------------------------------------------------------------------
# Small inputs and models, built inside the calls so that collecting the tests stays cheap
# ---------------------------------------------------------------------------------------------


def _ones(*shape: int, dtype: torch.dtype = F32) -> Tensor:
    return torch.ones(shape, dtype=dtype)


def _ids(*rows: list[int]) -> Tensor:
    return torch.tensor(rows, dtype=torch.long)


def _seeded(build: Callable[[], nn.Module]) -> nn.Module:
    """``build()`` under seed 0, leaving the global random state as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return build()


TINY = {"src_vocab_size": 10, "tgt_vocab_size": 12, "d_model": 8, "num_heads": 2,
        "num_encoder_layers": 1, "num_decoder_layers": 1, "d_ff": 16, "dropout": 0.0,
        "max_len": 8}


def _transformer(dtype: torch.dtype = F32) -> tf.Transformer:
    model = _seeded(lambda: tf.Transformer(tf.TransformerConfig(**TINY), dtype=dtype))
    assert isinstance(model, tf.Transformer)
    return model.eval()


def _seq2seq(use_attention: bool = True, fixed_context: Any = "final") -> s2s.Seq2Seq:
    config = s2s.Seq2SeqConfig(10, 12, embed_dim=4, hidden_size=4, attention_size=4,
                               use_attention=use_attention, fixed_context=fixed_context)
    model = _seeded(lambda: s2s.Seq2Seq(config))
    assert isinstance(model, s2s.Seq2Seq)
    return model.eval()


def _mha(dtype: torch.dtype = F32) -> mh.MultiHeadAttention:
    model = _seeded(lambda: mh.MultiHeadAttention(8, 2, dtype=dtype))
    assert isinstance(model, mh.MultiHeadAttention)
    return model


def _lm(**changes: Any) -> dlm.DecoderLM:
    config = dlm.DecoderLMConfig(**{"vocab_size": 4, "d_model": 8, "num_heads": 2,
                                    "num_kv_heads": 2, "num_layers": 1, "d_ff": 8,
                                    "max_len": 16, **changes})
    model = _seeded(lambda: dlm.DecoderLM(config))
    assert isinstance(model, dlm.DecoderLM)
    return model.eval()


def _vocab() -> data.Vocab:
    return data.Vocab((*data.SPECIALS, "a"))


def _sentence(subject: str, verb: str, obj: str, **parts: Any) -> data.Sentence:
    return data.Sentence(data.Clause(data.NounPhrase(subject), verb, data.NounPhrase(obj),
                                     **parts))


def _note_pair() -> data.Pair:
    return data.realize(data.NOTE_EXAMPLE)  # 我 爱 机器学习 -> i love machine learning


# ---------------------------------------------------------------------------------------------
# 1. The catalogue of bad inputs
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BadInput:
    """One distinct mistake and what its error must tell the reader.

    ``function`` is the public function or class that receives the bad input; its module is
    the one this record covers. The message must contain ``argument`` (the argument's name),
    ``got`` (what the caller passed: the bad shape, dtype or value) and ``expected`` (what the
    function wants), each as a plain substring.
    """

    id: str
    function: object
    call: Callable[[], object]
    error: type[Exception]
    argument: str
    got: str
    expected: str

    @property
    def module(self) -> str:
        return str(getattr(self.function, "__module__", ""))


V, T = ValueError, TypeError  # short names keep each record to a few lines

CATALOGUE: list[BadInput] = [
    # --- kernel_regression ------------------------------------------------------------------
    BadInput("kernel_scores:bandwidth-zero", kr.kernel_scores,
         lambda: kr.kernel_scores(_ones(3), _ones(4), bandwidth=0.0),
         V, "bandwidth", "got 0.0", "finite and > 0"),
    BadInput("kernel_scores:bandwidth-underflows-float32", kr.kernel_scores,
         lambda: kr.kernel_scores(_ones(3), _ones(4), bandwidth=1e-50),
         V, "bandwidth", "1e-50", "> 0 in torch.float32"),
    BadInput("kernel_scores:bandwidth-not-a-number", kr.kernel_scores,
         lambda: kr.kernel_scores(_ones(3), _ones(4), bandwidth="wide"),
         T, "bandwidth", "str", "a number"),
    BadInput("kernel_scores:unknown-kernel", kr.kernel_scores,
         lambda: kr.kernel_scores(_ones(3), _ones(4), kernel="cosine"),
         V, "kernel", "'cosine'", "'gaussian', 'boxcar', 'epanechnikov'"),
    BadInput("kernel_scores:feature-size-mismatch", kr.kernel_scores,
         lambda: kr.kernel_scores(_ones(3, 2), _ones(4, 3)),
         V, "keys", "(4, 3)", "same feature size E"),
    BadInput("kernel_scores:rank-mismatch", kr.kernel_scores,
         lambda: kr.kernel_scores(_ones(3), _ones(4, 2)),
         V, "keys", "(4, 2)", "same number of dimensions"),
    BadInput("kernel_scores:scalar-queries", kr.kernel_scores,
         lambda: kr.kernel_scores(torch.tensor(1.0), _ones(4)),
         V, "queries", "shape ()", "(N,), (N, E) or (B, N, E)"),
    BadInput("kernel_scores:integer-keys", kr.kernel_scores,
         lambda: kr.kernel_scores(_ones(3), torch.ones(4, dtype=torch.long)),
         T, "keys", "torch.int64", "floating-point"),
    BadInput("nadaraya_watson:values-count", kr.nadaraya_watson,
         lambda: kr.nadaraya_watson(_ones(3), _ones(4), _ones(5)),
         V, "values", "(5)", "same number of points S"),
    BadInput("nadaraya_watson:integer-mask", kr.nadaraya_watson,
         lambda: kr.nadaraya_watson(_ones(3), _ones(4), _ones(4),
                                    attn_mask=torch.ones(3, 4, dtype=torch.long)),
         T, "attn_mask", "torch.int64", "boolean tensor"),
    BadInput("nadaraya_watson:mask-shape", kr.nadaraya_watson,
         lambda: kr.nadaraya_watson(_ones(3), _ones(4), _ones(4),
                                    attn_mask=torch.ones(2, 2, dtype=torch.bool)),
         V, "attn_mask", "(2, 2)", "(3, 4)"),
    BadInput("nadaraya_watson:compact-kernel-bandwidth-too-small", kr.nadaraya_watson,
         lambda: kr.nadaraya_watson(torch.tensor([0.5]), torch.tensor([0.0, 1.0]),
                                    torch.tensor([0.0, 1.0]), bandwidth=0.1, kernel="boxcar"),
         V, "bandwidth", "bandwidth=0.1", "larger bandwidth"),
    BadInput("NadarayaWatson:negative-bandwidth", kr.NadarayaWatson,
         lambda: kr.NadarayaWatson(bandwidth=-1.0),
         V, "bandwidth", "-1.0", "finite and > 0"),
    BadInput("leave_one_out_mask:one-point", kr.leave_one_out_mask,
         lambda: kr.leave_one_out_mask(1),
         V, "n", "got 1", "at least 2"),
    BadInput("leave_one_out_mask:float-n", kr.leave_one_out_mask,
         lambda: kr.leave_one_out_mask(2.5),
         T, "n", "float", "an int"),
    BadInput("make_regression_data:negative-noise", kr.make_regression_data,
         lambda: kr.make_regression_data(noise=-0.5),
         V, "noise", "-0.5", ">= 0"),
    BadInput("fit_bandwidth:zero-steps", kr.fit_bandwidth,
         lambda: kr.fit_bandwidth(kr.NadarayaWatson(), _ones(4), _ones(4), steps=0),
         V, "steps", "got 0", ">= 1"),
    # --- masking ----------------------------------------------------------------------------
    BadInput("lengths_to_mask:float-lengths", mk.lengths_to_mask,
         lambda: mk.lengths_to_mask(torch.tensor([1.0, 2.0]), 3),
         T, "lengths", "torch.float32", "integer dtype"),
    BadInput("lengths_to_mask:longer-than-max_len", mk.lengths_to_mask,
         lambda: mk.lengths_to_mask(torch.tensor([2, 5]), 3),
         V, "lengths", "length of 5", "<= max_len = 3"),
    BadInput("lengths_to_mask:negative-length", mk.lengths_to_mask,
         lambda: mk.lengths_to_mask(torch.tensor([-1, 2]), 3),
         V, "lengths", "-1", ">= 0"),
    BadInput("lengths_to_mask:2d-lengths", mk.lengths_to_mask,
         lambda: mk.lengths_to_mask(torch.ones(2, 2, dtype=torch.long), 3),
         V, "lengths", "(2, 2)", "1 dimension (B,)"),
    BadInput("lengths_to_mask:negative-max_len", mk.lengths_to_mask,
         lambda: mk.lengths_to_mask(torch.tensor([0]), -1),
         V, "max_len", "-1", ">= 0"),
    BadInput("padding_mask:list-lengths", mk.padding_mask,
         lambda: mk.padding_mask([1, 2], 3),
         T, "lengths", "list", "torch.Tensor"),
    BadInput("causal_mask:float-L", mk.causal_mask,
         lambda: mk.causal_mask(2.5),
         T, "L", "float", "an int"),
    BadInput("causal_mask:negative-S", mk.causal_mask,
         lambda: mk.causal_mask(3, -2),
         V, "S", "-2", ">= 0"),
    BadInput("masked_softmax:integer-scores", mk.masked_softmax,
         lambda: mk.masked_softmax(torch.ones(2, 3, dtype=torch.long)),
         T, "scores", "torch.int64", "floating-point"),
    BadInput("masked_softmax:mask-shape", mk.masked_softmax,
         lambda: mk.masked_softmax(_ones(2, 3, 5), torch.ones(3, 4, dtype=torch.bool)),
         V, "mask", "(3, 4)", "(2, 3, 5)"),
    BadInput("masked_softmax:float-mask-of-other-dtype", mk.masked_softmax,
         lambda: mk.masked_softmax(_ones(2, 3), torch.zeros(2, 3, dtype=F64)),
         T, "mask", "torch.float64", "the scores' dtype"),
    BadInput("masked_softmax:integer-mask", mk.masked_softmax,
         lambda: mk.masked_softmax(_ones(2, 3), torch.ones(2, 3, dtype=torch.long)),
         T, "mask", "torch.int64", "bool tensor"),
    BadInput("masked_softmax:dim-out-of-range", mk.masked_softmax,
         lambda: mk.masked_softmax(_ones(2, 3), dim=2),
         V, "dim", "got 2", "a dimension of scores of shape (2, 3)"),
    BadInput("softmax_with_temperature:zero-temperature", mk.softmax_with_temperature,
         lambda: mk.softmax_with_temperature(_ones(2, 3), 0.0),
         V, "temperature", "got 0.0", "finite and > 0"),
    BadInput("float_mask:float-mask", mk.float_mask,
         lambda: mk.float_mask(_ones(2, 3)),
         T, "mask", "torch.float32", "bool tensor"),
    BadInput("float_mask:integer-dtype", mk.float_mask,
         lambda: mk.float_mask(torch.ones(2, 3, dtype=torch.bool), dtype=torch.long),
         T, "dtype", "torch.int64", "floating-point"),
    # --- attention --------------------------------------------------------------------------
    BadInput("sdpa:1d-query", at.scaled_dot_product_attention,
         lambda: at.scaled_dot_product_attention(_ones(4), _ones(5, 4), _ones(5, 4)),
         V, "query", "(4)", "at least 2 dimensions (..., L, E)"),
    BadInput("sdpa:key-of-other-dtype", at.scaled_dot_product_attention,
         lambda: at.scaled_dot_product_attention(_ones(3, 4), _ones(5, 4, dtype=F64),
                                                 _ones(5, 4)),
         T, "key", "torch.float64", "query's dtype torch.float32"),
    BadInput("sdpa:E-mismatch", at.scaled_dot_product_attention,
         lambda: at.scaled_dot_product_attention(_ones(2, 3, 4), _ones(2, 5, 3),
                                                 _ones(2, 5, 3)),
         V, "key", "(2, 5, 3)", "same size E"),
    BadInput("sdpa:S-mismatch", at.scaled_dot_product_attention,
         lambda: at.scaled_dot_product_attention(_ones(2, 3, 4), _ones(2, 5, 4),
                                                 _ones(2, 6, 4)),
         V, "value", "(2, 6, 4)", "same length S"),
    BadInput("sdpa:batch-does-not-broadcast", at.scaled_dot_product_attention,
         lambda: at.scaled_dot_product_attention(_ones(2, 3, 4), _ones(3, 5, 4),
                                                 _ones(3, 5, 4)),
         V, "query", "(2, 3, 4)", "must broadcast"),
    BadInput("sdpa:mask-and-is_causal", at.scaled_dot_product_attention,
         lambda: at.scaled_dot_product_attention(
             _ones(3, 4), _ones(3, 4), _ones(3, 4), torch.ones(3, 3, dtype=torch.bool),
             is_causal=True),
         V, "is_causal", "is_causal=True", "causal_mask(L, S) & attn_mask"),
    BadInput("sdpa:dropout_p-one", at.scaled_dot_product_attention,
         lambda: at.scaled_dot_product_attention(_ones(3, 4), _ones(3, 4), _ones(3, 4),
                                                 dropout_p=1.0),
         V, "dropout_p", "1.0", "in [0, 1)"),
    BadInput("sdpa:dropout_p-string", at.scaled_dot_product_attention,
         lambda: at.scaled_dot_product_attention(_ones(3, 4), _ones(3, 4), _ones(3, 4),
                                                 dropout_p="0.1"),
         T, "dropout_p", "str", "a float"),
    BadInput("sdpa:negative-scale", at.scaled_dot_product_attention,
         lambda: at.scaled_dot_product_attention(_ones(3, 4), _ones(3, 4), _ones(3, 4),
                                                 scale=-1.0),
         V, "scale", "-1.0", "finite and > 0"),
    BadInput("sdpa:mask-shape", at.scaled_dot_product_attention,
         lambda: at.scaled_dot_product_attention(_ones(2, 3, 4), _ones(2, 5, 4), _ones(2, 5, 4),
                                                 torch.ones(3, 4, dtype=torch.bool)),
         V, "attn_mask", "(3, 4)", "(..., L, S) (2, 3, 5)"),
    BadInput("sdpa:is_causal-int", at.scaled_dot_product_attention,
         lambda: at.scaled_dot_product_attention(_ones(3, 4), _ones(3, 4), _ones(3, 4),
                                                 is_causal=1),
         T, "is_causal", "int", "a bool"),
    # --- scoring ----------------------------------------------------------------------------
    BadInput("DotScore:E-mismatch", sc.DotScore,
         lambda: sc.DotScore()(_ones(2, 3, 4), _ones(2, 5, 3)),
         V, "key", "(2, 5, 3)", "same size E"),
    BadInput("ScaledDotScore:2d-query", sc.ScaledDotScore,
         lambda: sc.ScaledDotScore()(_ones(3, 4), _ones(2, 5, 4)),
         V, "query", "(3, 4)", "3 dimensions (B, L, Eq)"),
    BadInput("AdditiveScore:query-size", sc.AdditiveScore,
         lambda: sc.AdditiveScore(4, 6, 8)(_ones(2, 3, 5), _ones(2, 5, 6)),
         V, "query", "(2, 3, 5)", "Eq = 4"),
    BadInput("AdditiveScore:zero-hidden-size", sc.AdditiveScore,
         lambda: sc.AdditiveScore(4, 6, 0),
         V, "hidden_size", "got 0", ">= 1"),
    BadInput("BilinearScore:batch-mismatch", sc.BilinearScore,
         lambda: sc.BilinearScore(4, 6)(_ones(2, 3, 4), _ones(3, 5, 6)),
         V, "key", "(3, 5, 6)", "same batch size B"),
    BadInput("DotScore:dtype-mismatch", sc.DotScore,
         lambda: sc.DotScore()(_ones(2, 3, 4), _ones(2, 5, 4, dtype=F64)),
         T, "key", "torch.float64", "same dtype"),
    BadInput("KeyValueAttention:dropout-above-one", sc.KeyValueAttention,
         lambda: sc.KeyValueAttention(sc.DotScore(), dropout=1.5),
         V, "dropout", "1.5", "in [0, 1)"),
    BadInput("KeyValueAttention:dropout-string", sc.KeyValueAttention,
         lambda: sc.KeyValueAttention(sc.DotScore(), dropout="0.1"),
         T, "dropout", "str", "a float"),
    BadInput("KeyValueAttention:score-not-a-module", sc.KeyValueAttention,
         lambda: sc.KeyValueAttention(torch.matmul),
         T, "score", "builtin_function_or_method", "nn.Module"),
    BadInput("KeyValueAttention:float-mask", sc.KeyValueAttention,
         lambda: sc.KeyValueAttention(sc.DotScore())(_ones(2, 3, 4), _ones(2, 5, 4),
                                                     _ones(2, 5, 4), _ones(2, 3, 5)),
         T, "mask", "torch.float32", "bool tensor"),
    BadInput("KeyValueAttention:key-value-length", sc.KeyValueAttention,
         lambda: sc.KeyValueAttention(sc.DotScore())(_ones(2, 3, 4), _ones(2, 5, 4),
                                                     _ones(2, 6, 3)),
         V, "value", "(2, 6, 3)", "agree in B and S"),
    BadInput("hard_attention:S-mismatch", sc.hard_attention,
         lambda: sc.hard_attention(_ones(2, 3, 5), _ones(2, 4, 6)),
         V, "value", "(2, 4, 6)", "agree in B and S"),
    BadInput("hard_attention:integer-value", sc.hard_attention,
         lambda: sc.hard_attention(_ones(2, 3, 5), torch.ones(2, 5, 6, dtype=torch.long)),
         T, "value", "torch.int64", "floating-point"),
    BadInput("AttentionPooling:input-size", sc.AttentionPooling,
         lambda: sc.AttentionPooling(4)(_ones(2, 3, 5)),
         V, "inputs", "(2, 3, 5)", "E = input_size = 4"),
    BadInput("AttentionPooling:mask-shape", sc.AttentionPooling,
         lambda: sc.AttentionPooling(4)(_ones(2, 3, 4), torch.ones(2, 1, 3, dtype=torch.bool)),
         V, "mask", "(2, 1, 3)", "(B, S) = (2, 3)"),
    BadInput("AttentionPooling:inputs-dtype", sc.AttentionPooling,
         lambda: sc.AttentionPooling(4)(_ones(2, 3, 4, dtype=F64)),
         T, "inputs", "torch.float64", "dtype of the learnable query, torch.float32"),
    # --- multihead --------------------------------------------------------------------------
    BadInput("MultiHeadAttention:heads-do-not-divide", mh.MultiHeadAttention,
         lambda: mh.MultiHeadAttention(10, 3),
         V, "num_heads", "num_heads = 3", "divisible by num_heads"),
    BadInput("MultiHeadAttention:zero-heads", mh.MultiHeadAttention,
         lambda: mh.MultiHeadAttention(8, 0),
         V, "num_heads", "got 0", ">= 1"),
    BadInput("MultiHeadAttention:negative-dropout", mh.MultiHeadAttention,
         lambda: mh.MultiHeadAttention(8, 2, dropout=-0.1),
         V, "dropout", "-0.1", "in [0, 1)"),
    BadInput("MultiHeadAttention:query-size", mh.MultiHeadAttention,
         lambda: _mha()(_ones(2, 3, 6), _ones(2, 5, 8), _ones(2, 5, 8)),
         V, "query", "(2, 3, 6)", "embed_dim = 8"),
    BadInput("MultiHeadAttention:key_padding_mask-shape", mh.MultiHeadAttention,
         lambda: _mha()(_ones(2, 3, 8), _ones(2, 5, 8), _ones(2, 5, 8),
                        key_padding_mask=torch.ones(2, 4, dtype=torch.bool)),
         V, "key_padding_mask", "(2, 4)", "(B, S) = (2, 5)"),
    BadInput("MultiHeadAttention:float-key_padding_mask", mh.MultiHeadAttention,
         lambda: _mha()(_ones(2, 3, 8), _ones(2, 5, 8), _ones(2, 5, 8),
                        key_padding_mask=_ones(2, 5)),
         T, "key_padding_mask", "torch.float32", "bool tensor"),
    BadInput("MultiHeadAttention:input-dtype", mh.MultiHeadAttention,
         lambda: _mha()(_ones(2, 3, 8, dtype=F64), _ones(2, 5, 8, dtype=F64),
                        _ones(2, 5, 8, dtype=F64)),
         T, "query", "torch.float64", "the parameters' dtype torch.float32"),
    BadInput("MultiHeadAttention:key-value-length", mh.MultiHeadAttention,
         lambda: _mha()(_ones(2, 3, 8), _ones(2, 5, 8), _ones(2, 4, 8)),
         V, "value", "(2, 4, 8)", "same length S"),
    BadInput("MultiHeadAttention:batch-mismatch", mh.MultiHeadAttention,
         lambda: _mha()(_ones(2, 3, 8), _ones(3, 5, 8), _ones(3, 5, 8)),
         V, "key", "(3, 5, 8)", "same batch size B"),
    BadInput("MultiHeadAttention:5d-attn_mask", mh.MultiHeadAttention,
         lambda: _mha()(_ones(2, 3, 8), _ones(2, 5, 8), _ones(2, 5, 8),
                        attn_mask=torch.ones(1, 1, 1, 3, 5, dtype=torch.bool)),
         V, "attn_mask", "(1, 1, 1, 3, 5)", "2, 3 or 4 dimensions"),
    BadInput("MultiHeadAttention:need_weights-string", mh.MultiHeadAttention,
         lambda: _mha()(_ones(2, 3, 8), _ones(2, 5, 8), _ones(2, 5, 8),
                        need_weights="yes"),
         T, "need_weights", "str", "a bool"),
    BadInput("split_heads:heads-do-not-divide", mh.split_heads,
         lambda: mh.split_heads(_ones(2, 3, 8), 3),
         V, "num_heads", "num_heads = 3", "divisible by num_heads"),
    BadInput("merge_heads:3d-input", mh.merge_heads,
         lambda: mh.merge_heads(_ones(2, 3, 4)),
         V, "x", "(2, 3, 4)", "4 dimensions (B, H, L, E)"),
    BadInput("parameter_count:zero-kdim", mh.parameter_count,
         lambda: mh.parameter_count(8, 2, kdim=0),
         V, "kdim", "got 0", ">= 1"),
    BadInput("copy_from_torch:other-head-count", mh.copy_from_torch,
         lambda: mh.copy_from_torch(_mha(), _seeded(lambda: nn.MultiheadAttention(8, 4))),
         V, "ref", "ref has num_heads = 4", "mha has num_heads = 2"),
    # --- positional -------------------------------------------------------------------------
    BadInput("sinusoidal_encoding:odd-d_model", pe.sinusoidal_encoding,
         lambda: pe.sinusoidal_encoding(10, 7),
         V, "d_model", "d_model = 7", "even"),
    BadInput("sinusoidal_encoding:negative-max_len", pe.sinusoidal_encoding,
         lambda: pe.sinusoidal_encoding(-1, 8),
         V, "max_len", "-1", ">= 0"),
    BadInput("relative_shift_matrix:float-k", pe.relative_shift_matrix,
         lambda: pe.relative_shift_matrix(1.5, 8),
         T, "k", "float", "an int"),
    BadInput("SinusoidalPositionalEncoding:feature-size", pe.SinusoidalPositionalEncoding,
         lambda: pe.SinusoidalPositionalEncoding(8)(_ones(2, 3, 6)),
         V, "x", "(2, 3, 6)", "D = d_model = 8"),
    BadInput("SinusoidalPositionalEncoding:negative-offset", pe.SinusoidalPositionalEncoding,
         lambda: pe.SinusoidalPositionalEncoding(8)(_ones(2, 3, 8), offset=-1),
         V, "offset", "-1", ">= 0"),
    BadInput("LearnedPositionalEmbedding:past-the-table", pe.LearnedPositionalEmbedding,
         lambda: pe.LearnedPositionalEmbedding(8, 4)(_ones(1, 4, 4), offset=5),
         V, "offset", "offset = 5", "max_len = 8"),
    BadInput("RotaryPositionalEmbedding:odd-head_dim", pe.RotaryPositionalEmbedding,
         lambda: pe.RotaryPositionalEmbedding(5),
         V, "head_dim", "head_dim = 5", "even"),
    BadInput("RotaryPositionalEmbedding:feature-size", pe.RotaryPositionalEmbedding,
         lambda: pe.RotaryPositionalEmbedding(8)(_ones(2, 3, 6)),
         V, "x", "(2, 3, 6)", "head_dim = 8"),
    BadInput("RotaryPositionalEmbedding:2d-x", pe.RotaryPositionalEmbedding,
         lambda: pe.RotaryPositionalEmbedding(4)(_ones(3, 4)),
         V, "x", "(3, 4)", "3 or 4 dimensions"),
    BadInput("RotaryPositionalEmbedding:float-positions", pe.RotaryPositionalEmbedding,
         lambda: pe.RotaryPositionalEmbedding(4)(_ones(2, 3, 4), positions=_ones(3)),
         T, "positions", "torch.float32", "integer dtype"),
    BadInput("RotaryPositionalEmbedding:positions-shape", pe.RotaryPositionalEmbedding,
         lambda: pe.RotaryPositionalEmbedding(4)(_ones(2, 3, 4), positions=torch.arange(5)),
         V, "positions", "got shape (5)", "(L,) = (3,) or (B, L) = (2, 3)"),
    BadInput("RotaryPositionalEmbedding:positions-and-offset", pe.RotaryPositionalEmbedding,
         lambda: pe.RotaryPositionalEmbedding(4)(_ones(2, 3, 4), positions=torch.arange(3),
                                                 offset=2),
         V, "offset", "offset = 2", "either positions or offset"),
    # --- data -------------------------------------------------------------------------------
    BadInput("Vocab.decode:id-outside", data.Vocab,
         lambda: _vocab().decode([1, 9]),
         V, "ids[1]", "id 9", "[0, 5)"),
    BadInput("Vocab.decode:2d-ids", data.Vocab,
         lambda: _vocab().decode(torch.ones(2, 2, dtype=torch.long)),
         V, "ids", "(2, 2)", "1-D (L,)"),
    BadInput("Vocab:no-specials", data.Vocab,
         lambda: data.Vocab(("a", "b")),
         V, "itos", "('a', 'b')", "must start with ('<pad>', '<bos>', '<eos>', '<unk>')"),
    BadInput("Vocab:duplicate-token", data.Vocab,
         lambda: data.Vocab((*data.SPECIALS, "a", "a")),
         V, "itos", "['a']", "every token once"),
    BadInput("Vocab.build:special-token-in-text", data.Vocab,
         lambda: data.Vocab.build([["<pad>", "x"]]),
         V, "sentences", "['<pad>']", "must not contain the special tokens"),
    BadInput("pad_batch:empty-sequence", data.pad_batch,
         lambda: data.pad_batch([[1], []]),
         V, "sequences[1]", "is empty", "at least one id"),
    BadInput("generate_pairs:zero-pairs", data.generate_pairs,
         lambda: data.generate_pairs(0),
         V, "n_pairs", "got 0", ">= 1 and <= 100000"),
    BadInput("split:fraction-above-one", data.split,
         lambda: data.split([], valid_frac=1.5),
         V, "valid_frac", "1.5", "in [0, 1)"),
    BadInput("split:fractions-sum-to-one", data.split,
         lambda: data.split([], 0, 0.5, 0.6),
         V, "test_frac", "0.5 + 0.6", "< 1"),
    BadInput("split:no-pairs", data.split,
         lambda: data.split([]),
         V, "pairs", "is empty", "at least one pair"),
    BadInput("realize:object-the-verb-does-not-take", data.realize,
         lambda: data.realize(_sentence("我", "吃", "数学")),
         V, "sentence.first.object", "'数学'", "an object of verb '吃' (a food)"),
    BadInput("realize:future-with-a-past-time-word", data.realize,
         lambda: data.realize(_sentence("我", "爱", "音乐", tense="future", time="昨天")),
         V, "sentence.first.tense", "'future'", "allowed: past"),
    BadInput("realize:unknown-subject", data.realize,
         lambda: data.realize(_sentence("它", "爱", "音乐")),
         V, "sentence.first.subject.head", "'它'", "a pronoun, a person or a thing"),
    BadInput("realize:dou-with-singular-subject", data.realize,
         lambda: data.realize(_sentence("我", "爱", "音乐", dou=True)),
         V, "dou", "subject '我'", "a plural pronoun subject"),
    BadInput("batches:zero-batch_size", data.batches,
         lambda: list(data.batches([_note_pair()], _vocab(), _vocab(), 0)),
         V, "batch_size", "got 0", ">= 1"),
    BadInput("batches:sentence-longer-than-max_len", data.batches,
         lambda: list(data.batches([_note_pair()], _vocab(), _vocab(), 1, max_len=4)),
         V, "max_len", "length 4 + 1", "max_len=4"),
    BadInput("batches:empty-sentence", data.batches,
         lambda: list(data.batches([data.Pair((), ("a",), data.NOTE_EXAMPLE, ())],
                                   _vocab(), _vocab(), 1)),
         V, "pairs[0].src", "empty sentence", "at least one token"),
    BadInput("key_retrieval_task:mapping-shape", data.key_retrieval_task,
         lambda: data.key_retrieval_task(2, mapping=torch.eye(3, 4, dtype=F64)),
         V, "mapping", "(3, 4)", "Ek = key_size = 8"),
    BadInput("key_retrieval_task:integer-mapping", data.key_retrieval_task,
         lambda: data.key_retrieval_task(2, mapping=torch.ones(8, 8, dtype=torch.long)),
         T, "mapping", "torch.int64", "floating-point tensor"),
    BadInput("key_retrieval_task:negative-noise", data.key_retrieval_task,
         lambda: data.key_retrieval_task(2, noise=-1.0),
         V, "noise", "-1.0", "finite and >= 0"),
    BadInput("object_region_task:one-feature", data.object_region_task,
         lambda: data.object_region_task(2, feature_size=1),
         V, "feature_size", "got 1", ">= 2"),
    BadInput("object_region_task:nan-objectness", data.object_region_task,
         lambda: data.object_region_task(2, objectness=float("nan")),
         V, "objectness", "got nan", "finite number"),
    BadInput("copy_task:no-symbols", data.copy_task,
         lambda: data.copy_task(4, num_symbols=0),
         V, "num_symbols", "got 0", ">= 1"),
    BadInput("RetrievalTask.accuracy:weights-shape", data.RetrievalTask,
         lambda: data.key_retrieval_task(2, num_keys=3).accuracy(torch.zeros(2, 3, 4)),
         V, "weights", "(2, 3, 4)", "(n, S, S) = (2, 3, 3)"),
    # --- seq2seq ----------------------------------------------------------------------------
    BadInput("Seq2SeqConfig:one-word-vocabulary", s2s.Seq2SeqConfig,
         lambda: s2s.Seq2SeqConfig(1, 12),
         V, "src_vocab_size", "got 1", ">= 2"),
    BadInput("Seq2Seq:config-not-a-config", s2s.Seq2Seq,
         lambda: s2s.Seq2Seq("small"),
         T, "config", "str", "Seq2SeqConfig"),
    BadInput("check_source:float-ids", s2s.check_source,
         lambda: s2s.check_source(_ones(2, 3), torch.tensor([3, 3]), 10),
         T, "src", "torch.float32", "integer ids"),
    BadInput("check_source:length-longer-than-S", s2s.check_source,
         lambda: s2s.check_source(_ids([1, 2, 3], [1, 2, 3]), torch.tensor([3, 5]), 10),
         V, "src_lengths", "length 5", "S = 3"),
    BadInput("check_source:empty-sentence", s2s.check_source,
         lambda: s2s.check_source(_ids([1, 2, 3], [1, 2, 3]), torch.tensor([3, 0]), 10),
         V, "src_lengths[1]", "= 0", "at least one token"),
    BadInput("check_source:id-outside-vocabulary", s2s.check_source,
         lambda: s2s.check_source(_ids([1, 2, 12]), torch.tensor([3]), 10),
         V, "src", "id 12", "[0, 10)"),
    BadInput("check_source:lengths-shape", s2s.check_source,
         lambda: s2s.check_source(_ids([1, 2, 3], [1, 2, 3]), torch.tensor([3, 3, 3]), 10),
         V, "src_lengths", "got shape (3)", "(B,) = (2,)"),
    BadInput("check_source:longer-than-max_src_len", s2s.check_source,
         lambda: s2s.check_source(_ids([1, 2, 3]), torch.tensor([3]), 10, max_src_len=2),
         V, "max_src_len", "length 3", "max_src_len = 2"),
    BadInput("Seq2Seq:tgt_in-id-outside-vocabulary", s2s.Seq2Seq,
         lambda: _seq2seq()(_ids([1, 2]), torch.tensor([2]), _ids([1, 20])),
         V, "tgt_in", "got id 20", "[0, 12)"),
    BadInput("Seq2Seq:tgt_in-batch", s2s.Seq2Seq,
         lambda: _seq2seq()(_ids([1, 2], [1, 2]), torch.tensor([2, 2]), _ids([1], [1], [1])),
         V, "tgt_in", "(3, 1)", "B = 2"),
    BadInput("greedy_decode:zero-max_len", s2s.greedy_decode,
         lambda: s2s.greedy_decode(_seq2seq(), _ids([1, 2]), torch.tensor([2]), 0, 1, 2),
         V, "max_len", "got 0", ">= 1"),
    # --- training ---------------------------------------------------------------------------
    BadInput("LabelSmoothingLoss:smoothing-one", recipe.LabelSmoothingLoss,
         lambda: recipe.LabelSmoothingLoss(1.0),
         V, "smoothing", "1.0", "in [0, 1)"),
    BadInput("LabelSmoothingLoss:unknown-reduction", recipe.LabelSmoothingLoss,
         lambda: recipe.LabelSmoothingLoss(reduction="avg"),
         V, "reduction", "'avg'", "'mean', 'sum' or 'none'"),
    BadInput("LabelSmoothingLoss:target-shape", recipe.LabelSmoothingLoss,
         lambda: recipe.LabelSmoothingLoss()(_ones(2, 3, 5), torch.zeros(2, 4, dtype=torch.long)),
         V, "target", "(2, 4)", "must agree in (...)"),
    BadInput("LabelSmoothingLoss:target-outside-vocabulary", recipe.LabelSmoothingLoss,
         lambda: recipe.LabelSmoothingLoss()(_ones(2, 3, 5), torch.full((2, 3), 7)),
         V, "target", "got id 7", "[0, V) = [0, 5) or ignore_index"),
    BadInput("LabelSmoothingLoss:float-target", recipe.LabelSmoothingLoss,
         lambda: recipe.LabelSmoothingLoss()(_ones(2, 3, 5), torch.zeros(2, 3)),
         T, "target", "torch.float32", "integer class ids"),
    BadInput("noam_lr:step-zero", recipe.noam_lr,
         lambda: recipe.noam_lr(0, 512, 4000),
         V, "step", "got 0", ">= 1"),
    BadInput("noam_schedule:zero-warmup", recipe.noam_schedule,
         lambda: recipe.noam_schedule(512, 0),
         V, "warmup", "got 0", ">= 1"),
    BadInput("bleu:different-lengths", metrics.bleu,
         lambda: metrics.bleu(["a b"], ["a b", "c"]),
         V, "references", "2 references", "the same length"),
    BadInput("accuracy_by_length:bins-not-increasing", metrics.accuracy_by_length,
         lambda: metrics.accuracy_by_length(["a"], ["a"], [1], bins=[3, 1]),
         V, "bins", "[3, 1]", "strictly increasing"),
    BadInput("accuracy_by_length:lengths-count", metrics.accuracy_by_length,
         lambda: metrics.accuracy_by_length(["a"], ["a"], [1, 2]),
         V, "lengths", "got 2", "one entry per hypothesis (1)"),
    BadInput("translate:empty-sentence", translation.translate,
         lambda: translation.translate(nn.Linear(1, 1), ["我 爱", ""], _vocab(), _vocab()),
         V, "sentences[1]", "is empty", "at least one token"),
    BadInput("train_seq2seq:zero-lr", seq2seq_loop.train_seq2seq,
         lambda: seq2seq_loop.train_seq2seq(nn.Linear(1, 1), [], _vocab(), _vocab(), epochs=1, lr=0.0),
         V, "lr", "got 0.0", "finite and > 0"),
    BadInput("train_transformer:not-a-transformer", transformer_loop.train_transformer,
         lambda: transformer_loop.train_transformer(nn.Linear(1, 1), [], _vocab(), _vocab(), epochs=1),
         T, "model", "Linear", "config.d_model"),
    # --- transformer ------------------------------------------------------------------------
    BadInput("TransformerConfig:heads-do-not-divide", tf.TransformerConfig,
         lambda: tf.TransformerConfig(10, 12, d_model=10, num_heads=3),
         V, "num_heads", "num_heads = 3", "divisible by num_heads"),
    BadInput("TransformerConfig:odd-d_model", tf.TransformerConfig,
         lambda: tf.TransformerConfig(10, 12, d_model=9, num_heads=3),
         V, "d_model", "d_model = 9", "even"),
    BadInput("TransformerConfig:shared-embeddings-different-vocabularies", tf.TransformerConfig,
         lambda: tf.TransformerConfig(10, 12, share_all_embeddings=True),
         V, "share_all_embeddings", "src_vocab_size = 10 and tgt_vocab_size = 12",
         "one shared vocabulary"),
    BadInput("TransformerConfig:pad_id-outside-vocabulary", tf.TransformerConfig,
         lambda: tf.TransformerConfig(10, 12, pad_id=10),
         V, "pad_id", "pad_id = 10", "an id of both vocabularies"),
    BadInput("TransformerConfig:unknown-activation", tf.TransformerConfig,
         lambda: tf.TransformerConfig(10, 12, activation="tanh"),
         V, "activation", "'tanh'", "'relu', 'gelu'"),
    BadInput("TransformerConfig:zero-layer_norm_eps", tf.TransformerConfig,
         lambda: tf.TransformerConfig(10, 12, layer_norm_eps=0.0),
         V, "layer_norm_eps", "got 0.0", "finite and > 0"),
    BadInput("Transformer:src-id-outside-vocabulary", tf.Transformer,
         lambda: _transformer()(_ids([1, 50]), torch.tensor([2]), _ids([1, 2])),
         V, "src", "token id 50", "[0, 10)"),
    BadInput("Transformer:tgt_lengths-longer-than-tgt_in", tf.Transformer,
         lambda: _transformer()(_ids([1, 2]), torch.tensor([2]), _ids([1, 2, 3, 4]),
                                torch.tensor([6])),
         V, "tgt_in_lengths", "length 6", "the length 4 of tgt_in"),
    BadInput("Transformer:src-longer-than-max_len", tf.Transformer,
         lambda: _transformer()(torch.ones(1, 10, dtype=torch.long), torch.tensor([10]),
                                _ids([1, 2])),
         V, "src", "length 10", "max_len = 8"),
    BadInput("Transformer:float-src_lengths", tf.Transformer,
         lambda: _transformer()(_ids([1, 2]), torch.tensor([2.0]), _ids([1, 2])),
         T, "src_lengths", "torch.float32", "integer dtype"),
    BadInput("Transformer:1d-tgt_in", tf.Transformer,
         lambda: _transformer()(_ids([1, 2]), torch.tensor([2]), torch.tensor([1, 2, 3, 4])),
         V, "tgt_in", "(4)", "2 dimensions (B, length)"),
    BadInput("Transformer:config-not-a-config", tf.Transformer,
         lambda: tf.Transformer(TINY),
         T, "config", "dict", "TransformerConfig"),
    BadInput("gnmt_length_penalty:negative-alpha", dec.gnmt_length_penalty,
         lambda: dec.gnmt_length_penalty(torch.tensor([3]), -1.0),
         V, "alpha", "-1.0", ">= 0"),
    BadInput("beam_search:zero-beam", dec.beam_search,
         lambda: dec.beam_search(_transformer(), _ids([1, 2]), torch.tensor([2]), 4,
                                beam_size=0),
         V, "beam_size", "got 0", ">= 1"),
    BadInput("greedy_decode:max_len-beyond-the-model", dec.greedy_decode,
         lambda: dec.greedy_decode(_transformer(), _ids([1, 2]), torch.tensor([2]), 20),
         V, "max_len", "max_len = 20", "the model's max_len = 8"),
    BadInput("greedy_decode:not-a-transformer", dec.greedy_decode,
         lambda: dec.greedy_decode(nn.Linear(1, 1), _ids([1, 2]), torch.tensor([2]), 4),
         T, "model", "Linear", "attnlib Transformer"),
    BadInput("EncoderLayer:feature-size", tf.EncoderLayer,
         lambda: tf.EncoderLayer(8, 2, 16)(_ones(2, 3, 6)),
         V, "x", "(2, 3, 6)", "D = d_model = 8"),
    BadInput("EncoderLayer:heads-do-not-divide", tf.EncoderLayer,
         lambda: tf.EncoderLayer(8, 3, 16),
         V, "num_heads", "num_heads = 3", "num_heads must divide d_model"),
    BadInput("FeedForward:feature-size", tf.FeedForward,
         lambda: tf.FeedForward(8, 16)(_ones(2, 3, 6)),
         V, "x", "(2, 3, 6)", "D = d_model = 8"),
    BadInput("make_masks:tgt_lengths-without-L", tf.make_masks,
         lambda: tf.make_masks(torch.tensor([2, 1]), 2, tgt_lengths=torch.tensor([1, 1])),
         V, "L (the decoder input length)", "L = None", "must be given with tgt_lengths"),
    BadInput("DecoderLayer:no-memory-no-cache", tf.DecoderLayer,
         lambda: tf.DecoderLayer(8, 2, 16)(_ones(2, 3, 8), None),
         V, "memory", "memory is None", "the encoder output, or a cache"),
    BadInput("FeedForward:zero-d_ff", tf.FeedForward,
         lambda: tf.FeedForward(8, 0),
         V, "d_ff", "got 0", ">= 1"),
    # --- efficient --------------------------------------------------------------------------
    BadInput("online_softmax:zero-block", ef.online_softmax,
         lambda: ef.online_softmax(_ones(2, 3), block_size=0),
         V, "block_size", "got 0", ">= 1"),
    BadInput("online_softmax:row-all-minus-infinity", ef.online_softmax,
         lambda: ef.online_softmax(torch.full((2, 3), -math.inf)),
         V, "scores", "entirely -inf", "attnlib.masked_softmax"),
    BadInput("online_softmax:empty-last-dimension", ef.online_softmax,
         lambda: ef.online_softmax(_ones(2, 0)),
         V, "scores", "(2, 0)", "non-empty last dimension"),
    BadInput("tiled_attention:zero-key-block", ef.tiled_attention,
         lambda: ef.tiled_attention(_ones(1, 3, 4), _ones(1, 5, 4), _ones(1, 5, 4),
                                    block_size_k=0),
         V, "block_size_k", "got 0", ">= 1"),
    BadInput("tiled_attention:key-of-other-dtype", ef.tiled_attention,
         lambda: ef.tiled_attention(_ones(1, 3, 4), _ones(1, 5, 4, dtype=F64),
                                    _ones(1, 5, 4)),
         T, "key", "torch.float64", "query's dtype torch.float32"),
    BadInput("naive_attention:batch-does-not-broadcast", ef.naive_attention,
         lambda: ef.naive_attention(_ones(2, 3, 4), _ones(3, 5, 4), _ones(3, 5, 4)),
         V, "key", "(3, 5, 4)", "must broadcast"),
    BadInput("naive_attention:no-key", ef.naive_attention,
         lambda: ef.naive_attention(_ones(1, 3, 4), _ones(1, 0, 4), _ones(1, 0, 4)),
         V, "key", "(1, 0, 4)", "at least one position"),
    BadInput("naive_attention:S-mismatch", ef.naive_attention,
         lambda: ef.naive_attention(_ones(1, 3, 4), _ones(1, 5, 4), _ones(1, 4, 4)),
         V, "value", "(1, 4, 4)", "same length S"),
    BadInput("median_times:not-callable", ef.median_times,
         lambda: ef.median_times(3),
         T, "fns[0]", "int", "callable"),
    BadInput("median_times:unknown-clock", ef.median_times,
         lambda: ef.median_times(lambda: None, clock="cpu"),
         V, "clock", "'cpu'", "'wall', 'thread'"),
    # --- complexity -------------------------------------------------------------------------
    BadInput("layer_flops:unknown-layer", cx.layer_flops,
         lambda: cx.layer_flops("lstm", 10, 8),
         V, "layer_type", "'lstm'", "'self-attention'"),
    BadInput("layer_flops:zero-length", cx.layer_flops,
         lambda: cx.layer_flops("recurrent", 0, 8),
         V, "n", "got 0", ">= 1"),
    BadInput("flop_crossover:self-attention", cx.flop_crossover,
         lambda: cx.flop_crossover("self-attention", 8),
         V, "layer_type", "'self-attention'", "'recurrent', 'convolutional'"),
    BadInput("ConvolutionalLayer:even-kernel", cx.ConvolutionalLayer,
         lambda: cx.ConvolutionalLayer(8, kernel_size=4),
         V, "kernel_size", "got 4", "odd"),
    BadInput("RecurrentLayer:feature-size", cx.RecurrentLayer,
         lambda: cx.RecurrentLayer(8)(_ones(2, 3, 6)),
         V, "x", "(2, 3, 6)", "d = 8"),
    BadInput("gradient_norms:2d-x", cx.gradient_norms,
         lambda: cx.gradient_norms([cx.SelfAttentionLayer()], _ones(3, 4)),
         V, "x", "(3, 4)", "3 dimensions (B, n, d)"),
    BadInput("measured_crossover:lengths-not-increasing", cx.measured_crossover,
         lambda: cx.measured_crossover([4, 2], [1.0, 1.0], [1.0, 1.0]),
         V, "lengths", "[4, 2]", "must increase"),
    BadInput("measured_crossover:unequal-lengths", cx.measured_crossover,
         lambda: cx.measured_crossover([2, 4], [1.0, 1.0], [1.0]),
         V, "times_b", "2, 2 and 1", "equally long"),
    BadInput("measured_crossover:zero-time", cx.measured_crossover,
         lambda: cx.measured_crossover([2, 4], [1.0, 0.0], [1.0, 1.0]),
         V, "times_a", "[1.0, 0.0]", "> 0"),
    BadInput("layers_to_reach:position-out-of-range", cx.layers_to_reach,
         lambda: cx.layers_to_reach(torch.ones(2, 3), position=5),
         V, "position", "got 5", "in [-3, 3)"),
    BadInput("time_layer:thread-clock-with-two-threads", cx.time_layer,
         lambda: cx.time_layer(cx.SelfAttentionLayer(), _ones(1, 2, 4), num_threads=2),
         V, "num_threads", "2 threads", "num_threads=1"),
    BadInput("make_layer:zero-width", cx.make_layer,
         lambda: cx.make_layer("recurrent", 0),
         V, "d", "got 0", ">= 1"),
    # --- offset_copy ------------------------------------------------------------------------
    BadInput("offset_copy_task:no-offsets", oc.offset_copy_task,
         lambda: oc.offset_copy_task(4, offsets=()),
         T, "offsets", "got ()", "non-empty sequence of ints"),
    BadInput("offset_copy_task:zero-length", oc.offset_copy_task,
         lambda: oc.offset_copy_task(4, length=0),
         V, "length", "got 0", ">= 1"),
    BadInput("OffsetCopyModel:sequence-length", oc.OffsetCopyModel,
         lambda: oc.OffsetCopyModel(8, 8, 2)(torch.zeros(2, 5, dtype=torch.long)),
         V, "tokens", "(2, 5)", "L = 8"),
    BadInput("OffsetCopyModel:token-outside-vocabulary", oc.OffsetCopyModel,
         lambda: oc.OffsetCopyModel(8, 8, 2)(torch.full((2, 8), 9)),
         V, "tokens", "got id 9", "[0, num_symbols) = [0, 8)"),
    BadInput("OffsetCopyModel:heads-do-not-divide", oc.OffsetCopyModel,
         lambda: oc.OffsetCopyModel(8, 8, 2, embed_dim=32, num_heads=3),
         V, "num_heads", "num_heads = 3", "divisible by num_heads"),
    BadInput("attention_by_offset:not-square", oc.attention_by_offset,
         lambda: oc.attention_by_offset(torch.zeros(1, 2, 3, 4)),
         V, "weights", "(1, 2, 3, 4)", "(B, H, L, L)"),
    BadInput("fit_offset_copy:targets-shape", oc.fit_offset_copy,
         lambda: oc.fit_offset_copy(oc.OffsetCopyModel(8, 8, 2), torch.zeros(4, 8,
                                    dtype=torch.long), torch.zeros(4, 8, dtype=torch.long)),
         V, "targets", "(4, 8)", "(n, L, K) = (4, 8, 2)"),
    # --- extrapolation ----------------------------------------------------------------------
    BadInput("lookback_task:shift-not-below-length", ex.lookback_task,
         lambda: ex.lookback_task(4, 5, shift=5),
         V, "shift", "shift = 5", "< length"),
    BadInput("LookbackModel:unknown-encoding", ex.LookbackModel,
         lambda: ex.LookbackModel(ex.LookbackConfig(encoding="alibi")),
         V, "encoding", "'alibi'", "'none', 'sinusoidal', 'learned', 'rope'"),
    BadInput("LookbackModel:heads-do-not-divide", ex.LookbackModel,
         lambda: ex.LookbackModel(ex.LookbackConfig(d_model=10, num_heads=3)),
         V, "num_heads", "num_heads = 3", "divide d_model"),
    BadInput("LookbackModel:odd-rope-head", ex.LookbackModel,
         lambda: ex.LookbackModel(ex.LookbackConfig(encoding="rope", d_model=6, num_heads=2)),
         V, "head_dim", "head_dim = 3", "even"),
    BadInput("LookbackModel:float-tokens", ex.LookbackModel,
         lambda: ex.LookbackModel(ex.LookbackConfig())(_ones(2, 5)),
         T, "tokens", "torch.float32", "integer dtype"),
    BadInput("LookbackModel:token-outside-vocabulary", ex.LookbackModel,
         lambda: ex.LookbackModel(ex.LookbackConfig())(_ids([1, 2, 16])),
         V, "tokens", "id 16", "[0, 16)"),
    BadInput("train_lookback:zero-lr", ex.train_lookback,
         lambda: ex.train_lookback(ex.LookbackModel(ex.LookbackConfig()), length=8, lr=0.0),
         V, "lr", "got 0.0", "finite and > 0"),
    # --- rope_scaling, alibi, linear attention (chapter 9) ----------------------------------
    BadInput("ntk_base:odd-head", rs.ntk_base, lambda: rs.ntk_base(10000.0, 2.0, 7),
         V, "head_dim", "got 7", "even"),
    BadInput("yarn_ramp:alpha-above-beta", rs.yarn_ramp,
         lambda: rs.yarn_ramp(8, 300.0, 32, alpha=4.0, beta=2.0),
         V, "alpha", "alpha = 4.0", "0 <= alpha < beta"),
    BadInput("scaled_frequencies:unknown-method", rs.scaled_frequencies,
         lambda: rs.scaled_frequencies(8, method="linear"),
         V, "method", "'linear'", "'rope', 'pi', 'ntk', 'yarn'"),
    BadInput("yarn_attention_factor:zero-scale", rs.yarn_attention_factor,
         lambda: rs.yarn_attention_factor(0.0), V, "scale", "got 0.0", "finite and > 0"),
    BadInput("ScaledRotaryEmbedding:yarn-without-length", rs.ScaledRotaryEmbedding,
         lambda: rs.ScaledRotaryEmbedding(8, method="yarn", scale=2.0),
         V, "train_length", "got None", "the length trained on"),
    BadInput("alibi_slopes:no-heads", al.alibi_slopes, lambda: al.alibi_slopes(0),
         V, "num_heads", "got 0", ">= 1"),
    BadInput("alibi_bias:2d-slopes", al.alibi_bias,
         lambda: al.alibi_bias(torch.arange(3), torch.arange(3), _ones(2, 2)),
         V, "slopes", "(2, 2)", "(H,)"),
    BadInput("linear_attention_recurrent:value-length", la.linear_attention_recurrent,
         lambda: la.linear_attention_recurrent(_ones(1, 1, 4, 2), _ones(1, 1, 4, 2),
                                               _ones(1, 1, 5, 2)),
         V, "value", "(1, 1, 5, 2)", "(B, H, S, Ev)"),
    BadInput("LinearSelfAttention:with-a-cache", la.LinearSelfAttention,
         lambda: la.LinearSelfAttention(8, 2, 2)(_ones(1, 3, 8), past=(_ones(1), _ones(1))),
         V, "past", "a key/value cache", "must be None"),
    # --- decoder_lm, caches, speculative sampling (chapter 9) -----------------------------------
    BadInput("DecoderLMConfig:unknown-attention", dlm.DecoderLMConfig,
         lambda: dlm.DecoderLMConfig(vocab_size=5, attention="sparse"),
         V, "attention", "'sparse'", "'softmax', 'linear'"),
    BadInput("quantize_per_token:three-bits", qc.quantize_per_token,
         lambda: qc.quantize_per_token(_ones(2, 4), bits=3), V, "bits", "got 3", "4 or 8"),
    BadInput("dequantize_per_token:float-codes", qc.dequantize_per_token,
         lambda: qc.dequantize_per_token(_ones(2, 4), _ones(2, 1), F32),
         T, "codes", "torch.float32", "integer dtype"),
    BadInput("QuantizedStore:unknown-format", qc.QuantizedStore,
         lambda: qc.QuantizedStore("int2"), V, "format", "'int2'", "'bf16', 'fp8', 'int8', 'int4'"),
    BadInput("QuantizedLMCache:unknown-format", qc.QuantizedLMCache,
         lambda: qc.QuantizedLMCache(format="fp4"), V, "format", "'fp4'", "'fp8'"),
    BadInput("bytes_per_vector:no-head", qc.bytes_per_vector,
         lambda: qc.bytes_per_vector(0, "int8"), V, "head_dim", "got 0", ">= 1"),
    BadInput("PagedKVCache:no-blocks", pc.PagedKVCache, lambda: pc.PagedKVCache(0, 4, 1, 8),
         V, "num_blocks", "got 0", ">= 1"),
    BadInput("paged_attention:rows-per-sequence", pc.paged_attention,
         lambda: pc.paged_attention(_ones(2, 2, 1, 8), pc.PagedKVCache(2, 4, 1, 8), [0]),
         V, "query", "(2, 2, 1, 8)", "B = len(seqs) = 1"),
    BadInput("accept_or_resample:shapes", sp.accept_or_resample,
         lambda: sp.accept_or_resample(_ones(2, 3) / 3, _ones(2, 4) / 4, _ids([0, 1])[0]),
         V, "q", "(2, 4)", "(N, V) = (2, 3)"),
    BadInput("expected_tokens_per_pass:alpha", sp.expected_tokens_per_pass,
         lambda: sp.expected_tokens_per_pass(1.5, 2), V, "alpha", "1.5", "in [0, 1]"),
    BadInput("goodness_of_fit:shapes", sp.goodness_of_fit,
         lambda: sp.goodness_of_fit(_ones(3), _ones(4) / 4), V, "counts", "(3)", "one shape"),
    BadInput("speculative_sample:temperature", sp.speculative_sample,
         lambda: sp.speculative_sample(_lm(), _lm(), _ids([0, 1]), 2, temperature=0.0),
         V, "temperature", "got 0.0", "finite and > 0"),
    # --- chapter 9's experiments ----------------------------------------------------------------
    BadInput("varied_echo:vocabulary-too-small", lm_tasks.varied_echo,
         lambda: lm_tasks.varied_echo(2, 10, 3, 30, vocab_size=20),
         V, "vocab_size", "got 20", ">= 30"),
    BadInput("allocation_waste:too-long", cm.allocation_waste,
         lambda: cm.allocation_waste([4, 40], max_len=32),
         V, "lengths[1]", "got 40", "<= max_len = 32"),
    BadInput("decode_cost:no-context", mw.decode_cost,
         lambda: mw.decode_cost(mw.PUBLISHED["Mistral 7B"], 0), V, "context", "got 0", ">= 1"),
    BadInput("prefill_cost:no-tokens", mw.prefill_cost,
         lambda: mw.prefill_cost(mw.PUBLISHED["Mistral 7B"], 0), V, "tokens", "got 0", ">= 1"),
    BadInput("decode_step_times:past-max-len", mw.decode_step_times,
         lambda: mw.decode_step_times(_lm(), [1], context=16), V, "context + new_tokens",
         "16 + 1", "<= max_len = 16"),
    BadInput("ContextSetup:too-short-max-len", lc.ContextSetup,
         lambda: lc.ContextSetup(train_length=64), V, "max_len", "got 128", "256"),
    BadInput("extend_context:alibi-model", lc.extend_context,
         lambda: lc.extend_context(_lm(alibi=True), "pi", 2.0, 8),
         V, "model", "alibi=True", "must use RoPE"),
    BadInput("echo_accuracy:short", lc.echo_accuracy, lambda: lc.echo_accuracy(_lm(), 2),
         V, "length", "got 2", ">= 4"),
    BadInput("context_run:unknown-positions", lc.context_run,
         lambda: lc.context_run(lc.ContextSetup(), 0, "learned"),
         V, "positions", "'learned'", "'rope', 'alibi'"),
    BadInput("context_study:no-seeds", lc.context_study,
         lambda: lc.context_study(lc.ContextSetup(), []), V, "seeds", "got none",
         "at least one seed"),
    # --- plot -------------------------------------------------------------------------------
    BadInput("heatmap:3d-weights", plot.heatmap,
         lambda: plot.heatmap(torch.zeros(2, 3, 4)),
         V, "weights", "(2, 3, 4)", "2-D (L, S)"),
    BadInput("heatmap:tick-label-count", plot.heatmap,
         lambda: plot.heatmap(torch.zeros(2, 3), xticklabels=["a", "b"]),
         V, "xticklabels", "got 2", "S=3 labels"),
    BadInput("heatmaps:title-count", plot.heatmaps,
         lambda: plot.heatmaps([torch.zeros(2, 3), torch.zeros(2, 3)], ["one"]),
         V, "titles", "1 titles", "one entry per matrix"),
    # --- chapter 10: delta rule, gated attention, latent attention, mixer LM, tasks --------
    BadInput("delta_rule_recurrent:beta-above-one", dr.delta_rule_recurrent,
         lambda: dr.delta_rule_recurrent(_ones(1, 1, 3, 4), _ones(1, 1, 3, 4), _ones(1, 1, 3, 2),
                                         2 * _ones(1, 1, 3)),
         V, "beta", "values outside", "[0, 1]"),
    BadInput("delta_rule_recurrent:value-length", dr.delta_rule_recurrent,
         lambda: dr.delta_rule_recurrent(_ones(1, 1, 3, 4), _ones(1, 1, 3, 4), _ones(1, 1, 5, 2),
                                         _ones(1, 1, 3)),
         V, "value", "(1, 1, 5, 2)", "(1, 1, 3, Ev)"),
    BadInput("delta_rule_chunked:zero-decay", dr.delta_rule_chunked,
         lambda: dr.delta_rule_chunked(_ones(1, 1, 3, 4), _ones(1, 1, 3, 4), _ones(1, 1, 3, 2),
                                       _ones(1, 1, 3), torch.zeros(1, 1, 3)),
         V, "decay", "values outside", "(0, 1]"),
    BadInput("delta_rule_chunked:state-shape", dr.delta_rule_chunked,
         lambda: dr.delta_rule_chunked(_ones(1, 1, 3, 4), _ones(1, 1, 3, 4), _ones(1, 1, 3, 2),
                                       _ones(1, 1, 3), state=_ones(1, 1, 2, 4)),
         V, "state", "(1, 1, 2, 4)", "(1, 1, 4, 2)"),
    BadInput("delta_rule_chunked:zero-chunk", dr.delta_rule_chunked,
         lambda: dr.delta_rule_chunked(_ones(1, 1, 3, 4), _ones(1, 1, 3, 4), _ones(1, 1, 3, 2),
                                       _ones(1, 1, 3), chunk_size=0),
         V, "chunk_size", "got 0", ">= 1"),
    BadInput("DeltaNet:unknown-rule", dr.DeltaNet,
         lambda: dr.DeltaNet(8, 2, rule="sum"),
         V, "rule", "'sum'", "'delta', 'linear'"),
    BadInput("DeltaNet:feature-size", dr.DeltaNet,
         lambda: dr.DeltaNet(8, 2)(_ones(1, 3, 6)),
         V, "x", "(1, 3, 6)", "embed_dim = 8"),
    BadInput("attention_with_sink:sink-shape", ga.attention_with_sink,
         lambda: ga.attention_with_sink(_ones(1, 2, 3, 4), _ones(1, 2, 3, 4), _ones(1, 2, 3, 4),
                                        _ones(3)),
         V, "sink_logits", "(3)", "(H,) = (2,)"),
    BadInput("gated_attention:gate-shape", ga.gated_attention,
         lambda: ga.gated_attention(_ones(1, 2, 3, 4), _ones(1, 2, 3, 4), _ones(1, 2, 3, 4),
                                    _ones(1, 2, 3, 5)),
         V, "gate_logits", "(1, 2, 3, 5)", "(1, 2, 3, 4)"),
    BadInput("gated_attention:key-size", ga.gated_attention,
         lambda: ga.gated_attention(_ones(1, 2, 3, 4), _ones(1, 2, 3, 6), _ones(1, 2, 3, 4),
                                    _ones(1, 2, 3, 4)),
         V, "key", "(1, 2, 3, 6)", "(1, 2, S, 4)"),
    BadInput("CausalSelfAttention:sinks-without-window", ga.CausalSelfAttention,
         lambda: ga.CausalSelfAttention(8, 2, sink_tokens=2),
         V, "sink_tokens", "sink_tokens = 2", "below window"),
    BadInput("CausalSelfAttention:negative-conv", ga.CausalSelfAttention,
         lambda: ga.CausalSelfAttention(8, 2, conv_size=-1),
         V, "conv_size", "-1", ">= 0"),
    BadInput("CausalSelfAttention:feature-size", ga.CausalSelfAttention,
         lambda: ga.CausalSelfAttention(8, 2)(_ones(1, 3, 6)),
         V, "x", "(1, 3, 6)", "embed_dim = 8"),
    BadInput("MultiHeadLatentAttention:zero-latent", mla.MultiHeadLatentAttention,
         lambda: mla.MultiHeadLatentAttention(8, 2, 4, 0, 2),
         V, "latent_dim", "got 0", ">= 1"),
    BadInput("MultiHeadLatentAttention:2d-x", mla.MultiHeadLatentAttention,
         lambda: mla.MultiHeadLatentAttention(8, 2, 4, 4, 2)(_ones(3, 8)),
         V, "x", "(3, 8)", "(B, L, D)"),
    BadInput("mla_cache_elements:float-layers", mla.mla_cache_elements,
         lambda: mla.mla_cache_elements(2.0, 4, 2),
         T, "num_layers", "float", "an int"),
    BadInput("MixerLM:no-mixers", mx.MixerLM,
         lambda: mx.MixerLM(10, [], d_ff=8),
         V, "mixers", "got none", "at least one"),
    BadInput("MixerLM:token-outside-vocabulary", mx.MixerLM,
         lambda: mx.MixerLM(10, [ga.CausalSelfAttention(8, 2)], d_ff=8)(_ids([1, 12])),
         V, "tokens", "id 12", "[0, 10)"),
    BadInput("backcopy_text:length-one", sk.backcopy_text,
         lambda: sk.backcopy_text(2, 1),
         V, "length", "got 1", ">= 2"),
    BadInput("backcopy_targets:1d-tokens", sk.backcopy_targets,
         lambda: sk.backcopy_targets(torch.tensor([1, 2])),
         V, "tokens", "(2)", "(B, L)"),
    BadInput("recall_task:too-many-queries", rc.recall_task,
         lambda: rc.recall_task(2, 3, queries=5),
         V, "queries", "queries = 5", "queries <= pairs"),
    BadInput("recall_model:unknown-kind", rc.recall_model,
         lambda: rc.recall_model("mamba"),
         V, "kind", "'mamba'", "'softmax', 'linear'"),
    BadInput("RecallConfig:unknown-kind", rc.RecallConfig,
         lambda: rc.RecallConfig("mamba"),
         V, "kind", "'mamba'", "'softmax', 'linear'"),
    BadInput("train_recall:zero-steps", rc.train_recall,
         lambda: rc.train_recall(rc.recall_model("delta"), steps=0),
         V, "steps", "0", ">= 1"),
    BadInput("write_and_read:unknown-rule", rc.write_and_read,
         lambda: rc.write_and_read(4, 4, "product"),
         V, "rule", "'product'", "'sum', 'delta'"),
]

MODULES = {
    "attnlib.book.plot",
    "attnlib.data.vocab", "attnlib.data.batching", "attnlib.data.corpus", "attnlib.data.grammar",
    "attnlib.data.tasks",
    "attnlib.blocks.masking", "attnlib.blocks.scoring", "attnlib.blocks.attention",
    "attnlib.blocks.multihead", "attnlib.blocks.positional", "attnlib.blocks.efficient",
    "attnlib.models.kernel_regression", "attnlib.models.seq2seq",
    "attnlib.models.transformer.layers", "attnlib.models.transformer.model",
    "attnlib.train.decoding", "attnlib.train.metrics", "attnlib.train.recipe",
    "attnlib.train.seq2seq_loop", "attnlib.train.transformer_loop",
    "attnlib.experiments.complexity", "attnlib.experiments.offset_copy",
    "attnlib.experiments.extrapolation",
}


@pytest.mark.parametrize("bad", CATALOGUE, ids=[bad.id for bad in CATALOGUE])
def test_bad_input_error_names_argument_got_and_expected(bad: BadInput) -> None:
    with pytest.raises(bad.error) as caught:
        bad.call()
    assert type(caught.value) is bad.error, f"{bad.id}: raised a subclass {type(caught.value)}"
    message = str(caught.value)
    for part, fragment in (("argument", bad.argument), ("got", bad.got),
                           ("expected", bad.expected)):
        assert fragment in message, f"{bad.id}: the message lacks the {part} {fragment!r}: {message!r}"


def test_catalogue_size_ids_and_modules() -> None:
    ids = [bad.id for bad in CATALOGUE]
    assert len(CATALOGUE) >= 40
    assert len(set(ids)) == len(ids), sorted(i for i in ids if ids.count(i) > 1)
    modules = {bad.module for bad in CATALOGUE}
    assert len(modules) >= 12, modules
    assert modules >= MODULES, MODULES - modules
    # Distinct mistakes, not one check repeated: no two records call the same function with
    # the same argument and the same kind of error expected.
    kinds = [(bad.function, bad.argument, bad.error, bad.expected) for bad in CATALOGUE]
    assert len({(id(f), a, e, x) for f, a, e, x in kinds}) == len(kinds)


# ---------------------------------------------------------------------------------------------
# 2. The NaN sweep
# ---------------------------------------------------------------------------------------------

# Outcomes a case can promise.
FINITE = "finite"  # every number it returns is finite
NO_NAN = "no-nan"  # -inf is the defined answer somewhere (log of a zero kernel, a float mask)
RAISES = "raises"  # a ValueError whose message holds ``raises``


@dataclass(frozen=True)
class Sweep:
    """One call on finite, hard input and the outcome it must have.

    ``target`` is the public function or class that is exercised (for the coverage check).
    ``known_nan`` explains a case that still returns NaN and cannot be fixed here; it runs as a
    strict xfail.
    """

    id: str
    target: object
    call: Callable[[], object]
    outcome: str = FINITE
    raises: str = ""
    known_nan: str = ""


def _numbers(result: object) -> list[Tensor]:
    """Every number in ``result`` as a float64 tensor (nested tuples, lists, dataclasses)."""
    if isinstance(result, Tensor):
        return [result.detach().double()] if result.dtype != torch.bool else []
    if isinstance(result, bool) or result is None:
        return []
    if isinstance(result, int | float):
        return [torch.tensor(float(result), dtype=F64)]
    if isinstance(result, tuple | list):
        return [t for item in result for t in _numbers(item)]
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return [t for f in dataclasses.fields(result) for t in _numbers(getattr(result, f.name))]
    raise TypeError(f"cannot read numbers from {type(result).__name__}")


def _hard(*shape: int, dtype: torch.dtype, scale: float = 1e4, seed: int = 0) -> Tensor:
    """Entries -scale, 0 and +scale: softmax meets logits of 1e4 and -1e4 side by side."""
    gen = torch.Generator().manual_seed(seed)
    return (torch.randint(-1, 2, shape, generator=gen) * scale).to(dtype)


def _dead_row_mask(*shape: int) -> Tensor:
    """A bool mask of ``shape`` (..., L, S), True but for the first query, which sees no key."""
    mask = torch.ones(shape, dtype=torch.bool)
    mask[..., 0, :] = False
    return mask


def _float_dead_row_mask(*shape: int, dtype: torch.dtype) -> Tensor:
    return mk.float_mask(_dead_row_mask(*shape), dtype)


def _qkv(B: int, L: int, S: int, E: int, dtype: torch.dtype) -> tuple[Tensor, Tensor, Tensor]:
    """Queries and keys of +-100 (scores up to E * 1e4 / sqrt(E)), values of +-1e4."""
    return (_hard(B, L, E, dtype=dtype, scale=100.0, seed=1),
            _hard(B, S, E, dtype=dtype, scale=100.0, seed=2),
            _hard(B, S, E, dtype=dtype, seed=3))


def _pooling(inputs: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
    """AttentionPooling with a query of 100s on inputs of +-100: scores up to E * 1e4 / sqrt(E)."""
    pool = sc.AttentionPooling(inputs.shape[-1]).to(inputs.dtype)
    with torch.no_grad():
        pool.query.fill_(100.0)
    return pool(inputs, mask)


def _both_paths(*args: object, **kwargs: object) -> tuple[object, object]:
    """scaled_dot_product_attention through PyTorch's kernel and the explicit weights."""
    fused = at.scaled_dot_product_attention(*args, **kwargs)
    explicit = at.scaled_dot_product_attention(*args, **kwargs, need_weights=True)
    return fused, explicit


def _mha_cases(dtype: torch.dtype) -> list[Sweep]:
    name = str(dtype).removeprefix("torch.")
    q, k, v = (_hard(2, 3, 8, dtype=dtype, seed=s) for s in (1, 2, 3))
    padded = mk.lengths_to_mask(torch.tensor([0, 3]), 3)  # sequence 0: every key is padding
    dead = _float_dead_row_mask(2, 3, 3, dtype=dtype)
    cases = {
        "big": {},
        "fully-padded-sequence": {"key_padding_mask": padded},
        "causal-and-padded": {"key_padding_mask": padded, "is_causal": True},
        "float-mask-dead-row-and-padding": {"attn_mask": dead, "key_padding_mask": padded},
    }
    return [
        Sweep(f"MultiHeadAttention:{case}:{name}:weights={w}", mh.MultiHeadAttention,
              lambda kw=kw, w=w: _mha(dtype)(q, k, v, need_weights=w, **kw))
        for case, kw in cases.items() for w in (False, True)
    ] + [Sweep(f"MultiHeadAttention:length-1:{name}", mh.MultiHeadAttention,
               lambda: _mha(dtype)(q[:, :1], k[:, :1], v[:, :1], need_weights=True))]


def _transformer_cases(dtype: torch.dtype) -> list[Sweep]:
    name = str(dtype).removeprefix("torch.")
    src, src_len = _ids([3, 4, 5], [6, 0, 0]), torch.tensor([3, 1])
    tgt, tgt_len = _ids([1, 7, 8, 9], [1, 5, 0, 0]), torch.tensor([4, 2])
    x = _hard(2, 3, 8, dtype=dtype, scale=1e4)
    padded = mk.lengths_to_mask(torch.tensor([0, 3]), 3)  # sequence 0 fully padded

    def layer(kind: type[nn.Module], norm_first: bool) -> nn.Module:
        return _seeded(lambda: kind(8, 2, 16, norm_first=norm_first, dtype=dtype)).eval()

    cases = [
        Sweep(f"Transformer:forward:{name}", tf.Transformer,
              lambda: _transformer(dtype)(src, src_len, tgt, tgt_len)),
        Sweep(f"Transformer:length-1:{name}", tf.Transformer,
              lambda: _transformer(dtype)(src[:, :1], torch.tensor([1, 1]), tgt[:, :1])),
        Sweep(f"Transformer:attention_weights:{name}", tf.Transformer,
              lambda: _transformer(dtype).attention_weights(src, src_len, tgt, tgt_len)),
        Sweep(f"Transformer:fully-padded-sentence:{name}", tf.Transformer,
              lambda: _transformer(dtype)(src, torch.tensor([3, 0]), tgt),
              RAISES, raises="src_lengths[1] = 0: sentence 1 is empty"),
        Sweep(f"greedy_decode:{name}", dec.greedy_decode,
              lambda: dec.greedy_decode(_transformer(dtype), src, src_len, 4)),
        Sweep(f"beam_search:{name}", dec.beam_search,
              lambda: dec.beam_search(_transformer(dtype), src, src_len, 4, beam_size=3)),
        Sweep(f"FeedForward:big:{name}", tf.FeedForward,
              lambda: _seeded(lambda: tf.FeedForward(8, 16, dtype=dtype))(x)),
    ]
    for norm_first in (False, True):
        cases += [
            Sweep(f"EncoderLayer:fully-padded-sequence:{name}:norm_first={norm_first}",
                  tf.EncoderLayer,
                  lambda nf=norm_first: layer(tf.EncoderLayer, nf)(x, padded, need_weights=True)),
            Sweep(f"DecoderLayer:fully-padded-memory:{name}:norm_first={norm_first}",
                  tf.DecoderLayer,
                  lambda nf=norm_first: layer(tf.DecoderLayer, nf)(
                      x, x, attn_mask=mk.causal_mask(3), memory_key_padding_mask=padded,
                      need_weights=True)),
        ]
    return cases


def _sweep_for(dtype: torch.dtype) -> list[Sweep]:
    """The cases that run in both float32 and float64."""
    name = str(dtype).removeprefix("torch.")
    scores = _hard(2, 3, 5, dtype=dtype)
    dead = _dead_row_mask(2, 3, 5)
    q, k, v = _qkv(2, 3, 5, 4, dtype)
    q1, k1, v1 = _qkv(2, 1, 1, 4, dtype)
    x = _hard(2, 3, 8, dtype=dtype)
    points = _hard(6, dtype=dtype)
    cases = [
        # masking
        Sweep(f"masked_softmax:big:{name}", mk.masked_softmax, lambda: mk.masked_softmax(scores)),
        Sweep(f"masked_softmax:dead-row:{name}", mk.masked_softmax,
              lambda: mk.masked_softmax(scores, dead)),
        Sweep(f"masked_softmax:float-mask-dead-row:{name}", mk.masked_softmax,
              lambda: mk.masked_softmax(scores, _float_dead_row_mask(2, 3, 5, dtype=dtype))),
        Sweep(f"masked_softmax:length-1-masked:{name}", mk.masked_softmax,
              lambda: mk.masked_softmax(scores[..., :1], dead[..., :1])),
        Sweep(f"softmax_with_temperature:cold:{name}", mk.softmax_with_temperature,
              lambda: mk.softmax_with_temperature(scores, 1e-3, dead)),
        Sweep(f"softmax_with_temperature:hot:{name}", mk.softmax_with_temperature,
              lambda: mk.softmax_with_temperature(scores, 1e30)),
        Sweep(f"float_mask:{name}", mk.float_mask, lambda: mk.float_mask(dead, dtype), NO_NAN),
        # attention
        Sweep(f"sdpa:big:{name}", at.scaled_dot_product_attention, lambda: _both_paths(q, k, v)),
        Sweep(f"sdpa:dead-row:{name}", at.scaled_dot_product_attention,
              lambda: _both_paths(q, k, v, dead)),
        Sweep(f"sdpa:float-mask-dead-row:{name}", at.scaled_dot_product_attention,
              lambda: _both_paths(q, k, v, _float_dead_row_mask(2, 3, 5, dtype=dtype))),
        Sweep(f"sdpa:length-1:{name}", at.scaled_dot_product_attention,
              lambda: _both_paths(q1, k1, v1)),
        Sweep(f"sdpa:causal-L>S:{name}", at.scaled_dot_product_attention,
              lambda: _both_paths(k, q, q, is_causal=True)),
        Sweep(f"sdpa:causal-L<S:{name}", at.scaled_dot_product_attention,
              lambda: _both_paths(q, k, v, is_causal=True)),
        # kernel regression
        Sweep(f"kernel_scores:gaussian-far-points:{name}", kr.kernel_scores,
              lambda: kr.kernel_scores(points, points.flip(0))),
        Sweep(f"kernel_scores:boxcar:{name}", kr.kernel_scores,
              lambda: kr.kernel_scores(points, points.flip(0), 1.0, "boxcar"), NO_NAN),
        Sweep(f"kernel_scores:epanechnikov:{name}", kr.kernel_scores,
              lambda: kr.kernel_scores(points, points.flip(0), 1.0, "epanechnikov"), NO_NAN),
        Sweep(f"nadaraya_watson:far-points:{name}", kr.nadaraya_watson,
              lambda: kr.nadaraya_watson(points, points.flip(0), points)),
        Sweep(f"nadaraya_watson:one-key:{name}", kr.nadaraya_watson,
              lambda: kr.nadaraya_watson(points, points[:1], points[:1], 0.01)),
        Sweep(f"nadaraya_watson:boxcar-query-without-key:{name}", kr.nadaraya_watson,
              lambda: kr.nadaraya_watson(points, points[:1] + 5.0, points[:1], 1.0, "boxcar"),
              RAISES, raises="has no key to attend to (kernel='boxcar', bandwidth=1)"),
        # A mask that hides every key is blamed, not the bandwidth.
        Sweep(f"nadaraya_watson:mask-hides-every-key:{name}", kr.nadaraya_watson,
              lambda: kr.nadaraya_watson(points, points, points, attn_mask=_dead_row_mask(6, 6)),
              RAISES, raises="attn_mask hides every key from the query at index [0]"),
        Sweep(f"NadarayaWatson:{name}", kr.NadarayaWatson,
              lambda: kr.NadarayaWatson(0.5).to(dtype)(points, points, points,
                                                       kr.leave_one_out_mask(6))),
        Sweep(f"make_regression_data:{name}", kr.make_regression_data,
              lambda: kr.make_regression_data(5, 3, x_max=1e4, dtype=dtype)),
        # scoring
        Sweep(f"AdditiveScore:big:{name}", sc.AdditiveScore,
              lambda: _seeded(lambda: sc.AdditiveScore(8, 8, 4).to(dtype))(x, x)),
        Sweep(f"BilinearScore:big:{name}", sc.BilinearScore,
              lambda: _seeded(lambda: sc.BilinearScore(8, 8).to(dtype))(x[:, :1], x[:, :1])),
        Sweep(f"DotScore:big:{name}", sc.DotScore, lambda: sc.DotScore()(q, k)),
        Sweep(f"ScaledDotScore:length-1:{name}", sc.ScaledDotScore,
              lambda: sc.ScaledDotScore()(q1, k1)),
        Sweep(f"KeyValueAttention:dead-row:{name}", sc.KeyValueAttention,
              lambda: sc.KeyValueAttention(sc.ScaledDotScore())(q, k, v, dead)),
        Sweep(f"hard_attention:dead-row:{name}", sc.hard_attention,
              lambda: sc.hard_attention(scores, v, dead)),
        Sweep(f"AttentionPooling:big-and-empty-example:{name}", sc.AttentionPooling,
              lambda: _pooling(k, _dead_row_mask(2, 5))),
        # multihead
        Sweep(f"split_heads:{name}", mh.split_heads, lambda: mh.split_heads(x, 2)),
        Sweep(f"merge_heads:{name}", mh.merge_heads, lambda: mh.merge_heads(mh.split_heads(x, 4))),
        Sweep(f"copy_from_torch:{name}", mh.copy_from_torch,
              lambda: mh.copy_from_torch(_mha(dtype), _seeded(
                  lambda: nn.MultiheadAttention(8, 2, batch_first=True, dtype=dtype)))(x, x, x)),
        *_mha_cases(dtype),
        # positional
        Sweep(f"sinusoidal_encoding:long:{name}", pe.sinusoidal_encoding,
              lambda: pe.sinusoidal_encoding(20_000, 16, dtype=dtype)),
        Sweep(f"relative_shift_matrix:far:{name}", pe.relative_shift_matrix,
              lambda: pe.relative_shift_matrix(10**9, 16, dtype=dtype)),
        Sweep(f"SinusoidalPositionalEncoding:past-the-cache:{name}",
              pe.SinusoidalPositionalEncoding,
              lambda: pe.SinusoidalPositionalEncoding(8, max_len=2, dtype=dtype)(x, offset=10**5)),
        Sweep(f"LearnedPositionalEmbedding:length-1:{name}", pe.LearnedPositionalEmbedding,
              lambda: _seeded(lambda: pe.LearnedPositionalEmbedding(4, 8, dtype=dtype))(x[:, :1])),
        Sweep(f"RotaryPositionalEmbedding:far-positions:{name}", pe.RotaryPositionalEmbedding,
              lambda: pe.RotaryPositionalEmbedding(8)(x, positions=torch.tensor([0, 2**40, 2**62]))),
        Sweep(f"RotaryPositionalEmbedding:4d:{name}", pe.RotaryPositionalEmbedding,
              lambda: pe.RotaryPositionalEmbedding(4)(mh.split_heads(x, 2), offset=10**9)),
        # efficient
        Sweep(f"online_softmax:big:{name}", ef.online_softmax,
              lambda: ef.online_softmax(scores, block_size=2)),
        Sweep(f"online_softmax:length-1:{name}", ef.online_softmax,
              lambda: ef.online_softmax(scores[..., :1])),
        Sweep(f"naive_attention:causal-L>S:{name}", ef.naive_attention,
              lambda: ef.naive_attention(k, q, q, is_causal=True)),
        Sweep(f"tiled_attention:causal-L>S:{name}", ef.tiled_attention,
              lambda: ef.tiled_attention(k, q, q, is_causal=True, block_size_q=2, block_size_k=2)),
        Sweep(f"tiled_attention:causal-L<S:{name}", ef.tiled_attention,
              lambda: ef.tiled_attention(q, k, v, is_causal=True, block_size_q=1, block_size_k=3)),
        Sweep(f"tiled_attention:length-1:{name}", ef.tiled_attention,
              lambda: ef.tiled_attention(q1, k1, v1)),
        # complexity
        *[Sweep(f"make_layer:{layer}:{name}", cx.make_layer,
                lambda layer=layer: _seeded(lambda: cx.make_layer(layer, 8, num_heads=2)
                                            .to(dtype))(x))
          for layer in cx.LAYER_TYPES],
        Sweep(f"gradient_norms:{name}", cx.gradient_norms,
              lambda: cx.gradient_norms([cx.SelfAttentionLayer(), cx.SelfAttentionLayer()], x)),
    ]
    return cases + _transformer_cases(dtype)


def _seq2seq_cases() -> list[Sweep]:
    src, src_len, tgt = _ids([3, 4, 5], [6, 0, 0]), torch.tensor([3, 1]), _ids([1, 7], [1, 5])
    memory, state = _hard(2, 3, 8, dtype=F32), _hard(2, 4, dtype=F32)
    dead = torch.tensor([[False, False, False], [True, True, False]])

    def _attend(states: Tensor, query: Tensor) -> object:
        model = _seq2seq()
        assert model.decoder.score is not None
        keys = model.decoder.score.k_proj(states)
        return model.decoder.attend(query, s2s.Memory(states, dead, keys=keys))

    return [
        Sweep("Seq2Seq:forward:float64", s2s.Seq2Seq,
              lambda: _seq2seq().double()(src, src_len, tgt)),
        Sweep("Seq2Seq:fully-padded-sentence", s2s.Seq2Seq,
              lambda: _seq2seq()(src, torch.tensor([3, 0]), tgt),
              RAISES, raises="src_lengths[1] = 0: sentence 1 is empty"),
        Sweep("Seq2Seq:no-attention:float32", s2s.Seq2Seq,
              lambda: _seq2seq(use_attention=False)(src, src_len, tgt)),
        Sweep("greedy_decode:seq2seq", s2s.greedy_decode,
              lambda: s2s.greedy_decode(_seq2seq(), src, src_len, 4, 1, 2)),
        Sweep("Seq2Seq:no-attention:mean:float32", s2s.Seq2Seq,
              lambda: _seq2seq(use_attention=False, fixed_context="mean")(src, src_len, tgt)),
        Sweep("AttentionDecoder.attend:hard-states", s2s.AttentionDecoder,
              lambda: _attend(memory, state)),
    ]


def _training_cases() -> list[Sweep]:
    logits = _hard(2, 3, 5, dtype=F32)
    target = torch.tensor([[1, 2, 0], [0, 0, 0]])  # sentence 1 is all padding
    pairs = data.generate_pairs(6, difficulty=0)
    vocabs = (data.Vocab.build(p.src for p in pairs), data.Vocab.build(p.tgt for p in pairs))
    config = tf.TransformerConfig(len(vocabs[0]), len(vocabs[1]), d_model=8, num_heads=2,
                                  num_encoder_layers=1, num_decoder_layers=1, d_ff=16,
                                  max_len=16)
    return [
        *[Sweep(f"LabelSmoothingLoss:big:{dtype}:{reduction}", recipe.LabelSmoothingLoss,
                lambda r=reduction, d=dtype: recipe.LabelSmoothingLoss(0.1, reduction=r)(
                    logits.to(d), target))
          for reduction in ("mean", "sum", "none") for dtype in (F32, F64)],
        Sweep("LabelSmoothingLoss:all-padding:sum", recipe.LabelSmoothingLoss,
              lambda: recipe.LabelSmoothingLoss(reduction="sum")(logits, torch.zeros_like(target))),
        Sweep("LabelSmoothingLoss:all-padding:mean", recipe.LabelSmoothingLoss,
              lambda: recipe.LabelSmoothingLoss()(logits, torch.zeros_like(target))),
        Sweep("noam_lr:extremes", recipe.noam_lr,
              lambda: [recipe.noam_lr(s, d, w) for s in (1, 10**12) for d in (1, 4096)
                       for w in (1, 10**6)]),
        Sweep("noam_schedule:first-and-far", recipe.noam_schedule,
              lambda: [recipe.noam_schedule(512, 4000)(i) for i in (0, 10**9)]),
        Sweep("train_transformer:one-epoch", transformer_loop.train_transformer,
              lambda: transformer_loop.train_transformer(_seeded(lambda: tf.Transformer(config)), pairs,
                                           *vocabs, epochs=1, batch_size=4, warmup=1)),
        Sweep("train_seq2seq:one-epoch", seq2seq_loop.train_seq2seq,
              lambda: seq2seq_loop.train_seq2seq(_seeded(lambda: s2s.Seq2Seq(s2s.Seq2SeqConfig(
                  len(vocabs[0]), len(vocabs[1]), 4, 4, 4))), pairs, *vocabs, epochs=1)),
        Sweep("bleu:nothing-right", metrics.bleu, lambda: metrics.bleu(["x y"], ["a b c d"])),
        Sweep("accuracy_by_length", metrics.accuracy_by_length,
              lambda: metrics.accuracy_by_length(["a", "b c"], ["a", "b"], [1, 2])),
    ]


def _lookback(encoding: str = "sinusoidal") -> ex.LookbackModel:
    config = ex.LookbackConfig(encoding=encoding, d_model=8, max_len=8)
    model = _seeded(lambda: ex.LookbackModel(config))
    assert isinstance(model, ex.LookbackModel)
    return model.eval()


def _offset_copy() -> oc.OffsetCopyModel:
    model = _seeded(lambda: oc.OffsetCopyModel(8, 8, 2, embed_dim=8))
    assert isinstance(model, oc.OffsetCopyModel)
    return model.eval()


def _other_cases() -> list[Sweep]:
    points = torch.linspace(0, 1, 6, dtype=F64)
    tokens, _ = ex.lookback_task(3, 6)
    oc_tokens, oc_targets = oc.offset_copy_task(4)
    return [
        Sweep("fit_bandwidth:three-steps", kr.fit_bandwidth,
              lambda: kr.fit_bandwidth(kr.NadarayaWatson(0.1).double(), points * 1e4,
                                       points * 1e4, steps=3)),
        Sweep("parameter_count", mh.parameter_count, lambda: mh.parameter_count(512, 8, 64, 32)),
        Sweep("gnmt_length_penalty:lengths-and-alphas", dec.gnmt_length_penalty,
              lambda: [dec.gnmt_length_penalty(torch.arange(0, 10**6, 1000), a)
                       for a in (0.0, 0.6, 1.0, 10.0)]),
        Sweep("gnmt_length_penalty:negative-length", dec.gnmt_length_penalty,
              lambda: dec.gnmt_length_penalty(torch.tensor([-6]), 0.6),
              RAISES, raises="length must be >= 0 (a number of tokens), got -6"),
        Sweep("softmax_with_temperature:below-float32", mk.softmax_with_temperature,
              lambda: mk.softmax_with_temperature(_ones(2, 3), 1e-50),
              RAISES, raises="temperature must be finite and > 0 in torch.float32, got 1e-50"),
        Sweep("softmax_with_temperature:scores-overflow-float32", mk.softmax_with_temperature,
              lambda: mk.softmax_with_temperature(torch.tensor([1.0, 2.0]), 1e-39),
              RAISES, raises="temperature must be large enough that scores / temperature stays "
                             "finite in torch.float32, got 1e-39"),
        Sweep("key_retrieval_task:big-mapping", data.key_retrieval_task,
              lambda: data.key_retrieval_task(3, mapping=torch.eye(8, dtype=F64) * 1e4, noise=0.0)),
        Sweep("object_region_task:big-shifts", data.object_region_task,
              lambda: data.object_region_task(3, objectness=1e4, separation=-1e4).inputs),
        Sweep("median_times", ef.median_times, lambda: ef.median_times(lambda: None, repeats=1)),
        Sweep("flop_crossover", cx.flop_crossover,
              lambda: [cx.flop_crossover(t, 512) for t in ("recurrent", "convolutional")]),
        Sweep("layer_flops", cx.layer_flops,
              lambda: [cx.layer_flops(t, 10**6, 4096) for t in cx.LAYER_TYPES]),
        Sweep("measured_crossover", cx.measured_crossover,
              lambda: cx.measured_crossover([2, 4, 8], [1e-9, 1e-6, 1.0], [1e-6, 1e-6, 1e-6])),
        *[Sweep(f"LookbackModel:{e}", ex.LookbackModel,
                lambda e=e: (_lookback(e)(tokens, need_weights=True), _lookback(e).scores(tokens)))
          for e in ex.ENCODINGS],
        Sweep("mean_score_by_offset", ex.mean_score_by_offset,
              lambda: ex.mean_score_by_offset(_lookback("rope"), 6, n=4)),
        Sweep("lookback_accuracy", ex.lookback_accuracy,
              lambda: ex.lookback_accuracy(_lookback(), 6, n=4)),
        Sweep("train_lookback:two-steps", ex.train_lookback,
              lambda: ex.train_lookback(_lookback(), length=6, steps=2, batch_size=4)),
        Sweep("OffsetCopyModel", oc.OffsetCopyModel, lambda: _offset_copy()(oc_tokens)),
        Sweep("attention_by_offset", oc.attention_by_offset,
              lambda: oc.attention_by_offset(_offset_copy()(oc_tokens)[1])),
        Sweep("offset_accuracy", oc.offset_accuracy,
              lambda: oc.offset_accuracy(_offset_copy(), oc_tokens, oc_targets)),
        Sweep("fit_offset_copy:two-steps", oc.fit_offset_copy,
              lambda: oc.fit_offset_copy(_offset_copy(), oc_tokens, oc_targets, steps=2,
                                         batch_size=2)),
    ]


SWEEP: list[Sweep] = [
    *_sweep_for(F32), *_sweep_for(F64), *_seq2seq_cases(), *_training_cases(), *_other_cases(),
]

# Public names of attnlib that compute no numbers, and so are not swept.
NOT_SWEPT = {
    "Masks": "a dataclass of bool masks (make_masks builds it)",
    "TransformerConfig": "a configuration; Transformer is swept",
    "causal_mask": "returns a bool mask",
    "fix_cpu_kernels": "chooses the CPU kernels PyTorch uses",
    "leave_one_out_mask": "returns a bool mask",
    "lengths_to_mask": "returns a bool mask",
    "padding_mask": "returns a bool mask",
    "make_masks": "returns bool masks",
    "reproducible": "sets seeds and the thread count",
    "show_source": "returns source text",
    "table": "formats text",
}


def _sweep_params() -> list[object]:
    return [
        pytest.param(case, id=case.id, marks=pytest.mark.xfail(
            strict=True, raises=AssertionError,
            reason=f"returns NaN, not fixable here: {case.known_nan}"))
        if case.known_nan else pytest.param(case, id=case.id)
        for case in SWEEP
    ]


@pytest.mark.parametrize("case", _sweep_params())
def test_no_nan_for_finite_input(case: Sweep) -> None:
    """FINITE: every number returned is finite. NO_NAN: -inf allowed where it is the defined
    value, NaN never. RAISES: a ValueError whose message holds ``case.raises``."""
    if case.outcome == RAISES:
        with pytest.raises(ValueError, match=re.escape(case.raises)):
            case.call()
        return
    numbers = _numbers(case.call())
    assert numbers, f"{case.id} returned no number to check"
    for t in numbers:
        assert not bool(torch.isnan(t).any()), f"{case.id} returned NaN"
        if case.outcome == FINITE:
            assert bool(torch.isfinite(t).all()), f"{case.id} returned an infinity"


def test_sweep_covers_every_public_name_that_computes() -> None:
    assert len({case.id for case in SWEEP}) == len(SWEEP)
    swept = {name for name in attnlib.__all__
             if any(case.target is getattr(attnlib, name) for case in SWEEP)}
    assert set(attnlib.__all__) - swept == set(NOT_SWEPT)
    modules = {getattr(case.target, "__module__", "") for case in SWEEP}
    # plot draws, and the corpus modules of attnlib.data handle words and integer ids: none of
    # them computes a floating-point number
    words = {"attnlib.data.vocab", "attnlib.data.batching", "attnlib.data.corpus",
             "attnlib.data.grammar"}
    assert modules >= MODULES - {"attnlib.book.plot"} - words


def test_lookback_accuracy_by_position_has_no_nan_marker() -> None:
    """Positions with no target (the first ``shift``) are left out, not marked with NaN."""
    model = _lookback()
    by_position = ex.lookback_accuracy_by_position(model, 6, shift=2, n=4)
    assert by_position.shape == (4,) and bool(torch.isfinite(by_position).all())


# ---------------------------------------------------------------------------------------------
# Properties over random shapes
# ---------------------------------------------------------------------------------------------


@st.composite
def hard_scores(draw: st.DrawFn) -> tuple[Tensor, Tensor]:
    """Scores (B, L, S) of up to +-1e4 in float32 or float64, and a mask with dead rows."""
    B, L, S = draw(st.integers(1, 3)), draw(st.integers(1, 5)), draw(st.integers(1, 6))
    dtype = draw(st.sampled_from([F32, F64]))
    scale = draw(st.sampled_from([1.0, 1e4]))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**31 - 1)))
    scores = (torch.randn(B, L, S, generator=gen) * scale).to(dtype)
    mask = torch.rand(B, L, S, generator=gen) < draw(st.sampled_from([0.0, 0.3, 0.8, 1.0]))
    return scores, mask


@PROPERTY
@given(hard_scores())
def test_masked_softmax_rows_are_distributions_or_zero(case: tuple[Tensor, Tensor]) -> None:
    scores, mask = case
    weights = mk.masked_softmax(scores, mask)
    assert bool(torch.isfinite(weights).all())
    sums = weights.sum(-1).double()
    alive = mask.any(-1)
    assert torch.allclose(sums[alive], torch.ones_like(sums[alive]), atol=1e-5)
    assert bool((sums[~alive] == 0).all())


@PROPERTY
@given(hard_scores(), st.integers(1, 4))
def test_online_softmax_is_finite_and_normalised(case: tuple[Tensor, Tensor], block: int) -> None:
    scores, _ = case
    weights = ef.online_softmax(scores, block_size=block)
    assert bool(torch.isfinite(weights).all())
    assert torch.allclose(weights.sum(-1).double(), torch.ones(scores.shape[:-1], dtype=F64),
                          atol=1e-5)


@PROPERTY
@given(hard_scores(), st.integers(1, 8), st.booleans())
def test_attention_paths_are_finite_with_dead_rows(
    case: tuple[Tensor, Tensor], E: int, causal: bool
) -> None:
    scores, mask = case
    B, L, S = scores.shape
    gen = torch.Generator().manual_seed(L * 100 + S)
    q, k, v = (torch.randn(B, n, E, generator=gen).to(scores.dtype) * 100 for n in (L, S, S))
    fused, (explicit, weights) = _both_paths(q, k, v, None if causal else mask, is_causal=causal)
    assert isinstance(fused, Tensor)
    for t in (fused, explicit, weights, ef.naive_attention(q, k, v, is_causal=causal),
              ef.tiled_attention(q, k, v, is_causal=causal, block_size_q=2, block_size_k=3)):
        assert bool(torch.isfinite(t).all())


@PROPERTY
@given(st.lists(st.integers(0, 4), min_size=1, max_size=3), st.integers(1, 3),
       st.sampled_from([F32, F64]), st.booleans())
def test_multihead_attention_is_finite_for_any_padding(
    lengths: list[int], L: int, dtype: torch.dtype, causal: bool
) -> None:
    B, S = len(lengths), 4
    gen = torch.Generator().manual_seed(sum(lengths) + L)
    q = (torch.randn(B, L, 8, generator=gen) * 1e4).to(dtype)
    kv = (torch.randn(B, S, 8, generator=gen) * 1e4).to(dtype)
    padding = mk.lengths_to_mask(torch.tensor(lengths), S)  # length 0: a fully padded sequence
    output, weights = _mha(dtype)(q, kv, kv, key_padding_mask=padding,
                                  is_causal=causal and L == S, need_weights=True)
    assert weights is not None
    assert bool(torch.isfinite(output).all()) and bool(torch.isfinite(weights).all())
    assert bool((weights.sum(-1)[torch.tensor(lengths) == 0] == 0).all())
