"""attnlib.book.interactive (figures a reader moves) and _ext/interactive.py (their words)."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest

from attnlib.book import interactive

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("interactive_ext", ROOT / "_ext" / "interactive.py")
assert _spec is not None and _spec.loader is not None
ext = importlib.util.module_from_spec(_spec)
sys.modules["interactive_ext"] = ext
_spec.loader.exec_module(ext)


def _figure(values: list[float]) -> interactive.Interactive:
    def draw(c: interactive.Canvas, at: tuple[int, ...]) -> None:
        panel = c.panel((40, 20, 200, 100), (0, 1), (0, 10))
        panel.axes(title="a title", xlabel="x", ylabel="y", xticks=[0, 1], yticks=[0, 10])
        panel.line([0, 1], [0, values[at[0]] + at[1]])
        c.readout("end value", f"{values[at[0]] + at[1]:.1f}")

    return interactive.Interactive(
        "test-fig", "Test & title",
        [interactive.Control("slope", [f"{v:g}" for v in values], default=1),
         interactive.Control("shift", ["none", "one"], translate_values=True)], draw)


def _data(markup: str) -> dict[str, list[list[str]]]:
    match = re.search(r'<script type="application/json" class="attn-data">(.*?)</script>', markup)
    assert match is not None
    return json.loads(match.group(1).replace("<\\/", "</"))


def test_every_state_is_in_the_table_row_major() -> None:
    fig = _figure([1.0, 2.0, 3.0])
    data = _data(fig._repr_html_())
    assert len(data["states"]) == 6  # 3 slopes x 2 shifts, the first control slowest
    readout = [k for k, (element, attr) in enumerate(data["keys"]) if element == "r0"]
    assert [row[readout[0]] for row in data["states"]] == ["1.0", "2.0", "2.0", "3.0", "3.0", "4.0"]
    # only the line and the readout change
    assert sorted(attr for _, attr in data["keys"]) == ["#text", "d"]


def test_static_svg_is_the_default_state() -> None:
    fig = _figure([1.0, 2.0, 3.0])
    markup = fig._repr_html_()
    default = fig.state((1, 0))
    assert default.readouts == [("end value", "2.0")]
    assert '<span class="attn-rv" data-e="r0">2.0</span>' in markup
    assert '<div class="attn-controls" hidden>' in markup  # no JavaScript, no dead slider
    assert 'value="1"' in markup and 'aria-valuetext="2"' in markup
    assert "slope = 3, shift = one -> end value: 4.0" in repr(fig)


def test_words_are_messages_numbers_are_not() -> None:
    markup = _figure([1.0, 2.0])._repr_html_()
    words = ext.figure_messages(markup)
    assert words == ["slope", "shift", "none", "one", "Test & title", "a title", "x", "y",
                     "end value"]
    translated, missing = ext.translate_markup(markup, {w: f"[{w}]" for w in words if w != "y"})
    assert missing == ["y"]
    assert "<title data-msg>[Test &amp; title]</title>" in translated
    assert '<span class="attn-cl" data-msg>[slope]</span>' in translated
    assert ">10</text>" in translated  # a tick label stays as it was


def test_words_and_glue() -> None:
    fig = _figure([1.0, 2.0])
    assert fig.words() == ext.figure_messages(fig._repr_html_())
    from IPython.core.interactiveshell import InteractiveShell

    shown: list[tuple[dict[str, str], dict[str, object]]] = []

    class Publisher:
        def publish(self, data: dict[str, str], metadata: dict[str, object] | None = None,
                    **kwargs: object) -> None:
            shown.append((data, metadata or {}))

    shell = InteractiveShell.instance()
    old = shell.display_pub
    shell.display_pub = Publisher()  # type: ignore[assignment]
    try:
        fig.glue("test-glue")
    finally:
        shell.display_pub = old
    (data, metadata), = shown
    assert data["text/html"] == fig._repr_html_() and data["text/plain"] == repr(fig)
    assert metadata == {"scrapbook": {"name": "test-glue", "mime_prefix": ""}}  # myst-nb's glue


def test_structure_must_not_change_between_states() -> None:
    def draw(c: interactive.Canvas, at: tuple[int, ...]) -> None:
        panel = c.panel((0, 0, 10, 10), (0, 1), (0, 1))
        if at[0]:
            panel.vline(0.5)

    with pytest.raises(ValueError, match="other elements"):
        interactive.Interactive("bad", "t", [interactive.Control("c", ["a", "b"])], draw)


def test_a_changing_message_is_refused() -> None:
    def draw(c: interactive.Canvas, at: tuple[int, ...]) -> None:
        c.text(0, 0, f"words {at[0]}", message=True)

    with pytest.raises(ValueError, match="a message changes"):
        interactive.Interactive("bad", "t", [interactive.Control("c", ["a", "b"])], draw)


def test_bad_controls_and_names() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        interactive.Control("c", ["a"])
    with pytest.raises(ValueError, match="default"):
        interactive.Control("c", ["a", "b"], default=2)
    with pytest.raises(ValueError, match="name"):
        interactive.Interactive("a b", "t", [interactive.Control("c", ["a", "b"])],
                                lambda c, at: None)


def test_the_script_fetches_nothing() -> None:
    """Issue 38's third review: no URL and no way to load anything (fetch, XMLHttpRequest,
    import(), a ``//`` URL, a ``src`` or ``href`` set from the script; comments aside). The state
    order the script computes is checked where it runs: tests/browser compares the page's
    ``data-state`` at every position with the cell's table, and aborts any request that would
    leave 127.0.0.1."""
    script = (ROOT / "_ext" / "static" / "attn-interactive.js").read_text(encoding="utf-8")
    # comments out: /* ... */ and "// " after a space or at a line's start (not "//cdn")
    code = re.sub(r"/\*.*?\*/|(?:^|(?<=\s))// [^\n]*", "", script, flags=re.S | re.M)
    assert "http" not in code.replace("http://www.w3.org", "")
    for loader in ("fetch(", "XMLHttpRequest", "import(", "import ", "//", "sendBeacon",
                   "WebSocket", "EventSource", ".src", "href", "innerHTML", "eval("):
        assert loader not in code, loader


def test_clip_ids_are_the_figures_own_and_dots_are_not_clipped() -> None:
    """Issue 38's second review: two figures on one page must not share a clip path's id, and a
    dot at the first or last position of an axis is drawn whole, not cut by the panel's edge."""
    markups = [_figure([1.0, 2.0])._repr_html_()]

    def draw(c: interactive.Canvas, at: tuple[int, ...]) -> None:
        panel = c.panel((0, 0, 10, 10), (0, 1), (0, 1))
        panel.points([0, 1], [0, at[0]])

    markups.append(interactive.Interactive("other", "t", [interactive.Control("c", ["a", "b"])],
                                           draw)._repr_html_())
    ids = [re.findall(r'<clipPath id="([^"]+)"', m) for m in markups]
    assert ids == [["test-fig-clip1"], ["other-clip1"]]
    assert 'clip-path="url(#test-fig-clip1)"' in markups[0]
    dots = re.search(r'<path d="M-2,10a[^"]*"[^>]*>', markups[1])
    assert dots is not None and "clip-path" not in dots.group(0), markups[1]


