"""Check the Chinese edition's message catalogues (locales/zh_CN/LC_MESSAGES/**/*.po).

Three checks per catalogue, each naming the file, the line of the entry and its msgid:

- **complete**: every message translated and none fuzzy (fuzzy: the English changed since it was
  translated; `make translations` marks it and keeps the old translation for reference);
- **markup kept**: a translation has the same multiset of references and roles ({term}, {cite},
  {ref}, {numref}, {doc}, ... compared by target, so ``{term}`注意力权重 <attention weight>``` keeps
  ``{term}`attention weight```), links, maths (``$...$``, ``$$...$$``) and inline code as its
  English message;
- **emphasis renders**: parsed by the book's own MyST parser, no ``**`` or ``__`` is left as
  literal text (CommonMark's flanking rules: see locales/zh_CN/TRANSLATING.md);
- **glossary terms**: a ``{term}`` role shows the glossary's Chinese term for its target.

Usage::

    python tools/i18n_check.py locales/zh_CN/LC_MESSAGES/chapters/01_kernel_regression.po
    python tools/i18n_check.py --summary        # counts for every catalogue, exit 0
    python tools/i18n_check.py                  # every catalogue, exit 1 on any problem

tests/test_i18n.py runs the same checks (``pytest tests/test_i18n.py -k 01_kernel``).
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parent.parent
LANGUAGE = "zh_CN"
LOCALES = ROOT / "locales" / LANGUAGE / "LC_MESSAGES"

# Roles whose content may be translated only in its title: `title <target>` keeps the target.
_TITLED = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$", re.DOTALL)
_LITERAL_MARKERS = ("**", "__")


@dataclass(frozen=True)
class Entry:
    """One message of a catalogue."""

    catalogue: str  # the document: "chapters/01_kernel_regression"
    path: Path
    line: int  # of the msgid in the .po file
    msgid: str
    msgstr: str
    fuzzy: bool

    def where(self) -> str:
        rel = self.path.relative_to(ROOT) if self.path.is_relative_to(ROOT) else self.path
        return f"{rel}:{self.line}"

    def short(self, width: int = 100) -> str:
        text = " ".join(self.msgid.split())
        return repr(text if len(text) <= width else text[: width - 3] + "...")


def catalogues() -> list[Path]:
    """Every catalogue of the Chinese edition, sorted."""
    return sorted(LOCALES.rglob("*.po"))


def catalogue_name(path: Path) -> str:
    try:
        return path.resolve().relative_to(LOCALES.resolve()).with_suffix("").as_posix()
    except ValueError:
        return path.with_suffix("").name


def entries(path: Path) -> list[Entry]:
    """The messages of one .po file (not its header, not obsolete entries)."""
    with path.open("rb") as handle:
        catalogue = read_po(handle)
    found = []
    for message in catalogue:
        if not message.id or not isinstance(message.id, str):
            continue
        string = message.string if isinstance(message.string, str) else ""
        found.append(Entry(catalogue_name(path), path, message.lineno, message.id, string,
                           message.fuzzy))
    return found


# ---------------------------------------------------------------------------------------------
# The book's MyST parser (the extensions _config.yml enables): what Sphinx parses msgstrs with.


@cache
def _parser() -> Any:
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    extensions = set(config.get("parse", {}).get("myst_enable_extensions", []))
    # Jupyter Book's own default (jupyter_book/default_config.yml): display maths ($$) may sit
    # inside a paragraph. Without it a paragraph with $$...$$ in it is read wrongly.
    config_ = MdParserConfig(enable_extensions=extensions, dmath_double_inline=True)
    return create_md_parser(config_, RendererHTML)


def _inline_tokens(text: str) -> Iterator[Any]:
    for token in _parser().parse(text):
        if token.type == "inline":
            yield from _walk(token.children or [])
        elif token.type.startswith("math_block") or token.type in {"code_block", "fence"}:
            yield token


def _walk(tokens: Iterable[Any]) -> Iterator[Any]:
    for token in tokens:
        yield token
        if token.children:
            yield from _walk(token.children)


def _role_key(name: str, content: str) -> str:
    if name.startswith("cite"):
        keys = ",".join(sorted(key.strip() for key in content.split(",")))
        return f"{{{name}}}`{keys}`"
    if name in {"math"}:
        return f"{{{name}}}`{content}`"
    match = _TITLED.match(content)
    target = match.group("target") if match else content
    return f"{{{name}}}`{target.strip()}`"


def markup(text: str) -> Counter[str]:
    """The references, roles, links, maths and inline code of a message, as a multiset."""
    found: Counter[str] = Counter()
    for token in _inline_tokens(text):
        kind = token.type
        if kind == "myst_role":
            found[_role_key(token.meta.get("name", ""), token.content)] += 1
        elif kind == "code_inline":
            found[f"code `{token.content}`"] += 1
        elif kind in {"math_inline", "math_single"}:
            found[f"math ${token.content}$"] += 1
        elif kind == "math_inline_double" or kind.startswith("math_block"):
            found[f"math $${token.content.strip()}$$"] += 1
        elif kind == "link_open":
            found[f"link ({token.attrGet('href')})"] += 1
        elif kind == "image":
            found[f"image ({token.attrGet('src')})"] += 1
    return found


def literal_emphasis(text: str) -> list[str]:
    """Pieces of visible text in which ``**`` or ``__`` would be printed literally."""
    pieces = []
    for token in _inline_tokens(text):
        if token.type == "text" and any(marker in token.content for marker in _LITERAL_MARKERS):
            pieces.append(token.content)
    return pieces


# ---------------------------------------------------------------------------------------------
# The checks


def header_problems(path: Path) -> list[str]:
    """A header still marked fuzzy, as the template created it: gettext's own tools (msgfmt)
    leave a fuzzy header out, and with it the catalogue's charset."""
    with path.open("rb") as handle:
        fuzzy = read_po(handle).fuzzy
    return [f"{path}: the header is marked fuzzy (delete its '#, fuzzy' line)"] if fuzzy else []


