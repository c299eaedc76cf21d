"""The diagrams (diagrams/*.svg) are up to date with their sources and shown in their chapters.

None of this needs graphviz: the generator (tools/make_diagrams.py) stamps each SVG with the
SHA-256 of its source module, of the shared style, of the generator and of the values it draws
(e.g. attnlib.models.transformer.config.CHAPTER7_SIZES), and these tests recompute the stamp. The matplotlib
diagrams are also redrawn here and compared byte for byte, which checks that their output is
deterministic. `make diagrams` regenerates every SVG.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
SVG_NS = "{http://www.w3.org/2000/svg}"
FIGURE_RE = re.compile(r"```\{figure\}\s+(\S+)\n(.*?)```", re.S)
NUMREF_RE = re.compile(r"\{numref\}`(?:[^`<]*<)?([\w-]+)>?`")


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_diagrams", ROOT / "tools" / "make_diagrams.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_diagrams", module)
    spec.loader.exec_module(module)
    return module


GEN = _load_generator()
SOURCES = GEN.sources()


@cache
def _module(path: Path) -> ModuleType:
    return GEN.load(path)


@cache
def _values(path: Path) -> str:
    """The values a diagram draws, as canonical JSON (computed once per session)."""
    return str(GEN.canonical(_module(path).values()))


def _chapter_markdown(stem: str) -> list[str]:
    nb = json.loads((ROOT / "chapters" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]


def _figures(stem: str) -> dict[str, dict[str, str]]:
    """Every {figure} directive of a chapter: image path -> its options and caption."""
    found = {}
    for cell in _chapter_markdown(stem):
        for target, body in FIGURE_RE.findall(cell):
            options = dict(re.findall(r"^:(\w+):[ \t]*(.*)$", body, re.M))
            caption = "\n".join(line for line in body.splitlines()
                                if line.strip() and not line.startswith(":")).strip()
            found[target] = {**options, "caption": caption}
    return found


def test_there_is_a_diagram_for_each_point_of_the_issue() -> None:
    """Issue 14 asks for 8 subjects (the cache and the tiling are two figures): 9 SVGs; issue 26
    adds chapter 9's four (shared key/value heads, a window's reach, speculative sampling's
    round, linear attention's state): 13; chapter 10 adds multi-head latent attention's data
    flow: 14; issue 36 adds chapter 10's delta-rule step and hybrid stacks: 16; issue 37 adds
    chapter 11's block mask, DSA's indexer and NSA's branches: 19."""
    assert len(SOURCES) == 19, [p.name for p in SOURCES]
    svgs = sorted(p.name for p in (ROOT / "diagrams").glob("*.svg"))
    expected = sorted(f"{_module(p).NAME}.svg" for p in SOURCES)
    assert svgs == expected, f"SVGs without a source, or sources without an SVG: {svgs} vs {expected}"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_svg_is_up_to_date(path: Path) -> None:
    module = _module(path)
    svg = GEN.svg_path(module)
    stored = GEN.stored_stamp(svg)
    assert stored is not None, f"{svg.name} has no stamp: it was not written by tools/make_diagrams.py"
    want = GEN.stamp(path, json.loads(_values(path)))
    assert stored == (path.relative_to(ROOT).as_posix(), want), (
        f"{svg.name} is out of date with {path.relative_to(ROOT)} or with the values it draws: "
        "run `make diagrams` and commit the SVG")


def _drawn(element: ET.Element) -> list[ET.Element]:
    """The elements in drawing order, leaving out <defs> (glyph outlines, clip paths)."""
    out = []
    for child in element:
        if child.tag != f"{SVG_NS}defs":
            out.append(child)
            out += _drawn(child)
    return out


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_svg_is_self_contained_on_a_light_panel(path: Path) -> None:
    """A well-formed SVG with a size (so an <img> has a natural width), nothing fetched from
    elsewhere, no text left to the reader's fonts, and an opaque white background: the theme's
    dark mode only dims images, so a transparent one would put dark strokes on a dark page."""
    svg = GEN.svg_path(_module(path))
    text = svg.read_text(encoding="utf-8")
    root = ET.fromstring(text.split("?>", 1)[1] if text.startswith("<?xml") else text)
    assert root.tag == f"{SVG_NS}svg"
    for attr in ("width", "height", "viewBox"):
        assert root.get(attr), f"{svg.name}: no {attr} on <svg>"
    width = float(re.sub(r"[a-z]+$", "", root.get("width", "0")))
    assert 300 <= width <= 1300, f"{svg.name}: {width} pt wide"
    assert not re.search(r"(?:href|src)=\"(?!#)[^\"]+\"", text), f"{svg.name} refers to an outside file"
    assert root.find(f".//{SVG_NS}text") is None, f"{svg.name} has <text>: glyphs must be paths"
    # The first filled shape is the background: white, covering the whole picture.
    first = next(el for el in _drawn(root) if el.tag in {f"{SVG_NS}rect", f"{SVG_NS}path", f"{SVG_NS}polygon"})
    fill = (first.get("fill") or "") + (first.get("style") or "")
    assert re.search(r"#ffffff|rgb\(100%\s*,\s*100%\s*,\s*100%\)|fill:\s*#ffffff|white", fill, re.I), (
        f"{svg.name}: the background is {fill!r}, not white")