def test_log_axes_and_heatmap_cells() -> None:
    canvas = interactive.Canvas(100, 100)
    panel = canvas.panel((0, 0, 100, 100), (1, 100), (0.1, 1000), xlog=True, ylog=True)
    assert (panel.x(10), panel.y(10)) == (50, 50)  # a decade is a quarter / half the axis
    assert panel.y(0.1) == 100 and panel.y(1000) == 0
    panel.bars([10], [100])  # on a log axis a bar starts at the lower limit
    assert canvas.elements[-1][1]["d"].startswith("M47,100V25")
    heat = canvas.panel((0, 0, 20, 10), (0, 1), (0, 1))
    heat.cells([[0.04, 0.96], [1.2, -0.1]])
    shades = [attrs["fill-opacity"] for tag, attrs, _, _ in canvas.elements[-4:]]
    assert shades == ["0.0", "1.0", "1.0", "0.0"]  # one decimal, clipped to [0, 1]
    assert canvas.elements[-1][1]["x"] == "10" and canvas.elements[-1][1]["y"] == "5"


def _message(error: type[Exception], call: object) -> str:
    with pytest.raises(error) as caught:
        call()  # type: ignore[operator]
    assert type(caught.value) is error
    return str(caught.value)


def test_bad_arguments_name_the_argument_what_it_got_and_what_was_expected() -> None:
    canvas = interactive.Canvas(100, 100)
    panel = canvas.panel((0, 0, 100, 100), (1, 100), (0, 1), xlog=True)
    assert _message(ValueError, lambda: panel.line([1, 2], [0.5])) == (
        "xs and ys must have the same length, got 2 and 1")
    assert _message(TypeError, lambda: panel.points([1, "2"], [0.5, 0.6])) == (
        "xs[1] must be a number, got str")
    assert _message(ValueError, lambda: panel.vline(0)) == (
        "x must be > 0 on this panel's log x axis, got 0.0")
    assert _message(ValueError, lambda: panel.points([1], [0.5], opacity=2)) == (
        "opacity must be in [0, 1], got 2")
    assert "anchor must be one of 'start', 'middle', 'end', got 'left'" in _message(
        ValueError, lambda: panel.text(2, 0.5, "t", anchor="left"))
    assert _message(ValueError, lambda: canvas.panel((0, 0, 10, 10), (0, 1), (0, 1),
                                                     ylog=True)) == (
        "ylim must be > 0 where ylog is True (a log axis), got 0.0 and 1.0")
    assert canvas.panels == 1  # a refused panel adds nothing to the canvas
    assert _message(TypeError, lambda: interactive.Canvas(100.0, 50)) == (  # type: ignore[arg-type]
        "width must be an int, got float")
    fig = _figure([1.0, 2.0])
    assert _message(ValueError, lambda: fig.state((2, 0))) == "position[0] must be <= 1, got 2"
    assert _message(ValueError, lambda: fig.state((0,))) == (
        "position must have one index per control (2), got 1")


