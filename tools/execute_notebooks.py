"""Execute chapter notebooks in place, top to bottom, each in a fresh kernel.

This is the only way stored outputs are produced (``make execute``). It runs under the same
environment variables as ``make test`` (the Makefile exports them), records no timing metadata,
and numbers the cells 1..N, so the stored notebook changes only when an output changes.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute(path: Path) -> float:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        # A cell's limit: chapter 4's training cell passed 900 s on a loaded 2-core machine
        # (2026-11-29, load 9-12); alone it takes about 200 s.
        timeout=3600,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        record_timing=False,
    )
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    # Volatile metadata would churn the diff without changing what a reader sees.
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    nbformat.write(nb, path)
    return elapsed


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: execute_notebooks.py NOTEBOOK [NOTEBOOK ...]", file=sys.stderr)
        return 2
    for name in argv:
        seconds = execute(Path(name))
        print(f"executed {name} in {seconds:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
