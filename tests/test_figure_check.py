"""The figure check of chapters/conftest.py fails when a figure really changes, and only then.

A notebook draws the same figure (three curves and a heatmap with a colour bar) in four cells and
is stored executed. Then each cell's source is changed as a slip in attnlib or a chapter would
change it: another colour map, a missing line, an empty axis, and, as the control that must pass,
data moved by 1e-4 (what another thread count or CPU code path does to a trained curve). nbval
runs with the chapters' own conftest.py, as `make test` runs it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent

SETUP = """import numpy as np
import matplotlib.pyplot as plt
from attnlib.book.plot import use_book_style
use_book_style()
x = np.linspace(0, 6, 200)
scores = np.sin(np.arange(64).reshape(8, 8) / 5.0)


def draw(cmap="viridis", curves=3, shift=0.0, empty=False):
    fig, (left, right) = plt.subplots(1, 2, figsize=(7, 3))
    if not empty:
        for k in range(curves):
            left.plot(x, np.sin(x + k) + shift, label=f"curve {k}")
        left.legend()
    left.set(title="curves", xlabel="x", ylabel="y")
    image = right.imshow(scores + shift, cmap=cmap)
    fig.colorbar(image, ax=right)
    right.set(title="weights", xlabel="key", ylabel="query")
    plt.show()"""

VARIANTS = {
    "moved by 1e-4": "draw(shift=1e-4)",
    "another colour map": 'draw(cmap="magma")',
    "a missing line": "draw(curves=2)",
    "an empty axis": "draw(empty=True)",
}


def test_changed_figures_fail_and_a_moved_curve_passes(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(SETUP)] + [
        nbformat.v4.new_code_cell("draw()") for _ in VARIANTS]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    for cell, source in zip(nb.cells[1:], VARIANTS.values(), strict=True):
        assert any("image/png" in o.get("data", {}) for o in cell.outputs)
        cell.source = source  # the stored image stays the original figure's
    path = tmp_path / "figures.ipynb"
    nbformat.write(nb, path)
    shutil.copy(ROOT / "chapters" / "conftest.py", tmp_path / "conftest.py")

    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "-p", "no:cacheprovider",
         "-rA", str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    out = result.stdout
    verdicts = {int(n): word for word, n in re.findall(r"^(PASSED|FAILED) \S+::Cell (\d+)", out, re.M)}
    assert verdicts == {0: "PASSED", 1: "PASSED", 2: "FAILED", 3: "FAILED", 4: "FAILED"}, out[-4000:]
    # A changed figure fails on its RMS, or before that on its size (the inline backend crops
    # to the drawn area, so an empty axis can change the image size).
    # Only the FAILURES section is read: under CI=true pytest repeats each whole message in the
    # short summary, and a reason counted twice would hide a figure that passed.
    failures = out.split("short test summary info")[0]
    reasons = re.findall(r"figure 0:? (differs from the stored one: RMS [\d.]+|Image sizes do not match.*)",
                         failures)
    assert len(reasons) == 3, out[-4000:]
    print("the changed figures:", dict(zip(list(VARIANTS)[1:], reasons, strict=True)))
