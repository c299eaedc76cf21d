"""The book's two editions, English and Chinese, from one source (Sphinx's gettext catalogues).

`make book` builds the English edition at ``_build/html/`` and the Chinese one (``language =
zh_CN``, the catalogues in ``locales/zh_CN/LC_MESSAGES/``) at ``_build/html/zh/``. This extension,
loaded by both builds and by the ``gettext`` build of `make translations`, does four things:

1. **Only prose becomes a message.** Code, outputs and formulas exist once: a notebook's outputs
   (tables printed by attnlib, listings from ``attnlib.show_source``), display maths, the API
   page's docstrings and signatures, and any paragraph or cell with no words outside maths,
   inline code and references are marked ``translatable = False`` before Sphinx extracts or
   translates messages. Figure captions and alt texts stay messages, outputs' captions included.
2. **The catalogues are current.** The Chinese build warns (an error under ``-W``) about every
   message of the English source that its catalogue lacks: the English changed and nobody ran
   `make translations`.
3. **A language switch.** Every page links to the same page in the other edition, from the
   article header, by a relative URL (works from a server and from ``file://``), plus a
   ``<link rel="alternate" hreflang>``. The sidebar's part captions ("Chapters", "Reference"),
   which sphinx-external-toc inserts after Sphinx has translated the page, are translated here.
4. **Chinese search.** Sphinx's Chinese search splits words with jieba; the glossary's Chinese
   terms are handed to jieba as a user dictionary, so that a term such as 注意力权重 is one
   searchable word and is not only cut into 注意力 and 权重. Its Latin words are kept in a set, not
   in Sphinx 7.4's list (the same index, built in seconds instead of minutes).
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.environment import BuildEnvironment
from sphinx.transforms import SphinxTransform
from sphinx.util import logging as sphinx_logging
from sphinx.util.i18n import docname_to_domain
from sphinx.util.nodes import extract_messages

logger = sphinx_logging.getLogger(__name__)

# language -> (folder of that edition inside _build/html, name of the language in itself)
EDITIONS: dict[str, tuple[str, str]] = {"en": ("", "English"), "zh_CN": ("zh", "中文")}
# The theme's search box placeholder in each edition (jupyter-book sets an English one).
SEARCH_BAR_TEXT = {"zh_CN": "搜索本书……"}
TEMPLATES = Path(__file__).resolve().parent / "templates"
STATIC = Path(__file__).resolve().parent / "static"
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]{2,}")
# References whose displayed text comes from their target, not from the message.
_TARGET_TITLED = {"ref", "numref", "doc", "eq", "cite", "cite:p", "cite:t"}


def _language(config: Config) -> str:
    return config.language or "en"


def _edition(language: str) -> tuple[str, str]:
    if language not in EDITIONS:
        raise ValueError(f"no edition for language {language!r}; editions: {sorted(EDITIONS)}")
    return EDITIONS[language]


# ---------------------------------------------------------------------------------------------
# 1. What is a message, and 2. are the catalogues current


def _inside(node: nodes.Node, test: Any) -> bool:
    parent = node.parent
    while parent is not None:
        if test(parent):
            return True
        parent = parent.parent
    return False


def _is_output(node: nodes.Node) -> bool:
    return isinstance(node, nodes.container) and node.get("nb_element") == "cell_code_output"


def _has_words(node: nodes.Element) -> bool:
    """Whether a node has a letter outside maths, inline code and self-titled references."""

    def words(element: nodes.Node) -> bool:
        if isinstance(element, nodes.Text):
            return any(char.isalpha() for char in element.astext())
        if isinstance(element, (nodes.math, nodes.literal, nodes.raw, nodes.math_block)):
            return False
        if isinstance(element, addnodes.pending_xref) and not element.get("refexplicit"):
            if element.get("reftype") in _TARGET_TITLED or element.get("refdomain") == "cite":
                return False
        return any(words(child) for child in element.children)

    return words(node)


def untranslatable_reason(node: nodes.Element) -> str | None:
    """Why a text node is not a message (None where it is one)."""
    if isinstance(node, nodes.math_block):
        return "display maths"
    if ":docstring of " in (node.source or ""):
        return "docstring"
    if _inside(node, lambda parent: isinstance(parent, addnodes.desc)):
        return "API description"
    if _inside(node, _is_output) and not _inside(
        node, lambda parent: isinstance(parent, (nodes.caption, nodes.legend))
    ) and not isinstance(node, (nodes.caption, nodes.legend)):
        return "notebook output"
    if not _has_words(node):
        return "no words outside maths, code and references"
    return None


class MarkUntranslatable(SphinxTransform):
    """Mark code, outputs, maths and docstrings not translatable; check the catalogue is current.

    Runs after PreserveTranslatableMessages (10) and before Locale (20), which translates.
    """

    default_priority = 15

    def apply(self, **kwargs: Any) -> None:
        for node in list(self.document.findall(nodes.TextElement)):
            # An inline node is a message only where it carries "translatable" (autodoc's field
            # bodies: placeholders that RemoveTranslatableInline unwraps after reading). Any other
            # inline must not get the attribute: that transform would move its text to the end
            # of its parent (a signature's "total=None" became "=totalNone").
            if isinstance(node, nodes.Inline) and "translatable" not in node:
                continue
            if untranslatable_reason(node):
                node["translatable"] = False
        catalogues: dict[str, set[str] | None] | None = getattr(self.app, "_edition_msgids", None)
        if catalogues is None:
            return
        domain = docname_to_domain(self.env.docname, self.config.gettext_compact)
        known = catalogues.get(domain)
        if known is None:
            logger.warning("no message catalogue for %s (%s.po): run `make translations`",
                           self.env.docname, domain, location=self.env.docname,
                           type="editions", subtype="stale")
            return
        for node, message in extract_messages(self.document):
            if message not in known:
                shown = message if len(message) <= 120 else message[:117] + "..."
                logger.warning("the English of this message is not in %s.po (the source changed: "
                               "run `make translations`, then translate what it marks fuzzy): %r",
                               domain, shown, location=node, type="editions", subtype="stale")


class TranslateToctreeCaptions(SphinxTransform):
    """Translate the captions of the toctrees that sphinx-external-toc inserts (priority 100,
    after Locale has translated the page): "Chapters" and "Reference" of the root page."""

    default_priority = 110

    def apply(self, **kwargs: Any) -> None:
        language = _language(self.config)
        if language == "en":
            return
        from sphinx.locale import init as init_locale

        domain = docname_to_domain(self.env.docname, self.config.gettext_compact)
        dirs = [str(Path(self.env.srcdir, directory)) for directory in self.config.locale_dirs]
        catalogue, found = init_locale(dirs, language, domain)
        if not found:
            return
        for toctree in self.document.findall(addnodes.toctree):
            for message in toctree.extract_original_messages():
                translated = catalogue.gettext(message)
                if translated and translated != message:
                    toctree.apply_translated_message(message, translated)


def _load_catalogues(app: Sphinx) -> None:
    """Every msgid of every .po of the build's language, to check each page against."""
    language = _language(app.config)
    _edition(language)
    if language == "en" or app.builder.format != "html":
        return
    from babel.messages.pofile import read_po

    found: dict[str, set[str] | None] = {}
    for directory in app.config.locale_dirs:
        base = Path(app.srcdir, directory, language, "LC_MESSAGES")
        for po in sorted(base.rglob("*.po")):
            with po.open("rb") as handle:
                catalogue = read_po(handle)
            domain = po.relative_to(base).with_suffix("").as_posix()
            found[domain] = {message.id for message in catalogue if message.id and
                             isinstance(message.id, str)}
    app._edition_msgids = found  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------
