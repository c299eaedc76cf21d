"""The figures a reader moves (attnlib.book.interactive), used as a reader uses them.

Every such figure is found in the chapters' stored outputs (what `make execute` wrote and nbval
checked): its controls, the values they show and the table of every state. Then, in both
editions, in headless Chromium with every request that would leave 127.0.0.1 aborted and
counted, each page that shows one is opened and, for each figure: the sliders are visible (the
script ran), named in the page's language (Chinese in the Chinese edition), and each slider is
moved with the keyboard alone (Home, End, then back to where it started with the arrow keys).
At every position the value shown beside the slider must be the cell's value for that position,
every part of the figure that changes (paths, bars, labels, readouts) must hold exactly what the
cell computed for that state, and the figure must differ from the previous position. A
screenshot of the figure is saved under ``_build/screenshots/interactive/``: of its last state
checked (``*-last.png``), at every position too with ATTNLIB_FULL_SCREENSHOTS=1 (`make browser`;
nothing checks them), and of the page opened with JavaScript off (``*-no-javascript.png``) and
on a phone (``*-phone.png``).

Every text the figure displays at the positions checked (title, axis and tick labels, legend,
notes, control names and values, readouts) is collected; on the Chinese pages each one that holds
English words (not a name, unit or symbol of :data:`NOT_WORDS`) must hold Chinese, and the test
lists those that do not. The line that tells a reader without JavaScript which setting is shown
(``.attn-shown``) is hidden once the script runs; without JavaScript (the built HTML as served,
and one page per edition opened with JavaScript off) it is visible, names every control with
its default value, and is in the page's language. At every position checked the value beside
each slider is the page's own (its translation on a Chinese page), the script's state is the
cell's, no slider has moved sideways, and the readouts are announced (``aria-live``), each whole
(``aria-atomic`` on each readout), while the value beside a slider is ``aria-hidden`` (the slider's
``aria-valuetext`` says it); on a phone
(390 px, one page per edition) the SVG keeps its drawn size and scrolls sideways. Each slider is
moved with the others at their defaults, then one mixed state (every slider at its last
position) is checked and photographed.

Chromium, its flags and the skip/fail rules come from test_rendered_book.py. The pages with a
figure are not loaded here with JavaScript on: the figures are moved on test_rendered_book's load
of each page (its ``register``), after that module's checks; the requests counted are that
load's, whose resolver leaves no host but 127.0.0.1 reachable (2026-11-29: the module cost 86 s
of CPU, most of it loading its 12 pages a second time, and 72 screenshots).
"""

from __future__ import annotations

import asyncio
import html
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from test_rendered_book import (  # the lead's browser test: same Chromium, flags and waits
    FULL_SCREENSHOTS,
    HOST,
    PAGE_TIMEOUT_MS,
    SCREENSHOTS,
    SITE,
    VIEWPORT_HEIGHT,
    VIEWPORT_WIDTH,
    Chromium,
    Visit,
    edition_of,
    register,
)

ROOT = Path(__file__).resolve().parents[2]
OUT = SCREENSHOTS / "interactive"
_DATA = re.compile(r'<script type="application/json" class="attn-data">(.*?)</script>', re.S)
_CJK = re.compile(r"[\u3400-\u9fff]")
#: What stays in Latin letters in the Chinese edition: names (models, number formats, GPUs,
#: JavaScript), units and symbols. Any other run of two or more Latin letters is an English word.
NOT_WORDS = re.compile(r"\b(?:JavaScript|Llama|Mistral|v\d[\d.]*|b?float\d+|FP8|H\d00|SXM|log|"
                       r"ms|[KMGT]B|d_k|R_[mn])\b")
_WORD = re.compile(r"[A-Za-z]{2,}")


def english_words(text: str) -> list[str]:
    """The English words in ``text``: runs of two or more Latin letters not in NOT_WORDS."""
    return _WORD.findall(NOT_WORDS.sub(" ", text))


@dataclass
class Figure:
    """One figure as the chapter's cell stored it."""

    chapter: str
    name: str
    labels: list[str]  # control names, English
    values: list[list[str]]  # the value each control shows at each position
    defaults: list[int]
    table: dict[str, Any]  # {"keys": [[element, attribute]], "states": [[value, ...], ...]}

    def index(self, positions: list[int]) -> int:
        index = 0
        for count, position in zip((len(v) for v in self.values), positions, strict=True):
            index = index * count + position
        return index


