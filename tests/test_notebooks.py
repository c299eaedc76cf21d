"""Every chapter is stored executed: nbval compares only the outputs a notebook holds, so an
unexecuted (or half-executed) notebook would pass it silently."""

from __future__ import annotations

import json
import re
import unicodedata
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


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_figure_has_a_caption_and_is_referenced(path: Path) -> None:
    """Each stored image is a numbered figure (a mystnb caption and name), and the chapter's
    text refers to each figure by {numref}, so no figure stands unexplained."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    text = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    referenced = set(re.findall(r"\{numref\}`(?:[^`<]*<)?([\w-]+)>?`", text))
    names = []
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        figure = cell.get("metadata", {}).get("mystnb", {}).get("figure") or {}
        has_image = any("image/png" in o.get("data", {}) for o in cell.get("outputs", []))
        if has_image:
            assert figure.get("caption") and figure.get("name"), (
                f"{path.name}: cell {i} draws an image without a figure caption and name")
        if figure.get("name"):
            names.append(figure["name"])
    unreferenced = [name for name in names if name not in referenced]
    assert not unreferenced, f"{path.name}: figures the text never refers to: {unreferenced}"
    dangling = sorted(name for name in referenced if name.startswith("fig-") and name not in names)
    assert not dangling, f"{path.name}: {{numref}} to figures not in this chapter: {dangling}"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_chapter_has_a_summary_and_exercises(path: Path) -> None:
    nb = json.loads(path.read_text(encoding="utf-8"))
    headings = [line.strip() for c in nb["cells"] if c["cell_type"] == "markdown"
                for line in "".join(c["source"]).splitlines() if line.startswith("## ")]
    for wanted in ("## Summary", "## Exercises"):
        assert wanted in headings, f"{path.name}: no {wanted!r} section (headings: {headings})"


def _columns(line: str) -> int:
    """Columns a line takes in a monospaced font: East Asian wide characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_code_lines_fit_80_columns(path: Path) -> None:
    """The rendered book shows 80 columns of code without a scroll bar (the browser test
    measures it); no line of a code cell may be longer (chapters/ruff.toml says so to ruff)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    long = [f"cell {i}, line {k + 1}: {_columns(line)} columns: {line}"
            for i, cell in enumerate(nb["cells"]) if cell["cell_type"] == "code"
            for k, line in enumerate("".join(cell["source"]).splitlines())
            if _columns(line) > 80]
    assert not long, f"{path.name}: code lines wider than 80 columns:\n" + "\n".join(long)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_listings_fit_80_columns(path: Path) -> None:
    """The listings a chapter shows (attnlib.show_source: a fenced block in a Markdown output)
    fit the same 80 columns: a wider line of attnlib's source gets a scroll bar in the book.
    Rewrap the listed function's lines (the rest of attnlib keeps ruff's 100)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    long = []
    for i, cell in enumerate(nb["cells"]):
        for output in cell.get("outputs", []):
            text = "".join(output.get("data", {}).get("text/markdown", ""))
            fence = False
            for line in text.splitlines():
                if line.startswith("```"):
                    fence = not fence
                elif fence and _columns(line) > 80:
                    long.append(f"cell {i} ({text.splitlines()[0]}): {_columns(line)} "
                                f"columns: {line.strip()}")
    assert not long, f"{path.name}: listed lines wider than 80 columns:\n" + "\n".join(long)


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_sources_hold_no_control_characters(path: Path) -> None:
    """A cell written from an unescaped Python string turns \\b and \\f of TeX (\\big, \\frac)
    into a backspace and a form feed, which MathJax then shows as broken maths."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    bad = []
    for i, cell in enumerate(nb["cells"]):
        text = "".join(cell["source"])
        bad += [f"cell {i}: {m.group()!a} in {text[max(0, m.start() - 30):m.end() + 10]!r}"
                for m in _CONTROL.finditer(text)]
    assert not bad, f"{path.name}: control characters in cell sources:\n" + "\n".join(bad)


def test_the_control_character_check_sees_a_backspace() -> None:
    assert _CONTROL.search("\\min\x08ig(1, e\\big)") and not _CONTROL.search("\\min\\big(1\n\t)")