# 3. The language switch


def _add_switch_template(app: Sphinx, config: Config) -> None:
    language = _language(config)
    _edition(language)
    config.templates_path.append(str(TEMPLATES))
    config.html_static_path.append(str(STATIC))
    app.add_css_file("editions.css")
    options = config.html_theme_options
    end = options.get("article_header_end", ["article-header-buttons.html"])
    if isinstance(end, str):
        end = [item.strip() for item in end.split(",") if item.strip()]
    if "language-switch.html" not in end:
        options["article_header_end"] = ["language-switch.html", *end]
    if language in SEARCH_BAR_TEXT:
        options["search_bar_text"] = SEARCH_BAR_TEXT[language]


def edition_href(pagename: str, language: str, other: str, suffix: str = ".html") -> str:
    """The relative URL of page ``pagename`` of edition ``other`` from the same page of ``language``.

    >>> edition_href("chapters/01_kernel_regression", "en", "zh_CN")
    '../zh/chapters/01_kernel_regression.html'
    >>> edition_href("chapters/01_kernel_regression", "zh_CN", "en")
    '../../chapters/01_kernel_regression.html'
    >>> edition_href("intro", "zh_CN", "en")
    '../intro.html'
    """
    here, there = _edition(language)[0], _edition(other)[0]
    up = pagename.count("/") + (len(here.split("/")) if here else 0)
    return "../" * up + (f"{there}/" if there else "") + pagename + suffix


