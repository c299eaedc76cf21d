"""The Chinese edition (``_build/html/zh``) against the English one, and what only it needs.

test_rendered_book.py already opens every page of both editions (formulas typeset, links and
anchors resolve, TOC and previous/next, no Markdown emphasis left as text, and no Chinese
character drawn as a box: each one is drawn on a canvas in the page's fonts and compared with
the box of a code point no font has). This module adds:

- the language switch: every page of each edition links to the same page of the other, and the
  link works from a server and from ``file://`` (clicked in Chromium both ways);
- one source: each chapter's code cells and outputs are the same in both editions (only the
  prose and the figure captions differ), and the Chinese pages are in Chinese (``lang``);
- search: Sphinx's Chinese search (words split by jieba, the glossary's terms kept whole) finds
  注意力权重 on every page whose text holds it, and on no other;
- the glyph check itself can fail: a character no font has is reported.

Chromium, the server and the skip/fail rules come from test_rendered_book.py; the four tests in
Chromium share the session's one Chromium (fixture ``chromium``, conftest.py), each in a context
of its own, where each launched its own before (2026-11-29).
"""

from __future__ import annotations

import urllib.parse
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from test_rendered_book import (  # the lead's browser test: same Chromium, flags and checks
    CJK_GLYPHS,
    EDITIONS,
    PAGE_TIMEOUT_MS,
    PAGES_BY_EDITION,
    SCREENSHOTS,
    SITE,
    VIEWPORT_HEIGHT,
    VIEWPORT_WIDTH,
    Chromium,
    edition_of,
)

ZH = EDITIONS["zh_CN"]
SEARCH_TERM = "注意力权重"
CHAPTERS = [page for page in PAGES_BY_EDITION[""] if page.startswith("chapters/")]


def _other(page: str) -> str:
    """The same page in the other edition."""
    prefix = edition_of(page)
    return page[len(prefix):] if prefix else ZH + page


class _SwitchParser(HTMLParser):
    """The hrefs of the language switch links, and <html lang>."""

    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.lang = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "html":
            self.lang = attributes.get("lang") or ""
        classes = (attributes.get("class") or "").split()
        if tag == "a" and "language-switch-link" in classes and attributes.get("href"):
            self.hrefs.append(str(attributes["href"]))


class _CellParser(HTMLParser):
    """The text of a page's code cells and outputs, figure captions left out."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[tuple[str, str | None]] = []  # (tag, "input"/"output"/"caption"/None)
        self.cells: list[tuple[str, list[str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        classes = (attributes.get("class") or "").split()
        role = None
        if "cell_input" in classes:
            role = "input"
        elif "cell_output" in classes:
            role = "output"
        elif tag == "figcaption":
            role = "caption"
        if tag in {"img", "br", "hr", "meta", "link", "input", "source"}:
            if tag == "img" and self._inside() in {"input", "output"}:
                self.cells[-1][1].append(f"<img {attributes.get('src')}>")
            return
        self.stack.append((tag, role))
        if role in {"input", "output"}:
            self.cells.append((role, []))

    def handle_endtag(self, tag: str) -> None:
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                return

    def _inside(self) -> str | None:
        roles = [role for _, role in self.stack if role]
        if "caption" in roles:
            return "caption"
        return roles[-1] if roles else None

    def handle_data(self, data: str) -> None:
        if self._inside() in {"input", "output"} and data.strip():
            self.cells[-1][1].append(data.strip())


def _cells(page: str) -> list[tuple[str, str]]:
    parser = _CellParser()
    parser.feed((SITE / page).read_text(encoding="utf-8"))
    return [(role, " ".join(text)) for role, text in parser.cells]


class _TextNodes(HTMLParser):
    """The text nodes of a page's <article> (script and style left out)."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0  # > 0 inside <article> (only <article> is counted: void tags such as
        # <br/> reach handle_endtag too)
        self.skip = 0  # > 0 inside <script> or <style>
        self.texts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.depth += tag == "article"
        self.skip += tag in {"script", "style"}

    def handle_endtag(self, tag: str) -> None:
        if tag == "article" and self.depth:
            self.depth -= 1
        if tag in {"script", "style"} and self.skip:
            self.skip -= 1

    def handle_data(self, data: str) -> None:
        if self.depth and not self.skip:
            self.texts.append(data)


def _holds(page: str, term: str) -> bool:
    """Whether one text node of the page's article holds ``term``. Sphinx indexes each text
    node on its own, so 注意力<strong>权重</strong> is two words, as "attention <b>weight</b>" is."""
    parser = _TextNodes()
    parser.feed((SITE / page).read_text(encoding="utf-8"))
    return any(term in text for text in parser.texts)


# ---------------------------------------------------------------------------------------------
# Static checks of the built site


@pytest.mark.parametrize("page", [page for pages in PAGES_BY_EDITION.values() for page in pages])
def test_language_switch_links_the_same_page(page: str) -> None:
    parser = _SwitchParser()
    parser.feed((SITE / page).read_text(encoding="utf-8"))
    assert len(parser.hrefs) == 1, f"{page}: {len(parser.hrefs)} language switch links"
    target = urllib.parse.urljoin(page, parser.hrefs[0])
    assert target == _other(page), f"{page}: the language switch goes to {target}"
    assert (SITE / target).is_file(), f"{page}: the language switch's {target} was not built"
    expected = "zh-CN" if edition_of(page) else "en"
    assert parser.lang == expected, f"{page}: <html lang={parser.lang!r}>, expected {expected!r}"


