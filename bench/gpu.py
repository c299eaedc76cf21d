"""attnlib's Triton FlashAttention kernel against PyTorch's on a CUDA GPU: time and TFLOP/s.

For sequence lengths L = S from 512 to 16384, head sizes 64 and 128, causal and not, float16 and
bfloat16, it times three forward passes of the same attention, (B, H, L, E) with B = 1 and
H = 16:

- ``triton``: ``attnlib.blocks.triton_flash.triton_flash_attention`` (compiled, not interpreted);
- ``sdpa-flash``: ``F.scaled_dot_product_attention`` restricted to its FlashAttention backend;
- ``sdpa-math``: the same restricted to its math backend (the formula, scores in memory).

Each is warmed up (compilation, autotuning, allocator), then timed with CUDA events over
``--repeats`` calls; the median is kept. The arithmetic counted is the two matrix products,
``4 B H L S E`` floating-point operations, half of it with the causal mask; TFLOP/s is that over the
median time, and the fraction of the device's peak uses the dense float16/bfloat16 tensor-core
peak of the device (a table below, or ``--peak-tflops``). Every output is compared with
``sdpa-flash``'s and the largest difference is written beside the time.

It writes ``bench/results/gpu-<device>-<date>.csv`` (bench/results/README.md says what a row
holds), which chapter 8 reads. Without a CUDA device it refuses to run: the numbers are a GPU's.

    python bench/gpu.py             # the whole grid (a few minutes on an H100)
    python bench/gpu.py --quick     # L = 512 and 1024 only, one repeat: does it run?
"""

from __future__ import annotations

import argparse
import csv
import datetime
import math
import re
import statistics
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
BATCH, HEADS = 1, 16
# Dense float16/bfloat16 tensor-core peaks (TFLOP/s, no sparsity) from the vendors' data sheets;
# matched against torch.cuda.get_device_name() in this order.
PEAKS = (("H200", 989.4), ("H100 SXM", 989.4), ("H100 PCIe", 756.0), ("H100", 756.0),
         ("A100", 312.0), ("L40S", 362.1), ("L4", 121.0), ("A10", 125.0), ("V100", 125.0),
         ("T4", 65.0))
COLUMNS = ("device", "date", "torch", "triton", "implementation", "dtype", "causal", "L", "E",
           "batch", "heads", "median_ms", "tflops", "peak_tflops", "fraction_of_peak",
           "max_abs_diff_vs_sdpa_flash")


def peak_tflops(name: str) -> float | None:
    for key, peak in PEAKS:
        if key.lower() in name.lower():
            return peak
    return None


def time_ms(fn: Callable[[], object], repeats: int, warmup: int) -> float:
    """Median milliseconds of ``fn()`` over ``repeats`` calls, each timed with CUDA events."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def implementations(causal: bool) -> dict[str, Callable[..., torch.Tensor]]:
    from attnlib.blocks.triton_flash import triton_flash_attention

    def flash(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def math_backend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        with sdpa_kernel([SDPBackend.MATH]):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def triton(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return triton_flash_attention(q, k, v, is_causal=causal, block_size_q=128,
                                      block_size_k=64, interpret=False)

    return {"triton": triton, "sdpa-flash": flash, "sdpa-math": math_backend}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="L = 512 and 1024, one repeat")
    parser.add_argument("--repeats", type=int, default=10)
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
    import triton  # type: ignore[import-untyped]

    torch.backends.cuda.matmul.allow_tf32 = False
    device = torch.cuda.get_device_name()
    peak = args.peak_tflops or peak_tflops(device)
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    slug = re.sub(r"[^a-z0-9]+", "-", device.lower()).strip("-")
    out = args.out or RESULTS / f"gpu-{slug}-{today}.csv"
    lengths = LENGTHS[:2] if args.quick else LENGTHS
    repeats, warmup = (1, 1) if args.quick else (args.repeats, 3)
    rows = []
    print(f"{device}: peak {peak} TFLOP/s (float16/bfloat16, dense)")
    for dtype_name, dtype in DTYPES.items():
        for E in HEAD_SIZES:
            for causal in (False, True):
                fns = implementations(causal)
                for L in lengths:
                    g = torch.Generator(device="cuda").manual_seed(0)
                    q, k, v = (torch.randn(BATCH, HEADS, L, E, device="cuda", dtype=dtype,
                                           generator=g) for _ in range(3))
                    with torch.no_grad():
                        reference = fns["sdpa-flash"](q, k, v)
                        for name, fn in fns.items():
                            diff = float((fn(q, k, v).float() - reference.float()).abs().max())
                            ms = time_ms(partial(fn, q, k, v), repeats, warmup)
                            flops = 4 * BATCH * HEADS * L * L * E * (0.5 if causal else 1.0)
                            tflops = flops / (ms * 1e-3) / 1e12
                            rows.append({
                                "device": device, "date": today, "torch": torch.__version__,
                                "triton": triton.__version__, "implementation": name,
                                "dtype": dtype_name, "causal": causal, "L": L, "E": E,
                                "batch": BATCH, "heads": HEADS, "median_ms": f"{ms:.4g}",
                                "tflops": f"{tflops:.4g}",
                                "peak_tflops": "" if peak is None else f"{peak:g}",
                                "fraction_of_peak": "" if peak is None else f"{tflops / peak:.3f}",
                                "max_abs_diff_vs_sdpa_flash": f"{diff:.3g}"})
                            print(f"{dtype_name} E={E} causal={causal!s:5} L={L:5} {name:10} "
                                  f"{ms:8.3f} ms {tflops:7.1f} TFLOP/s  diff {diff:.2g}",
                                  flush=True)
                    torch.cuda.empty_cache()
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {out} ({len(rows)} rows)")
    return 0 if all(math.isfinite(float(r["tflops"])) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