def _figures() -> list[Figure]:
    found = []
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        for cell in notebook["cells"]:
            for output in cell.get("outputs", []):
                markup = "".join(output.get("data", {}).get("text/html", []))
                name = re.search(r'data-attn-fig="([A-Za-z0-9-]+)"', markup)
                if not name:
                    continue
                data = _DATA.search(markup)
                assert data is not None, f"{path.name}: figure {name.group(1)} has no data table"
                controls = re.findall(r'<div class="attn-c">(.*?)</div>', markup, re.S)
                found.append(Figure(
                    path.stem, name.group(1),
                    [html.unescape(re.search(r'class="attn-cl" data-msg>([^<]*)<', c).group(1))  # type: ignore[union-attr]
                     for c in controls],
                    [[html.unescape(v) for v in re.findall(r'class="attn-vl"[^>]*>([^<]*)<', c)]
                     for c in controls],
                    [int(re.search(r'value="(\d+)"', c).group(1)) for c in controls],  # type: ignore[union-attr]
                    json.loads(data.group(1).replace("<\\/", "</"))))
    return found


FIGURES = _figures()
#: The page opened with JavaScript off, in each edition: the figure with the most sliders.
NO_JAVASCRIPT = max(FIGURES, key=lambda f: len(f.values))
EDITIONS = {"en": "", "zh": "zh/"}

# The figure as the reader sees it: controls, their shown values, and every changing part.
READ = """([name, keys]) => {
  const root = document.querySelector(`.attn-fig[data-attn-fig="${name}"]`);
  if (!root) return null;
  const controls = root.querySelector('.attn-controls');
  const out = {
    visible: !controls.hidden && controls.getBoundingClientRect().height > 0,
    labels: Array.from(root.querySelectorAll('.attn-cl')).map(e => e.textContent),
    shown: Array.from(root.querySelectorAll('.attn-c output')).map(e => e.textContent),
    valuetext: Array.from(root.querySelectorAll('.attn-c input')).map(e => e.getAttribute('aria-valuetext')),
    positions: Array.from(root.querySelectorAll('.attn-c input')).map(e => Number(e.value)),
    // the values each slider shows, as this page writes them (translated where they are words)
    pageValues: Array.from(root.querySelectorAll('.attn-c')).map(c =>
      Array.from(c.querySelectorAll('.attn-vl')).map(e => e.textContent)),
    // where each slider starts on the page: it must not move while another slider moves
    lefts: Array.from(root.querySelectorAll('.attn-c input')).map(
      e => Math.round(e.getBoundingClientRect().left)),
    live: (root.querySelector('.attn-readouts') || {getAttribute: () => null})
      .getAttribute('aria-live'),
    // each readout is announced whole; the value beside a slider is not announced twice
    atomic: Array.from(root.querySelectorAll('.attn-r')).map(e => e.getAttribute('aria-atomic')),
    outputHidden: Array.from(root.querySelectorAll('.attn-c output')).map(
      e => e.getAttribute('aria-hidden')),
    state: root.getAttribute('data-state'),
    title: (root.querySelector('svg title') || {}).textContent || '',
    readoutLabels: Array.from(root.querySelectorAll('.attn-r > span[data-msg]')).map(e => e.textContent),
    data: root.querySelector('script.attn-data').textContent,
    // every text the reader sees: SVG texts, control names and values (each position's), readouts
    texts: Array.from(root.querySelectorAll('svg title, svg text, .attn-cl, .attn-c output, ' +
                                            '.attn-vl, .attn-r > span'))
      .map(e => e.textContent).filter(t => t.trim() !== ''),
    shownLine: (() => {
      const line = root.querySelector('.attn-shown');
      return line ? {hidden: line.hidden || line.getBoundingClientRect().height === 0,
                     text: line.textContent} : null;
    })(),
  };
  out.parts = keys.map(([element, attribute]) => {
    const el = root.querySelector(`[data-e="${element}"]`);
    if (!el) return null;
    return attribute === '#text' ? el.textContent : el.getAttribute(attribute);
  });
  return out;
}"""


@dataclass
class Seen:
    problems: list[str] = field(default_factory=list)
    positions: int = 0  # slider positions checked
    shots: list[str] = field(default_factory=list)
    requests: int = 0  # requests the page made (all to 127.0.0.1 unless counted in foreign)
    foreign: list[str] = field(default_factory=list)  # requests that tried to leave the machine
    texts: dict[str, None] = field(default_factory=dict)  # every text shown, in order, once
    static_line: str = ""  # the line a reader without JavaScript sees above the figure


