"""Run the nbval suite under a matrix of settings and print one line per combination.

The stored outputs must not depend on the thread count, on the CPU code path PyTorch picks
(``ATEN_CPU_CAPABILITY``: ``default`` means no vector instructions, as on an older machine;
``native`` leaves PyTorch's own choice) or on the CPU's vendor. A combination is
``THREADS:CAPABILITY`` or ``THREADS:CAPABILITY:amd``; ``amd`` sets ``ATTNLIB_CPU_VENDOR`` to
``AuthenticAMD``, so that :func:`attnlib.fix_cpu_kernels` asks MKL only for what MKL gives an AMD
processor (MKL honours a pinned instruction set on Intel processors only): an Intel machine then
computes what an AMD reader's does. The default matrix is the two combinations that find
different things, each unlike ``make test``'s own run (1 thread, the machine's code path):
1 thread with ``default`` and 2 threads with ``avx2`` as on AMD. Each notebook runs in its own
pytest process and kernel, and every combination's notebooks go into one pool
(:func:`pooled_jobs`): a chapter that trains in worker processes takes every core, and one
single-process chapter runs beside it, on a slot more than there are cores. Such a chapter keeps
its cores busy only part of the time (its main process alone evaluates and plots: 1.5 to 1.85 of
2 cores on average, measured in `make test`), so the extra process fills the gaps; the outputs do
not depend on the timing. `make test` does not oversubscribe: it reports each chapter's time.

Every combination runs even after one fails, so the table shows the whole matrix; the exit
status is non-zero if any combination failed. The table is also written to
``_build/reproduce.md``.

Usage: ``python tools/reproduce.py --combos 1:default 2:avx2:amd --runs 1 NOTEBOOK...``
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
import time
from itertools import zip_longest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from slots import Job, Result
from slots import run as run_jobs

NBVAL = [
    sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env",
    "--nbval-sanitize-with", "tests/nbval_sanitize.cfg", "-p", "no:cacheprovider", "-q",
]
_COUNT = re.compile(r"(\d+) (passed|failed|error|errors|skipped)")

#: The chapters that train in worker processes (attnlib.train.runs.train_runs, one per core) and
#: their nbval seconds, each alone on the 2-core machine at one thread (AMD EPYC, 2026-11-29;
#: chapters 4, 7, 9 and 10 re-measured in the day's last make test).
#: Such a chapter takes every core while it runs (slots.Job.slots); the others take one each.
#: Only the order and the pairing depend on this table, never the outputs: the longest start first.
MEASURED_SECONDS = {
    "04_seq2seq_attention": 196, "07_transformer": 102,
    "09_attention_in_language_models": 94, "10_modern_attention": 87,
    "08_efficient_attention": 43, "03_scaled_dot_product": 32,
    "11_sparse_and_stable_attention": 100,
}
WORKER_CHAPTERS = {"04_seq2seq_attention", "07_transformer", "09_attention_in_language_models",
                   "10_modern_attention", "11_sparse_and_stable_attention"}


def longest_first(notebooks: list[str]) -> list[str]:
    """The notebooks, the longest-running first; the others after them, in the order given."""
    return sorted(notebooks, key=lambda nb: -MEASURED_SECONDS.get(Path(nb).stem, 0))


def chapter_jobs(notebooks: list[str], cores: int, env: dict[str, str] | None = None,
                 prefix: str = "") -> list[Job]:
    """One nbval job per notebook: the chapters with worker processes first (each takes every
    core), then the others (one core each), each group the longest first."""
    ordered = longest_first(notebooks)
    workers = [nb for nb in ordered if Path(nb).stem in WORKER_CHAPTERS]
    return [Job(prefix + nb, [*NBVAL, nb], slots=cores if nb in workers else 1, env=env)
            for nb in [*workers, *(nb for nb in ordered if nb not in workers)]]


def pooled_jobs(combos: list[tuple[str, dict[str, str], list[str]]], cores: int) -> list[Job]:
    """Every combination's nbval jobs (its name, environment and notebooks) in one list, for
    :func:`slots.run` on ``cores + 1`` slots: the chapters with worker processes (``cores`` slots
    each; the longest first, the combinations alternating), each followed by its share of the
    single-process chapters (one slot each), so that one of them runs beside every worker chapter
    while any are left."""
    per_combo = [chapter_jobs(notebooks, cores, env, prefix=f"{name} ")
                 for name, env, notebooks in combos]
    interleaved = [job for jobs in zip_longest(*per_combo) for job in jobs if job is not None]
    # the longest first across the combinations (a combination may leave some out)
    big = sorted((job for job in interleaved if job.slots > 1),
                 key=lambda job: -MEASURED_SECONDS.get(Path(job.command[-1]).stem, 0))
    small = [job for job in interleaved if job.slots <= 1]
    if not big:
        return small
    share, extra = divmod(len(small), len(big))
    ordered: list[Job] = []
    for i, job in enumerate(big):
        take = share + (1 if i < extra else 0)
        ordered += [job, *small[:take]]
        small = small[take:]
    return ordered


VENDORS = {"amd": "AuthenticAMD", "intel": "GenuineIntel"}


def _env(threads: int, capability: str, vendor: str = "") -> dict[str, str]:
    env = dict(os.environ, ATTNLIB_NUM_THREADS=str(threads))
    if capability == "native":
        env.pop("ATEN_CPU_CAPABILITY", None)
    else:
        env["ATEN_CPU_CAPABILITY"] = capability
    env.pop("ATTNLIB_CPU_VENDOR", None)
    if vendor:
        env["ATTNLIB_CPU_VENDOR"] = VENDORS[vendor]
    return env


def machine_vendor() -> str:
    """This machine's CPU vendor as a combination names it (``amd``, ``intel``), or ``""``."""
    try:
        text = Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return ""
    ids = {v: k for k, v in VENDORS.items()}
    return next((ids.get(line.split(":", 1)[1].strip(), "") for line in text.splitlines()
                 if line.startswith("vendor_id") and ":" in line), "")


