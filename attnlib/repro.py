"""Reproducibility: one call that fixes seeds and the thread count.

Every chapter's first code cell calls :func:`reproducible`. The thread count comes from the
``ATTNLIB_NUM_THREADS`` environment variable when it is set (the make targets set it, and the
reproducibility sweep varies it), and is 2 otherwise, so a notebook prints the same numbers on
a 2-core CI machine and on a 16-core laptop.
"""

from __future__ import annotations

import random

import numpy as np
import torch

from attnlib._checks import positive_int_from_env

DEFAULT_NUM_THREADS = 2


def reproducible(seed: int = 0, num_threads: int | None = None) -> int:
    """Seed Python, NumPy and PyTorch and fix PyTorch's intra-op thread count.

    Args:
        seed: the seed for :mod:`random`, NumPy's global generator and ``torch.manual_seed``.
        num_threads: threads for PyTorch's CPU kernels. ``None`` reads ``ATTNLIB_NUM_THREADS``,
            falling back to 2.

    Returns:
        The thread count in force.

    Raises:
        ValueError: if ``num_threads`` (or ``ATTNLIB_NUM_THREADS``) is not a positive integer.
    """
    if num_threads is None:
        num_threads = positive_int_from_env("ATTNLIB_NUM_THREADS", DEFAULT_NUM_THREADS)
    if num_threads < 1:
        raise ValueError(f"num_threads must be a positive integer, got {num_threads}")
    random.seed(seed)
    # Readers' cells may use NumPy's global generator, so it is seeded too.
    np.random.seed(seed)  # noqa: NPY002
    torch.manual_seed(seed)
    torch.set_num_threads(num_threads)
    return num_threads
