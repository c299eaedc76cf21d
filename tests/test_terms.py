"""One term per concept in the Chinese edition (issue 40): no msgstr of any catalogue under
locales/zh_CN/ uses a variant that locales/zh_CN/terms.toml forbids, beyond the table's written
exceptions. ``python tools/terms_check.py --counts`` lists what the exceptions still allow."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _load() -> Any:
    spec = importlib.util.spec_from_file_location("terms_check", ROOT / "tools" / "terms_check.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["terms_check"] = module
    spec.loader.exec_module(module)
    return module


tc = _load()
TABLE = tc.load_table()

_FAKE = '''msgid ""
msgstr ""
"Content-Type: text/plain; charset=utf-8\\n"

msgid "The accuracy of a one-hot row, in nats."
msgstr "独热（one-hot）行的正确率是 1，单位 nats，见 `one-hot` 和 $\\\\text{one-hot}$。"

msgid "Masking"
msgstr "「遮蔽」"

msgid "Terms"
msgstr "{term}`注意力沉没 <attention sink>` 与 {ref}`sec-sinks`，笔记称“双线性模型”。"

msgid "Clean"
msgstr "注意力汇点的准确率（accuracy）以奈特计，双线性注意力（笔记称双线性模型）。"
'''


def _fake(tmp_path: Path, text: str = _FAKE) -> Path:
    po = tmp_path / "chapters" / "99_fake.po"
    po.parent.mkdir(parents=True)
    po.write_text(text, encoding="utf-8")
    return po


def test_table_is_well_formed() -> None:
    heads = [t["headword"] for t in TABLE["term"]]
    assert len(heads) == len(set(heads))
    variants = {v for t in TABLE["term"] for v in t["forbid"]}
    for t in TABLE["term"]:
        for pattern in t["forbid"] + t.get("allow", []):
            re.compile(pattern)
    for exc in TABLE.get("exception", []):
        assert exc["variant"] in variants, exc
        assert exc["reason"].strip(), exc
        assert (tc.LOCALES / f"{exc['catalogue']}.po").is_file(), exc


def test_planted_variants_are_found(tmp_path: Path) -> None:
    po = _fake(tmp_path)
    hits = tc.find(TABLE, [po], tmp_path)
    found = sorted((h.line, h.headword) for h in hits)
    # (lines of the msgids) 5: 正确率 and nats (code, maths and the parenthesis 独热（one-hot）
    # are exempt); 8: both corner brackets and 遮蔽; 11: 沉没 in the shown title of a {term}
    # (the quotation of a note may keep 双线性模型); 14: nothing.
    assert found == sorted([
        (5, "准确率"), (5, "奈特"),
        (8, "掩蔽"), (8, "“”"), (8, "“”"),
        (11, "注意力汇点"),
    ])
    assert tc.problems(TABLE, hits), "planted variants must fail the check"


def test_exception_allows_exactly_its_count(tmp_path: Path) -> None:
    po = _fake(tmp_path, _FAKE.split('msgid "Masking"')[0])
    hits = tc.find(TABLE, [po], tmp_path)
    table = dict(TABLE)
    table["exception"] = [
        {"catalogue": "chapters/99_fake", "variant": "正确率", "count": 1, "reason": "test"},
        {"catalogue": "chapters/99_fake", "variant": "(?<![A-Za-z])nats?(?![A-Za-z])",
         "count": 1, "reason": "test"},
    ]
    assert tc.problems(table, hits) == []
    table["exception"][0]["count"] = 0
    assert len(tc.problems(table, hits)) == 1


def test_shown_text_drops_code_maths_targets_and_urls() -> None:
    shown = tc.shown_text("见 `遮蔽` $遮蔽$ {term}`掩蔽 <masking>` {cite}`x` [链接](https://a/屏蔽)")
    assert "遮蔽" not in shown and "屏蔽" not in shown and "掩蔽" in shown


def test_no_forbidden_variant_in_the_catalogues() -> None:
    hits = tc.find(TABLE, tc.LOCALES.rglob("*.po"))
    bad = tc.problems(TABLE, hits)
    assert not bad, "forbidden variants (locales/zh_CN/terms.toml):\n" + "\n".join(bad)
