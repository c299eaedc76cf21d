"""nbval over the chapters, several notebooks side by side (``make nbval``, a step of ``make test``).

Each notebook runs in its own pytest process and kernel, ``--jobs`` of them at a time (default:
one per core), under the environment ``make`` exports (the thread count of the chapters' first
cells, the CPU code path PyTorch picks). Much of a chapter's time is single-threaded (kernel
start, Python loops, training with one thread, plotting), so on two cores the suite takes about
half the time of one process running the chapters in turn; the outputs do not depend on it.

When every notebook has finished it prints the table that chapters/conftest.py prints per
process (cells and seconds per chapter, the figures compared and the largest RMS), merged, and
the whole pytest output of any notebook that failed. The exit status is non-zero if any failed.

Usage: ``python tools/nbval_chapters.py [--jobs N] NOTEBOOK...``
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reproduce import NBVAL, longest_first  # the same nbval command and order as make reproduce

_CHAPTER = re.compile(r"^(\S+\.ipynb)\s+(\d+) cells\s+([\d.]+) s$", re.M)
_FIGURES = re.compile(r"figures compared with the stored ones: (\d+), largest RMS ([\d.]+) \((.*)\)")


def run(notebook: str) -> tuple[str, int, str, float]:
    start = time.perf_counter()
    proc = subprocess.run([*NBVAL, notebook], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    tail = proc.stdout.strip().splitlines()[-1:] or [""]
    print(f"{'ok' if proc.returncode == 0 else 'FAILED':6s} {notebook} ({tail[0].strip('= ')}, "
          f"{seconds:.0f} s)", flush=True)
    return notebook, proc.returncode, proc.stdout + proc.stderr, seconds


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("notebooks", nargs="+")
    args = parser.parse_args(argv)
    jobs = max(1, args.jobs)
    print(f"nbval: {len(args.notebooks)} notebooks, {jobs} at a time", flush=True)
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        finished = {r[0]: r for r in pool.map(run, longest_first(args.notebooks))}
    results = [finished[nb] for nb in args.notebooks]  # the table in the order given
    wall = time.perf_counter() - start

    failed = [(nb, out) for nb, code, out, _ in results if code != 0]
    for notebook, output in failed:
        print(f"\n{'=' * 30} {notebook} {'=' * 30}\n{output[-12000:]}")
    cells = seconds = figures = 0
    worst = (-1.0, "")
    print("\nnbval time per chapter (each in its own process)")
    for _, _, output, _ in results:
        for name, n, s in _CHAPTER.findall(output):
            print(f"{name:45s} {int(n):3d} cells {float(s):7.1f} s")
            cells, seconds = cells + int(n), seconds + float(s)
        for n, rms, where in _FIGURES.findall(output):
            figures += int(n)
            worst = max(worst, (float(rms), where))
    print(f"{'total':45s} {cells:3d} cells {seconds:7.1f} s; wall clock {wall:.0f} s "
          f"with {jobs} at a time")
    if figures:
        print(f"figures compared with the stored ones: {figures}, largest RMS {worst[0]:.3f} "
              f"({worst[1]})")
    print(f"{len(results) - len(failed)} of {len(results)} notebooks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
