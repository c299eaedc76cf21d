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
   then removed from the page. A :class:`~attnlib.book.interactive.Message` is translated by its
   template (``data-msg="... {0} ..."``), then its values (``data-args``) are put back in.
3. **A reader without JavaScript is told which setting the figure shows.** Before the
   controls the page gets a line, in its language, naming each control and its default value
   (the words as translated in 2), e.g. chapter 2's "Shown: temperature τ = 1. With JavaScript,
   a slider moves it." The script hides it when it shows the sliders. Its sentence is :data:`SHOWN`'s.
4. **The script is served once, and only where it is used.** ``_ext/static/attn-interactive.js``
   and ``.css`` are copied to the site's ``_static/`` and linked from the pages that hold such a
   figure, and from no other page (Jupyter Book links every file of the book's own ``_static/``
   folder from every page, so they are not kept there).
"""

from __future__ import annotations

import html
import json
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
_TEMPLATE = re.compile(r'\sdata-msg="([^"]*)"')
_ARGS = re.compile(r'\sdata-args="([^"]*)"')
_PLACES = re.compile(r"\{(\d+)\}")
SCRIPT, STYLE = "attn-interactive.js", "attn-interactive.css"
STATIC = Path(__file__).resolve().parent / "static"

#: The line a reader without JavaScript sees, per page language: the sentence (``{settings}``:
#: each control's "name = value", joined by the language's separator), with the words for one
#: slider and for several.
SHOWN: dict[str, tuple[str, str, str]] = {
    "en": ("Shown: {settings}. With JavaScript, {moves}.", "a slider moves it",
           "the sliders move them"),
    "zh_CN": ("图中所示：{settings}。启用 JavaScript 后，{moves}。", "可用滑块调节",
              "可用滑块调节"),
}
_SEPARATOR = {"en": ", ", "zh_CN": "，"}


def _message(match: re.Match[str]) -> str:
    """A ``data-msg`` element's message: its template if it has one, else its text."""
    template = _TEMPLATE.search(match.group(1))
    return html.unescape(template.group(1) if template else match.group(3))


def figure_messages(markup: str) -> list[str]:
    """The words of a figure's HTML (``data-msg`` texts; a Message's template), each once, in
    order."""
    return list(dict.fromkeys(_message(m) for m in MESSAGE.finditer(markup)))


def translate_markup(markup: str, translations: dict[str, str]) -> tuple[str, list[str]]:
    """``markup`` with every ``data-msg`` text replaced; and the texts that had no translation
    (or, for a template, a translation without the same ``{0}``, ``{1}``, ... places)."""
    missing: list[str] = []

    def one(match: re.Match[str]) -> str:
        english = _message(match)
        text = translations.get(english)
        if text is None:
            missing.append(english)
            return match.group(0)
        args = _ARGS.search(match.group(1))
        if args is not None:
            values = json.loads(html.unescape(args.group(1)))
            if sorted(set(_PLACES.findall(text))) != sorted(set(_PLACES.findall(english))):
                missing.append(english)
                return match.group(0)
            text = _PLACES.sub(lambda m: values[int(m.group(1))], text)
        return match.group(1) + html.escape(text, quote=False) + match.group(4)

    return MESSAGE.sub(one, markup), missing


_CONTROL = re.compile(r'<div class="attn-c">(.*?)</div>', re.S)


def shown_line(markup: str, language: str) -> str:
    """The line that tells a reader without JavaScript which setting the figure shows: each
    control's name and default value as ``markup`` (already translated) shows them, in the
    sentence of ``language`` (KeyError if :data:`SHOWN` has none)."""
    sentence, one, several = SHOWN[language]
    settings = []
    controls = _CONTROL.findall(markup)
    for control in controls:
        name = re.search(r'class="attn-cl"[^>]*>([^<]*)<', control)
        default = re.search(r'<input [^>]*\bvalue="(\d+)"', control)
        values = re.findall(r'class="attn-vl"[^>]*>([^<]*)<', control)
        assert name is not None and default is not None, control
        settings.append(f"{name.group(1)} = {values[int(default.group(1))]}")
    text = sentence.format(settings=_SEPARATOR[language].join(settings),
                           moves=one if len(controls) == 1 else several)
    return f'<p class="attn-shown">{text}</p>'


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
            logger.warning("interactive figure %s: the word %r is not in an attn-words list "
                           "(or its translation lacks a {0}, {1}, ... of the English)",
                           match.group(1), english, location=raw, type="interactive",
                           subtype="words")
        language = app.config.language or "en"
        if language not in SHOWN:
            logger.warning("interactive figure %s: no 'Shown: ...' sentence for the language %r "
                           "(_ext/interactive.py, SHOWN)", match.group(1), language,
                           location=raw, type="interactive", subtype="words")
            language = "en"
        markup = markup.replace('<div class="attn-controls"',
                                shown_line(markup, language) + '\n<div class="attn-controls"', 1)
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
