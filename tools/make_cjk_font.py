"""Build attnlib/fonts/: a small subset of Noto Sans CJK SC for the book's Chinese figure labels.

matplotlib's DejaVu Sans has no CJK glyphs, and the book may not download anything when it runs,
so attnlib ships the few Chinese characters its figures need, cut from Noto Sans CJK (SIL Open
Font License 1.1, which allows subsetting and redistribution with the licence).

Provenance: the source is the wheel ``manimgx-fonts-cjk==2026.9.26.post1`` from PyPI (OFL-1.1),
which holds Noto Sans CJK 2.004, unmodified, as the variable collection
``manimgx_fonts_cjk/NotoSansCJK-VF.otf.ttc``. Get it (once, not at book run time) with::

    pip download --no-deps --only-binary=:all: -d /tmp/fonts manimgx-fonts-cjk==2026.9.26.post1
    .venv/bin/python tools/make_cjk_font.py /tmp/fonts/manimgx_fonts_cjk-2026.9.26.post1-py3-none-any.whl

The script checks the wheel's SHA-256, takes the Simplified Chinese face ("Noto Sans CJK SC") out
of the collection, keeps only the characters listed by :func:`book_characters`, pins the weight
axis at the Regular instance (wght=400), converts the outlines to TrueType (quadratic) curves so
every matplotlib backend can embed the font, renames it (the licence reserves the name "Source";
the new name does not use it) and writes, into attnlib/fonts/:

* NotoSansSC-attnlib-subset.ttf: the font;
* OFL.txt: the copyright notice and the licence, as the OFL requires with every copy;
* README.md: what the font is, where it came from, how it was made, which characters it holds.

The output is deterministic: running the script again on the same wheel gives the same bytes.
To add characters (a new word in attnlib.data, a new glossary term in a figure), extend
:data:`GLOSSARY` or :data:`PUNCTUATION` if needed and run the script again.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import io
import re
import sys
import unicodedata
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path

from fontTools import subset
from fontTools.pens.cu2quPen import Cu2QuPen
from fontTools.pens.ttGlyphPen import TTGlyphPen
from fontTools.ttLib import TTCollection, TTFont, newTable
from fontTools.varLib import instancer

ROOT = Path(__file__).resolve().parents[1]
OUT_DIR = ROOT / "attnlib" / "fonts"
FONT_FILE = "NotoSansSC-attnlib-subset.ttf"

PACKAGE, VERSION = "manimgx-fonts-cjk", "2026.9.26.post1"
WHEEL = f"{PACKAGE.replace('-', '_')}-{VERSION}-py3-none-any.whl"
WHEEL_SHA256 = "05d5584c73877f37427cf0ca8067f5bacea2b596c7be79e8aedd634bb9f2b666"
TTC_MEMBER = "manimgx_fonts_cjk/NotoSansCJK-VF.otf.ttc"
LICENSE_MEMBER = f"manimgx_fonts_cjk-{VERSION}.dist-info/licenses/LICENSE"

SOURCE_FAMILY = "Noto Sans CJK SC"
WEIGHT = 400  # the collection's "Regular" named instance
FAMILY = "Noto Sans CJK SC attnlib"  # must not contain a Reserved Font Name (checked)
POSTSCRIPT_NAME = "NotoSansCJKscattnlib-Regular"

# Terms figures may label in Chinese, beyond the corpus.
GLOSSARY = (
    "注意力分数", "注意力权重", "查询", "键", "值", "缩放点积", "多头注意力", "自注意力",
    "位置编码", "填充掩码", "序列掩码", "加性注意力", "软性", "硬性", "注意力分布",
)
# Full-width punctuation (DejaVu Sans has none of it).
PUNCTUATION = "。，、：；？！（）《》"


def is_cjk(char: str) -> bool:
    """Whether ``char`` is a wide (East Asian) character: what DejaVu Sans cannot draw."""
    return unicodedata.east_asian_width(char) in ("W", "F")


def _strings(value: object) -> Iterator[str]:
    """Every string inside ``value``: a string, a tuple/list of them, or a dataclass of them."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, tuple | list):
        for item in value:
            yield from _strings(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _strings(getattr(value, f.name))


def book_characters() -> str:
    """The characters the font must hold, sorted by code point.

    Every CJK character of attnlib.data's lexicon (keys and values of every mapping), of the
    grammar's function words (在 和 一起 了 不 没 都 的 因为 ...), of :data:`GLOSSARY` and
    :data:`PUNCTUATION`.
    """
    from attnlib import data

    words: set[str] = set(data.lexicon_words()) | set(data.FUNCTION_WORDS)
    for lexicon in (data.PRONOUNS, data.PEOPLE, data.THINGS, data.VERBS, data.PLACES, data.TIMES):
        for value in lexicon.values():
            words.update(_strings(value))
    words.update(GLOSSARY)
    words.update(PUNCTUATION)
    return "".join(sorted({c for word in words for c in word if is_cjk(c)}))


def _read_wheel(path: Path) -> tuple[bytes, str]:
    """The collection's bytes and the licence text from the wheel, after checking its hash."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != WHEEL_SHA256:
        raise SystemExit(f"{path}: SHA-256 {digest}, expected {WHEEL_SHA256} ({WHEEL})")
    with zipfile.ZipFile(path) as wheel:
        return wheel.read(TTC_MEMBER), wheel.read(LICENSE_MEMBER).decode("utf-8")


def _face(collection: bytes, family: str) -> TTFont:
    """The face of the collection whose family name is ``family``, as a standalone font."""
    for font in TTCollection(io.BytesIO(collection)).fonts:
        if font["name"].getDebugName(1) == family:
            font.recalcTimestamp = False  # keep the source's head.modified: reproducible output
            buffer = io.BytesIO()
            font.save(buffer)
            buffer.seek(0)
            return TTFont(buffer, recalcTimestamp=False)
    raise SystemExit(f"no face named {family!r} in {TTC_MEMBER}")


def licence_text(wheel_licence: str) -> str:
    """OFL.txt: the font's copyright notice, then the licence.

    The wheel's LICENSE starts with one line about the wheel's own copy of the font; what follows
    (copyright line, licence) is the upstream Noto CJK LICENSE, which goes with the subset.
    """
    start = wheel_licence.index("Copyright")
    body = wheel_licence.index("This Font Software is licensed under the SIL Open Font License")
    copyright_line = wheel_licence[start:wheel_licence.index("\n", start)].strip()
    if "SIL OPEN FONT LICENSE Version 1.1" not in wheel_licence:
        raise SystemExit("the wheel's LICENSE is not the SIL Open Font License 1.1")
    return f"{copyright_line}\n\n{wheel_licence[body:].rstrip()}\n"


def reserved_font_names(*texts: str) -> list[str]:
    """The Reserved Font Names declared in ``texts`` (licence text, name-table copyright)."""
    names: set[str] = set()
    for text in texts:
        for match in re.finditer(r"Reserved Font Names? ((?:['\"][^'\"]+['\"](?:,? (?:and )?)?)+)",
                                 text):
            names.update(re.findall(r"['\"]([^'\"]+)['\"]", match.group(1)))
    return sorted(names)


def _subset(font: TTFont, text: str) -> None:
    options = subset.Options()
    options.name_IDs = list(range(15))  # keep copyright, trademark, designer, licence records
    options.notdef_outline = True
    options.desubroutinize = True
    options.drop_tables += ["STAT", "BASE", "DSIG"]
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=text)
    subsetter.subset(font)


def _to_truetype(font: TTFont) -> None:
    """Replace the (static) CFF2 outlines by TrueType ones (fontTools' otf2ttf recipe)."""
    order = font.getGlyphOrder()
    glyph_set = font.getGlyphSet()
    glyf = newTable("glyf")
    glyf.glyphOrder = order
    glyf.glyphs = {}
    for name in order:
        pen = TTGlyphPen(glyph_set)
        glyph_set[name].draw(Cu2QuPen(pen, max_err=1.0, reverse_direction=True))
        glyf.glyphs[name] = pen.glyph()
    font["loca"] = newTable("loca")
    font["glyf"] = glyf
    for tag in ("CFF2", "CFF ", "VORG"):
        if tag in font:
            del font[tag]
    glyf.compile(font)
    hmtx = font["hmtx"]
    for name, glyph in glyf.glyphs.items():
        if hasattr(glyph, "xMin"):
            hmtx[name] = (hmtx[name][0], glyph.xMin)
    maxp = newTable("maxp")
    maxp.tableVersion = 0x00010000
    maxp.maxZones = 1
    for attr in ("maxTwilightPoints", "maxStorage", "maxFunctionDefs", "maxInstructionDefs",
                 "maxStackElements", "maxSizeOfInstructions", "maxComponentElements"):
        setattr(maxp, attr, 0)
    font["maxp"] = maxp
    post = font["post"]
    post.formatType = 2.0
    post.extraNames = []
    post.mapping = {}
    post.glyphOrder = order
    font["head"].glyphDataFormat = 0
    font.sfntVersion = "\x00\x01\x00\x00"


def _rename(font: TTFont, source_version: str) -> None:
    name = font["name"]
    for name_id in (1, 2, 3, 4, 6, 16, 17, 21, 22, 25):
        name.removeNames(nameID=name_id)
    version = source_version.split(";")[0]
    records = {
        1: FAMILY,
        2: "Regular",
        3: f"{version};attnlib;{POSTSCRIPT_NAME}",
        4: f"{FAMILY} Regular",
        5: f"{version}; subset of {SOURCE_FAMILY} (wght={WEIGHT}) made for attnlib figures",
        6: POSTSCRIPT_NAME,
    }
    for name_id, string in records.items():
        name.setName(string, name_id, 3, 1, 0x409)
    os2 = font["OS/2"]
    os2.usWeightClass = WEIGHT
    os2.fsSelection = (os2.fsSelection & ~0b1100001) | 0b1000000  # REGULAR; not ITALIC/BOLD
    font["head"].macStyle = 0


def build(wheel: Path, out_dir: Path = OUT_DIR) -> dict[str, object]:
    """Write the font, OFL.txt and README.md into ``out_dir``; return a summary."""
    collection, wheel_licence = _read_wheel(wheel)
    font = _face(collection, SOURCE_FAMILY)
    source_version = font["name"].getDebugName(5) or "?"
    copyright_record = font["name"].getDebugName(0) or ""
    licence_record = font["name"].getDebugName(13) or ""
    if "SIL Open Font License, Version 1.1" not in licence_record:
        raise SystemExit(f"name ID 13 of {SOURCE_FAMILY} is not OFL 1.1: {licence_record!r}")
    rfns = reserved_font_names(wheel_licence, copyright_record)
    clash = [rfn for rfn in rfns if rfn.lower() in (FAMILY + POSTSCRIPT_NAME).lower()]
    if clash:
        raise SystemExit(f"the new name {FAMILY!r} uses Reserved Font Name(s) {clash}")

    text = book_characters()
    _subset(font, text)  # first, so the instancer works on a few glyphs instead of 65,000
    font = instancer.instantiateVariableFont(font, {"wght": WEIGHT})
    _to_truetype(font)
    _rename(font, source_version)
    missing = [c for c in text if ord(c) not in font.getBestCmap()]
    if missing:
        raise SystemExit(f"{SOURCE_FAMILY} has no glyph for {''.join(missing)}")

    out_dir.mkdir(parents=True, exist_ok=True)
    font_path = out_dir / FONT_FILE
    font.recalcTimestamp = False  # the head dates stay the source's: reproducible output
    font.save(font_path)
    (out_dir / "OFL.txt").write_text(licence_text(wheel_licence), encoding="utf-8")
    summary: dict[str, object] = {
        "font": font_path, "bytes": font_path.stat().st_size, "family": FAMILY,
        "characters": len(text), "glyphs": len(font.getGlyphOrder()),
        "source_version": source_version, "reserved_font_names": rfns,
    }
    (out_dir / "README.md").write_text(_readme(text, source_version, licence_text(wheel_licence).splitlines()[0], rfns), encoding="utf-8")
    return summary


def _wrap(chars: str, width: int = 40) -> Iterable[str]:
    for i in range(0, len(chars), width):
        yield chars[i:i + width]


def _readme(text: str, source_version: str, copyright_line: str, rfns: list[str]) -> str:
    rfn_list = ", ".join(f"'{n}'" for n in rfns) or "none"
    lines = "\n".join(_wrap(text))
    version = source_version.split(";")[0]
    return f"""\
# attnlib/fonts

`{FONT_FILE}` is a subset of Noto Sans CJK SC, the Simplified Chinese
face of Noto Sans CJK ({version}), at the Regular weight. It holds only the {len(text)}
Chinese characters and full-width punctuation marks the book's figures use.

`attnlib.book.plot.use_book_style()` registers it with matplotlib as the fallback family
"{FAMILY}": Latin text stays in DejaVu Sans, Chinese tokens get real glyphs, and
nothing is downloaded at run time.

## Where it came from

* Package: `{PACKAGE}=={VERSION}` on PyPI, licence OFL-1.1:
  `{WHEEL}`,
  SHA-256 `{WHEEL_SHA256}`.
* File: `{TTC_MEMBER}`, Noto Sans CJK as Noto publishes it, unmodified
  (a variable collection with one `wght` axis, 100 to 900).
* Face: "{SOURCE_FAMILY}", instantiated at `wght={WEIGHT}` (the collection's "Regular" instance).

## How it was made

```
pip download --no-deps --only-binary=:all: -d /tmp/fonts {PACKAGE}=={VERSION}
.venv/bin/python tools/make_cjk_font.py /tmp/fonts/{WHEEL}
```

`tools/make_cjk_font.py` collects every CJK character of the lexicon and of every grammatical
sentence of `attnlib.data`, of a glossary of attention terms and of common full-width
punctuation; subsets the face to them (`fontTools.subset`); pins the weight
(`fontTools.varLib.instancer`); converts the outlines to TrueType curves, so every matplotlib
backend can embed the font (PDF and PS with Type 42 included); renames it; and writes this
folder. The output is byte-for-byte reproducible. Run the script again after adding Chinese words
to `attnlib.data`: `tests/test_fonts.py` fails until then.

Characters ({len(text)}):

```
{lines}
```

## Licence

The font is licensed under the SIL Open Font License, Version 1.1. [`OFL.txt`](OFL.txt) holds
the copyright notice and the licence, and must go with every copy. This subset is a Modified
Version under the OFL and is distributed under the OFL only, not under attnlib's MIT licence.

Reserved Font Names declared: {rfn_list}. The licence and the font's copyright record say
"{copyright_line}"
The Modified Version is named "{FAMILY}" (PostScript name
`{POSTSCRIPT_NAME}`), which uses no Reserved Font Name; the build script checks
this. The name table's copyright, trademark, manufacturer, designer and licence records are kept.
"""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheel", type=Path, help=f"path to {WHEEL}")
    parser.add_argument("--out", type=Path, default=OUT_DIR, help="output folder")
    args = parser.parse_args(argv)
    for key, value in build(args.wheel, args.out).items():
        print(f"{key}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
