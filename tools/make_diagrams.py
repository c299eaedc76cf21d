"""Regenerate the book's diagrams: diagrams/src/*.py -> diagrams/*.svg (`make diagrams`).

Each module in diagrams/src/ (bar _style.py, the shared colours) describes one diagram:

* ``NAME``: the SVG's file name without ``.svg``; ``CHAPTER``: the notebook that shows it;
* ``TOOL``: ``"dot"`` (graphviz lays out a block diagram) or ``"matplotlib"`` (a diagram that
  carries data: positions, angles, scores);
* ``values()``: every number the diagram draws, taken from attnlib (never typed), as JSON data;
* ``render(values)``: the DOT text (``"dot"``) or the finished SVG text (``"matplotlib"``).

Every SVG carries, in a comment, the SHA-256 of its module, of _style.py, of this script and of
its values. tests/test_diagrams.py recomputes it without graphviz, so a change to a diagram's
source or to the model it draws (e.g. attnlib.models.transformer.config.CHAPTER7_SIZES) fails
the tests until the SVG is regenerated. The output is deterministic: graphviz's is, and matplotlib's is made so
(fixed ``svg.hashsalt``, no date in the metadata). Both write every glyph as a path (graphviz
through its cairo renderer, ``dot -Tsvg:cairo``, with the fonts fontconfig finds at generation
time), so a reader's browser draws the text exactly as it was laid out, Chinese included,
whatever fonts the reader has.

Usage: python tools/make_diagrams.py [--check] [NAME ...]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "diagrams" / "src"
OUT = ROOT / "diagrams"
STYLE = SRC / "_style.py"
STAMP_RE = re.compile(r"<!-- attnlib-diagram source=(\S+) sha256=([0-9a-f]{64}) -->")
GRAPHVIZ_HELP = ("make diagrams needs graphviz's `dot` on PATH: install graphviz "
                 "(Debian/Ubuntu: apt-get install graphviz fonts-liberation2 fonts-wqy-microhei)")


def load(path: Path) -> ModuleType:
    """Import one diagram module from its file (diagrams/ is not a package)."""
    if str(SRC) not in sys.path:
        sys.path.insert(0, str(SRC))  # so that `import _style` works inside the modules
    spec = importlib.util.spec_from_file_location(f"diagram_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for attr in ("NAME", "CHAPTER", "TOOL", "values", "render"):
        if not hasattr(module, attr):
            raise SystemExit(f"{path.relative_to(ROOT)}: a diagram module must define {attr}")
    if module.TOOL not in ("dot", "matplotlib"):
        raise SystemExit(f"{path.relative_to(ROOT)}: TOOL must be 'dot' or 'matplotlib', got {module.TOOL!r}")
    return module


def sources() -> list[Path]:
    return sorted(p for p in SRC.glob("*.py") if not p.name.startswith("_"))


def svg_path(module: ModuleType) -> Path:
    return OUT / f"{module.NAME}.svg"


def canonical(values: Any) -> str:
    """The values as canonical JSON: what the stamp hashes."""
    return json.dumps(values, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def stamp(path: Path, values: Any) -> str:
    """SHA-256 of the diagram's module, the shared style, this script and the values it draws."""
    digest = hashlib.sha256()
    for part in (path, STYLE, Path(__file__).resolve()):
        digest.update(part.read_bytes())
        digest.update(b"\0")
    digest.update(canonical(values).encode("utf-8"))
    return digest.hexdigest()


def stored_stamp(svg: Path) -> tuple[str, str] | None:
    """(source, sha256) from an SVG's stamp comment, or None."""
    if not svg.is_file():
        return None
    match = STAMP_RE.search(svg.read_text(encoding="utf-8"))
    return (match.group(1), match.group(2)) if match else None


def _has_cjk_font() -> bool:
    """Whether fontconfig (which graphviz's cairo renderer uses) knows a Chinese font."""
    fc_list = shutil.which("fc-list")
    if fc_list is None:
        return False
    found = subprocess.run([fc_list, ":lang=zh", "family"], capture_output=True, text=True, check=False)
    return bool(found.stdout.strip())


def run_dot(text: str) -> str:
    dot = shutil.which("dot")
    if dot is None:
        raise SystemExit(GRAPHVIZ_HELP)
    if re.search(r"[\u3000-\u9fff]", text) and not _has_cjk_font():
        raise SystemExit("make diagrams needs a Chinese font for graphviz (fontconfig): install one, "
                         "e.g. fonts-wqy-microhei (Debian/Ubuntu)")
    result = subprocess.run([dot, "-Tsvg:cairo"], input=text.encode("utf-8"), capture_output=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"dot failed:\n{result.stderr.decode('utf-8', 'replace')}")
    return result.stdout.decode("utf-8")


def with_stamp(svg: str, source: str, sha: str) -> str:
    """The SVG with its stamp comment right after the XML declaration."""
    comment = f"<!-- attnlib-diagram source={source} sha256={sha} -->\n"
    if svg.startswith("<?xml"):
        end = svg.index("?>") + 2
        return svg[:end] + "\n" + comment + svg[end:].lstrip("\n")
    return comment + svg


def build(path: Path) -> str:
    """The finished SVG text of one diagram."""
    module = load(path)
    values = module.values()
    text = module.render(values)
    svg = run_dot(text) if module.TOOL == "dot" else text
    return with_stamp(svg, path.relative_to(ROOT).as_posix(), stamp(path, values))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="diagram names (default: all)")
    parser.add_argument("--check", action="store_true", help="only report SVGs that are out of date")
    args = parser.parse_args(argv)
    paths = [p for p in sources() if not args.names or load(p).NAME in args.names]
    stale = 0
    for path in paths:
        module = load(path)
        out = svg_path(module)
        want = stamp(path, module.values())
        if args.check:
            if stored_stamp(out) != (path.relative_to(ROOT).as_posix(), want):
                print(f"out of date: {out.relative_to(ROOT)} (run `make diagrams`)")
                stale += 1
            continue
        out.write_text(build(path), encoding="utf-8")
        print(f"{out.relative_to(ROOT)} <- {path.relative_to(ROOT)} ({module.TOOL})")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