def _summary(output: str) -> tuple[dict[str, int], list[str]]:
    lines = output.strip().splitlines()
    summary = lines[-1] if lines else ""
    counts = {word.rstrip("s"): int(n) for n, word in _COUNT.findall(summary)}
    log = [line for line in lines if line.startswith(("FAILED", "ERROR"))]
    return counts, log


def summarize(results: list[Result]) -> tuple[int, dict[str, int], float]:
    """The exit status, the cell counts and the CPU seconds of one combination's nbval jobs;
    prints their FAILED and ERROR lines."""
    code, totals, cpu = 0, {"passed": 0, "failed": 0, "error": 0}, 0.0
    for result in results:
        counts, log = _summary(result.output)
        cpu += result.cpu_seconds
        if result.returncode != 0:
            code = result.returncode
            if not log:
                log = [result.output.strip()[-2000:]]
        for key in totals:
            totals[key] += counts.get(key, 0)
        for line in log:
            print("   ", line, flush=True)
    return code, totals, cpu


def pins_code_paths(notebook: str) -> bool:
    """Whether a chapter pins its CPU code paths: its first code cell calls
    :func:`attnlib.fix_cpu_kernels` as a statement of its own (not in a comment, a string or a
    later cell, where it would come after tensors were computed). The call then replaces the
    ``ATEN_CPU_CAPABILITY`` a combination sets, so a combination with make test's thread count
    and this machine's vendor computes in it exactly what make test's own nbval run did."""
    cells = json.loads(Path(notebook).read_text(encoding="utf-8")).get("cells", [])
    code = next(("".join(c["source"]) for c in cells if c.get("cell_type") == "code"), "")
    try:
        tree = ast.parse(code)
    except SyntaxError:  # IPython syntax: not a cell this book's first cells use
        return False
    for node in tree.body:
        call = node.value if isinstance(node, ast.Expr) else None
        if isinstance(call, ast.Call):
            name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(
                call.func, "id", "")
            if name == "fix_cpu_kernels":
                return True
    return False


