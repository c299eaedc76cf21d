"""Display maths stands in a block of its own in every page's source.

MyST takes ``$$ ... $$`` as display maths only when it opens a block: written in the middle of
a paragraph, it is read as inline dollars and the rendered page shows raw TeX (both editions,
since the Chinese catalogue keeps the English markup). Every line that opens or closes a
``$$`` block must have a blank line (or the cell's edge) on its outer side.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "chapters").glob("*.ipynb")) + sorted(ROOT.glob("*.md"))


def _markdown(page: Path) -> list[tuple[str, str]]:
    if page.suffix == ".md":
        return [(page.name, page.read_text(encoding="utf-8"))]
    cells = json.loads(page.read_text(encoding="utf-8"))["cells"]
    return [(f"{page.name} cell {i}", "".join(c["source"])) for i, c in enumerate(cells)
            if c["cell_type"] == "markdown"]


def _misplaced(text: str) -> list[str]:
    lines, found, inside, fence = text.split("\n"), [], False, False
    for j, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fence = not fence
        if fence or line.strip() != "$$":
            continue
        if not inside and j > 0 and lines[j - 1].strip():
            found.append(f"line {j + 1}: $$ opens after text: {lines[j - 1][-50:]!r}")
        if inside and j + 1 < len(lines) and lines[j + 1].strip():
            found.append(f"line {j + 1}: $$ closes before text: {lines[j + 1][:50]!r}")
        inside = not inside
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_display_maths_opens_and_closes_a_block(page: Path) -> None:
    problems = [f"{where}, {p}" for where, text in _markdown(page) for p in _misplaced(text)]
    assert not problems, "\n".join(problems)


def test_the_check_sees_display_maths_inside_a_paragraph() -> None:
    assert _misplaced("the score is\n$$\na = b\n$$\nThe cache holds") != []
    assert _misplaced("the score is\n\n$$\na = b\n$$\n\nThe cache holds") == []