async def _check_figure(page: Any, figure: Figure, edition: str, seen: Seen) -> None:
    keys = figure.table["keys"]
    root = page.locator(f'.attn-fig[data-attn-fig="{figure.name}"]')
    info = await page.evaluate(READ, [figure.name, keys])
    if info is None:
        seen.problems.append("not on the page")
        return
    if not info["visible"]:
        seen.problems.append("the controls are hidden: the script did not run")
    if json.loads(info["data"]) != figure.table:
        seen.problems.append("the page's table of states differs from the notebook's")
    if info["shownLine"] is None or not info["shownLine"]["hidden"]:
        seen.problems.append(f"the line for readers without JavaScript is not hidden: "
                             f"{info['shownLine']}")
    seen.texts.update(dict.fromkeys(info["texts"]))
    if edition == "zh":
        for text in info["labels"] + [info["title"]] + info["readoutLabels"]:
            if not _CJK.search(text):
                seen.problems.append(f"not in Chinese: {text!r}")
    elif info["labels"] != figure.labels:
        seen.problems.append(f"control names {info['labels']} != {figure.labels}")
    if info["live"] != "polite":
        seen.problems.append(f"the readouts are not announced (aria-live {info['live']!r})")
    if not info["atomic"] or any(v != "true" for v in info["atomic"]):
        seen.problems.append(f"a readout is not announced whole (aria-atomic {info['atomic']})")
    if any(v != "true" for v in info["outputHidden"]):
        seen.problems.append("the value beside a slider is announced twice (aria-hidden "
                             f"{info['outputHidden']})")
    if len(info["pageValues"]) != len(figure.values) or any(
            len(page) != len(cell) for page, cell in zip(info["pageValues"], figure.values,
                                                         strict=False)):
        seen.problems.append(f"the page's slider values {info['pageValues']} do not match the "
                             f"cell's {figure.values}")
        return
    for c, (page_values, cell_values) in enumerate(zip(info["pageValues"], figure.values,
                                                       strict=True)):
        if edition == "en" and page_values != cell_values:
            seen.problems.append(f"slider {c}: values {page_values} != {cell_values}")
        if edition == "zh" and any(english_words(v) and not _CJK.search(v)
                                   for v in page_values):
            seen.problems.append(f"slider {c}: values not in Chinese: {page_values}")
    positions = list(figure.defaults)
    lefts = info["lefts"]
    previous = info["parts"]
    inputs = root.locator(".attn-c input")
    for c, values in enumerate(figure.values):
        slider = inputs.nth(c)
        await slider.focus()
        # Home, End, then back to the default with the arrow keys: the keyboard alone.
        moves: list[tuple[str, int]] = [("Home", 0), ("End", len(values) - 1)]
        moves += [("ArrowLeft", len(values) - 2 - i)
                  for i in range(len(values) - 1 - figure.defaults[c])]
        for key, position in moves:
            await page.keyboard.press(key)
            positions[c] = position
            if key.startswith("Arrow") and position != figure.defaults[c]:
                continue  # only the arrows' last step is checked
            info = await page.evaluate(READ, [figure.name, keys])
            where = f"{figure.labels[c]} at position {position} ({values[position]})"
            if info["positions"] != positions:
                seen.problems.append(f"{where}: sliders at {info['positions']}, expected {positions}")
                continue
            # the page's own value at this position (English, or its translation on a Chinese
            # page); on the English page it is the cell's value
            own = info["pageValues"][c][position]
            if info["shown"][c] != own or info["valuetext"][c] != own \
                    or (edition == "en" and own != values[position]):
                seen.problems.append(f"{where}: shows {info['shown'][c]!r} (aria-valuetext "
                                     f"{info['valuetext'][c]!r}), the page's value is {own!r}")
            if info["state"] != str(figure.index(positions)):
                seen.problems.append(f"{where}: the script shows state {info['state']}, the "
                                     f"cell's table orders it at {figure.index(positions)}")
            if info["lefts"] != lefts:
                seen.problems.append(f"{where}: the sliders moved sideways, from {lefts} px to "
                                     f"{info['lefts']}")
            state = figure.table["states"][figure.index(positions)]
            wrong = [i for i, (got, want) in enumerate(zip(info["parts"], state, strict=True))
                     if got != want]
            if wrong:
                seen.problems.append(f"{where}: {len(wrong)} of {len(state)} parts differ from "
                                     f"the cell's state, first {keys[wrong[0]]}: "
                                     f"{str(info['parts'][wrong[0]])[:60]!r}")
            if info["parts"] == previous and position != figure.defaults[c]:
                seen.problems.append(f"{where}: the figure did not change")
            previous = info["parts"]
            seen.texts.update(dict.fromkeys(info["texts"]))
            seen.positions += 1
            if FULL_SCREENSHOTS:
                shot = OUT / f"{edition}-{figure.name}-c{c}-{position}.png"
                await root.screenshot(path=str(shot))
                seen.shots.append(str(shot.relative_to(ROOT)))
    if len(figure.values) > 1:
        # Issue 38's third review: one mixed state, every slider at its last position (each
        # slider above moved with the others at their defaults).
        for c, values in enumerate(figure.values):
            await inputs.nth(c).focus()
            await page.keyboard.press("End")
            positions[c] = len(values) - 1
        info = await page.evaluate(READ, [figure.name, keys])
        where = f"every slider at its last position {positions}"
        state = figure.table["states"][figure.index(positions)]
        if info["positions"] != positions or info["state"] != str(figure.index(positions)):
            seen.problems.append(f"{where}: sliders at {info['positions']}, state "
                                 f"{info['state']}, expected {figure.index(positions)}")
        elif info["parts"] != state:
            seen.problems.append(f"{where}: the figure differs from the cell's state")
        seen.texts.update(dict.fromkeys(info["texts"]))
        seen.positions += 1
    shot = OUT / f"{edition}-{figure.name}-last.png"  # the last state checked
    await root.screenshot(path=str(shot))
    seen.shots.append(str(shot.relative_to(ROOT)))


