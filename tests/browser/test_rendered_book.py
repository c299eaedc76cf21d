"""The built book, opened page by page in headless Chromium.

`make browser` (part of `make test`) builds the book, then this module serves `_build/html` on
127.0.0.1 and checks every page the way a reader sees it: MathJax has typeset every formula,
every image has loaded, the console is clean, nothing is fetched from another host, and the
table of contents and the previous/next links lead to pages (and anchors) that exist, and no
Markdown emphasis marker (``**``, ``__``) and no TeX (a delimiter, a command such as
``\\mathbf``, a ``_{`` or ``^{``) is left in the visible text, and no display formula is wider
than its column at a 1280 px window (as code blocks are measured). Both editions are visited:
English at the site's root and Chinese under ``zh/`` (each with its own TOC). A screenshot of the
intro and of every chapter (``zh-...`` for the Chinese pages, with the glossary) is saved under
`_build/screenshots/` for a person: the first screen, as a reader opens the page, or the whole
page with ATTNLIB_FULL_SCREENSHOTS=1 (`make browser` sets it). Whole pages are left to `make
browser` because nothing checks them and they are the test's largest cost: 114 s of CPU of its
219 (2026-11-29, 2 cores). The Chinese edition's own checks (fonts, language switch, search)
are in test_chinese_edition.py.

Chromium is Debian's `chromium` package, driven by Playwright with no browser download. Where it
is missing the module is skipped, except in CI (CI set) or with ATTNLIB_REQUIRE_BROWSER=1, where
it fails. ATTNLIB_CHROMIUM=/path/to/chrome picks another Chromium or Chrome binary.

The pages are visited concurrently, once, by a session fixture; each page's test then reports
what was found on that page. One Chromium serves the whole session (the ``chromium`` fixture,
shared through conftest.py with the other browser modules), and a page this module loads is not
loaded again by another module: test_diagrams.py and test_interactive.py register their
inspections of a page (:func:`register`), which run on this module's load of it once its own
checks are done, with the window back at its first size. Loading a chapter costs about 3 s of
CPU (its scripts), and these two modules loaded 22 chapter pages again (2026-11-29).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import http.server
import os
import shutil
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
HOST = "127.0.0.1"

# Without the background-networking flags Chromium contacts Google hosts on its own. The
# resolver rule makes every host but 127.0.0.1 unresolvable, so the test never leaves the
# machine; a request to another host is still seen, and reported, by the page's listener.
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    f"--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE {HOST}",
]
VIEWPORT_WIDTH, VIEWPORT_HEIGHT = 1400, 900  # wide enough for both sidebars of the theme
# Code blocks must fit their column at these window widths: the test's own, and 1280, a common
# laptop window (issue 25 found chapter 4's first cell cut at about 90 characters there).
CODE_WIDTHS = (VIEWPORT_WIDTH, 1280)
# Display formulas must fit their column at a 1280 px window too (issue 35 found seven wider).
MATH_WIDTHS = (1280,)
# A liveness limit, not a speed test: `make test` runs this beside a chapter's nbval on two
# cores, and a long chapter's full-page screenshot took over 30 s on a machine busy with more.
PAGE_TIMEOUT_MS = 120_000
FULL_SCREENSHOTS = os.environ.get("ATTNLIB_FULL_SCREENSHOTS", "0") == "1"  # else the first screen
JOBS = max(2, min(4, os.cpu_count() or 2))  # pages open at once

INSTALL_HELP = (
    "The browser test needs Chromium. On Debian/Ubuntu: "
    "`sudo apt-get install -y --no-install-recommends chromium fonts-wqy-microhei` "
    "(fonts-wqy-microhei only so that Chinese text in the screenshots is not drawn as boxes); "
    "elsewhere install Chromium or Chrome and set ATTNLIB_CHROMIUM=/path/to/chrome. "
    "Playwright itself comes with `make install` (requirements.lock); it downloads no browser."
)


def _browser_required() -> bool:
    return bool(os.environ.get("CI")) or os.environ.get("ATTNLIB_REQUIRE_BROWSER") == "1"


def _find_chromium() -> tuple[str | None, str]:
    """The Chromium binary to use, or None and why none was found."""
    override = os.environ.get("ATTNLIB_CHROMIUM")
    if override:
        if Path(override).is_file() and os.access(override, os.X_OK):
            return override, ""
        return None, f"ATTNLIB_CHROMIUM={override} is not an executable file."
    for candidate in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate, ""
    return None, "No Chromium found (looked for /usr/bin/chromium and chromium on PATH)."


def _unavailable(reason: str) -> None:
    message = f"{reason} {INSTALL_HELP}"
    if _browser_required():
        pytest.fail(f"{message} Not skipped: CI or ATTNLIB_REQUIRE_BROWSER=1 is set.", pytrace=False)
    pytest.skip(message, allow_module_level=True)


CHROMIUM, _why = _find_chromium()
if CHROMIUM is None:
    _unavailable(_why)
try:
    from playwright.async_api import (
        Browser,
        BrowserContext,
        ConsoleMessage,
        Page,
        Playwright,
        Request,
        Response,
        async_playwright,
    )
except ImportError:  # pragma: no cover - playwright is pinned in requirements.lock
    _unavailable("The Python package playwright is not installed (run `make install`).")

if not (SITE / "intro.html").is_file():
    pytest.fail(f"No built book in {SITE}: run `make book` first (`make browser` does).", pytrace=False)


# ---------------------------------------------------------------------------------------------
# The built site, read statically: which pages exist and in which order the TOC lists them.


class _TocParser(HTMLParser):
    """The hrefs of the links inside <nav class="bd-docs-nav">, in document order."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0  # > 0 while inside the docs nav
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        if tag == "nav" and (self.depth or "bd-docs-nav" in (attributes.get("class") or "").split()):
            self.depth += 1
        elif self.depth and tag == "a" and attributes.get("href"):
            self.hrefs.append(str(attributes["href"]))

    def handle_endtag(self, tag: str) -> None:
        if tag == "nav" and self.depth:
            self.depth -= 1


