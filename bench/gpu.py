"""attnlib's Triton FlashAttention kernel against PyTorch's on a CUDA GPU: time and TFLOP/s.

For sequence lengths L = S from 512 to 16384, head sizes E = 64 and 128, causal and not, float16
and bfloat16, it times three forward passes of the same attention, (B, H, L, E), on the problem
sizes of the FlashAttention-2 paper's benchmarks: 16384 tokens per batch (B = 16384 / L) and a
hidden size of 2048 (H = 2048 / E), so that every case has the same number of query tiles and
even L = 512 fills the GPU:

- ``triton``: ``attnlib.blocks.triton_flash.triton_flash_attention`` (compiled, not interpreted)
  with its default tiles, 64 queries by 64 keys, 4 warps: the configuration of chapter 8's
  listing, which ptxas compiles for sm_90 without spilling registers at E = 64 and 128. Nothing
  is autotuned;
- ``sdpa-flash``: ``F.scaled_dot_product_attention`` restricted to its FlashAttention backend;
- ``sdpa-math``: the same restricted to its math backend (the formula, scores in memory).

Times come from ``triton.testing.do_bench``: after warm-up calls (compilation, allocator), each
call is timed with its own pair of CUDA events, the GPU's L2 cache is flushed (a 256 MB write)
before each, and the calls are queued ahead of the GPU, so that the host's work (the wrapper's
checks, Triton's launcher) overlaps the GPU's and is not what is timed, except where one call is
shorter than its launch. The median over the calls (about 100 ms of them) is kept: the time per
call. The arithmetic counted is the useful work, as FlashAttention's benchmarks count it: the
two matrix products, ``4 B H L S E`` floating-point operations, half of it with the causal mask
(the exact causal count has L (L + 1) / 2 pairs; sdpa-math computes all L S scores even then,
and the Triton kernel computes every tile up to the diagonal, (n + 1) / (2 n) of the n x n
tiles). TFLOP/s is that over the median time, and the fraction of the device's peak uses the
dense float16/bfloat16 tensor-core peak of the device (the table ``PEAKS``, matched on the full
name ``torch.cuda.get_device_name()`` returns, or ``--peak-tflops``).

Every output is compared with ``sdpa-flash``'s; the largest difference is written beside the
time, and a difference above 1e-2 (float16) or 2e-2 (bfloat16) makes the run exit with status 1.
A case that runs out of GPU memory (sdpa-math holds several float32 L x S matrices) gets a row
with empty times and ``out of memory`` in its note; the run goes on.

It writes ``bench/results/gpu-<device>-<date>.csv`` row by row as the cases are measured
(bench/results/README.md says what a row holds), which chapter 8 reads. Without a CUDA device of
compute capability 8.0 or later (sdpa's FlashAttention backend and bfloat16 products need it) it
refuses to run: the numbers are such a GPU's.

    python bench/gpu.py             # the whole grid (a few minutes on an H100)
    python bench/gpu.py --quick     # L = 512 and 1024 only, short timing: does it run?
"""

from __future__ import annotations

import argparse
import csv
import datetime
import math
import re
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

RESULTS = Path(__file__).resolve().parent / "results"
LENGTHS = (512, 1024, 2048, 4096, 8192, 16384)
HEAD_SIZES = (64, 128)
DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}
TOKENS, HIDDEN = 16384, 2048  # B = TOKENS / L, H = HIDDEN / E, as FlashAttention-2 benchmarks
#: The largest difference from sdpa-flash's output that a run accepts, per dtype.
TOLERANCES = {"float16": 1e-2, "bfloat16": 2e-2}
#: Dense float16/bfloat16 tensor-core peaks with float32 accumulation (TFLOP/s, no sparsity),
#: from NVIDIA's data sheets, keyed by the full name torch.cuda.get_device_name() returns.
#: Other devices: pass --peak-tflops. Cards before compute capability 8.0 (V100, T4) are not
#: listed: the script refuses them.
PEAKS = {
    "NVIDIA H200": 989.4,  # H200 SXM
    "NVIDIA H100 80GB HBM3": 989.4,  # H100 SXM
    "NVIDIA H100 PCIe": 756.0,
    "NVIDIA A100-SXM4-80GB": 312.0,
    "NVIDIA A100-SXM4-40GB": 312.0,
    "NVIDIA A100 80GB PCIe": 312.0,
    "NVIDIA A100-PCIE-40GB": 312.0,
}
COLUMNS = ("device", "date", "torch", "triton", "implementation", "dtype", "causal", "L", "E",
           "batch", "heads", "median_ms", "tflops", "peak_tflops", "fraction_of_peak",
           "max_abs_diff_vs_sdpa_flash", "note")


def peak_tflops(name: str) -> float | None:
    """The dense float16 peak of the device named exactly ``name``, or None if not listed."""
    return PEAKS.get(name.strip())


