"""attnlib: the library behind the book of executable notes on attention mechanisms.

Importing attnlib has no side effects: no prints, no seeding, no downloads, no global state.
Call :func:`attnlib.reproducible` at the top of a notebook to fix seeds and thread count.
Plotting lives in :mod:`attnlib.plot` (the only module that imports matplotlib).
"""

from attnlib.attention import scaled_dot_product_attention
from attnlib.decoding import beam_search, gnmt_length_penalty
from attnlib.kernel_regression import (
    NadarayaWatson,
    fit_bandwidth,
    kernel_scores,
    leave_one_out_mask,
    make_regression_data,
    nadaraya_watson,
)
from attnlib.masking import (
    causal_mask,
    float_mask,
    lengths_to_mask,
    masked_softmax,
    padding_mask,
    softmax_with_temperature,
)
from attnlib.multihead import (
    MultiHeadAttention,
    copy_from_torch,
    merge_heads,
    parameter_count,
    split_heads,
)
from attnlib.positional import (
    LearnedPositionalEmbedding,
    RotaryPositionalEmbedding,
    SinusoidalPositionalEncoding,
    relative_shift_matrix,
    sinusoidal_encoding,
)
from attnlib.repro import reproducible
from attnlib.scoring import (
    AdditiveScore,
    AttentionPooling,
    BilinearScore,
    DotScore,
    KeyValueAttention,
    ScaledDotScore,
    hard_attention,
)
from attnlib.show import show_source, table
from attnlib.training import LabelSmoothingLoss, noam_lr, noam_schedule, train_transformer
from attnlib.transformer import (
    DecoderLayer,
    EncoderLayer,
    FeedForward,
    Masks,
    Transformer,
    TransformerConfig,
    make_masks,
)

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
