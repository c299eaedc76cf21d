"""Reproducibility: one call that fixes seeds and the thread count, one that fixes CPU kernels.

Every chapter's first code cell calls :func:`reproducible`. The thread count comes from the
``ATTNLIB_NUM_THREADS`` environment variable when it is set (the make targets set it, and the
reproducibility sweep varies it), and is 2 otherwise, so a notebook prints the same numbers on
a 2-core CI machine and on a 16-core laptop.

The chapters that train translation models (4 and 7) also call :func:`fix_cpu_kernels` first:
training is chaotic, so the last bit of one rounding early on decides later translations, and
PyTorch's CPU kernels round float32 sums differently at each vector width.
"""

from __future__ import annotations

import os
import random

import numpy as np
import torch

from attnlib._checks import check_int, positive_int_from_env

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
    check_int("seed", seed, minimum=0, maximum=2**32 - 1)  # NumPy's seeds
    if num_threads is None:
        num_threads = positive_int_from_env("ATTNLIB_NUM_THREADS", DEFAULT_NUM_THREADS)
    check_int("num_threads", num_threads, minimum=1)
    random.seed(seed)
    # Readers' cells may use NumPy's global generator, so it is seeded too.
    np.random.seed(seed)  # noqa: NPY002
    torch.manual_seed(seed)
    torch.set_num_threads(num_threads)
    return num_threads


def fix_cpu_kernels(cpuinfo: str = "/proc/cpuinfo") -> str:
    """Make PyTorch run the same CPU kernels on every machine that can: AVX2 where possible.

    PyTorch picks the widest vector instructions a CPU has (AVX-512 on some, AVX2 on others),
    and each width rounds float32 sums in its own order. This sets ``ATEN_CPU_CAPABILITY`` to
    ``avx2`` where the CPU has AVX2 and FMA (most x86-64 CPUs of the last decade; ``cpuinfo``
    lists the flags on Linux), else to ``default``, the kernels without vector instructions.
    Worker processes started afterwards inherit the choice through the environment.

    PyTorch reads the variable once, when it first needs to know; importing torch and attnlib
    does not ask. Call this before any tensor computation, at the top of a fresh process.

    Args:
        cpuinfo: the file that lists the CPU's flags; where it does not exist, ``default``.

    Returns:
        The name of the kernels in force, ``"avx2"`` or ``"default"``.

    Raises:
        RuntimeError: if PyTorch has already chosen other kernels (a tensor was computed
            before the call): restart the process and call this first.
    """
    if not isinstance(cpuinfo, str | os.PathLike):
        raise TypeError(f"cpuinfo must be a path (str or os.PathLike), got "
                        f"{type(cpuinfo).__name__}")
    flags = set(open(cpuinfo).read().split()) if os.path.exists(cpuinfo) else set()
    wanted = "avx2" if {"avx2", "fma"} <= flags else "default"
    os.environ["ATEN_CPU_CAPABILITY"] = wanted
    in_force = torch.backends.cpu.get_cpu_capability().lower()
    if in_force != wanted:
        raise RuntimeError(f"PyTorch already runs its {in_force!r} CPU kernels, not {wanted!r}: "
                           f"call fix_cpu_kernels() before any tensor is computed, at the top "
                           f"of a fresh process")
    return wanted