def time_ms(fn: Callable[[], object], quick: bool) -> float:
    """Median milliseconds per call of ``fn()``, by ``triton.testing.do_bench``.

    do_bench warms up, then times each call with its own pair of CUDA events, flushing the L2
    cache before each, with the calls queued ahead of the GPU (one synchronisation at the end).
    """
    from triton.testing import do_bench  # type: ignore[import-untyped]

    warmup, rep = (5, 10) if quick else (25, 100)  # milliseconds of calls
    return float(do_bench(fn, warmup=warmup, rep=rep, return_mode="median"))


def implementations(causal: bool) -> dict[str, Callable[..., torch.Tensor]]:
    from attnlib.blocks.triton_flash import triton_flash_attention

    def flash(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def math_backend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        with sdpa_kernel([SDPBackend.MATH]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def triton(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        # the defaults: tiles of 64 queries and 64 keys, 4 warps (chapter 8's listing)
        return triton_flash_attention(q, k, v, is_causal=causal, interpret=False)

    return {"triton": triton, "sdpa-flash": flash, "sdpa-math": math_backend}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true",
                        help="L = 512 and 1024, short timing")
    parser.add_argument("--peak-tflops", type=float, default=None,
                        help="the device's dense float16 peak, if the table does not know it")
    parser.add_argument("--out", type=Path, default=None, help="CSV path (default: results/)")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("bench/gpu.py measures a CUDA GPU and found none (torch.cuda.is_available() is "
              f"False; torch {torch.__version__}). Run it on a machine with an NVIDIA GPU and a "
              "CUDA build of torch; on a CPU, chapter 8 runs the kernel under Triton's "
              "interpreter instead.", file=sys.stderr)
        return 2
    device = torch.cuda.get_device_name()
    capability = torch.cuda.get_device_capability()
    if capability < (8, 0):
        print(f"bench/gpu.py needs compute capability 8.0 or later (sdpa's FlashAttention "
              f"backend, bfloat16 products); {device} has {capability[0]}.{capability[1]}",
              file=sys.stderr)
        return 2
    import triton  # type: ignore[import-untyped]

    torch.backends.cuda.matmul.allow_tf32 = False
    peak = args.peak_tflops or peak_tflops(device)
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    slug = re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-")
    out = args.out or RESULTS / f"gpu-{slug}-{today}.csv"
    lengths = LENGTHS[:2] if args.quick else LENGTHS
    print(f"{device}: peak {peak} TFLOP/s (float16/bfloat16, dense)")
    failures, count = [], 0
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=COLUMNS)
        writer.writeheader()
        for dtype_name, dtype in DTYPES.items():
            for E in HEAD_SIZES:
                for causal in (False, True):
                    fns = implementations(causal)
                    for L in lengths:
                        B, H = TOKENS // L, HIDDEN // E
                        case = {"device": device, "date": today, "torch": torch.__version__,
                                "triton": triton.__version__, "dtype": dtype_name,
                                "causal": causal, "L": L, "E": E, "batch": B, "heads": H}
                        g = torch.Generator(device="cuda").manual_seed(0)
                        q, k, v = (torch.randn(B, H, L, E, device="cuda", dtype=dtype,
                                               generator=g) for _ in range(3))
                        with torch.no_grad():
                            reference = fns["sdpa-flash"](q, k, v)
                            for name, fn in fns.items():
                                row = case | {"implementation": name}
                                try:
                                    diff = float((fn(q, k, v).float() - reference.float())
                                                 .abs().max())
                                    ms = time_ms(partial(fn, q, k, v), args.quick)
                                except torch.cuda.OutOfMemoryError:
                                    torch.cuda.empty_cache()
                                    writer.writerow(row | {"note": "out of memory"})
                                    file.flush()
                                    print(f"{dtype_name} E={E} causal={causal!s:5} L={L:5} "
                                          f"{name:10} out of memory", flush=True)
                                    continue
                                flops = 4 * B * H * L * L * E * (0.5 if causal else 1.0)
                                tflops = flops / (ms * 1e-3) / 1e12
                                wrong = not diff <= TOLERANCES[dtype_name]  # NaN is wrong
                                if wrong or not math.isfinite(tflops):
                                    failures.append(f"{name} {dtype_name} E={E} "
                                                    f"causal={causal} L={L}: diff {diff:.3g}")
                                writer.writerow(row | {
                                    "median_ms": f"{ms:.4g}", "tflops": f"{tflops:.4g}",
                                    "peak_tflops": "" if peak is None else f"{peak:g}",
                                    "fraction_of_peak": ("" if peak is None
                                                         else f"{tflops / peak:.3f}"),
                                    "max_abs_diff_vs_sdpa_flash": f"{diff:.3g}",
                                    "note": "WRONG OUTPUT" if wrong else ""})
                                file.flush()
                                count += 1
                                print(f"{dtype_name} E={E} causal={causal!s:5} L={L:5} "
                                      f"{name:10} {ms:8.3f} ms {tflops:7.1f} TFLOP/s  "
                                      f"diff {diff:.2g}", flush=True)
                        del q, k, v, reference
                        torch.cuda.empty_cache()
    print(f"wrote {out} ({count} rows measured)")
    for failure in failures:
        print(f"FAILED (difference above {TOLERANCES}): {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
