"""Report how long nbval takes for each chapter (one line per notebook at the end of the run)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

_seconds: defaultdict[str, float] = defaultdict(float)
_cells: defaultdict[str, int] = defaultdict(int)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = report.nodeid.split("::", 1)[0]
    if path.endswith(".ipynb"):
        _seconds[path] += report.duration
        if report.when == "call":
            _cells[path] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _seconds:
        return
    terminalreporter.section("nbval time per chapter")
    for path in sorted(_seconds):
        terminalreporter.write_line(
            f"{Path(path).name:45s} {_cells[path]:3d} cells {_seconds[path]:7.1f} s"
        )
    terminalreporter.write_line(f"{'total':45s} {sum(_cells.values()):3d} cells "
                                f"{sum(_seconds.values()):7.1f} s")