async def _inspect(page: Any, visit: Visit) -> None:
    """The figures of the page test_rendered_book has loaded (and checked): their findings go to
    SEEN."""
    from urllib.parse import urlsplit

    edition = "zh" if edition_of(visit.name) else "en"
    figures = [f for f in FIGURES if f.chapter == Path(visit.name).stem]
    try:
        await page.add_style_tag(content=".bd-header, .bd-header-article { visibility: hidden !important; }")
        for figure in figures:
            await _check_figure(page, figure, edition, SEEN[edition, figure.name])
    except Exception as error:  # a timeout or a crash fails this page's figures only
        for figure in figures:
            SEEN[edition, figure.name].problems.append(f"{type(error).__name__}: {error}")
    requests = [url for url in visit.requests if not url.startswith("data:")]
    for figure in figures:
        SEEN[edition, figure.name].requests = len(requests)
        SEEN[edition, figure.name].foreign = [url for url in requests
                                              if urlsplit(url).hostname != HOST]


SEEN = {(edition, f.name): Seen() for edition in EDITIONS for f in FIGURES}
register(__file__, [f"{prefix}chapters/{chapter}.html" for prefix in EDITIONS.values()
                    for chapter in sorted({f.chapter for f in FIGURES})], OUT, _inspect)


# Without JavaScript: the line above the figure, and the controls it replaces.
READ_STATIC = """() => Array.from(document.querySelectorAll('.attn-fig')).map(root => {
  const line = root.querySelector('.attn-shown');
  return {name: root.getAttribute('data-attn-fig'),
          line: line ? line.textContent : null,
          visible: !!line && !line.hidden && line.getBoundingClientRect().height > 0,
          controls: root.querySelector('.attn-controls').getBoundingClientRect().height};
})"""


async def _visit_without_javascript(context: Any, base_url: str, edition: str, chapter: str,
                                    seen: dict[tuple[str, str], Seen]) -> None:
    page = await context.new_page()
    foreign: list[str] = []

    async def route(route: Any) -> None:  # the network is blocked here too
        from urllib.parse import urlsplit

        if urlsplit(route.request.url).hostname == HOST or route.request.url.startswith("data:"):
            await route.continue_()
        else:
            foreign.append(route.request.url)
            await route.abort()

    await page.route("**/*", route)
    try:
        await page.goto(f"{base_url}{EDITIONS[edition]}chapters/{chapter}.html",
                        wait_until="load")
        for figure in await page.evaluate(READ_STATIC):
            where = seen[edition, figure["name"]]
            if not figure["visible"] or figure["controls"] > 0:
                where.problems.append(f"without JavaScript: the line {figure['line']!r} is not "
                                      f"shown, or the sliders are ({figure['controls']} px)")
            where.static_line = figure["line"] or ""
            where.problems += [f"without JavaScript: request left the page: {url}"
                               for url in foreign]
            OUT.mkdir(parents=True, exist_ok=True)
            shot = OUT / f"{edition}-{figure['name']}-no-javascript.png"
            await page.locator(f'.attn-fig[data-attn-fig="{figure["name"]}"]').screenshot(
                path=str(shot))
            where.shots.append(str(shot.relative_to(ROOT)))
    finally:
        await page.close()