class _IdParser(HTMLParser):
    """Every id (and <a name>) in a page: the anchors a link's fragment may point to."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for key, value in attrs:
            if value and (key == "id" or (key == "name" and tag == "a")):
                self.ids.add(value)


# The editions: the folder of each inside the site (English at the root, _ext/editions.py).
EDITIONS = {"en": "", "zh_CN": "zh/"}


def edition_of(page: str) -> str:
    """The folder prefix of the edition a site-relative page belongs to ("" or "zh/")."""
    return next((prefix for prefix in EDITIONS.values() if prefix and page.startswith(prefix)), "")


def _site_pages(prefix: str = "") -> list[str]:
    """Every HTML page of one edition, relative to the site; index.html only redirects to intro."""
    pages = []
    for path in sorted((SITE / prefix).rglob("*.html")):
        rel = path.relative_to(SITE / prefix).as_posix()
        if rel.split("/")[0] in {"_static", "_sources", "_images"} or rel == "index.html":
            continue
        if not prefix and edition_of(rel):
            continue  # a page of another edition
        pages.append(prefix + rel)
    return pages


def _toc_order(prefix: str = "") -> list[str]:
    """The pages in the order the left sidebar of the edition's intro.html lists them."""
    parser = _TocParser()
    parser.feed((SITE / prefix / "intro.html").read_text(encoding="utf-8"))
    order: list[str] = []
    for href in parser.hrefs:
        target = urllib.parse.urljoin(prefix + "intro.html", href.split("#")[0] or "intro.html")
        if "://" not in href and target not in order:
            order.append(target)
    return order


for _prefix in EDITIONS.values():
    if not (SITE / _prefix / "intro.html").is_file():
        pytest.fail(f"No {_prefix or 'English '}edition in {SITE / _prefix}: run `make book`.",
                    pytrace=False)
PAGES_BY_EDITION = {prefix: _site_pages(prefix) for prefix in EDITIONS.values()}
PAGES = [page for pages in PAGES_BY_EDITION.values() for page in pages]
TOCS = {prefix: _toc_order(prefix) for prefix in EDITIONS.values()}
TOC = TOCS[""]
NO_TOC_PAGES = {"genindex.html", "search.html"}  # reached from the header, not from the TOC
# Sphinx rewrites only the pages whose source changed: after a page is added to _toc.yml its
# neighbours keep their old sidebar and previous/next links until a full build.
STALE = " (a stale incremental build? `rm -rf _build/html && make book` rebuilds every page)"


def _screenshot_name(page: str) -> str | None:
    prefix = edition_of(page)
    rest = page[len(prefix):]
    if rest == "intro.html" or rest.startswith("chapters/") or (prefix and rest == "glossary.html"):
        return prefix.replace("/", "-") + Path(rest).stem
    return None


# ---------------------------------------------------------------------------------------------
# What the browser is asked once a page has loaded.

