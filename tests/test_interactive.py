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


def test_script_and_json_agree_on_the_state_order() -> None:
    script = (ROOT / "_ext" / "static" / "attn-interactive.js").read_text(encoding="utf-8")
    assert "index = index * values[c].length + Number(input.value)" in script
    assert "http" not in script.replace("http://www.w3.org", "")  # nothing fetched


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