PHONE_WIDTH = 390  # CSS px, a phone held upright

# On a phone: the SVG keeps its drawn size (its 10-px labels stay 10 px) and scrolls sideways.
READ_PHONE = """() => Array.from(document.querySelectorAll('.attn-fig')).map(root => {
  const svg = root.querySelector('svg.attn-svg');
  return {name: root.getAttribute('data-attn-fig'), drawn: Number(svg.getAttribute('width')),
          shown: svg.getBoundingClientRect().width,
          scrolls: root.scrollWidth > root.clientWidth};
})"""


async def _visit_phone(context: Any, base_url: str, edition: str, chapter: str,
                       seen: dict[tuple[str, str], Seen]) -> None:
    page = await context.new_page()
    await page.route("**/*", lambda route: route.abort()
                     if not route.request.url.startswith(f"http://{HOST}") else route.continue_())
    try:
        await page.goto(f"{base_url}{EDITIONS[edition]}chapters/{chapter}.html",
                        wait_until="load")
        for figure in await page.evaluate(READ_PHONE):
            where = seen[edition, figure["name"]]
            if abs(figure["shown"] - figure["drawn"]) > 1:
                where.problems.append(f"at {PHONE_WIDTH} px the SVG is {figure['shown']:.0f} px "
                                      f"wide, drawn {figure['drawn']} px: its labels shrink")
            OUT.mkdir(parents=True, exist_ok=True)
            shot = OUT / f"{edition}-{figure['name']}-phone.png"
            await page.locator(f'.attn-fig[data-attn-fig="{figure["name"]}"]').screenshot(
                path=str(shot))
            where.shots.append(str(shot.relative_to(ROOT)))
    finally:
        await page.close()


async def _visit_plain_and_phone(chromium: Chromium, base_url: str,
                                 seen: dict[tuple[str, str], Seen]) -> None:
    browser = chromium.browser
    # JavaScript off: one page per edition, the figure with the most sliders (the line of every
    # figure is checked in the built HTML by test_without_javascript_a_line_names_the_setting_shown)
    plain = await browser.new_context(
        viewport={"width": VIEWPORT_WIDTH, "height": VIEWPORT_HEIGHT}, java_script_enabled=False)
    phone = await browser.new_context(
        viewport={"width": PHONE_WIDTH, "height": 844}, is_mobile=True)
    try:
        plain.set_default_timeout(PAGE_TIMEOUT_MS)
        phone.set_default_timeout(PAGE_TIMEOUT_MS)
        await asyncio.gather(*(_visit_without_javascript(plain, base_url, edition,
                                                         NO_JAVASCRIPT.chapter, seen)
                               for edition in EDITIONS),
                             *(_visit_phone(phone, base_url, edition, NO_JAVASCRIPT.chapter, seen)
                               for edition in EDITIONS))
    finally:
        await plain.close()
        await phone.close()


@pytest.fixture(scope="module")
def seen(base_url: str, chromium: Chromium, visits: dict[str, Visit]) -> dict[tuple[str, str], Seen]:
    """What each figure showed: test_rendered_book's session fixture ran _inspect on its pages
    (and emptied OUT first); the pages with JavaScript off and on a phone are opened here."""
    chromium.run(_visit_plain_and_phone(chromium, base_url, SEEN))
    return SEEN


def test_the_chapters_have_figures_to_move() -> None:
    assert len(FIGURES) >= 6, [f.name for f in FIGURES]
    assert len({f.name for f in FIGURES}) == len(FIGURES), "two figures share a name"


def test_pages_without_a_figure_do_not_load_the_script() -> None:
    with_figure = {f.chapter for f in FIGURES}
    for edition, prefix in EDITIONS.items():
        for page in sorted((SITE / prefix / "chapters").glob("*.html")):
            loads = "attn-interactive.js" in page.read_text(encoding="utf-8")
            assert loads == (page.stem in with_figure), f"{edition} {page.name}: script {loads}"


