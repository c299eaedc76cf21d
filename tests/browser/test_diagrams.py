"""The diagrams (diagrams/*.svg) in the built book, in headless Chromium, in light and dark mode.

For every diagram: its page shows it exactly once as a numbered figure (caption "Figure N.M",
the alt text of its {figure} directive), the image has loaded (naturalWidth > 0) and is displayed
at a readable size, and the text links to it ({numref} becomes a link to the figure's anchor).
Then the page is switched to the theme's dark mode (pydata-sphinx-theme reads
``<html data-theme>``), and in both modes a screenshot of the figure is saved to
``_build/screenshots/diagrams/`` (for a person to look at) and measured: the diagram must keep a
light panel with dark ink on it, with a contrast ratio of at least 4.5 (WCAG's AA level for text)
in both modes, measured on the image as shown (the theme dims images in dark mode).

Chromium, the server's address and the skip/fail rules come from test_rendered_book.py (the
whole module is skipped, or fails under CI, exactly when that one is). The diagrams' pages are not
loaded here: this module's inspection runs on test_rendered_book's load of each page (its
``register``), after that module's checks; whether the image loaded is read from that visit. One
screenshot of each figure per mode is saved and measured (cropped to the image) and the switch
to dark mode is awaited as one frame, not 300 ms; the darkest 1 % is found colour by colour,
not pixel by pixel (same value; 2026-11-29: the module cost 54 s of CPU, most of it loading its
10 pages a second time, and about 10 s of Python in the per-pixel luminances).
"""

from __future__ import annotations

import importlib.util
import io
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from test_rendered_book import (  # the lead's browser test: same Chromium, flags and waits
    SCREENSHOTS,
    SITE,
    Visit,
    register,
)

ROOT = Path(__file__).resolve().parents[2]
OUT = SCREENSHOTS / "diagrams"