# Resolves once MathJax has typeset the page (at once where the page loads no MathJax).
WAIT_FOR_MATHJAX = """async () => {
  if (!document.querySelector('script[src*="mathjax"]')) return 'none';
  const t0 = Date.now();
  while (!(window.MathJax && MathJax.startup && MathJax.startup.promise)) {
    if (Date.now() - t0 > 60000) return 'MathJax did not start within 60 s';
    await new Promise(r => setTimeout(r, 25));
  }
  await MathJax.startup.promise;
  return 'done';
}"""

# The images that did not load (after giving lazy ones their chance); then the web fonts.
WAIT_FOR_IMAGES = """async () => {
  const images = Array.from(document.images);
  for (const img of images) if (img.loading === 'lazy') img.loading = 'eager';
  const settled = Promise.all(images.map(img => img.complete ? null : new Promise(r => {
    img.addEventListener('load', r, {once: true});
    img.addEventListener('error', r, {once: true});
  })));
  await Promise.race([settled, new Promise(r => setTimeout(r, 10000))]);
  await document.fonts.ready;
  return images.filter(img => !(img.complete && img.naturalWidth > 0))
               .map(img => img.getAttribute('src'));
}"""

# Chinese characters drawn as boxes ("tofu") or not at all: each distinct CJK character of the
# visible text is drawn on a canvas in the page's own font stack (with the browser's font
# fallback, as the page draws it) and compared with the box drawn for a code point no font has.
CJK_GLYPHS = r"""(root) => {
  const cjk = /[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]/u;
  const chars = new Set();
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const tag = node.parentElement && node.parentElement.tagName;
    if (tag === 'SCRIPT' || tag === 'STYLE') continue;
    for (const ch of node.data) if (cjk.test(ch)) chars.add(ch);
  }
  const size = 48;
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = size;
  const ctx = canvas.getContext('2d', {willReadFrequently: true});
  const family = getComputedStyle(document.querySelector('article') || root).fontFamily;
  ctx.font = `32px ${family}`;
  ctx.textBaseline = 'middle';
  const draw = ch => {
    ctx.clearRect(0, 0, size, size);
    ctx.fillText(ch, 4, size / 2);
    const data = ctx.getImageData(0, 0, size, size).data;
    let hash = 0, ink = 0;
    for (let i = 3; i < data.length; i += 4) { hash = (hash * 31 + data[i]) | 0; ink += data[i] > 0; }
    return {hash, ink};
  };
  const box = draw('\u{10FFFD}');
  const missing = [];
  for (const ch of chars) {
    const glyph = draw(ch);
    if (ch.trim() && (glyph.ink === 0 || glyph.hash === box.hash)) missing.push(ch);
  }
  return {count: chars.size, missing: missing.slice(0, 20), missingCount: missing.length, family};
}"""

INSPECT = r"""() => {
  const out = {};
  const snippet = s => (s || '').replace(/\s+/g, ' ').trim().slice(0, 120);
  // Text left with TeX delimiters outside code: a formula MathJax did not typeset.
  const skipTags = new Set(['SCRIPT', 'STYLE', 'PRE', 'CODE', 'KBD', 'SAMP', 'TEXTAREA',
                            'NOSCRIPT', 'TEMPLATE', 'MJX-CONTAINER']);
  // Delimiters, and TeX's own commands and sub/superscripts: a `$$` MyST did not take as
  // display maths leaves "\mathbf c_t" or "a_{tj}" in the text (issue 36, chapter 10).
  const tex = new RegExp(String.raw`\$\$|\$[^\s$](?:[^$\n]*[^\s$])?\$|\\\(|\\\[|\\begin\{`
                         + String.raw`|\\[A-Za-z]{2,}|[_^]\{`);
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  out.rawTex = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    let skip = false;
    for (let el = node.parentElement; el; el = el.parentElement) {
      if (skipTags.has(el.tagName) || el.classList.contains('highlight')) { skip = true; break; }
    }
    if (!skip && tex.test(node.data)) out.rawTex.push(snippet(node.data));
  }
  // Sphinx marks every formula with class "math"; each must now hold MathJax output.
  const maths = Array.from(document.querySelectorAll('.math'));
  out.mathCount = maths.length;
  out.containers = document.querySelectorAll('mjx-container').length;
  out.untypeset = maths.filter(m => !m.querySelector('mjx-container')).map(m => snippet(m.textContent));
  out.mathjaxLoaded = !!window.MathJax;
  // TeX errors: <merror>, and undefined macros (which noundefined draws as red mtext).
  out.texErrors = Array.from(document.querySelectorAll(
      'mjx-merror, mjx-assistive-mml merror, mjx-assistive-mml mtext[mathcolor="red"]'))
    .map(e => snippet(e.getAttribute('data-mjx-error') || e.textContent || e.tagName));
  const links = sel => Array.from(document.querySelectorAll(sel)).map(a => ({
    href: a.href, raw: a.getAttribute('href'), text: snippet(a.textContent)}));
  out.prev = links('.prev-next-area a.left-prev');
  out.next = links('.prev-next-area a.right-next');
  out.prevNext = links('.prev-next-area a[href]');
  out.toc = links('nav.bd-docs-nav a[href]');
  out.all = links('a[href]');
  out.title = document.title;
  out.lang = document.documentElement.lang;
  out.glyphs = (CJK_GLYPHS)(document.body);
  // Markdown emphasis that did not render: ** or __ left in the visible text, outside code.
  const literal = /\*\*|__/;
  const walker2 = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  out.literalEmphasis = [];
  for (let node = walker2.nextNode(); node; node = walker2.nextNode()) {
    let skip = false;
    for (let el = node.parentElement; el; el = el.parentElement) {
      if (skipTags.has(el.tagName) || el.classList.contains('highlight')
          || el.classList.contains('math') || el.classList.contains('sig')) { skip = true; break; }
    }
    if (!skip && literal.test(node.data)) out.literalEmphasis.push(snippet(node.data));
  }
  return out;
}"""


