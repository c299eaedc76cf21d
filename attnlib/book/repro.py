"""Reproducibility: one call that fixes seeds and the thread count, one that fixes CPU kernels.

Every chapter's first code cell calls :func:`reproducible`. The thread count comes from the
``ATTNLIB_NUM_THREADS`` environment variable when it is set (the make targets set it, and the
reproducibility sweep varies it), and is 2 otherwise, so a notebook prints the same numbers on
a 2-core CI machine and on a 16-core laptop.

The chapters that train translation models (4 and 7) also call :func:`fix_cpu_kernels` first:
training is chaotic, so the last bit of one rounding early on decides later translations, and
PyTorch's CPU kernels and MKL's matrix products round float32 sums differently at each vector
width.
"""

from __future__ import annotations

import ctypes
import os
import random
from pathlib import Path

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


# MKL's conditional-numerical-reproducibility branches (mkl_cbwr.h), as mkl_cbwr_get returns them.
_MKL_BRANCHES = {1: "automatic", 2: "AUTO", 3: "COMPATIBLE", 4: "SSE2", 6: "SSSE3", 7: "SSE4_1",
                 8: "SSE4_2", 9: "AVX", 10: "AVX2", 11: "AVX512_MIC", 12: "AVX512",
                 13: "AVX512_MIC_E1", 14: "AVX512_E1"}
_MKL_CBWR_BRANCH = 1  # mkl_cbwr_get's argument that asks for the branch


def _mkl_code_path() -> str | None:
    """The code path MKL's matrix products take in this process, as an ``MKL_CBWR`` name.

    ``"automatic"`` means MKL picks the widest path the CPU has. Asking fixes the answer: MKL
    reads ``MKL_CBWR`` once, at its first matrix product or at this question, whichever comes
    first. ``None`` where this PyTorch has no MKL (ARM, macOS builds).
    """
    libs = sorted(Path(torch.__file__).parent.joinpath("lib").glob("libtorch_cpu.*"))
    if not libs:
        return None
    try:
        get = ctypes.CDLL(str(libs[0])).mkl_serv_cbwr_get
    except (OSError, AttributeError):
        return None
    get.restype, get.argtypes = ctypes.c_int, [ctypes.c_int]
    code = get(_MKL_CBWR_BRANCH)
    return _MKL_BRANCHES.get(code, f"unknown ({code})")


def fix_cpu_kernels(cpuinfo: str = "/proc/cpuinfo") -> str:
    """Make PyTorch and MKL run the same CPU code on every machine that can: AVX2 where possible.

    PyTorch picks the widest vector instructions a CPU has (AVX-512 on some, AVX2 on others),
    and each width rounds float32 sums in its own order. This sets ``ATEN_CPU_CAPABILITY`` to
    ``avx2`` where the CPU has AVX2 and FMA (most x86-64 CPUs of the last decade; ``cpuinfo``
    lists the flags on Linux), else to ``default``, the kernels without vector instructions.
    Matrix products do not go through those kernels but through MKL, which chooses its own code
    path per CPU; ``MKL_CBWR`` pins it, to ``AVX2`` where the CPU has AVX2 and FMA, else to
    ``COMPATIBLE``. Values of either variable already in the environment are replaced: the
    stored outputs were computed under these settings, and under no other would the chapters
    print them. Worker processes started afterwards inherit the choice through the environment.

    PyTorch and MKL each read their variable once, when they first need to know; importing
    torch and attnlib does not ask. Call this before any tensor computation, at the top of a
    fresh process.

    Args:
        cpuinfo: the file that lists the CPU's flags; where it does not exist, ``default``.

    Returns:
        The name of PyTorch's kernels in force, ``"avx2"`` or ``"default"``.

    Raises:
        RuntimeError: if PyTorch or MKL has already chosen another code path (a tensor was
            computed before the call): restart the process and call this first.
    """
    if not isinstance(cpuinfo, str | os.PathLike):
        raise TypeError(f"cpuinfo must be a path (str or os.PathLike), got "
                        f"{type(cpuinfo).__name__}")
    flags = set(open(cpuinfo).read().split()) if os.path.exists(cpuinfo) else set()
    vector = {"avx2", "fma"} <= flags
    wanted, wanted_mkl = ("avx2", "AVX2") if vector else ("default", "COMPATIBLE")
    before = {name: os.environ.get(name) for name in ("ATEN_CPU_CAPABILITY", "MKL_CBWR")}
    os.environ["ATEN_CPU_CAPABILITY"] = wanted
    os.environ["MKL_CBWR"] = wanted_mkl
    in_force = torch.backends.cpu.get_cpu_capability().lower()
    mkl = _mkl_code_path()
    late = (f"PyTorch already runs its {in_force!r} CPU kernels, not {wanted!r}"
            if in_force != wanted else
            f"MKL already runs its {mkl!r} code path, not {wanted_mkl!r}"
            if mkl is not None and mkl != wanted_mkl else None)
    if late is not None:
        # this process keeps its code paths: leave the environment its child processes
        # inherit as it was, or they would compute differently from it
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        raise RuntimeError(f"{late}: call fix_cpu_kernels() before any tensor is computed, "
                           f"at the top of a fresh process")
    return wanted