@pytest.mark.parametrize(("edition", "name"),
                         [(e, f.name) for e in EDITIONS for f in FIGURES],
                         ids=[f"{e}-{f.name}" for e in EDITIONS for f in FIGURES])
def test_figure_moves_as_the_cell_computed(edition: str, name: str,
                                           seen: dict[tuple[str, str], Seen]) -> None:
    result = seen[edition, name]
    figure = next(f for f in FIGURES if f.name == name)
    problems = list(result.problems)
    problems += [f"request left the page: {url}" for url in result.foreign]
    if result.positions < 2 * len(figure.values):
        problems.append(f"only {result.positions} positions checked")
    if problems:
        pytest.fail(f"{edition} {figure.chapter}: {name}\n  " + "\n  ".join(problems), pytrace=False)
    print(f"{edition} {name}: {result.positions} positions of {len(figure.values)} control(s) "
          f"checked against {len(figure.table['states'])} states; {result.requests} requests, "
          f"{len(result.foreign)} left the page; screenshots {result.shots[0]} ... "
          f"({len(result.shots)})")


@pytest.mark.parametrize(("edition", "name"),
                         [(e, f.name) for e in EDITIONS for f in FIGURES],
                         ids=[f"{e}-{f.name}" for e in EDITIONS for f in FIGURES])
def test_without_javascript_a_line_names_the_setting_shown(
        edition: str, name: str, seen: dict[tuple[str, str], Seen]) -> None:
    """The static SVG is the default state: the line above it says which, in the page's language
    (the controls' names and values as the page's figure writes them)."""
    figure = next(f for f in FIGURES if f.name == name)
    page = (SITE / EDITIONS[edition] / "chapters" / f"{figure.chapter}.html").read_text(
        encoding="utf-8")
    start = page.index(f'data-attn-fig="{name}"')
    markup = page[start:page.index("</script></div>", start)]
    line = re.search(r'<p class="attn-shown">([^<]*)</p>\s*<div class="attn-controls" hidden>',
                     markup)
    assert line is not None, f"{edition} {name}: no line before the hidden controls"
    text = html.unescape(line.group(1))
    if figure.chapter == NO_JAVASCRIPT.chapter:  # opened in Chromium with JavaScript off
        assert text == seen[edition, name].static_line, (
            f"without JavaScript the page shows {seen[edition, name].static_line!r}")
    controls = re.findall(r'<div class="attn-c">(.*?)</div>', markup, re.S)
    for control, default in zip(controls, figure.defaults, strict=True):
        label = html.unescape(re.search(r'class="attn-cl"[^>]*>([^<]*)<', control).group(1))  # type: ignore[union-attr]
        value = html.unescape(re.findall(r'class="attn-vl"[^>]*>([^<]*)<', control)[default])
        assert f"{label} = {value}" in text, f"{edition} {name}: {text!r} lacks {label} = {value}"
    if edition == "zh":
        assert _CJK.search(text) and not english_words(text), f"{name}: {text!r}"
    else:
        assert text.startswith("Shown: ") and "With JavaScript" in text, text
    print(f"{edition} {name}: {text}")


@pytest.mark.parametrize("name", [f.name for f in FIGURES])
def test_every_text_of_a_chinese_figure_is_chinese(
        name: str, seen: dict[tuple[str, str], Seen]) -> None:
    """Every text the figure displayed at the positions checked (title, axis and tick labels,
    legend, notes, control names and values, readouts) that holds English words holds Chinese on
    the Chinese page: the untranslated ones are listed."""
    texts = list(seen["zh", name].texts)
    assert texts, f"{name}: no text seen on the Chinese page"
    untranslated = [t for t in texts if english_words(t) and not _CJK.search(t)]
    # what the script copies into the figure as it is, untranslated, must hold no words
    figure = next(f for f in FIGURES if f.name == name)
    untranslated += sorted({value for row in figure.table["states"]
                            for (_, attribute), value in zip(figure.table["keys"], row,
                                                             strict=True)
                            if attribute == "#text" and english_words(value)})
    assert not untranslated, f"zh {name}: {len(untranslated)} of {len(texts)} texts untranslated: " \
        + "; ".join(map(repr, untranslated))
    english = list(seen["en", name].texts)
    print(f"zh {name}: {len(texts)} texts, none untranslated; English page: {len(english)} texts, "
          f"{sum(bool(english_words(t)) for t in english)} with words")
