"""`make test`: every step side by side on the machine's cores, each step's output printed whole
when it ends, and a table of wall-clock and CPU seconds at the end.

The steps are the make targets ``lint``, ``unit-first-half`` and ``unit-second-half`` (``make
unit`` in two processes, one per core), ``typecheck``, ``bench-quick``, ``i18n-check``, the book's two
editions (``book-en``, ``book-zh-html``, then ``book-join``), ``browser-check`` over the built
book, and nbval of each chapter (the jobs of ``make nbval``: a chapter that trains in worker
processes takes every core while it runs). They start in that order as cores free up (tools/slots.py):
ruff first, so that a typo fails in seconds, and the book's two editions, so that the browser
test runs beside the steps that run in one process (it takes no slot, though Chromium keeps about
a core busy while it runs: CPU the table does not count, since pytest does not wait for
Chromium's processes); the chapters with worker processes last, one after another, alone, except
that chapter 7, which leaves a core idle much of the time, runs beside five of the single-process
chapters (SHARES_A_CORE, LATE). If a step fails, no further step starts, the running ones are stopped, and
the failed step's output is printed whole; the exit status is then 1.

Usage: ``python tools/run_tests.py [--cores N] NOTEBOOK...`` (the Makefile passes $(NOTEBOOKS)).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nbval_chapters import finished_line, report
from reproduce import chapter_jobs
from slots import Job, Result
from slots import run as run_jobs

MAKE = os.environ.get("MAKE", "make")

# Chapter 7 kept 1.47 of two cores busy alone (170 s of CPU in 116 s, 2026-11-29): its main
# process translates and plots while its workers wait. Five single-process chapters (11 to 31 s
# of CPU each) run beside it, one after another, instead of in the first phase: with the four
# shortest there, chapter 7 took 111 s and chapter 3 ran alone at the end of the first phase for
# 28 s, one core idle (2026-11-29).
SHARES_A_CORE = {"07_transformer"}
LATE = {"01_kernel_regression", "02_attention_scores", "03_scaled_dot_product",
        "05_multihead_self_attention", "06_positional_encoding"}


def _stem(job: Job) -> str:
    return Path(job.command[-1]).stem


def steps(notebooks: list[str], cores: int) -> list[Job]:
    def target(name: str, *needs: str) -> Job:
        return Job(name, [MAKE, "--no-print-directory", name], needs=needs)

    nbval_env = dict(os.environ, ATTNLIB_NUM_THREADS=os.environ.get("NBVAL_THREADS", "1"))
    chapters = chapter_jobs(notebooks, cores, nbval_env, prefix="nbval ")
    single = [job for job in chapters if job.slots == 1]
    # the chapters with worker processes wait for the browser test: beside one of them it slowed
    # chapter 9 from 86 s to 190 s (2026-11-29)
    whole = [replace(job, needs=("browser-check",)) for job in chapters if job.slots > 1]
    # A chapter with worker processes that leaves a core idle much of the time (SHARES_A_CORE)
    # takes one slot less, and the short single-process chapters (LATE) wait for the first chapter
    # with workers and run beside it instead of in the first phase, where every core is busy.
    late = [job for job in single if _stem(job) in LATE]
    if whole and late and any(_stem(job) in SHARES_A_CORE for job in whole):
        single = [job for job in single if job not in late]
        late = [replace(job, needs=(whole[0].name,)) for job in late]
        shared = []
        for job in whole:
            if _stem(job) in SHARES_A_CORE:
                shared += [replace(job, slots=max(1, cores - 1)), *late]
            else:
                shared.append(job)
        whole = shared
    # The browser test starts as soon as both editions are built, so the books come first. It
    # takes no slot: its pytest process mostly waits on Chromium, whose processes keep about a
    # core busy (measured system-wide; wait4 does not count them). With a slot of its own, the
    # one-core steps would queue on the other core alone, one after another. Beside a chapter
    # with worker processes it slowed chapter 9 from 86 s to 190 s (2026-11-29), so those run
    # after it (they need it).
    browser = Job("browser-check", [MAKE, "--no-print-directory", "browser-check"], slots=0,
                  needs=("book-join",))
    return [
        target("lint"), target("book-en"), target("book-zh-html"),
        target("book-join", "book-en", "book-zh-html"), browser,
        target("unit-first-half"), target("unit-second-half"), target("typecheck"),
        target("bench-quick"), target("i18n-check"),
        *single, *whole,
    ]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1)
    parser.add_argument("notebooks", nargs="+")
    args = parser.parse_args(argv)
    cores = max(1, args.cores)
    jobs = steps(args.notebooks, cores)
    print(f"make test: {len(jobs)} steps on {cores} core(s)", flush=True)
    start = time.perf_counter()

    def started(job: Job) -> None:
        print(f"[{time.perf_counter() - start:5.0f} s] start  {job.name}", flush=True)

    def finished(result: Result) -> None:
        stamp = f"[{time.perf_counter() - start:5.0f} s]"
        if result.job.name.startswith("nbval "):  # a failed chapter's output: in the report
            print(f"{stamp} {finished_line(result)}", flush=True)
            return
        if result.skipped:
            print(f"{stamp} stopped {result.job.name}", flush=True)
            return
        state = "ok" if result.ok else "FAILED"
        print(f"{stamp} {state:6s} {result.job.name} ({result.seconds:.0f} s wall, "
              f"{result.cpu_seconds:.0f} s CPU)", flush=True)
        text = result.output.rstrip()
        if text:
            print("\n".join(f"    {line}" for line in text.splitlines()), flush=True)

    results = run_jobs(jobs, cores, on_start=started, on_finish=finished)
    wall = time.perf_counter() - start
    chapters = [r for r in results if r.job.name.startswith("nbval ")]
    if any(not r.skipped for r in chapters):
        for line in report([r for r in chapters if not r.skipped]):
            print(line)
    print("\nmake test: step times (wall clock, CPU of the step and its children)")
    for r in results:
        state = "skipped" if r.skipped else "ok" if r.ok else "FAILED"
        print(f"  {r.job.name:50s} {state:7s} {r.seconds:6.0f} s {r.cpu_seconds:6.0f} s CPU")
    cpu = sum(r.cpu_seconds for r in results)
    if all(r.ok for r in results):
        print(f"make test: everything passed in {wall:.0f} s ({cpu:.0f} s of CPU on {cores} "
              f"core(s))")
        return 0
    failed = [r.job.name for r in results if not r.ok and not r.skipped]
    print(f"make test: FAILED ({', '.join(failed)}) after {wall:.0f} s")
    return 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
