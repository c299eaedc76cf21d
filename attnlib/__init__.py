"""attnlib: the library behind the book of executable notes on attention mechanisms.

Importing attnlib has no side effects: no prints, no seeding, no downloads, no global state.
Call :func:`attnlib.reproducible` at the top of a notebook to fix seeds and thread count.
Plotting lives in :mod:`attnlib.plot` (the only module that imports matplotlib).
"""

from attnlib.kernel_regression import (
    NadarayaWatson,
    fit_bandwidth,
    kernel_scores,
    leave_one_out_mask,
    make_regression_data,
    nadaraya_watson,
)
from attnlib.repro import reproducible
from attnlib.show import show_source, table

__all__ = [
    "NadarayaWatson",
    "fit_bandwidth",
    "kernel_scores",
    "leave_one_out_mask",
    "make_regression_data",
    "nadaraya_watson",
    "reproducible",
    "show_source",
    "table",
]
__version__ = "0.1.0"
