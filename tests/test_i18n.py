"""The Chinese edition's catalogues (locales/zh_CN/LC_MESSAGES): complete, faithful, current.

One test per catalogue and check, so that one chapter's state is one command:
``pytest tests/test_i18n.py -k 01_kernel`` (or ``python tools/i18n_check.py FILE``).

- complete: no message untranslated or fuzzy (the failure lists each, with file:line and msgid,
  and the counts of every catalogue, so progress is visible);
- markup kept: each translation has its message's multiset of references and roles (by target),
  links, maths and inline code;
- emphasis renders: MyST prints no ``**``/``__`` literally (the CJK flanking pitfall);
- glossary terms: a {term} role in Chinese text shows the glossary's Chinese term;
- what a message is: chapters' messages come from markdown cells, figure captions and alt texts,
  never from code, outputs or display maths; every caption and alt text is a message.

The catalogues must also be current with the English: the Chinese book build (`make book`, -W)
fails on a message its catalogue lacks (_ext/editions.py).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str, path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


check = _load("i18n_check", ROOT / "tools" / "i18n_check.py")
book_config = _load("book_config", ROOT / "tools" / "book_config.py")

CATALOGUES = check.catalogues()
IDS = [check.catalogue_name(path) for path in CATALOGUES]
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
DOCUMENTS = [TOC["root"]] + [
    chapter["file"] for part in TOC["parts"] for chapter in part["chapters"]
]
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


def _progress() -> str:
    return "progress of every catalogue:\n" + check.progress_table(CATALOGUES)


def _fail(problems: list[str], title: str, with_progress: bool = False) -> None:
    if problems:
        shown = problems[:60] + ([f"... and {len(problems) - 60} more"] if len(problems) > 60 else [])
        tail = f"\n\n{_progress()}" if with_progress else ""
        pytest.fail(f"{len(problems)} {title}:\n  " + "\n  ".join(shown) + tail, pytrace=False)


# ---------------------------------------------------------------------------------------------
# The catalogues themselves


def test_every_document_has_a_catalogue() -> None:
    """One catalogue per document of the TOC (not compacted), and no catalogue of a lost page."""
    assert CATALOGUES, f"no catalogues under {check.LOCALES}: run `make translations`"
    assert set(IDS) == set(DOCUMENTS), (
        f"documents without a catalogue: {sorted(set(DOCUMENTS) - set(IDS))}; catalogues of no "
        f"document: {sorted(set(IDS) - set(DOCUMENTS))} (run `make translations`)"
    )


@pytest.mark.parametrize("path", CATALOGUES, ids=IDS)
def test_catalogue_is_complete(path: Path) -> None:
    """Every message translated, none fuzzy."""
    _fail(check.header_problems(path) + check.incomplete(check.entries(path)),
          f"messages of {check.catalogue_name(path)} untranslated or fuzzy", with_progress=True)


@pytest.mark.parametrize("path", CATALOGUES, ids=IDS)
def test_translations_keep_the_markup(path: Path) -> None:
    """References (by target), links, maths and inline code: the same multiset as the English."""
    _fail(check.markup_changes(check.entries(path)),
          f"translations in {check.catalogue_name(path)} that change their message's markup")


@pytest.mark.parametrize("path", CATALOGUES, ids=IDS)
def test_emphasis_renders(path: Path) -> None:
    """No ``**`` or ``__`` left as text by MyST's parser (CommonMark flanking next to CJK)."""
    _fail(check.emphasis_problems(check.entries(path)),
          f"translations in {check.catalogue_name(path)} whose emphasis would print literally")


@pytest.mark.parametrize("path", CATALOGUES, ids=IDS)
def test_terms_use_the_glossary(path: Path) -> None:
    """A {term} role in a translation shows the glossary's Chinese term for its target."""
    _fail(check.term_problems(check.entries(path)),
          f"{{term}} roles in {check.catalogue_name(path)} that do not show the glossary's term")


# ---------------------------------------------------------------------------------------------
# What is a message (_ext/editions.py marks the rest untranslatable)


def _normal(text: str) -> str:
    return " ".join(text.split())