def incomplete(found: list[Entry]) -> list[str]:
    """Untranslated and fuzzy messages, one line each."""
    problems = []
    for entry in found:
        if entry.fuzzy:
            problems.append(f"{entry.where()}: fuzzy (the English changed; update the "
                            f"translation, then delete the '#, fuzzy' line): {entry.short()}")
        elif not entry.msgstr.strip():
            problems.append(f"{entry.where()}: untranslated: {entry.short()}")
    return problems


def markup_changes(found: list[Entry]) -> list[str]:
    """Translations whose references, maths or inline code differ from their English."""
    problems = []
    for entry in found:
        if not entry.msgstr.strip():
            continue
        source, translated = markup(entry.msgid), markup(entry.msgstr)
        if source == translated:
            continue
        lost = sorted((source - translated).elements())
        added = sorted((translated - source).elements())
        details = "; ".join(
            part for part in (f"lost {', '.join(lost)}" if lost else "",
                              f"added {', '.join(added)}" if added else "")
            if part
        )
        problems.append(f"{entry.where()}: the translation changes the markup ({details}): "
                        f"{entry.short()}")
    return problems


def emphasis_problems(found: list[Entry]) -> list[str]:
    """Translations in which MyST would print ``**`` or ``__`` as text."""
    problems = []
    for entry in found:
        if not entry.msgstr.strip():
            continue
        for piece in literal_emphasis(entry.msgstr):
            problems.append(
                f"{entry.where()}: '**' or '__' would be printed literally in {piece!r} (put a "
                f"space or the punctuation outside the markers: see TRANSLATING.md): "
                f"{entry.short()}"
            )
    return problems


