"""Progress bars never change what nbval compares or what a saved notebook stores.

A small notebook that trains nothing but loops under :func:`attnlib.book.progress.progress` is run in a
real Jupyter kernel twice: with the bar off (as ``make execute`` stores chapters) and with the bar
on (as a reader runs a chapter in Jupyter and saves it). Plain ``pytest --nbval`` (no
``ATTNLIB_PROGRESS`` in the environment, so the bar is on) must pass on both. The same notebook
with the former bar (tqdm.auto) must fail: the check can fail.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from attnlib.book.progress import WIDGET_MIME, progress

ROOT = Path(__file__).resolve().parent.parent

LOOP = """total = 0
for i in progress(range(40), desc="demo"):
    total += i
print(f"sum of 0..39 = {total}")"""


def _notebook(import_line: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(import_line), nbformat.v4.new_code_cell(LOOP)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def _execute(nb: nbformat.NotebookNode, path: Path, progress_env: str,
             monkeypatch: pytest.MonkeyPatch) -> nbformat.NotebookNode:
    monkeypatch.setenv("ATTNLIB_PROGRESS", progress_env)
    client = NotebookClient(nb, timeout=120, kernel_name="python3", store_widget_state=True,
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()
    nbformat.write(nb, path)
    return nb


def _nbval(path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ATTNLIB_PROGRESS"}  # as a newcomer runs it
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "-p", "no:cacheprovider",
         "-q", str(path)],
        cwd=path.parent, env=env, capture_output=True, text=True, timeout=300,
    )


def test_progress_in_a_terminal_goes_to_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ATTNLIB_PROGRESS", "1")
    assert list(progress(range(3), desc="terminal")) == [0, 1, 2]
    captured = capsys.readouterr()
    assert captured.out == "" and "terminal" in captured.err and "3/3" in captured.err


def test_nbval_passes_with_the_bar_on_against_outputs_stored_with_it_off_and_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stored = _execute(_notebook("from attnlib.book.progress import progress"),
                      tmp_path / "stored_off.ipynb", "0", monkeypatch)
    assert [o["output_type"] for o in stored.cells[1].outputs] == ["stream"]

    saved = _execute(_notebook("from attnlib.book.progress import progress"),
                     tmp_path / "saved_on.ipynb", "1", monkeypatch)
    widgets = [o for o in saved.cells[1].outputs if o["output_type"] == "display_data"]
    assert len(widgets) == 1 and set(widgets[0]["data"]) == {WIDGET_MIME}, saved.cells[1].outputs
    # The reader really saw a bar, and it reached the end: the widget state holds 40 of 40.
    states = saved.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    bars = [s["state"] for s in states.values() if s["model_name"] == "IntProgressModel"]
    assert [(b["value"], b["max"]) for b in bars] == [(40, 40)]

    for path in (tmp_path / "stored_off.ipynb", tmp_path / "saved_on.ipynb"):
        result = _nbval(path)
        assert result.returncode == 0, result.stdout[-3000:]
        assert "2 passed" in result.stdout


OLD_PROGRESS = """import os
from tqdm.auto import tqdm
progress = tqdm if os.environ.get("ATTNLIB_PROGRESS") != "0" else (lambda it, **kw: it)"""


def test_a_bar_that_prints_text_fails_nbval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: the former bar (tqdm.auto, off only under ATTNLIB_PROGRESS=0) stored off and
    re-run on adds a text/plain output that nbval compares, as chapter 7 failed before."""
    _execute(_notebook(OLD_PROGRESS), tmp_path / "old_stored_off.ipynb", "0", monkeypatch)
    result = _nbval(tmp_path / "old_stored_off.ipynb")
    assert result.returncode != 0
    assert "1 failed" in result.stdout and "text/plain" in result.stdout
