"""One term per concept in the Chinese edition: find the variants the term table forbids.

The table is ``locales/zh_CN/terms.toml`` (documented in ``locales/zh_CN/TRANSLATING.md``):
each ``[[term]]`` names a glossary headword, its Chinese term, the variants it forbids in any
``msgstr`` (regular expressions) and the contexts where a variant is allowed (``allow``:
regular expressions whose matches are removed before searching, e.g. an English gloss in
parentheses). Each ``[[exception]]`` allows up to ``count`` occurrences of one variant in one
catalogue, with its reason.

Only the shown Chinese text is searched: inline code, maths, link URLs and role targets are
removed first (``{term}`注意力权重 <attention weight>``` keeps its title, a bare ``{cite}``
or ``{ref}`` disappears).

Usage::

    python tools/terms_check.py            # every catalogue: exit 1 on a variant not excepted
    python tools/terms_check.py --counts   # occurrences per catalogue and variant, exit 0
"""

from __future__ import annotations

import re
import sys
import tomllib
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parent.parent
LOCALES = ROOT / "locales" / "zh_CN" / "LC_MESSAGES"
TABLE = ROOT / "locales" / "zh_CN" / "terms.toml"

_STRIP = [
    re.compile(r"\$\$.*?\$\$", re.DOTALL),  # display maths
    re.compile(r"(?<!\\)\$[^$]+?(?<!\\)\$"),  # inline maths
    re.compile(r"``.+?``|`[^`]*`(?!`)"),  # inline code (after roles are resolved)
]
_ROLE = re.compile(r"\{[a-z:-]+\}`([^`]*)`")
_TITLED = re.compile(r"^(?P<title>.*?)\s*<[^<>]+>$", re.DOTALL)
_LINK = re.compile(r"\]\([^)\s]+\)")


@dataclass(frozen=True)
class Hit:
    catalogue: str  # "chapters/01_kernel_regression", "glossary"
    line: int
    headword: str
    variant: str  # the variant's pattern as written in the table
    text: str  # the matched text with some context


def shown_text(msgstr: str) -> str:
    """The text a reader sees: no code, maths, URLs or role targets."""

    def role(m: re.Match[str]) -> str:
        titled = _TITLED.match(m.group(1))
        return f" {titled.group('title')} " if titled else " "

    text = _ROLE.sub(role, msgstr)
    text = _LINK.sub("]", text)
    for pattern in _STRIP:
        text = pattern.sub(" ", text)
    return text


def load_table(path: Path = TABLE) -> dict[str, Any]:
    with path.open("rb") as f:
        return tomllib.load(f)


def _messages(po: Path) -> Iterable[tuple[int, str]]:
    with po.open("rb") as f:
        catalogue = read_po(f)
    for message in catalogue:
        if not message.id or not message.string:
            continue
        string = message.string if isinstance(message.string, str) else message.string[0]
        yield message.lineno or 0, string


def catalogue_name(po: Path, root: Path = LOCALES) -> str:
    return po.relative_to(root).with_suffix("").as_posix()


def find(table: dict[str, Any], catalogues: Iterable[Path], root: Path = LOCALES) -> list[Hit]:
    """Every occurrence of a forbidden variant in the given catalogues."""
    terms = [
        (
            term["headword"],
            [re.compile(a) for a in term.get("allow", [])],
            [(v, re.compile(v)) for v in term["forbid"]],
        )
        for term in table["term"]
    ]
    hits: list[Hit] = []
    for po in sorted(catalogues):
        name = catalogue_name(po, root)
        for line, msgstr in _messages(po):
            shown = shown_text(msgstr)
            for headword, allows, variants in terms:
                text = shown
                for allow in allows:
                    text = allow.sub(" ", text)
                for raw, pattern in variants:
                    for m in pattern.finditer(text):
                        a, b = max(0, m.start() - 12), m.end() + 12
                        hits.append(Hit(name, line, headword, raw, text[a:b].replace("\n", " ")))
    return hits


def allowed(table: dict[str, Any]) -> Counter[tuple[str, str]]:
    """(catalogue, variant) -> occurrences the exceptions allow."""
    counts: Counter[tuple[str, str]] = Counter()
    for exc in table.get("exception", []):
        counts[(exc["catalogue"], exc["variant"])] += int(exc["count"])
    return counts


def problems(table: dict[str, Any], hits: list[Hit]) -> list[str]:
    """Hits beyond what the exceptions allow, one line per occurrence of each excess."""
    found = Counter((h.catalogue, h.variant) for h in hits)
    allow = allowed(table)
    out = []
    for key, n in sorted(found.items()):
        if n > allow[key]:
            for h in hits:
                if (h.catalogue, h.variant) == key:
                    out.append(
                        f"{h.catalogue}.po:{h.line}: {h.variant!r} forbidden by {h.headword} "
                        f"({n} found, {allow[key]} excepted): ...{h.text}..."
                    )
    return out


def stale(table: dict[str, Any], hits: list[Hit]) -> list[str]:
    """Exceptions that allow more than is left (phase 2 fixed them: lower or delete)."""
    found = Counter((h.catalogue, h.variant) for h in hits)
    return [
        f"{cat}: {var!r} excepted {n}, found {found[(cat, var)]}"
        for (cat, var), n in sorted(allowed(table).items())
        if found[(cat, var)] < n
    ]


def main(argv: list[str]) -> int:
    table = load_table()
    hits = find(table, LOCALES.rglob("*.po"))
    if "--counts" in argv:
        for (cat, var), n in sorted(Counter((h.catalogue, h.variant) for h in hits).items()):
            print(f"{n:4d}  {cat}  {var}")
        for line in stale(table, hits):
            print("stale exception:", line)
        return 0
    bad = problems(table, hits)
    print("\n".join(bad) or "no forbidden variant beyond the exceptions")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