def _diagrams() -> list[tuple[str, str]]:
    """(chapter stem, SVG name) of every diagram, from the generator's sources."""
    spec = importlib.util.spec_from_file_location("make_diagrams", ROOT / "tools" / "make_diagrams.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("make_diagrams", gen)
    spec.loader.exec_module(gen)
    return [(gen.load(p).CHAPTER, gen.load(p).NAME) for p in gen.sources()]


DIAGRAMS = _diagrams()
PAGES = sorted({chapter for chapter, _ in DIAGRAMS})

# Everything about one diagram on the page, and the page's own state.
INSPECT = """(name) => {
  const imgs = Array.from(document.querySelectorAll('img')).filter(
      img => (img.getAttribute('src') || '').split('/').pop() === name + '.svg');
  const out = {count: imgs.length};
  if (imgs.length !== 1) return out;
  const img = imgs[0];
  const box = img.getBoundingClientRect();
  const figure = img.closest('figure');
  out.complete = img.complete;
  out.naturalWidth = img.naturalWidth;
  out.width = box.width;
  out.height = box.height;
  out.visible = getComputedStyle(img).visibility !== 'hidden' && getComputedStyle(img).display !== 'none';
  out.alt = img.getAttribute('alt') || '';
  out.figureId = figure ? figure.id : null;
  const number = figure && figure.querySelector('figcaption .caption-number');
  out.number = number ? number.textContent.trim() : null;
  out.caption = figure && figure.querySelector('figcaption') ? figure.querySelector('figcaption').textContent.trim() : '';
  out.refs = figure && figure.id ? Array.from(document.querySelectorAll('a[href="#' + figure.id + '"]'))
      .filter(a => !a.closest('figure') && !a.classList.contains('headerlink'))
      .map(a => a.textContent.trim()) : [];
  return out;
}"""


HIDE_STICKY = ".bd-header, .bd-header-article, .skip-link { visibility: hidden !important; }"
CONTRAST = 4.5  # WCAG AA for text, in both modes


@dataclass
class Shot:
    """What a diagram showed in one colour mode."""

    info: dict[str, Any] = field(default_factory=dict)
    background: float = 0.0  # relative luminance of the panel (the most common colour)
    ink: float = 0.0  # relative luminance of the darkest 1 % of pixels
    page: float = 0.0  # relative luminance of the page background around the figure
    path: str = ""


@dataclass
class Seen:
    problems: list[str] = field(default_factory=list)
    modes: dict[str, Shot] = field(default_factory=dict)


def _luminance(rgb: tuple[float, float, float]) -> float:
    """WCAG relative luminance of an sRGB colour with channels 0..255."""
    def lin(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (lin(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: float, b: float) -> float:
    return (max(a, b) + 0.05) / (min(a, b) + 0.05)


def _measure(png: bytes, box: tuple[int, int, int, int] | None = None) -> tuple[float, float]:
    """(panel luminance, ink luminance) of a screenshot of the image, at the size it is shown
    (thin strokes drawn small are antialiased to grey: that is what the reader sees); ``box``
    (left, top, right, bottom): the image's place in a screenshot of more than the image."""
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    if box is not None:  # kept inside the screenshot: no padding counted as ink
        left, top, right, bottom = box
        image = image.crop((max(left, 0), max(top, 0), min(right, image.width),
                            min(bottom, image.height)))
    colours = image.getcolors(maxcolors=image.width * image.height) or []
    panel = max(colours)[1]
    # the luminance of the pixel at 1 % of them in order of luminance, one colour at a time
    # (each pixel's own luminance, sorted, gives the same value at 30 times the CPU)
    dark_first = sorted((_luminance(rgb), count) for count, rgb in colours)
    rank, seen = sum(count for count, _ in colours) // 100, 0
    for lum, count in dark_first:
        seen += count
        if seen > rank:
            return _luminance(panel), lum
    return _luminance(panel), 0.0  # no pixels


async def _inspect(page: Any, visit: Visit) -> None:
    """The diagrams of the page test_rendered_book has loaded (and checked), in light and dark
    mode: their findings go to SEEN."""
    from playwright.async_api import Error as PlaywrightError

    chapter = Path(visit.name).stem
    names = [name for ch, name in DIAGRAMS if ch == chapter]
    for problem in visit.problems:  # test_rendered_book waited for every image of the page
        for name in names:
            if problem.startswith("image did not load: ") and problem.endswith(f"{name}.svg"):
                SEEN[name].problems.append(problem)
    try:
        # The theme's sticky header would sit on top of a figure taller than the window.
        await page.add_style_tag(content=HIDE_STICKY)
        for mode in ("light", "dark"):
            await page.evaluate("(mode) => { document.documentElement.dataset.theme = mode;"
                                " document.documentElement.dataset.mode = mode; }", mode)
            # the theme's colours are CSS variables: the next frame is drawn in the new mode
            await page.evaluate("() => new Promise(r => requestAnimationFrame(() => r(null)))")
            body = await page.evaluate("getComputedStyle(document.body).backgroundColor")
            for name in names:
                shot = Shot()
                shot.info = await page.evaluate(INSPECT, name)
                rgb = tuple(float(x) for x in re.findall(r"[\d.]+", body)[:3])
                shot.page = _luminance(rgb) if len(rgb) == 3 else -1.0
                if shot.info.get("count") == 1:
                    figure = page.locator(f'figure:has(img[src$="/{name}.svg"])')
                    await figure.scroll_into_view_if_needed()
                    png = await figure.screenshot()
                    outer = await figure.bounding_box()
                    inner = await page.locator(f'img[src$="/{name}.svg"]').bounding_box()
                    box = (round(inner["x"] - outer["x"]), round(inner["y"] - outer["y"]),
                           round(inner["x"] - outer["x"] + inner["width"]),
                           round(inner["y"] - outer["y"] + inner["height"]))
                    shot.background, shot.ink = _measure(png, box)
                    path = OUT / f"{chapter}--{name}-{mode}.png"
                    path.write_bytes(png)
                    shot.path = str(path.relative_to(ROOT))
                SEEN[name].modes[mode] = shot
    except PlaywrightError as error:  # a timeout or a crash fails this page's diagrams only
        for name in names:
            SEEN[name].problems.append(f"{type(error).__name__}: {error}")


SEEN = {name: Seen() for _, name in DIAGRAMS}
register(__file__, [f"chapters/{chapter}.html" for chapter in PAGES], OUT, _inspect)


@pytest.fixture(scope="module")
def seen(visits: dict[str, Visit]) -> dict[str, Seen]:
    """What each diagram showed: test_rendered_book's session fixture ran _inspect on its page."""
    return SEEN


def _alt_text(chapter: str, name: str) -> str:
    """The :alt: of the {figure} directive that shows ``name`` in the chapter's notebook."""
    import json

    nb = json.loads((ROOT / "chapters" / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        match = re.search(r"```\{figure\}\s+\.\./diagrams/" + re.escape(name) + r"\.svg\n(.*?)```", text, re.S)
        if cell["cell_type"] == "markdown" and match:
            alt = re.search(r"^:alt:[ \t]*(.*)$", match.group(1), re.M)
            return alt.group(1).strip() if alt else ""
    return ""


def test_every_diagram_page_was_built() -> None:
    missing = [chapter for chapter in PAGES if not (SITE / "chapters" / f"{chapter}.html").is_file()]
    assert not missing, f"pages not built: {missing}"


@pytest.mark.parametrize(("chapter", "name"), DIAGRAMS, ids=[name for _, name in DIAGRAMS])
def test_diagram_renders_in_light_and_dark_mode(chapter: str, name: str, seen: dict[str, Seen]) -> None:
    result = seen[name]
    problems = list(result.problems)
    for mode in ("light", "dark"):
        shot = result.modes.get(mode)
        if shot is None:
            problems.append(f"{mode}: not visited")
            continue
        info = shot.info
        if info.get("count") != 1:
            problems.append(f"{mode}: {info.get('count')} images named {name}.svg on the page (expected 1)")
            continue
        if not (info["complete"] and info["naturalWidth"] > 0):
            problems.append(f"{mode}: the image did not load (naturalWidth {info['naturalWidth']})")
        if not info["visible"] or info["width"] < 300 or info["height"] < 80:
            problems.append(f"{mode}: displayed at {info['width']:.0f} x {info['height']:.0f} px")
        if not info["figureId"] or not info["figureId"].startswith("diagram-"):
            problems.append(f"{mode}: not inside a named figure (id {info['figureId']!r})")
        if not (info["number"] or "").startswith("Figure "):
            problems.append(f"{mode}: no figure number in the caption ({info['number']!r})")
        if not info["refs"] or not all(ref.startswith("Figure ") for ref in info["refs"]):
            problems.append(f"{mode}: the text does not refer to it by number (links: {info['refs']})")
        if len(info["alt"]) < 80 or info["alt"] != _alt_text(chapter, name):
            problems.append(f"{mode}: alt text {info['alt'][:60]!r}... is not the figure's :alt:")
        panel_contrast = _contrast(shot.background, shot.ink)
        needed = CONTRAST
        if shot.background < 0.5:
            problems.append(f"{mode}: the panel is dark (luminance {shot.background:.2f}): dark ink would vanish")
        if panel_contrast < needed:
            problems.append(f"{mode}: ink on panel contrast {panel_contrast:.1f} < {needed}")
    dark, light = result.modes.get("dark"), result.modes.get("light")
    if dark and light and not dark.page < 0.1 < light.page:
        problems.append(f"the page did not switch to dark mode (body luminance light {light.page:.2f}, "
                        f"dark {dark.page:.2f})")
    if problems:
        pytest.fail(f"{chapter}: {name}.svg\n  " + "\n  ".join(problems), pytrace=False)
    assert light is not None and dark is not None
    print(f"{name}: {light.info['number']}, {light.info['width']:.0f} px wide; contrast light "
          f"{_contrast(light.background, light.ink):.1f}, dark {_contrast(dark.background, dark.ink):.1f}; "
          f"{light.path}, {dark.path}")