@cache
def glossary_terms() -> dict[str, str]:
    """Each glossary term (English, as glossary.md writes it) -> its Chinese term ("" if none yet).

    The Chinese term is the start of the translated headword, before its parenthesis:
    ``注意力权重（attention weight）`` -> ``注意力权重``.
    """
    source = (ROOT / "glossary.md").read_text(encoding="utf-8")
    block = re.search(r"```\{glossary\}\n(.*?)\n```", source, flags=re.DOTALL)
    english = [line.strip() for line in (block.group(1) if block else "").splitlines()
               if line.strip() and not line[0].isspace()]
    path = LOCALES / "glossary.po"
    translated = {entry.msgid: entry for entry in entries(path)} if path.is_file() else {}
    terms = {}
    for term in english:
        entry = translated.get(term)
        text = entry.msgstr if entry and not entry.fuzzy else ""
        terms[term] = re.split(r"\s*[（(]", text, maxsplit=1)[0].strip()
    return terms


def _cjk(text: str) -> str:
    return "".join(re.findall(r"[\u3400-\u9fff\uf900-\ufaff]+", text))


def term_problems(found: list[Entry]) -> list[str]:
    """{term} roles of translations that do not show the glossary's Chinese term.

    ``{term}`注意力权重 <attention weight>``` is right; ``{term}`attention weight``` shows the
    English in Chinese text; ``{term}`关注权重 <attention weight>``` is another word for the idea.
    A shortened form that the term ends with (权重 for 注意力权重) is accepted.
    """
    terms = {english.lower(): chinese for english, chinese in glossary_terms().items()}
    problems = []
    for entry in found:
        if not entry.msgstr.strip() or entry.catalogue == "glossary":
            continue
        for token in _inline_tokens(entry.msgstr):
            if token.type != "myst_role" or token.meta.get("name") != "term":
                continue
            match = _TITLED.match(token.content)
            title = match.group("title") if match else token.content
            target = (match.group("target") if match else token.content).strip().lower()
            chinese = terms.get(target, "")
            if not _cjk(title):
                problems.append(f"{entry.where()}: {{term}}`{token.content}` shows the English "
                                f"term in Chinese text; write {{term}}`{chinese or '中文术语'} "
                                f"<{target}>`: {entry.short()}")
            elif chinese and chinese not in title and not (
                len(_cjk(title)) >= 2 and chinese.endswith(_cjk(title))
            ):
                problems.append(f"{entry.where()}: {{term}}`{token.content}` should show the "
                                f"glossary's term {chinese!r} for {target!r}: {entry.short()}")
    return problems


def counts(found: list[Entry]) -> tuple[int, int, int]:
    """(translated, fuzzy, untranslated)."""
    fuzzy = sum(entry.fuzzy for entry in found)
    untranslated = sum(1 for entry in found if not entry.fuzzy and not entry.msgstr.strip())
    return len(found) - fuzzy - untranslated, fuzzy, untranslated


def progress_table(paths: list[Path]) -> str:
    rows = ["catalogue                                   messages  translated  fuzzy  untranslated"]
    totals = [0, 0, 0, 0]
    for path in paths:
        found = entries(path)
        done, fuzzy, missing = counts(found)
        rows.append(f"{catalogue_name(path):<44}{len(found):>8}{done:>12}{fuzzy:>7}{missing:>14}")
        for i, value in enumerate((len(found), done, fuzzy, missing)):
            totals[i] += value
    rows.append(f"{'all':<44}{totals[0]:>8}{totals[1]:>12}{totals[2]:>7}{totals[3]:>14}")
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    summary = "--summary" in argv
    paths = [Path(arg) for arg in argv if arg != "--summary"] or catalogues()
    missing = [str(path) for path in paths if not path.is_file()]
    if missing:
        print(f"i18n_check: no such catalogue: {', '.join(missing)}", file=sys.stderr)
        return 2
    print(progress_table(paths))
    if summary:
        return 0
    failed = False
    for path in paths:
        found = entries(path)
        for title, problems in (("incomplete", header_problems(path) + incomplete(found)),
                                ("markup changed", markup_changes(found)),
                                ("emphasis printed literally", emphasis_problems(found)),
                                ("terms not the glossary's", term_problems(found))):
            if problems:
                failed = True
                print(f"\n{catalogue_name(path)}: {len(problems)} {title}")
                print("\n".join(f"  {problem}" for problem in problems))
    print("\ni18n_check: " + ("problems above" if failed else "every catalogue checked is complete "
                              "and keeps its markup"))
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