# Open what a reader can open (collapsed cells, dropdowns), so that hidden code is measured too.
# Run after the screenshot: the screenshot shows the page as a reader first sees it.
EXPAND_ALL = """() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
  document.querySelectorAll('.toggle-details__container, .toggle-details__summary + *')
    .forEach(e => { e.style.display = ''; });
}"""

# Every code block (a cell's input, a listing, a literal block) whose text is wider than the
# box it sits in, so that the reader would have to scroll sideways.
WIDE_CODE = r"""() => {
  const blocks = Array.from(document.querySelectorAll('div.highlight pre, div.cell_input pre'));
  const seen = new Set();
  const wide = [];
  blocks.forEach((pre, i) => {
    if (seen.has(pre)) return;
    seen.add(pre);
    if (pre.scrollWidth <= pre.clientWidth + 1) return;
    const section = pre.closest('section[id]');
    const kind = pre.closest('.cell_input') ? 'cell input'
               : pre.closest('.cell_output') ? 'cell output' : 'code block';
    const lines = pre.textContent.split('\n');
    const longest = lines.reduce((a, b) => (b.length > a.length ? b : a), '');
    wide.push({index: i + 1, of: blocks.length, kind: kind,
               section: section ? section.id : '(top)',
               scroll: pre.scrollWidth, client: pre.clientWidth,
               longest: longest.length, line: longest.slice(0, 100)});
  });
  return wide;
}"""


# Every display formula (MathJax's display container) whose typeset width exceeds the width of
# the column it sits in, so that the reader would have to scroll sideways or lose its right end.
WIDE_MATH = r"""() => {
  const shown = Array.from(document.querySelectorAll('mjx-container[display="true"]'));
  const wide = [];
  shown.forEach((box, i) => {
    const maths = box.querySelector('mjx-math');
    if (!maths) return;
    let column = box.parentElement;
    while (column && getComputedStyle(column).display.startsWith('inline')) {
      column = column.parentElement;
    }
    if (!column) return;
    const style = getComputedStyle(column);
    const inner = column.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const width = maths.getBoundingClientRect().width;
    if (width <= inner + 1) return;
    const section = box.closest('section[id]');
    const assistive = box.querySelector('mjx-assistive-mml');
    const text = (assistive ? assistive.textContent : box.textContent).replace(/\s+/g, ' ').trim();
    wide.push({index: i + 1, of: shown.length, section: section ? section.id : '(top)',
               width: Math.round(width), column: Math.round(inner), text: text.slice(0, 80)});
  });
  return wide;
}"""


