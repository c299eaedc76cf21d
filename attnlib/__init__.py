"""attnlib: the library behind the book of executable notes on attention mechanisms.

The package is built in layers, from the ground up; a module imports only from its own layer
or from the layers below it, never from one above, and no imports go round in a circle
(tests/test_layers.py reads every import and fails on an arrow that points up):

================  ===========================================================================
``_checks``       argument checks: one clear error for a bad input, and ``check_qkv``,
                  the one check of the query, key, value and mask of every attention function
``book``          what the chapters need to display: ``plot``, ``show`` (the listings),
                  ``progress`` (progress bars), ``repro`` (seeds, threads, CPU kernels)
``data``          the toy corpora and tasks, vocabularies, batching; it needs only
                  ``_checks``, and nothing below ``train`` needs it
``blocks``        the attention building blocks, each tested against its twin (PyTorch, or
                  its other form): ``attention``, ``masking``, ``scoring``, ``multihead``,
                  ``positional``, ``rope_scaling``, ``alibi``, ``gqa``, ``sliding_window``,
                  ``linear_attention``, ``efficient``, ``latent_attention``,
                  ``gated_attention``, ``delta_rule``
``models``        models made of blocks: ``kernel_regression``, ``seq2seq``, ``transformer``
                  (a package: config, masks, layers, stacks, model), ``decoder_lm``,
                  ``kv_cache``, ``quantized_cache``, ``paged_cache``, ``mixer_lm``
``train``         training, decoding and evaluation: ``seq2seq_loop``, ``transformer_loop``,
                  ``recipe`` (label smoothing, the warm-up schedule), ``metrics``,
                  ``translation``, ``decoding``, ``speculative``, ``comparison``, ``runs``
``experiments``   the tasks and measurements of single chapters: ``offset_copy``,
                  ``extrapolation``, ``long_context``, ``complexity``, ``lm_tasks``,
                  ``cache_memory``, ``memory_wall``, ``latent_cache``, ``sinks``, ``recall``
================  ===========================================================================

So the order is ``_checks < book < data < blocks < models < train < experiments``: ``data``
sits below ``blocks`` in that line, though no block uses it. This module, above every layer,
keeps the short names the chapters use (``attnlib.scaled_dot_product_attention``,
``attnlib.Transformer``, ...).

Importing attnlib has no side effects: no prints, no seeding, no downloads, no global state.
Call :func:`~attnlib.book.repro.reproducible` at the top of a notebook to fix seeds and thread count.
Plotting lives in :mod:`attnlib.book.plot` (the only module that imports matplotlib).
"""

from attnlib.blocks.attention import scaled_dot_product_attention
from attnlib.blocks.masking import (
    causal_mask,
    float_mask,
    lengths_to_mask,
    masked_softmax,
    padding_mask,
    softmax_with_temperature,
)
from attnlib.blocks.multihead import (
    MultiHeadAttention,
    copy_from_torch,
    merge_heads,
    parameter_count,
    split_heads,
)
from attnlib.blocks.positional import (
    LearnedPositionalEmbedding,
    RotaryPositionalEmbedding,
    SinusoidalPositionalEncoding,
    relative_shift_matrix,
    sinusoidal_encoding,
)
from attnlib.blocks.scoring import (
    AdditiveScore,
    AttentionPooling,
    BilinearScore,
    DotScore,
    KeyValueAttention,
    ScaledDotScore,
    hard_attention,
)
from attnlib.book.repro import fix_cpu_kernels, reproducible
from attnlib.book.show import show_source, table
from attnlib.models.kernel_regression import (
    NadarayaWatson,
    fit_bandwidth,
    kernel_scores,
    leave_one_out_mask,
    make_regression_data,
    nadaraya_watson,
)
from attnlib.models.transformer.config import TransformerConfig
from attnlib.models.transformer.layers import DecoderLayer, EncoderLayer, FeedForward
from attnlib.models.transformer.masks import Masks, make_masks
from attnlib.models.transformer.model import Transformer
from attnlib.train.decoding import beam_search, gnmt_length_penalty
from attnlib.train.recipe import LabelSmoothingLoss, noam_lr, noam_schedule
from attnlib.train.transformer_loop import train_transformer

__all__ = [
    "AdditiveScore",
    "AttentionPooling",
    "BilinearScore",
    "DecoderLayer",
    "DotScore",
    "EncoderLayer",
    "FeedForward",
    "KeyValueAttention",
    "LabelSmoothingLoss",
    "LearnedPositionalEmbedding",
    "Masks",
    "MultiHeadAttention",
    "NadarayaWatson",
    "RotaryPositionalEmbedding",
    "ScaledDotScore",
    "SinusoidalPositionalEncoding",
    "Transformer",
    "TransformerConfig",
    "beam_search",
    "causal_mask",
    "copy_from_torch",
    "fit_bandwidth",
    "fix_cpu_kernels",
    "float_mask",
    "gnmt_length_penalty",
    "hard_attention",
    "kernel_scores",
    "leave_one_out_mask",
    "lengths_to_mask",
    "make_masks",
    "make_regression_data",
    "masked_softmax",
    "merge_heads",
    "nadaraya_watson",
    "noam_lr",
    "noam_schedule",
    "padding_mask",
    "parameter_count",
    "relative_shift_matrix",
    "reproducible",
    "scaled_dot_product_attention",
    "show_source",
    "sinusoidal_encoding",
    "softmax_with_temperature",
    "split_heads",
    "table",
    "train_transformer",
]
__version__ = "0.1.0"