def _switch_context(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any],
                    doctree: Any) -> None:
    language = _language(app.config)
    links = []
    for other, (_, name) in EDITIONS.items():
        if other == language:
            continue
        href = edition_href(pagename, language, other, getattr(app.builder, "out_suffix", ".html"))
        hreflang = other.replace("_", "-")
        links.append({"href": href, "hreflang": hreflang, "label": name})
        context["metatags"] = context.get("metatags", "") + (
            f'\n    <link rel="alternate" hreflang="{hreflang}" href="{href}" />'
        )
    context["edition_links"] = links


# ---------------------------------------------------------------------------------------------
# 4. Chinese search: the glossary's terms as jieba's user dictionary


def glossary_cjk_terms(env: BuildEnvironment) -> list[str]:
    """The Chinese words of every glossary term the build registered (translated terms included)."""
    objects = env.get_domain("std").objects  # type: ignore[attr-defined]
    words: set[str] = set()
    for (kind, name), _ in objects.items():
        if kind == "term":
            words.update(_CJK.findall(name))
    return sorted(words)


def _jieba_dictionary(app: Sphinx, env: BuildEnvironment) -> list[str]:
    language = _language(app.config)
    if not language.startswith("zh") or app.builder.format != "html":
        return []
    try:
        import jieba  # type: ignore[import-untyped]
    except ImportError:
        logger.warning("jieba is not installed: Chinese search cuts text into single characters "
                       "(run `make install`)", type="editions", subtype="jieba")
        return []
    jieba.setLogLevel(logging.WARNING)  # no "Building prefix dict ..." on every build
    terms = glossary_cjk_terms(env)
    path = Path(app.doctreedir) / "jieba_glossary_terms.txt"
    path.write_text("".join(f"{term}\n" for term in terms), encoding="utf-8")
    app.config.html_search_options = {**(app.config.html_search_options or {}), "dict": str(path)}
    logger.info("editions: %d glossary terms given to jieba (%s)", len(terms), path)
    return []


class _Terms(set[str]):
    """A set that takes ``extend``: what Sphinx 7.4's Chinese search asks of its Latin terms."""

    def extend(self, words: Any) -> None:
        self.update(words)


def _faster_chinese_search() -> None:
    """Sphinx 7.4's Chinese search keeps the Latin words of every page in one list and asks, for
    each word it stems, whether the word is in that list: a scan that grows with the book. It was
    310 of the Chinese build's 400 s under cProfile (33,156 scans; 2026-11-29). The same question,
    asked of a set: the same index, in a fraction of the time."""
    from sphinx.search.zh import SearchChinese

    if not isinstance(SearchChinese.latin_terms, _Terms):
        SearchChinese.latin_terms = _Terms(SearchChinese.latin_terms)  # type: ignore[assignment]


def setup(app: Sphinx) -> dict[str, Any]:
    _faster_chinese_search()
    app.add_transform(MarkUntranslatable)
    app.add_transform(TranslateToctreeCaptions)
    app.connect("config-inited", _add_switch_template)
    app.connect("builder-inited", _load_catalogues)
    app.connect("html-page-context", _switch_context)
    app.connect("env-updated", _jieba_dictionary)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