def make_test_run() -> tuple[int, str]:
    """The thread count and the CPU code path of `make test`'s nbval run on this machine: the
    Makefile's NBVAL_THREADS and the capability PyTorch picks with no override."""
    env = {k: v for k, v in os.environ.items() if k != "ATEN_CPU_CAPABILITY"}
    probe = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    picked = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                            text=True, check=True).stdout.strip().lower()
    return int(os.environ.get("NBVAL_THREADS", "1")), picked


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--combos", nargs="+", default=["1:default", "2:avx2:amd"],
                        help="THREADS:ATEN_CPU_CAPABILITY[:amd|:intel] combinations")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1,
                        help="notebooks run side by side, one per core")
    parser.add_argument("--report", type=Path, default=Path("_build/reproduce.md"))
    parser.add_argument("--after-make-test", action="store_true",
                        help="skip a combination that is make test's own run on this machine "
                             "(its thread count and the code path PyTorch picks here)")
    parser.add_argument("notebooks", nargs="+")
    args = parser.parse_args(argv)
    combos = []
    for combo in args.combos:
        threads, _, rest = combo.partition(":")
        capability, _, vendor = rest.partition(":")
        if vendor and vendor not in VENDORS:
            parser.error(f"{combo}: the vendor must be one of {', '.join(VENDORS)}, got {vendor!r}")
        combos.append((int(threads), capability or "native", vendor))

    rows = ["| threads | ATEN_CPU_CAPABILITY | CPU vendor | run | cells passed | failed "
            "| CPU seconds |",
            "|--:|:--|:--|--:|--:|--:|--:|"]
    start = time.perf_counter()
    own = make_test_run() if args.after_make_test else None
    here = machine_vendor()
    pinned = [nb for nb in args.notebooks if pins_code_paths(nb)] if own is not None else []
    pool: list[tuple[str, dict[str, str], list[str]]] = []
    labels: dict[str, tuple[int, str, str, int]] = {}
    for threads, capability, vendor in combos:
        shown = VENDORS[vendor] if vendor else "this machine's"
        notebooks = args.notebooks
        if own is not None and threads == own[0] and vendor in ("", here):
            if capability.lower() in {own[1], "native"}:
                print(f"== {threads}:{capability} is make test's own run on this machine "
                      f"({own[0]} threads, PyTorch picks {own[1]}): not repeated", flush=True)
                rows.append(f"| {threads} | {capability} | {shown} | - | make test's own run "
                            f"| - | - |")
                continue
            # a chapter that pins its code paths replaces the capability asked for: at make
            # test's thread count on this machine's vendor it computes make test's own run
            notebooks = [nb for nb in args.notebooks if nb not in pinned]
            if pinned:
                names = ", ".join(Path(nb).stem for nb in pinned)
                print(f"== {threads}:{capability}: {names} pin their code paths "
                      f"(attnlib.fix_cpu_kernels), so here they are make test's own run: "
                      f"not repeated", flush=True)
            if not notebooks:
                rows.append(f"| {threads} | {capability} | {shown} | - | make test's own run "
                            f"| - | - |")
                continue
        for run in range(1, args.runs + 1):
            name = f"[{threads}:{capability}{':' + vendor if vendor else ''} run {run}]"
            as_vendor = f" ATTNLIB_CPU_VENDOR={VENDORS[vendor]}" if vendor else ""
            print(f"== {name} nbval: ATTNLIB_NUM_THREADS={threads} "
                  f"ATEN_CPU_CAPABILITY={capability}{as_vendor}", flush=True)
            pool.append((name, _env(threads, capability, vendor), notebooks))
            labels[name] = (threads, capability, shown, run)
    cores = max(1, args.cores)
    jobs = pooled_jobs(pool, cores)
    # the extra slot is for a single-process chapter beside one with worker processes
    slots = cores + 1 if any(job.slots > 1 for job in jobs) else cores
    print(f"== {len(pool)} combination(s) of {len(args.notebooks)} notebook(s) in one pool: "
          f"{slots} slots on {cores} core(s)", flush=True)

    def finished(result: Result) -> None:
        print(f"   {'ok' if result.ok else 'FAILED'} {result.job.name}: {result.seconds:.0f} s, "
              f"{result.cpu_seconds:.0f} s of CPU", flush=True)

    results = run_jobs(jobs, slots, stop_on_failure=False, on_finish=finished) if pool else []
    failures = 0
    for name, _, notebooks in pool:
        threads, capability, shown, run = labels[name]
        print(f"== {name}", flush=True)
        code, counts, cpu = summarize([r for r in results if r.job.name.startswith(name + " ")])
        failed = counts.get("failed", 0) + counts.get("error", 0)
        if code != 0:
            failures += 1
            failed = max(failed, 1)
        passed = counts.get("passed", 0)
        print(f"   {'ok' if code == 0 else 'FAILED'}: {passed} cells passed, {failed} failed, "
              f"{cpu:.0f} s of CPU", flush=True)
        left_out = len(args.notebooks) - len(notebooks)
        note = f" ({left_out} pinned chapters: make test's own run)" if left_out else ""
        rows.append(f"| {threads} | {capability} | {shown} | {run} | {passed}{note} | {failed} "
                    f"| {cpu:.0f} |")
    ran = len(pool)
    verdict = (f"{ran - failures} of {ran} combinations passed "
               f"in {time.perf_counter() - start:.0f} s")
    report = "\n".join([*rows, "", verdict, ""])
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.write_text(report, encoding="utf-8")
    print()
    print(report, end="")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
