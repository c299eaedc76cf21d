"""Every chapter is stored executed: nbval compares only the outputs a notebook holds, so an
unexecuted (or half-executed) notebook would pass it silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CHAPTERS = sorted((Path(__file__).parent.parent / "chapters").glob("*.ipynb"))


def test_chapters_exist() -> None:
    assert len(CHAPTERS) >= 8


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_chapter_is_executed_top_to_bottom(path: Path) -> None:
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]
    counts = [c.get("execution_count") for c in code]
    assert counts == list(range(1, len(code) + 1)), (
        f"{path.name}: execution counts {counts} are not 1..{len(code)}; run `make execute`")
    for i, cell in enumerate(code):
        for out in cell.get("outputs", []):
            assert out.get("output_type") != "error", f"{path.name}: code cell {i + 1} stored an error"
        figure = cell.get("metadata", {}).get("mystnb", {}).get("figure")
        if figure:
            images = [o for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
            assert images, f"{path.name}: figure {figure.get('name')!r} has no stored image"