@pytest.mark.parametrize("path", [p for p in SOURCES if _module(p).TOOL == "matplotlib"],
                         ids=lambda p: p.stem)
def test_matplotlib_diagram_is_redrawn_byte_for_byte(path: Path) -> None:
    """Drawn with the settings a fresh process starts with, as `make diagrams` draws it (a test
    that ran before, e.g. one that applies the book's plot style, must not leak into it)."""
    import matplotlib

    module = _module(path)
    values = json.loads(_values(path))
    fresh = {k: v for k, v in matplotlib.rcParamsOrig.items() if k != "backend"}
    with matplotlib.rc_context(fresh):
        svg = module.render(values)
    drawn = GEN.with_stamp(svg, path.relative_to(ROOT).as_posix(), GEN.stamp(path, values))
    assert drawn == GEN.svg_path(module).read_text(encoding="utf-8"), (
        f"{module.NAME}.svg differs from a fresh drawing: run `make diagrams`")


def test_transformer_diagram_draws_chapter_7_sizes() -> None:
    """The sizes are read from the model's own constant, not typed into the diagram."""
    from attnlib.models.transformer import CHAPTER7_SIZES

    path = next(p for p in SOURCES if _module(p).NAME == "transformer")
    values = json.loads(_values(path))
    assert {k: values[k] for k in CHAPTER7_SIZES} == CHAPTER7_SIZES
    assert values["head_dim"] * values["num_heads"] == values["d_model"]
    # The chapter's alt text spells the sizes out for a screen reader: it must follow them too.
    alt = _figures(_module(path).CHAPTER)[f"../diagrams/{_module(path).NAME}.svg"].get("alt", "")
    for said in (f"D = {values['d_model']}", f"H = {values['num_heads']} heads of E = {values['head_dim']}",
                 f"N = {values['num_encoder_layers']} encoder and {values['num_decoder_layers']} decoder layers",
                 f"feed-forward size of {values['d_ff']}"):
        assert said in alt, f"the alt text of the Transformer diagram does not say {said!r}"
    source = path.read_text(encoding="utf-8")
    for name, number in CHAPTER7_SIZES.items():
        assert not re.search(rf"\b{number}\b", source.split("def values", 1)[1].split("def render", 1)[1]), (
            f"{path.name}: the value of {name} ({number}) is typed in render()")


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.stem)
def test_diagram_is_a_named_captioned_figure_the_chapter_refers_to(path: Path) -> None:
    module = _module(path)
    stem = module.CHAPTER
    assert (ROOT / "chapters" / f"{stem}.ipynb").is_file(), f"{path.name}: no chapter {stem}"
    target = f"../diagrams/{module.NAME}.svg"
    figures = _figures(stem)
    assert target in figures, f"{stem} has no {{figure}} directive for {target}"
    figure = figures[target]
    name = figure.get("name", "")
    assert name.startswith("diagram-"), f"{target}: figure name {name!r} (expected diagram-...)"
    assert len(figure.get("alt", "")) >= 80, f"{target}: alt text too short: {figure.get('alt')!r}"
    assert len(figure["caption"]) >= 40, f"{target}: caption too short: {figure['caption']!r}"
    # Referred to from the text, outside the directive itself.
    text = "\n".join(FIGURE_RE.sub("", cell) for cell in _chapter_markdown(stem))
    assert name in NUMREF_RE.findall(text), f"{stem}: no {{numref}}`{name}` in the text"


def test_figure_names_are_unique_across_the_book() -> None:
    names = [f["name"] for nb in sorted((ROOT / "chapters").glob("*.ipynb"))
             for f in _figures(nb.stem).values() if "name" in f]
    assert len(names) == len(set(names)), names


def test_check_mode_reports_nothing_stale(capsys: pytest.CaptureFixture[str]) -> None:
    """`python tools/make_diagrams.py --check` (no graphviz needed) agrees with the tests above."""
    assert GEN.main(["--check"]) == 0, capsys.readouterr().out