def _markdown_and_captions(notebook: Path) -> tuple[list[str], list[str], list[str]]:
    """(markdown cells, figure captions and alt texts, display maths) of a notebook."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    markdown, captions, maths = [], [], []
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            markdown.append(source)
            captions += re.findall(r"^:alt:\s*(.+)$", source, flags=re.MULTILINE)
            maths += re.findall(r"\$\$(.+?)\$\$", source, flags=re.DOTALL)
        figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {})
        if figure.get("caption"):
            captions.append(figure["caption"])
    return markdown, captions, maths


def _chapter_catalogue(notebook: Path) -> Path:
    return check.LOCALES / "chapters" / f"{notebook.stem}.po"


@pytest.mark.parametrize("notebook", CHAPTERS, ids=[path.stem for path in CHAPTERS])
def test_chapter_messages_are_its_prose(notebook: Path) -> None:
    """Each message comes from a markdown cell or a caption; no code, output or display maths
    is a message; every figure caption and alt text is one."""
    catalogue = _chapter_catalogue(notebook)
    assert catalogue.is_file(), f"no catalogue {catalogue}: run `make translations`"
    markdown, captions, maths = _markdown_and_captions(notebook)
    prose = "\n".join(_normal(text) for text in markdown + captions)
    messages = {_normal(entry.msgid) for entry in check.entries(catalogue)}
    foreign = sorted(message for message in messages if message not in prose)
    assert not foreign, f"messages of {catalogue.name} that are no markdown or caption: {foreign[:5]}"
    formulas = sorted(message for message in messages if message in {_normal(m) for m in maths})
    assert not formulas, f"display maths extracted as messages: {formulas[:3]}"
    lost = [text[:80] for text in captions if _normal(text) not in messages]
    assert not lost, f"figure captions or alt texts of {notebook.name} that are no message: {lost}"
    silent = [cell[:80] for cell in markdown
              if _has_words(cell) and not any(message in _normal(cell) for message in messages)]
    assert not silent, f"markdown cells of {notebook.name} with no message: {silent}"


def _has_words(markdown: str) -> bool:
    """Whether a markdown cell has words outside maths, code, labels and directives' options."""
    text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$|```.*?```|`[^`]*`", " ", markdown, flags=re.DOTALL)
    text = re.sub(r"^\s*(\([\w-]+\)=|:\w+:.*)$", " ", text, flags=re.MULTILINE)
    return bool(re.search(r"[^\W\d_]", text))


def test_outputs_are_not_messages() -> None:
    """A table that attnlib prints and a listing that show_source displays are no messages."""
    messages = {_normal(entry.msgid) for path in CATALOGUES for entry in check.entries(path)}
    cells = json.loads((ROOT / "chapters" / "02_attention_scores.ipynb").read_text("utf-8"))["cells"]
    outputs = "".join("".join(output.get("data", {}).get("text/markdown", ""))
                      for cell in cells for output in cell.get("outputs", []))
    assert "entropy (nats)" in outputs and "`attnlib.blocks.masking.softmax_with_temperature`" in outputs
    assert "entropy (nats)" not in messages
    assert "`attnlib.blocks.masking.softmax_with_temperature`" not in messages


def test_api_docstrings_are_not_messages() -> None:
    """The API page's prose is translated; its docstrings stay as the code has them."""
    messages = [entry.msgid for entry in check.entries(check.LOCALES / "api.po")]
    assert "attnlib API reference" in messages
    assert len(messages) < 20, f"api.po has {len(messages)} messages: docstrings were extracted"


# ---------------------------------------------------------------------------------------------
# The checks can fail: each on a deliberately bad translation


def _entry(msgid: str, msgstr: str, fuzzy: bool = False) -> Any:
    return check.Entry("test", ROOT / "test.po", 7, msgid, msgstr, fuzzy)


def test_completeness_check_names_untranslated_and_fuzzy() -> None:
    problems = check.incomplete([_entry("Attention weights", ""),
                                 _entry("Attention scores", "注意力分数", fuzzy=True),
                                 _entry("Keys", "键")])
    assert len(problems) == 2
    assert "test.po:7: untranslated: 'Attention weights'" in problems[0]
    assert "fuzzy" in problems[1] and "'Attention scores'" in problems[1]


@pytest.mark.parametrize(
    ("msgstr", "named"),
    [
        ("注意力权重是 $\\alpha_{ij}$ 的 `softmax`（{ref}`sec-x`）。", "{term}`attention weight`"),
        ("{term}`注意力分数 <attention score>`是 $\\alpha_{ij}$ 的 `softmax`（{ref}`sec-x`）。",
         "{term}`attention score`"),
        ("{term}`注意力权重 <attention weight>`是 $\\alpha_{ij}$ 的 `softmax`（{ref}`sec-y`）。",
         "{ref}`sec-x`"),
        ("{term}`注意力权重 <attention weight>`是 $a_{ij}$ 的 `softmax`（{ref}`sec-x`）。",
         "math $\\alpha_{ij}$"),
        ("{term}`注意力权重 <attention weight>`是 $\\alpha_{ij}$ 的 softmax（{ref}`sec-x`）。",
         "code `softmax`"),
    ],
    ids=["term dropped", "term retargeted", "ref retargeted", "maths changed", "code dropped"],
)
def test_markup_check_names_what_changed(msgstr: str, named: str) -> None:
    msgid = ("An {term}`attention weight` is the `softmax` of $\\alpha_{ij}$ "
             "({ref}`sec-x`).")
    problems = check.markup_changes([_entry(msgid, msgstr)])
    assert len(problems) == 1 and named in problems[0], problems


def test_markup_check_accepts_a_faithful_translation() -> None:
    msgid = ("See {numref}`fig-a`, {cite}`a2020, b2021` and [the notes](https://example.org): "
             "an {term}`attention weight` is the `softmax` of $s_{ij}$, $$\\sum_j \\alpha_j = 1$$.")
    msgstr = ("见{numref}`图 %s <fig-a>`、{cite}`b2021,a2020` 和[笔记](https://example.org)："
              "{term}`注意力权重 <attention weight>`是 $s_{ij}$ 的 `softmax`，"
              "$$\\sum_j \\alpha_j = 1$$。")
    assert check.markup_changes([_entry(msgid, msgstr)]) == []


@pytest.mark.parametrize(
    ("msgstr", "renders"),
    [
        ("的**注意力**是", True),  # letters on both sides: CommonMark's flanking rules hold
        ("的**“注意力”**是", False),  # punctuation inside, a letter outside: not left-flanking
        ("**注意力权重：**这是", False),  # punctuation before the closing run: not right-flanking
        ("**注意力权重**：这是", True),  # the punctuation moved outside
        ("的 **“注意力”** 是", True),  # spaces around
        ("的「**注意力**」是", True),  # the corner brackets outside the markers
        ("的__注意力__是", False),  # underscores never emphasise inside a word
    ],
    ids=["letters", "quote inside", "colon inside", "colon outside", "spaces", "corner brackets",
         "underscores"],
)
def test_emphasis_check_follows_commonmark(msgstr: str, renders: bool) -> None:
    problems = check.emphasis_problems([_entry("the **attention** is", msgstr)])
    assert (problems == []) is renders, problems


def test_term_check_wants_the_glossary_term() -> None:
    msgid = "An {term}`attention weight` sums to one."
    assert check.term_problems([_entry(msgid, "{term}`注意力权重 <attention weight>`的和为 1。")]) == []
    wrong = check.term_problems([_entry(msgid, "{term}`关注权重 <attention weight>`的和为 1。")])
    assert len(wrong) == 1 and "注意力权重" in wrong[0]
    english = check.term_problems([_entry(msgid, "{term}`attention weight`的和为 1。")])
    assert len(english) == 1 and "English" in english[0]


# ---------------------------------------------------------------------------------------------
# The Chinese edition's configuration and search


def test_chinese_edition_config() -> None:
    config = book_config.edition_config(book_config.book_config(None, "main"), "zh_CN")
    assert config["sphinx"]["config"]["language"] == "zh_CN"
    sphinx = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["sphinx"]["config"]
    assert sphinx["locale_dirs"] == ["locales/"] and sphinx["gettext_compact"] is False
    intro = {entry.msgid: entry for entry in check.entries(check.LOCALES / "intro.po")}
    title = intro["Attention, executed"]
    expected = title.msgstr if title.msgstr and not title.fuzzy else "Attention, executed"
    assert config["title"] == expected
    assert book_config.edition_config(book_config.book_config(None, "main"), "en")["title"] == (
        "Attention, executed")


def test_jieba_keeps_glossary_terms_whole() -> None:
    """Sphinx's Chinese search cuts text with jieba; with the glossary's terms as its user
    dictionary (what _ext/editions.py gives it) a term is one searchable word."""
    jieba = pytest.importorskip("jieba", reason="jieba is pinned in requirements.lock")
    terms = check.glossary_terms()
    chinese = sorted({term for term in terms.values() if term})
    assert "注意力权重" in chinese and "注意力汇聚" in chinese, chinese
    tokenizer = jieba.Tokenizer()
    sentence = "本章把注意力权重画成热图，注意力汇聚就是值的加权平均。"
    before = set(tokenizer.cut_for_search(sentence))
    for term in chinese:
        tokenizer.add_word(term)
    after = set(tokenizer.cut_for_search(sentence))
    assert "注意力权重" not in before  # jieba's own dictionary cuts it into 注意力 + 权重
    assert {"注意力权重", "注意力汇聚", "注意力", "权重"} <= after


def test_a_fuzzy_header_is_reported(tmp_path: Path) -> None:
    header = ('msgid ""\nmsgstr ""\n"Language: zh_CN\\n"\n'
              '"Content-Type: text/plain; charset=utf-8\\n"\n\nmsgid "Hello"\nmsgstr "你好"\n')
    clean, fuzzy = tmp_path / "clean.po", tmp_path / "fuzzy.po"
    clean.write_text(header, encoding="utf-8")
    fuzzy.write_text("#, fuzzy\n" + header, encoding="utf-8")
    assert check.header_problems(clean) == []
    assert check.header_problems(fuzzy) == [f"{fuzzy}: the header is marked fuzzy (delete its "
                                            "'#, fuzzy' line)"]
    assert check.incomplete(check.entries(fuzzy)) == []  # the messages themselves are done
