"""nbval over the chapters, several notebooks side by side (``make nbval``; ``make test`` runs
the same jobs among its other steps, tools/run_tests.py).

Each notebook runs in its own pytest process and kernel, on the cores given by ``--jobs``
(default: all): a chapter that trains in worker processes, one per core, takes every core while
it runs; the others take one each, two at a time on two cores (much of a chapter's time is
single-threaded: kernel start, Python loops, training with one thread, plotting). The outputs do
not depend on the order or the pairing (tools/slots.py, tools/reproduce.py's chapter_jobs).

When every notebook has finished it prints the table that chapters/conftest.py prints per
process (cells and seconds per chapter, the figures compared and the largest RMS), merged, and
the whole pytest output of any notebook that failed. The exit status is non-zero if any failed.

Usage: ``python tools/nbval_chapters.py [--jobs N] NOTEBOOK...``
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from reproduce import chapter_jobs  # the same jobs and order as make reproduce
from slots import Result
from slots import run as run_jobs

_CHAPTER = re.compile(r"^(\S+\.ipynb)\s+(\d+) cells\s+([\d.]+) s$", re.M)
_FIGURES = re.compile(r"figures compared with the stored ones: (\d+), largest RMS ([\d.]+) \((.*)\)")


def finished_line(result: Result) -> str:
    """``ok     chapters/NN.ipynb (17 passed in 12.3s, 14 s wall, 13 s CPU)``."""
    tail = result.output.strip().splitlines()[-1:] or [""]
    state = "skipped" if result.skipped else "ok" if result.ok else "FAILED"
    return (f"{state:6s} {result.job.name} ({tail[0].strip('= ')}, {result.seconds:.0f} s wall, "
            f"{result.cpu_seconds:.0f} s CPU)")


def report(results: list[Result]) -> list[str]:
    """The merged table of the chapters' results, the failed ones' output first."""
    lines = []
    for result in results:
        if not result.ok and not result.skipped:
            lines.append(f"\n{'=' * 30} {result.job.name} {'=' * 30}\n{result.output[-12000:]}")
    cells = figures = 0
    seconds = 0.0
    worst = (-1.0, "")
    lines.append("\nnbval time per chapter (each in its own process; seconds as pytest counts "
                 "them, CPU seconds of the process and its children)")
    for result in results:
        for name, n, s in _CHAPTER.findall(result.output):
            lines.append(f"{name:45s} {int(n):3d} cells {float(s):7.1f} s "
                         f"{result.cpu_seconds:7.0f} s CPU")
            cells, seconds = cells + int(n), seconds + float(s)
        for n, rms, where in _FIGURES.findall(result.output):
            figures += int(n)
            worst = max(worst, (float(rms), where))
    lines.append(f"{'total':45s} {cells:3d} cells {seconds:7.1f} s "
                 f"{sum(r.cpu_seconds for r in results):7.0f} s CPU")
    if figures:
        lines.append(f"figures compared with the stored ones: {figures}, largest RMS "
                     f"{worst[0]:.3f} ({worst[1]})")
    passed = sum(r.ok for r in results)
    lines.append(f"{passed} of {len(results)} notebooks passed")
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("notebooks", nargs="+")
    args = parser.parse_args(argv)
    cores = max(1, args.jobs)
    print(f"nbval: {len(args.notebooks)} notebooks on {cores} core(s)", flush=True)
    start = time.perf_counter()
    jobs = chapter_jobs(args.notebooks, cores)
    done = run_jobs(jobs, cores, stop_on_failure=False,
                    on_finish=lambda r: print(finished_line(r), flush=True))
    by_name = {r.job.name: r for r in done}
    results = [by_name[nb] for nb in args.notebooks]  # the table in the order given
    for line in report(results):
        print(line)
    print(f"wall clock {time.perf_counter() - start:.0f} s on {cores} core(s)")
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
