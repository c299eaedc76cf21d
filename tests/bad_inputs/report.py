"""Run the whole catalogue and print what happened: ``python tests/bad_inputs/report.py``.

A table of outcomes (calls tried, clear errors, other exceptions, NaN, wrongly accepted, ...)
for the mutations and for the NaN sweep, then every failure, entry by entry. ``--entry NAME``
runs one entry (repeatable); ``--all`` lists every call, not only the failures; ``--known``
writes the failures in the format of known_failures.txt.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ["ATTNLIB_PROGRESS"] = "0"

import torch

from bad_inputs.catalogue import ENTRIES, run_entry
from bad_inputs.harness import FAILURES, OUTCOMES


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--entry", action="append", default=[])
    parser.add_argument("--all", action="store_true")
    parser.add_argument("--known", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    tally: dict[str, Counter[str]] = {"mutations": Counter(), "NaN sweep": Counter()}
    lines: list[str] = []
    started = time.perf_counter()
    slow = []
    for entry in ENTRIES:
        if entry.exempt or (args.entry and entry.name not in args.entry):
            continue
        t0 = time.perf_counter()
        try:
            results = list(run_entry(entry))
        except Exception as error:  # an entry whose valid call cannot be built
            lines.append(f"unbuilt   {entry.name} :: {type(error).__name__}: {error}")
            continue
        for mid, outcome in results:
            tally["NaN sweep" if mid.startswith("sweep:") else "mutations"][outcome.kind] += 1
            if args.known and outcome.kind in FAILURES:
                lines.append(f"{entry.name} :: {mid} :: {outcome.kind}")
            elif outcome.kind in FAILURES or args.all:
                lines.append(f"{outcome.kind:9} {entry.name} :: {mid} :: {outcome.detail}")
        if time.perf_counter() - t0 > 0.5:
            slow.append(f"{entry.name} {time.perf_counter() - t0:.2f} s")
    seconds = time.perf_counter() - started
    if not args.known:
        entries = sum(1 for e in ENTRIES if not e.exempt)
        print(f"{entries} entries ({sum(1 for e in ENTRIES if e.exempt)} exempt containers), "
              f"{seconds:.1f} s; slowest: {', '.join(slow) or 'none over 0.5 s'}")
        print(f"{'outcome':10} " + " ".join(f"{k:>10}" for k in tally))
        for kind in ("calls", *OUTCOMES):
            counts = [sum(c.values()) if kind == "calls" else c[kind] for c in tally.values()]
            print(f"{kind:10} " + " ".join(f"{n:>10}" for n in counts))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
