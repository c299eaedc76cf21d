"""attnlib: the library behind the book of executable notes on attention mechanisms.

Importing attnlib has no side effects: no prints, no seeding, no downloads, no global state.
Call :func:`attnlib.reproducible` at the top of a notebook to fix seeds and thread count.
Plotting lives in :mod:`attnlib.plot` (the only module that imports matplotlib).
"""

from attnlib.attention import scaled_dot_product_attention
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
from attnlib.repro import reproducible
from attnlib.scoring import (
    AdditiveScore,
    BilinearScore,
    DotScore,
    KeyValueAttention,
    ScaledDotScore,
    hard_attention,
)
from attnlib.show import show_source, table

__all__ = [
    "AdditiveScore",
    "BilinearScore",
    "DotScore",
    "KeyValueAttention",
    "NadarayaWatson",
    "ScaledDotScore",
    "causal_mask",
    "fit_bandwidth",
    "float_mask",
    "hard_attention",
    "kernel_scores",
    "leave_one_out_mask",
    "lengths_to_mask",
    "make_regression_data",
    "masked_softmax",
    "nadaraya_watson",
    "padding_mask",
    "reproducible",
    "scaled_dot_product_attention",
    "show_source",
    "softmax_with_temperature",
    "table",
]
__version__ = "0.1.0"
