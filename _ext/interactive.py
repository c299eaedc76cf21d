"""Figures a reader moves (:mod:`attnlib.book.interactive`), in both editions.

A figure's output is HTML: an SVG of its default state, hidden sliders and a table of states.
Its words (title, axis labels, legend, control names, readout labels) are marked ``data-msg``.
The chapter pastes it with ``{glue:figure}`` and lists its words, one list item each, in a
``{container}`` of class ``attn-words`` in the same markdown cell.

1. **Its words are messages of the chapter's catalogue**, as list items of the markdown: `make
   translations` extracts them like any paragraph, and the Chinese build translates them.
2. **The page shows them in its language.** While a page is read, each list item's English is
   kept (before Sphinx's Locale transform translates it). Before the page is written (HTML
   builders only), each ``data-msg`` text of the page's figures is replaced by its item's text,
   English or translated; a word with no item is a warning (an error under ``-W``). The list is
   then removed from the page.
3. **The script is served once, and only where it is used.** ``_ext/static/attn-interactive.js``
   and ``.css`` are copied to the site's ``_static/`` and linked from the pages that hold such a
   figure, and from no other page (Jupyter Book links every file of the book's own ``_static/``
   folder from every page, so they are not kept there).
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.transforms import SphinxTransform
from sphinx.util import logging as sphinx_logging

logger = sphinx_logging.getLogger(__name__)

FIGURE = re.compile(r'data-attn-fig="([A-Za-z0-9-]+)"')
MESSAGE = re.compile(r"(<(\w+)\b[^>]*\sdata-msg\b[^>]*>)([^<]*)(</\2>)")
SCRIPT, STYLE = "attn-interactive.js", "attn-interactive.css"
STATIC = Path(__file__).resolve().parent / "static"


def figure_messages(markup: str) -> list[str]:
    """The words of a figure's HTML (``data-msg`` texts), each once, in order."""
    return list(dict.fromkeys(html.unescape(m.group(3)) for m in MESSAGE.finditer(markup)))


def translate_markup(markup: str, translations: dict[str, str]) -> tuple[str, list[str]]:
    """``markup`` with every ``data-msg`` text replaced; and the texts that had no translation."""
    missing: list[str] = []

    def one(match: re.Match[str]) -> str:
        english = html.unescape(match.group(3))
        if english not in translations:
            missing.append(english)
            return match.group(0)
        return match.group(1) + html.escape(translations[english], quote=False) + match.group(4)

    return MESSAGE.sub(one, markup), missing


def _html_raws(node: nodes.Node) -> list[nodes.raw]:
    return [raw for raw in node.findall(nodes.raw)
            if "html" in raw.get("format", "").split() and FIGURE.search(raw.astext())]


def _is_words(node: nodes.Node) -> bool:
    return isinstance(node, nodes.container) and "attn-words" in node.get("classes", [])


class KeepEnglishWords(SphinxTransform):
    """Each listed word's English, kept before Locale (priority 20) translates it."""

    default_priority = 8

    def apply(self, **kwargs: Any) -> None:
        for holder in self.document.findall(_is_words):
            for paragraph in holder.findall(nodes.paragraph):
                paragraph["attn_msg"] = paragraph.astext()


def _resolve(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Put each figure's words, in the page's language, into its HTML; drop the word lists."""
    if app.builder.format != "html":
        return  # the gettext builder extracts the list items as messages
    translations: dict[str, str] = {}
    for holder in list(doctree.findall(_is_words)):
        for paragraph in holder.findall(nodes.paragraph):
            translations[paragraph["attn_msg"]] = paragraph.astext()
        holder.parent.remove(holder)
    for raw in _html_raws(doctree):
        match = FIGURE.search(raw.astext())
        assert match is not None
        markup, missing = translate_markup(raw.astext(), translations)
        for english in dict.fromkeys(missing):
            logger.warning("interactive figure %s: the word %r is not in an attn-words list",
                           match.group(1), english, location=raw, type="interactive",
                           subtype="words")
        raw.replace(raw.children[0], nodes.Text(markup))


def _add_script(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any],
                doctree: Any) -> None:
    if "data-attn-fig=" in context.get("body", ""):
        app.add_js_file(SCRIPT, loading_method="defer")
        app.add_css_file(STYLE)


def _add_static(app: Sphinx, config: Any) -> None:
    if str(STATIC) not in config.html_static_path:
        config.html_static_path.append(str(STATIC))


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _add_static)
    app.add_transform(KeepEnglishWords)
    app.connect("doctree-resolved", _resolve)
    # Before dedupe_inline_js (500), which replaces the page's list of scripts with a copy.
    app.connect("html-page-context", _add_script, priority=400)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
