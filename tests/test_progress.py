"""Progress bars never change what nbval compares or what a saved notebook stores.

A small notebook that trains nothing but loops under :func:`attnlib.book.progress.progress` is run in a
real Jupyter kernel twice: with the bar off (as ``make execute`` stores chapters) and with the bar
on (as a reader runs a chapter in Jupyter and saves it). Plain ``pytest --nbval`` (no
``ATTNLIB_PROGRESS`` in the environment, so the bar is on) must pass on both. The same notebook
with the former bar (tqdm.auto) must fail: the check can fail.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

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


def _nbval(*paths: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ATTNLIB_PROGRESS"}  # as a newcomer runs it
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "-p", "no:cacheprovider",
         "-rA", *map(str, paths)],
        cwd=paths[0].parent, env=env, capture_output=True, text=True, timeout=300,
    )


OLD_PROGRESS = """import os
from tqdm.auto import tqdm
progress = tqdm if os.environ.get("ATTNLIB_PROGRESS") != "0" else (lambda it, **kw: it)"""


class Checked(NamedTuple):
    """The three notebooks as executed and stored, and one nbval run over the three files."""

    notebooks: dict[str, nbformat.NotebookNode]
    nbval: subprocess.CompletedProcess[str]

    def verdicts(self, name: str) -> dict[int, str]:
        """Each cell's PASSED or FAILED in ``name``'s file, from nbval's summary."""
        return {int(n): word for word, n in re.findall(
            rf"^(PASSED|FAILED|ERROR) {re.escape(name)}\.ipynb::Cell (\d+)", self.nbval.stdout,
            re.M)}


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Checked:
    """One pytest --nbval process for the three notebooks (each file still gets its own kernel)
    instead of one per notebook: a pytest with nbval costs about 2 s of CPU to start."""
    folder = tmp_path_factory.mktemp("progress")
    new = "from attnlib.book.progress import progress"
    notebooks = {}
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name, import_line, progress_env in (("stored_off", new, "0"), ("saved_on", new, "1"),
                                                ("old_stored_off", OLD_PROGRESS, "0")):
            notebooks[name] = _execute(_notebook(import_line), folder / f"{name}.ipynb",
                                       progress_env, monkeypatch)
    return Checked(notebooks, _nbval(*(folder / f"{name}.ipynb" for name in notebooks)))


def test_progress_in_a_terminal_goes_to_stderr(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ATTNLIB_PROGRESS", "1")
    assert list(progress(range(3), desc="terminal")) == [0, 1, 2]
    captured = capsys.readouterr()
    assert captured.out == "" and "terminal" in captured.err and "3/3" in captured.err


def test_nbval_passes_with_the_bar_on_against_outputs_stored_with_it_off_and_on(
    checked: Checked,
) -> None:
    stored = checked.notebooks["stored_off"]
    assert [o["output_type"] for o in stored.cells[1].outputs] == ["stream"]

    saved = checked.notebooks["saved_on"]
    widgets = [o for o in saved.cells[1].outputs if o["output_type"] == "display_data"]
    assert len(widgets) == 1 and set(widgets[0]["data"]) == {WIDGET_MIME}, saved.cells[1].outputs
    # The reader really saw a bar, and it reached the end: the widget state holds 40 of 40.
    states = saved.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    bars = [s["state"] for s in states.values() if s["model_name"] == "IntProgressModel"]
    assert [(b["value"], b["max"]) for b in bars] == [(40, 40)]

    for name in ("stored_off", "saved_on"):
        assert checked.verdicts(name) == {0: "PASSED", 1: "PASSED"}, checked.nbval.stdout[-3000:]


def test_a_bar_that_prints_text_fails_nbval(checked: Checked) -> None:
    """The control: the former bar (tqdm.auto, off only under ATTNLIB_PROGRESS=0) stored off and
    re-run on adds a text/plain output that nbval compares, as chapter 7 failed before."""
    result = checked.nbval
    assert result.returncode != 0
    assert checked.verdicts("old_stored_off") == {0: "PASSED", 1: "FAILED"}, result.stdout[-3000:]
    # the failure's own report (the FAILURES section holds only this notebook's failed cell)
    failures = result.stdout.split("short test summary info")[0]
    assert "old_stored_off.ipynb::Cell 1" in failures and "text/plain" in failures