# ---------------------------------------------------------------------------------------------
# Serving the site and visiting its pages.


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def serve_site() -> Iterator[str]:
    """The built site served on 127.0.0.1 at a free port: its base URL (fixture base_url)."""
    handler = functools.partial(_QuietHandler, directory=str(SITE))
    server = http.server.ThreadingHTTPServer((HOST, 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{HOST}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class Chromium:
    """The session's one headless Chromium, driven from one event loop (``run``)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.playwright: Playwright = self.run(async_playwright().start())
        self.browser: Browser = self.run(self.playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True))

    def run(self, coroutine: Awaitable[Any]) -> Any:
        return self.loop.run_until_complete(coroutine)

    def close(self) -> None:
        try:
            self.run(self.browser.close())
            self.run(self.playwright.stop())
        finally:
            self.loop.close()


@dataclass
class PageCheck:
    """Another module's inspection of pages this module loads (see :func:`register`)."""

    module: Path  # its tests' file: it runs when that file's tests are in the session
    pages: list[str]  # site-relative pages it inspects
    inspect: Callable[[Page, Visit], Awaitable[None]]  # stores its own findings
    folder: Path  # where it saves screenshots: emptied of *.png before the visits


PAGE_CHECKS: list[PageCheck] = []


def register(module: str, pages: list[str], folder: Path,
             inspect: Callable[[Page, Visit], Awaitable[None]]) -> None:
    """Have ``inspect(page, visit)`` run on each of ``pages`` when this module's session fixture
    visits it: after this module's own checks, the window back at VIEWPORT_WIDTH x
    VIEWPORT_HEIGHT (every <details> open). ``visit`` holds what this module saw, its requests
    too. ``inspect`` catches its own errors and keeps its findings; its console errors and
    requests to other hosts are this page's too."""
    PAGE_CHECKS.append(PageCheck(Path(module).resolve(), pages, inspect, folder))


@dataclass
class Visit:
    """What one page showed in the browser."""

    name: str
    requests: list[str] = field(default_factory=list)  # every URL the page asked for
    problems: list[str] = field(default_factory=list)  # found while visiting
    info: dict[str, Any] = field(default_factory=dict)  # the answer to INSPECT
    wide_code: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # by window width
    wide_math: dict[int, list[dict[str, Any]]] = field(default_factory=dict)  # by window width
    final_url: str = ""
    seconds: float = 0.0


async def _visit(context: BrowserContext, base_url: str, name: str, screenshot: str | None,
                 checks: list[PageCheck]) -> Visit:
    visit = Visit(name)
    foreign: list[str] = []
    console: list[str] = []
    failed: list[str] = []

    def on_request(request: Request) -> None:
        visit.requests.append(request.url)
        parts = urllib.parse.urlsplit(request.url)
        if parts.scheme not in {"data", "blob", "about"} and parts.hostname != HOST:
            foreign.append(request.url)

    def on_console(message: ConsoleMessage) -> None:
        if message.type != "error":
            return
        where = message.location.get("url", "")
        # The browser asks for /favicon.ico by itself; the site has none and the page is not to blame.
        if urllib.parse.urlsplit(where).path == "/favicon.ico":
            return
        console.append(f"{message.text} (at {where}:{message.location.get('lineNumber', '?')})")

    def on_request_failed(request: Request) -> None:
        failed.append(f"{request.url}: {request.failure}")

    def on_response(response: Response) -> None:
        if response.status >= 400 and urllib.parse.urlsplit(response.url).path != "/favicon.ico":
            failed.append(f"{response.url}: HTTP {response.status}")

    start = time.monotonic()
    page = await context.new_page()
    page.on("request", on_request)
    page.on("console", on_console)
    page.on("pageerror", lambda error: console.append(f"uncaught {error.name}: {error.message}"))
    page.on("requestfailed", on_request_failed)
    page.on("response", on_response)
    page.on("websocket", lambda ws: foreign.append(ws.url))
    try:
        response = await page.goto(base_url + name, wait_until="load")
        if Path(name).name == "index.html":
            await page.wait_for_url(base_url + name[: -len("index.html")] + "intro.html",
                                    timeout=10_000)
        elif response is None or response.status != 200:
            visit.problems.append(f"HTTP {response and response.status}")
        else:
            state = await page.evaluate(WAIT_FOR_MATHJAX)
            if state not in {"none", "done"}:
                visit.problems.append(state)
            for src in await page.evaluate(WAIT_FOR_IMAGES):
                visit.problems.append(f"image did not load: {src}")
            visit.info = await page.evaluate(INSPECT.replace("(CJK_GLYPHS)", f"({CJK_GLYPHS})"))
            if screenshot:
                await page.screenshot(path=str(SCREENSHOTS / f"{screenshot}.png"),
                                      full_page=FULL_SCREENSHOTS)
            await page.evaluate(EXPAND_ALL)
            for width in dict.fromkeys(CODE_WIDTHS + MATH_WIDTHS):
                await page.set_viewport_size({"width": width, "height": VIEWPORT_HEIGHT})
                await page.evaluate("() => new Promise(r => requestAnimationFrame(() => r(null)))")
                if width in CODE_WIDTHS:
                    visit.wide_code[width] = await page.evaluate(WIDE_CODE)
                if width in MATH_WIDTHS:
                    visit.wide_math[width] = await page.evaluate(WIDE_MATH)
            if checks:
                await page.set_viewport_size({"width": VIEWPORT_WIDTH, "height": VIEWPORT_HEIGHT})
                for check in checks:
                    await check.inspect(page, visit)
            await page.wait_for_timeout(50)  # let late console messages arrive
        visit.final_url = page.url
    except Exception as error:  # a timeout or a crash is this page's failure, not the session's
        visit.problems.append(f"{type(error).__name__}: {error}")
    finally:
        await page.close()
    visit.problems += [f"console error: {message}" for message in console]
    visit.problems += [f"request to a host other than {HOST}: {url}" for url in dict.fromkeys(foreign)]
    visit.problems += [f"request failed: {entry}" for entry in dict.fromkeys(failed)]
    visit.seconds = time.monotonic() - start
    return visit


async def _visit_all(browser: Browser, base_url: str, names: list[str],
                     checks: list[PageCheck]) -> dict[str, Visit]:
    context = await browser.new_context(
        viewport={"width": VIEWPORT_WIDTH, "height": VIEWPORT_HEIGHT}, color_scheme="light"
    )
    try:
        context.set_default_timeout(PAGE_TIMEOUT_MS)
        slots = asyncio.Semaphore(JOBS)

        async def one(name: str) -> Visit:
            async with slots:
                return await _visit(context, base_url, name, _screenshot_name(name),
                                    [check for check in checks if name in check.pages])

        visits = await asyncio.gather(*(one(name) for name in names))
    finally:
        await context.close()
    return {visit.name: visit for visit in visits}


def visit_pages(request: pytest.FixtureRequest, base_url: str,
                chromium: Chromium) -> dict[str, Visit]:
    """Every page this session's tests ask about (the other modules' checks' pages too),
    visited once, several at a time."""
    names = [f"{prefix}index.html" for prefix in EDITIONS.values()]
    for item in request.session.items:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "name" in callspec.params and item.path == Path(__file__):
            names.append(callspec.params["name"])
    modules = {Path(item.path).resolve() for item in request.session.items}
    checks = [check for check in PAGE_CHECKS if check.module in modules]
    names += [page for check in checks for page in check.pages]
    for folder in [SCREENSHOTS] + [check.folder for check in checks]:
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.png"):
            old.unlink()
    start = time.monotonic()
    result = chromium.run(_visit_all(chromium.browser, base_url, list(dict.fromkeys(names)), checks))
    print(f"\n{len(result)} pages visited in {time.monotonic() - start:.1f} s ({JOBS} at a time)")
    return result


class _Fetcher:
    """HTTP GETs against the local server, cached: (status, anchors of the page)."""

    def __init__(self) -> None:
        self.cache: dict[str, tuple[int, set[str]]] = {}

    def get(self, url: str) -> tuple[int, set[str]]:
        if url not in self.cache:
            try:
                with urllib.request.urlopen(url, timeout=10) as response:
                    status, body = response.status, response.read()
                    is_html = "html" in response.headers.get("Content-Type", "")
            except urllib.error.HTTPError as error:
                status, body, is_html = error.code, b"", False
            ids: set[str] = set()
            if is_html:
                parser = _IdParser()
                parser.feed(body.decode("utf-8", "replace"))
                ids = parser.ids
            self.cache[url] = (status, ids)
        return self.cache[url]


@pytest.fixture(scope="session")
def fetcher() -> _Fetcher:
    return _Fetcher()


def _path_of(url: str, base_url: str) -> str | None:
    """The site-relative path (no fragment) of a URL on the local server, else None."""
    if not url.startswith(base_url):
        return None
    return urllib.parse.unquote(urllib.parse.urldefrag(url)[0][len(base_url) :])


def _broken(link: dict[str, str], base_url: str, fetcher: _Fetcher) -> str | None:
    """Why a link into the site is broken; None where it resolves or leads off the site."""
    url, fragment = urllib.parse.urldefrag(link["href"])
    if not url.startswith(base_url):
        return None
    status, ids = fetcher.get(url)
    if status != 200:
        return f"{link['raw']!r} ({link['text']!r}) -> HTTP {status}"
    fragment = urllib.parse.unquote(fragment)
    if fragment and fragment not in ids:
        return f"{link['raw']!r} ({link['text']!r}) -> no #{fragment} in {url[len(base_url) :]}"
    return None


# ---------------------------------------------------------------------------------------------
# The tests.


@pytest.mark.parametrize("prefix", list(EDITIONS.values()), ids=list(EDITIONS))
def test_toc_lists_every_page(prefix: str) -> None:
    """Every page the TOC lists was built, and every built page (bar index/search) is in the TOC;
    both editions have the same pages in the same order."""
    toc, pages = TOCS[prefix], PAGES_BY_EDITION[prefix]
    intro = f"{prefix}intro.html"
    assert toc and toc[0] == intro, f"{intro}'s sidebar TOC starts with {toc[:1]}"
    missing = [page for page in toc if page not in pages]
    assert not missing, f"the TOC of {intro} links to pages that were not built: {missing}"
    no_toc = {prefix + page for page in NO_TOC_PAGES}
    orphans = [page for page in pages if page not in toc and page not in no_toc]
    assert not orphans, f"built pages that the TOC does not list: {orphans}"
    assert [page[len(prefix):] for page in toc] == TOC, f"{intro}'s TOC differs from intro.html's"


@pytest.mark.parametrize("prefix", list(EDITIONS.values()), ids=list(EDITIONS))
def test_notebook_buttons(prefix: str) -> None:
    """Each chapter offers its notebook for download; the repository and Binder buttons appear
    exactly when the build had a public repository URL (tools/book_config.py), and point at it."""
    import yaml

    config = yaml.safe_load((ROOT / "_build" / "_config.yml").read_text(encoding="utf-8"))
    repo = config.get("repository", {}) if config.get("html", {}).get("use_repository_button") else {}
    url, branch = repo.get("url"), repo.get("branch")
    chapters = [page for page in PAGES_BY_EDITION[prefix] if page[len(prefix):].startswith("chapters/")]
    assert chapters, "no chapter pages were built"
    problems = []
    for page in chapters:
        html = (SITE / page).read_text(encoding="utf-8")
        notebook = page[len(prefix):].removesuffix(".html") + ".ipynb"
        if f'href="../_sources/{notebook}"' not in html:
            problems.append(f"{page}: no download link to _sources/{notebook}")
        elif not (SITE / prefix / "_sources" / notebook).is_file():
            problems.append(f"{page}: the download link's _sources/{notebook} was not built")
        if url:
            owner_name = urllib.parse.urlparse(url).path.strip("/")
            binder = f"https://mybinder.org/v2/gh/{owner_name}/{branch}?urlpath=lab/tree/{notebook}"
            for expected in (f'href="{url}"', f'href="{binder}"', f'href="{url}/edit/{branch}/{notebook}"'):
                if expected not in html:
                    problems.append(f"{page}: no link {expected}")
        else:
            # Jupyter Book's default repository is its own; no page may link to it, or to Binder.
            for stray in ("executablebooks/jupyter-book", "mybinder.org"):
                if stray in html:
                    problems.append(f"{page}: links to {stray} though the book has no repository URL")
    if url:
        for name in ("requirements.txt", "postBuild", "runtime.txt"):
            if not (ROOT / "binder" / name).is_file():
                problems.append(f"the Binder button needs binder/{name}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("prefix", list(EDITIONS.values()), ids=list(EDITIONS))
def test_index_redirects_to_intro(prefix: str, visits: dict[str, Visit], base_url: str) -> None:
    visit = visits[f"{prefix}index.html"]
    assert not visit.problems, f"{prefix}index.html:\n  " + "\n  ".join(visit.problems)
    assert visit.final_url == base_url + f"{prefix}intro.html", (
        f"{prefix}index.html ends at {visit.final_url}")


@pytest.mark.parametrize("name", PAGES)
def test_page_renders(name: str, visits: dict[str, Visit], base_url: str, fetcher: _Fetcher) -> None:
    visit = visits[name]
    problems = list(visit.problems)
    info = visit.info
    if info:
        # MathJax: every formula typeset, none in error, no TeX left in the visible text.
        if info["mathCount"] and not info["mathjaxLoaded"]:
            problems.append(f"{info['mathCount']} formulas but MathJax is not loaded")
        elif info["mathCount"] and not info["containers"]:
            problems.append(f"{info['mathCount']} formulas but no mjx-container: MathJax typeset none")
        problems += [f"formula not typeset by MathJax: {text!r}" for text in info["untypeset"][:5]]
        problems += [f"TeX error in a formula: {text!r}" for text in info["texErrors"][:5]]
        problems += [f"raw TeX in the visible text: {text!r}" for text in info["rawTex"][:5]]
        problems += [f"Markdown emphasis printed literally: {text!r}"
                     for text in info["literalEmphasis"][:5]]
        glyphs = info["glyphs"]
        if glyphs["missingCount"]:
            problems.append(f"{glyphs['missingCount']} of {glyphs['count']} CJK characters drawn "
                            f"as boxes or blank in {glyphs['family']!r} (is a CJK font installed? "
                            f"tools/system_packages.sh): {''.join(glyphs['missing'])}")

        # Navigation: the TOC and previous/next exist and lead to pages and anchors that exist.
        if not info["toc"]:
            problems.append("no table of contents (nav.bd-docs-nav has no links)")
        for where, links in (("TOC", info["toc"]), ("prev/next", info["prevNext"])):
            problems += [
                f"{where} link leaves the site: {link['raw']!r}"
                for link in links
                if _path_of(link["href"], base_url) is None
            ]
        for link in info["all"]:
            why = _broken(link, base_url, fetcher)
            if why:
                problems.append(f"broken link: {why}")
        toc = TOCS[edition_of(name)]
        listed = {_path_of(link["href"], base_url) for link in info["toc"]}
        if info["toc"] and listed != set(toc):
            lacks = [page for page in toc if page not in listed]
            extra = sorted(str(page) for page in listed - set(toc))
            problems.append(
                f"the TOC here differs from intro.html's: lacks {lacks}, adds {extra}{STALE}"
            )
        if name in toc:
            i = toc.index(name)
            expected = {
                "previous": toc[i - 1] if i > 0 else None,
                "next": toc[i + 1] if i + 1 < len(toc) else None,
            }
            for label, found in (("previous", info["prev"]), ("next", info["next"])):
                got = _path_of(found[0]["href"], base_url) if found else None
                if got != expected[label]:
                    problems.append(
                        f"{label} link goes to {got}; the TOC order says {expected[label]}{STALE}"
                    )

    title = f" ({info['title']!r})" if info else ""
    if problems:
        pytest.fail(f"{name}{title}:\n  " + "\n  ".join(problems), pytrace=False)
    if info and info["mathCount"]:
        print(f"{name}: {info['containers']} formulas typeset ({visit.seconds:.1f} s)")


@pytest.mark.parametrize("name", PAGES)
def test_code_fits_the_column(name: str, visits: dict[str, Visit]) -> None:
    """No code block is wider than its box at the book's window widths: chapters' cells are
    wrapped to 80 columns (tests/test_notebooks.py), listings and literal blocks too."""
    visit = visits[name]
    if not visit.wide_code:
        pytest.fail(f"{name}: its code blocks were not measured: the page did not load "
                    f"({'; '.join(visit.problems) or 'no reason recorded'})", pytrace=False)
    problems = [
        f"code block {b['index']} of {b['of']} ({b['kind']}, in section #{b['section']}) is "
        f"{b['scroll']} px wide in a {b['client']} px box at a {width} px window; its longest "
        f"line has {b['longest']} characters: {b['line']!r}"
        for width, blocks in visit.wide_code.items() for b in blocks
    ]
    if problems:
        pytest.fail(f"{name}: code wider than its column:\n  " + "\n  ".join(problems),
                    pytrace=False)


@pytest.mark.parametrize("name", PAGES)
def test_maths_fits_the_column(name: str, visits: dict[str, Visit]) -> None:
    """No display formula is wider than its column at a 1280 px window: long ones are broken
    over lines (aligned) or split, as the project's guide asks."""
    visit = visits[name]
    if not visit.wide_math:
        pytest.fail(f"{name}: its formulas were not measured: the page did not load "
                    f"({'; '.join(visit.problems) or 'no reason recorded'})", pytrace=False)
    problems = [
        f"display formula {m['index']} of {m['of']} (in section #{m['section']}) is {m['width']} "
        f"px wide in a {m['column']} px column at a {width} px window: {m['text']!r}"
        for width, formulas in visit.wide_math.items() for m in formulas
    ]
    if problems:
        pytest.fail(f"{name}: display maths wider than its column:\n  " + "\n  ".join(problems),
                    pytrace=False)
