"""Reproducibility: one call that fixes seeds and the thread count, one that fixes CPU kernels.

Every chapter's first code cell calls :func:`reproducible`. The thread count comes from the
``ATTNLIB_NUM_THREADS`` environment variable when it is set (the make targets set it, and the
reproducibility sweep varies it), and is 2 otherwise, so a notebook prints the same numbers on
a 2-core CI machine and on a 16-core laptop.

The chapters that train models whose every printed number depends on training (4, 7 and 10)
also call :func:`fix_cpu_kernels` first: it runs the same CPU code on Intel and AMD processors.
"""

from __future__ import annotations

import ctypes
import os
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from attnlib._checks import (
    check_choice,
    check_flag,
    check_instance,
    check_int,
    positive_int_from_env,
)

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

#: The code path the stored outputs of the chapters that train were computed on.
BOOK_PATH = ("avx2", "COMPATIBLE")


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


def _cpu(cpuinfo: str | os.PathLike[str]) -> tuple[str, bool]:
    """The CPU's vendor (``vendor_id``) and whether it has AVX2 and FMA, from ``cpuinfo``.

    ``ATTNLIB_CPU_VENDOR`` replaces the vendor (``make reproduce`` sets it to run an Intel
    machine's chapters as an AMD machine would run them). Where the file does not exist
    (macOS, Windows), PyTorch's own CPU detection answers for AVX2, and the vendor is unknown.
    """
    if os.path.exists(cpuinfo):
        text = Path(cpuinfo).read_text(errors="replace")
        vendor = next((line.split(":", 1)[1].strip() for line in text.splitlines()
                       if line.startswith("vendor_id") and ":" in line), "unknown")
        vector = {"avx2", "fma"} <= set(text.split())
    else:
        vendor, vector = "unknown", bool(torch.cpu._is_avx2_supported())
    return os.environ.get("ATTNLIB_CPU_VENDOR") or vendor, vector


def set_onednn(enabled: bool) -> None:
    """Turn oneDNN (PyTorch's convolutions and some products) on or off in this process."""
    check_flag("enabled", enabled)
    torch.backends.mkldnn.set_flags(  # type: ignore[no-untyped-call]
        _enabled=enabled, _fp32_precision=None)


def mkl_branch_taken(vendor: str, requested: str) -> str:
    """The branch MKL runs when ``MKL_CBWR`` asks for ``requested`` on a ``vendor`` CPU.

    MKL honours an instruction-set branch (``AVX2``, ``AVX512``, ...) only on Intel processors;
    elsewhere it runs its ``AUTO`` path, which differs from Intel's in the last bits. Only
    ``COMPATIBLE`` (and ``AUTO``) mean the same on every vendor's processor.

    Args:
        vendor: the CPU's ``vendor_id`` (``"GenuineIntel"``, ``"AuthenticAMD"``, ...).
        requested: an ``MKL_CBWR`` branch name.

    Raises:
        TypeError: if either is not a string.
        ValueError: if ``requested`` is not a branch MKL knows.
    """
    check_instance("vendor", vendor, str, "a string")
    check_instance("requested", requested, str, "a string")
    check_choice("requested", requested, [b for b in _MKL_BRANCHES.values() if b != "automatic"])
    if vendor == "GenuineIntel" or requested in ("COMPATIBLE", "AUTO"):
        return requested
    return "AUTO"


@dataclass(frozen=True)
class CodePath:
    """The CPU code paths in force after :func:`fix_cpu_kernels`.

    Attributes:
        kernels: PyTorch's own kernels (``ATEN_CPU_CAPABILITY``): ``"avx2"`` or ``"default"``.
        mkl: MKL's branch for matrix products, or ``None`` where this PyTorch has no MKL.
        onednn: whether oneDNN (convolutions) is on; :func:`fix_cpu_kernels` turns it off.
        note: empty where these are the paths the book's outputs were computed on, else the
            sentence the chapter printed about them.
    """

    kernels: str
    mkl: str | None
    onednn: bool
    note: str

    @property
    def pinned(self) -> bool:
        """Whether the stored outputs of the book were computed on these paths."""
        return not self.note

    def __str__(self) -> str:
        mkl = "no MKL" if self.mkl is None else f"MKL {self.mkl}"
        return f"PyTorch {self.kernels} kernels, {mkl}, oneDNN {'on' if self.onednn else 'off'}"


def fix_cpu_kernels(cpuinfo: str | os.PathLike[str] = "/proc/cpuinfo") -> CodePath:
    """Run the same CPU code on every x86-64 machine that can, Intel or AMD; say so where not.

    Training is chaotic: the last bit of one rounding early on decides later translations, and
    three libraries round float32 sums in a CPU's own way:

    - PyTorch's own kernels use the widest vector instructions a CPU has (AVX-512 on some,
      AVX2 on others). ``ATEN_CPU_CAPABILITY=avx2`` pins them where the CPU has AVX2 and FMA
      (x86-64 CPUs of the last decade, Intel and AMD); ``default`` elsewhere.
    - MKL computes the matrix products and picks its own path per CPU, and honours a pinned
      instruction set only on Intel processors (:func:`mkl_branch_taken`). ``MKL_CBWR`` is set
      to ``COMPATIBLE``, the branch Intel documents as giving the same results on Intel and
      compatible processors.
    - oneDNN computes convolutions with code chosen per CPU; it is turned off, so that they go
      through PyTorch's own unfolding and MKL's products.

    Values of either variable already in the environment are replaced. Worker processes
    started afterwards inherit the variables; :func:`~attnlib.train.runs.train_runs` passes the
    oneDNN switch on to its workers. PyTorch and MKL each read their variable once, when they
    first need to know: call this before any tensor computation, at the top of a fresh process.

    Where a path cannot be pinned (no AVX2, no MKL as on ARM, or a tensor was computed before
    the call), nothing fails: the call prints once which paths run and that the numbers may
    differ from the book's, and leaves the environment as it was.

    Args:
        cpuinfo: the file that lists the CPU's vendor and flags (Linux); where it does not
            exist, PyTorch's CPU detection says whether there is AVX2.

    Returns:
        The code paths in force (:class:`CodePath`).
    """
    if not isinstance(cpuinfo, str | os.PathLike):
        raise TypeError(f"cpuinfo must be a path (str or os.PathLike), got "
                        f"{type(cpuinfo).__name__}")
    vendor, vector = _cpu(cpuinfo)
    wanted = "avx2" if vector else "default"
    before = {name: os.environ.get(name) for name in ("ATEN_CPU_CAPABILITY", "MKL_CBWR")}
    os.environ["ATEN_CPU_CAPABILITY"] = wanted
    os.environ["MKL_CBWR"] = mkl_branch_taken(vendor, BOOK_PATH[1])
    set_onednn(False)
    kernels = torch.backends.cpu.get_cpu_capability().lower()
    mkl = _mkl_code_path()
    if (kernels, mkl) == BOOK_PATH:
        return CodePath(kernels, mkl, False, "")
    if kernels != wanted or (mkl is not None and mkl != os.environ["MKL_CBWR"]):
        # this process keeps its code paths: leave the environment its child processes
        # inherit as it was, or they would compute differently from it
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    path = CodePath(kernels, mkl, False, "")
    note = (f"This machine runs {path}; the book's outputs were computed with PyTorch's avx2 "
            f"kernels and MKL's COMPATIBLE branch, so the numbers below may differ from the "
            f"book's in the last digits, and after training in more.")
    print(note)
    return CodePath(kernels, mkl, False, note)