def test_numbers_of_numpy_and_torch_are_numbers() -> None:
    import numpy as np
    import torch

    canvas = interactive.Canvas(100, 100)
    panel = canvas.panel((0, 0, 100, 100), (np.float32(0), torch.tensor(2.0)), (0, 1))
    panel.line(torch.tensor([0.0, 1.0]), np.array([0.5, np.nan]))  # a NaN y is left out
    panel.points(range(2), [np.float64(0.25), torch.tensor(0.5)], opacity=1)
    assert canvas.elements[-2][1]["d"] == "M0,50"


def test_a_message_keeps_its_numbers_out_of_the_words() -> None:
    """Issue 38's review: numbers baked into a message (chapter 6's "pair 1: θ = 0.316 per
    position") make a new message whenever a number changes, and the translation goes stale."""
    title = interactive.Message("pair {0}: θ = {1} per position", ["1", "0.316"])
    assert title == "pair 1: θ = 0.316 per position"  # a str: what a plain viewer shows
    assert (title.template, title.values) == ("pair {0}: θ = {1} per position", ("1", "0.316"))

    def draw(c: interactive.Canvas, at: tuple[int, ...]) -> None:
        panel = c.panel((40, 20, 200, 100), (0, 1), (0, 10))
        panel.axes(title=title, xlabel="x")
        c.readout(interactive.Message("rows with largest weight > {0}", ["0.99"]), str(at[0]))

    fig = interactive.Interactive("msg", "T", [interactive.Control("c", ["a", "b"])], draw)
    markup = fig._repr_html_()
    assert ('data-msg="pair {0}: θ = {1} per position" data-args="[&quot;1&quot;,'
            '&quot;0.316&quot;]">pair 1: θ = 0.316 per position</text>') in markup
    words = ["c", "T", "pair {0}: θ = {1} per position", "x", "rows with largest weight > {0}"]
    assert fig.words() == ext.figure_messages(markup) == words
    chinese = {"c": "丙", "T": "题", "x": "x", "pair {0}: θ = {1} per position": "第 {0} 对：每个位置 θ = {1}",
               "rows with largest weight > {0}": "最大权重 > {0} 的行"}
    translated, missing = ext.translate_markup(markup, chinese)
    assert missing == []
    assert ">第 1 对：每个位置 θ = 0.316</text>" in translated
    assert ">最大权重 &gt; 0.99 的行</span>" in translated
    # a translation that lost a number's place is not used: the English stays, and it is reported
    _, missing = ext.translate_markup(markup, {**chinese, words[2]: "第 {0} 对"})
    assert missing == [words[2]]
    for template, values in (("pair {}", ["0"]), ("pair {0} of {2}", ["0", "1"]),
                             ("θ = {0:.3g}", ["1"]), ("no place", ["1"]), ("pair {0", ["0"])):
        with pytest.raises(ValueError, match="template must mark each"):
            interactive.Message(template, values)
    with pytest.raises(TypeError, match=r"values\[0\] must be a str"):
        interactive.Message("θ = {0}", [0.316])  # type: ignore[list-item]


