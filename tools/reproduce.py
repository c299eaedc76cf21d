"""Run the nbval suite under a matrix of settings and print one line per combination.

The stored outputs must not depend on the thread count, on the CPU code path PyTorch picks
(``ATEN_CPU_CAPABILITY``: ``default`` means no vector instructions, as on an older machine;
``native`` leaves PyTorch's own choice) or on the run (each combination runs twice in a row).

Every combination runs even after one fails, so the table shows the whole matrix; the exit
status is non-zero if any combination failed. The table is also written to
``_build/reproduce.md``.

Usage: ``python tools/reproduce.py --threads 1 2 --capabilities default avx2 --runs 2 NOTEBOOK...``
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

NBVAL = [
    sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env",
    "--nbval-sanitize-with", "tests/nbval_sanitize.cfg", "-p", "no:cacheprovider", "-q",
]
_COUNT = re.compile(r"(\d+) (passed|failed|error|errors|skipped)")


def run_one(threads: int, capability: str, notebooks: list[str]) -> tuple[int, dict[str, int], float]:
    env = dict(os.environ, ATTNLIB_NUM_THREADS=str(threads))
    if capability == "native":
        env.pop("ATEN_CPU_CAPABILITY", None)
    else:
        env["ATEN_CPU_CAPABILITY"] = capability
    start = time.perf_counter()
    proc = subprocess.run([*NBVAL, *notebooks], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    lines = proc.stdout.strip().splitlines()
    summary = lines[-1] if lines else ""
    counts = {word.rstrip("s"): int(n) for n, word in _COUNT.findall(summary)}
    if proc.returncode != 0:
        # The failing cells, for the log: pytest's short summary lines.
        for line in lines:
            if line.startswith(("FAILED", "ERROR")):
                print("   ", line, flush=True)
        if proc.stderr.strip():
            print(proc.stderr.strip()[-2000:], file=sys.stderr, flush=True)
    return proc.returncode, counts, seconds


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--capabilities", nargs="+", default=["default", "avx2"])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--report", type=Path, default=Path("_build/reproduce.md"))
    parser.add_argument("notebooks", nargs="+")
    args = parser.parse_args(argv)

    rows = ["| threads | ATEN_CPU_CAPABILITY | run | cells passed | failed | seconds |",
            "|--:|:--|--:|--:|--:|--:|"]
    failures = 0
    start = time.perf_counter()
    for threads in args.threads:
        for capability in args.capabilities:
            for run in range(1, args.runs + 1):
                print(f"== nbval: ATTNLIB_NUM_THREADS={threads} ATEN_CPU_CAPABILITY={capability} "
                      f"run {run}", flush=True)
                code, counts, seconds = run_one(threads, capability, args.notebooks)
                failed = counts.get("failed", 0) + counts.get("error", 0)
                if code != 0:
                    failures += 1
                    failed = max(failed, 1)
                passed = counts.get("passed", 0)
                print(f"   {'ok' if code == 0 else 'FAILED'}: {passed} cells passed, "
                      f"{failed} failed, {seconds:.0f} s", flush=True)
                rows.append(f"| {threads} | {capability} | {run} | {passed} | {failed} | "
                            f"{seconds:.0f} |")
    total = len(args.threads) * len(args.capabilities) * args.runs
    verdict = (f"{total - failures} of {total} combinations passed "
               f"in {time.perf_counter() - start:.0f} s")
    report = "\n".join([*rows, "", verdict, ""])
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(report, encoding="utf-8")
    print()
    print(report, end="")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
