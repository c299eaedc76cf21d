"""The shipped CJK font: it covers the corpus, and Chinese tick labels draw without warnings."""

from __future__ import annotations

import subprocess
import sys
import unicodedata
import warnings
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from fontTools.ttLib import TTFont

from attnlib import data

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from attnlib.book import plot

FONTS = Path(plot.__file__).parent / "fonts"


def _is_cjk(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


def _corpus_words() -> set[str]:
    """Every Chinese token of a corpus (all splits), the lexicon and the grammar's own words."""
    corpus = data.make_corpus(n_pairs=2000)
    words = set(corpus.src_vocab.itos[len(data.SPECIALS):])
    for pairs in (corpus.train, corpus.valid, corpus.test):
        for pair in pairs:
            words.update(pair.src)
    words.update(data.lexicon_words())
    words.update(data.FUNCTION_WORDS)
    return words


def test_font_covers_every_cjk_character_of_the_corpus() -> None:
    cmap = TTFont(plot.CJK_FONT).getBestCmap()
    chars = {c for word in _corpus_words() for c in word if _is_cjk(c)}
    assert {"在", "和", "一", "起", "了", "不", "没", "都", "的", "因", "为"} <= chars
    missing = sorted(c for c in chars if ord(c) not in cmap)
    assert not missing, f"run tools/make_cjk_font.py: no glyph for {''.join(missing)}"


def test_font_is_the_small_named_regular_subset_with_its_licence() -> None:
    assert plot.CJK_FONT.stat().st_size < 200_000
    font = TTFont(plot.CJK_FONT)
    assert font["name"].getDebugName(1) == plot.CJK_FAMILY
    assert font["OS/2"].usWeightClass == 400
    assert "fvar" not in font  # a static instance, not the variable font's thin default
    assert "Source" not in plot.CJK_FAMILY  # the licence's Reserved Font Name
    licence = (FONTS / "OFL.txt").read_text(encoding="utf-8")
    assert "SIL OPEN FONT LICENSE Version 1.1" in licence
    assert "Reserved Font Name 'Source'" in licence


@pytest.mark.parametrize("ext", ["png", "pdf", "svg"])
def test_chinese_tick_labels_draw_without_missing_glyphs(ext: str, tmp_path: Path) -> None:
    with matplotlib.rc_context():
        plot.use_book_style()
        plot.use_book_style()  # idempotent: registers the font once
        registered = [f for f in matplotlib.font_manager.fontManager.ttflist
                      if f.fname == str(plot.CJK_FONT)]
        assert len(registered) == 1
        tokens = "我 在 北京 学习 机器学习".split()
        weights = np.full((len(tokens), len(tokens)), 1.0 / len(tokens))
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=r".*[Gg]lyph.*missing")
            ax = plot.heatmap(weights, xticklabels=tokens, yticklabels=tokens,
                              title="注意力权重 (attention weights)")
            ax.figure.canvas.draw()
            ax.figure.savefig(tmp_path / f"cjk.{ext}")
        plt.close(ax.figure)


def test_latin_text_stays_in_dejavu_sans() -> None:
    with matplotlib.rc_context():
        plot.use_book_style()
        fonts = matplotlib.font_manager.fontManager._find_fonts_by_props(
            matplotlib.font_manager.FontProperties())
        assert Path(fonts[0]).name == "DejaVuSans.ttf"
        assert Path(fonts[1]) == plot.CJK_FONT


def test_importing_attnlib_does_not_import_matplotlib() -> None:
    code = "import sys, attnlib, attnlib.data; sys.exit('matplotlib' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