def test_the_chapters_figures_have_no_numbers_in_their_words() -> None:
    """Issue 38's reviews: every message of the figures of chapters 1, 2, 3, 5, 6 and 9, as
    stored, is free of numbers; a number is a Message's value. Names are not numbers: a source
    note ("note 004"), an index ("x[t-1]"), a formula ("1/√d_k"), chapter 5's models ("the
    2-head model")."""
    number = re.compile(r"(?<![\w{])\d+(?:\.\d+)?(?![\w}])")
    names = re.compile(r"note \d{3}|\[[^\]]*\]|1/√d_k|\b\d-head\b")
    for chapter in ("01_kernel_regression", "02_attention_scores", "03_scaled_dot_product",
                    "05_multihead_self_attention", "06_positional_encoding",
                    "09_attention_in_language_models"):
        notebook = json.loads((ROOT / "chapters" / f"{chapter}.ipynb").read_text(encoding="utf-8"))
        markup = "".join("".join(output.get("data", {}).get("text/html", []))
                         for cell in notebook["cells"] for output in cell.get("outputs", [])
                         if "data-attn-fig" in "".join(output.get("data", {}).get("text/html", [])))
        words = ext.figure_messages(markup)
        assert words, chapter
        with_numbers = [w for w in words if number.search(names.sub("", w))]
        assert with_numbers == [], chapter


def test_a_reader_without_javascript_is_told_the_setting_shown() -> None:
    """Issue 38's review: the static SVG shows the default state; a line says which, in the page's
    language, and the script hides it."""
    markup = _figure([1.0, 2.0, 3.0])._repr_html_()
    assert ext.shown_line(markup, "en") == (
        '<p class="attn-shown">Shown: slope = 2, shift = none. With JavaScript, the sliders '
        "move them.</p>")
    translated, _ = ext.translate_markup(markup, {"slope": "斜率", "shift": "平移", "none": "无",
                                                  "one": "一"})
    assert ext.shown_line(translated, "zh_CN") == (
        '<p class="attn-shown">图中所示：斜率 = 2，平移 = 无。启用 JavaScript 后，可用滑块调节。</p>')

    def one_slider(c: interactive.Canvas, at: tuple[int, ...]) -> None:
        c.readout("v", str(at[0]))

    single = interactive.Interactive("one", "t", [interactive.Control("h", ["0.5", "1"])],
                                     one_slider)._repr_html_()
    assert "Shown: h = 0.5. With JavaScript, a slider moves it." in ext.shown_line(single, "en")
    assert set(ext.SHOWN) == set(ext._SEPARATOR) == {"en", "zh_CN"}  # the book's two editions
    # that the script hides it is checked in Chromium (tests/browser/test_interactive.py)


def test_chapter_3_axis_says_how_the_keys_are_ordered() -> None:
    """Issue 38's review: chapter 3's left panel labelled its x axis "key", but it draws one
    query's weights sorted, largest first: the label says so, and in every stored state the bars
    do fall from left to right."""
    notebook = json.loads((ROOT / "chapters" / "03_scaled_dot_product.ipynb").read_text(
        encoding="utf-8"))
    markup = next("".join(output["data"]["text/html"]) for cell in notebook["cells"]
                  for output in cell.get("outputs", [])
                  if 'data-attn-fig="saturation"' in "".join(output.get("data", {}).get(
                      "text/html", [])))
    assert "keys, largest weight first" in ext.figure_messages(markup)
    table = _data(markup)
    bars = [k for k, (element, attr) in enumerate(table["keys"]) if attr == "d"
            and all("h3V" in row[k] for row in table["states"])]  # the 3-pixel bars: the left panel
    assert len(bars) == 1, bars
    for row in table["states"]:
        tops = [float(y) for y in re.findall(r"V([-\d.]+)h3V", row[bars[0]])]
        assert len(tops) == 64 and tops == sorted(tops), tops  # pixel y grows as weight falls
