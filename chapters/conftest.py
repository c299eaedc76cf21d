"""nbval glue for the chapters: compare every figure, and report time per chapter.

nbval compares text outputs only; it leaves images out of the comparison. Here each PNG a
re-executed cell draws is compared with the stored one by matplotlib's own image comparison
(``matplotlib.testing.compare.compare_images``: the RMS of the pixel differences on a 0-255
scale, the measure pytest-mpl uses). The tolerance passes what legitimately varies between
thread counts and CPU code paths (a curve that moves by a fraction of a pixel, anti-aliasing)
and fails a figure that really changes: another colour map, a missing line, an empty axis
(tests/test_figure_check.py proves both). Cells whose output nbval ignores (timings) are not
compared. Failing figures are written with their difference image to ``_build/figure-diffs``.

A figure of a trained model can move more than rendering noise when another thread count or CPU
code path changes the last bits of every step. Such a cell may carry its own, looser tolerance
in its metadata, with the reason, which a reader of the notebook sees beside the number:
``"attnlib": {"figure_rms_tolerance": 12, "figure_reason": "..."}``.
"""

from __future__ import annotations

import base64
import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from matplotlib.testing.compare import compare_images
from nbval.plugin import IPyNbCell

#: RMS on a 0-255 scale. Measured across thread counts and ATEN code paths: <= 0.6 where a
#: trained model's curve moves; a changed colour map, a removed line or an empty axis: >= 6.
FIGURE_RMS_TOLERANCE = float(os.environ.get("ATTNLIB_FIGURE_RMS_TOLERANCE", "3.0"))
DIFF_DIR = Path(__file__).resolve().parent.parent / "_build" / "figure-diffs"

_seconds: defaultdict[str, float] = defaultdict(float)
_cells: defaultdict[str, int] = defaultdict(int)
_figures: dict[str, float] = {}  # "chapter cell N figure k" -> RMS


def _pngs(outputs: list[Any]) -> list[bytes]:
    return [base64.b64decode(o["data"]["image/png"]) for o in outputs
            if o.get("output_type") in ("display_data", "execute_result")
            and "image/png" in o.get("data", {})]


def _tolerance(cell: IPyNbCell) -> float:
    own = cell.cell.metadata.get("attnlib", {})
    if "figure_rms_tolerance" not in own:
        return FIGURE_RMS_TOLERANCE
    if not str(own.get("figure_reason", "")).strip():
        raise ValueError(f"{cell.name}: figure_rms_tolerance without a figure_reason")
    return float(own["figure_rms_tolerance"])


def _compare_figures(cell: IPyNbCell, test: list[Any], ref: list[Any]) -> list[str]:
    fresh, stored = _pngs(test), _pngs(ref)
    tolerance = _tolerance(cell)
    name = Path(str(cell.fspath)).stem
    if len(fresh) != len(stored):
        return [f"figures: the cell drew {len(fresh)} image(s), the stored notebook has {len(stored)}"]
    problems = []
    for k, (new, old) in enumerate(zip(fresh, stored, strict=True)):
        stem = DIFF_DIR / f"{name}-cell{cell.cell_num}-{k}"
        stem.parent.mkdir(parents=True, exist_ok=True)
        expected, actual = Path(f"{stem}-stored.png"), Path(f"{stem}-fresh.png")
        expected.write_bytes(old)
        actual.write_bytes(new)
        try:
            # tol=0: the RMS of every pair, not only of those over the tolerance, so that the
            # summary's largest RMS is the real one
            result = compare_images(str(expected), str(actual), tol=0, in_decorator=True)
        except Exception as exc:  # matplotlib raises on images of different sizes
            problems.append(f"figure {k}: {exc}")
            continue
        rms = 0.0 if result is None else float(result["rms"])
        _figures[f"{name} cell {cell.cell_num} figure {k}"] = rms
        if rms <= tolerance:
            for path in (expected, actual, Path(f"{stem}-fresh-failed-diff.png")):
                path.unlink(missing_ok=True)
        else:
            problems.append(f"figure {k} differs from the stored one: RMS {rms:.2f} > "
                            f"{tolerance} (images and difference in {stem.parent})")
    return problems


_compare_text = IPyNbCell.compare_outputs


def _compare_outputs(self: IPyNbCell, test: list[Any], ref: list[Any],
                     skip_compare: Any = None) -> bool:
    same_text = bool(_compare_text(self, test, ref, skip_compare))
    problems = _compare_figures(self, test, ref)
    self.comparison_traceback.extend(problems)
    return same_text and not problems


IPyNbCell.compare_outputs = _compare_outputs


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
    if _figures:
        worst = max(_figures, key=lambda k: _figures[k])
        terminalreporter.write_line(
            f"figures compared with the stored ones: {len(_figures)}, largest RMS "
            f"{_figures[worst]:.3f} ({worst}), tolerance {FIGURE_RMS_TOLERANCE}")
    if os.environ.get("ATTNLIB_FIGURE_REPORT"):
        lines = [f"{k}\t{v:.4f}" for k, v in sorted(_figures.items(),
                                                    key=lambda kv: _natural(kv[0]))]
        Path(os.environ["ATTNLIB_FIGURE_REPORT"]).write_text("\n".join(lines) + "\n")


def _natural(text: str) -> list[Any]:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text)]