@pytest.mark.parametrize("page", CHAPTERS)
def test_code_and_outputs_exist_once(page: str) -> None:
    """Code cells and outputs are the same in both editions: only prose and captions differ."""
    english, chinese = _cells(page), _cells(ZH + page)
    assert english, f"{page}: no code cells found"
    assert len(english) == len(chinese), f"{page}: {len(english)} cells, Chinese {len(chinese)}"
    for i, (ours, theirs) in enumerate(zip(english, chinese, strict=True)):
        assert ours == theirs, f"{page}, cell part {i} ({ours[0]}) differs:\n{ours[1][:300]}\n" \
                               f"---\n{theirs[1][:300]}"


ENGLISH_PROMPTS = ("Click to show", "Click to hide", "Show code cell", "Hide code cell")


@pytest.mark.parametrize("page", PAGES_BY_EDITION[ZH])
def test_prompts_of_dropdowns_and_hidden_cells_are_in_chinese(page: str) -> None:
    html = (SITE / page).read_text(encoding="utf-8")
    english = [prompt for prompt in ENGLISH_PROMPTS if prompt in html]
    assert not english, f"{page}: English prompts {english}"
    # the English twin has them, so the strings looked for are the ones the themes write
    if "toggleHintShow" in html:
        assert "Click to show" in (SITE / page.removeprefix(ZH)).read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# In Chromium: the switch from file:// and a server, search, and the glyph check's own failure



def _with_page(chromium: Chromium, action: Any) -> Any:
    """``action(page)`` on a new page, in a context of its own, of the session's Chromium."""

    async def run() -> Any:
        context = await chromium.browser.new_context(
            viewport={"width": VIEWPORT_WIDTH, "height": VIEWPORT_HEIGHT}, color_scheme="light")
        try:
            context.set_default_timeout(PAGE_TIMEOUT_MS)
            page = await context.new_page()
            return await action(page)
        finally:
            await context.close()

    return chromium.run(run())


@pytest.mark.parametrize("scheme", ["file", "http"])
def test_language_switch_clicks_through(scheme: str, base_url: str, chromium: Chromium) -> None:
    start = "chapters/02_attention_scores.html"
    base = SITE.resolve().as_uri() + "/" if scheme == "file" else base_url

    async def click_both_ways(page: Any) -> list[str]:
        await page.goto(base + start)
        await page.click("a.language-switch-link")
        await page.wait_for_load_state("load")
        there = page.url
        await page.click("a.language-switch-link")
        await page.wait_for_load_state("load")
        return [there, page.url]

    there, back = _with_page(chromium, click_both_ways)
    assert there == base + ZH + start, f"the switch on {start} led to {there}"
    assert back == base + start, f"the switch on {ZH + start} led to {back}"


def test_search_finds_a_chinese_term(base_url: str, chromium: Chromium) -> None:
    """Sphinx's search page, in Chinese, finds 注意力权重 on exactly the pages that hold it
    (in one text node: see _holds)."""
    expected = sorted(page for page in PAGES_BY_EDITION[ZH]
                      if Path(page).name not in {"search.html", "genindex.html"}
                      and _holds(page, SEARCH_TERM))
    assert f"{ZH}glossary.html" in expected, expected

    async def search(page: Any) -> tuple[str, list[str]]:
        await page.goto(base_url + f"{ZH}search.html?q=" + urllib.parse.quote(SEARCH_TERM))
        await page.wait_for_function(
            "() => { const s = document.querySelector('#search-results p.search-summary');"
            " return s && s.innerText.trim().length > 0; }")
        summary = await page.inner_text("#search-results p.search-summary")
        hrefs = await page.eval_on_selector_all(
            "#search-results ul.search li > a", "links => links.map(a => a.href)")
        # A folder of its own: test_rendered_book clears the *.png of SCREENSHOTS when it starts.
        (SCREENSHOTS / "search").mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(SCREENSHOTS / "search" / "zh-search.png"), full_page=True)
        return summary, hrefs

    summary, hrefs = _with_page(chromium, search)
    found = sorted({urllib.parse.urldefrag(href)[0][len(base_url):] for href in hrefs})
    print(f"\nsearch for {SEARCH_TERM}: {summary}\n  " + "\n  ".join(found))
    assert found == expected, (f"search for {SEARCH_TERM} found {found}; the pages whose text "
                               f"holds it: {expected} ({summary})")


def test_glyph_check_reports_a_missing_character(chromium: Chromium) -> None:
    """The check that test_rendered_book runs on every page flags a character no font draws
    (U+FFEF, unassigned, inside the fullwidth forms it collects) and none of the Chinese text."""

    async def check(page: Any) -> Any:
        await page.set_content('<html lang="zh-CN"><body><article>注意力权重，'
                               '\uffef</article></body></html>')
        return await page.evaluate(f"({CJK_GLYPHS})(document.body)")

    result = _with_page(chromium, check)
    assert result["count"] == 7 and result["missing"] == ["\uffef"], result
