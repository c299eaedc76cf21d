"""Entries of the catalogue: the book's offline interactive figures (attnlib.book.interactive):
controls, canvases and their panels, and the figure made of every state."""

from __future__ import annotations

import math
from typing import Any

from .harness import (
    EITHER,
    Bad,
    Call,
    Choice,
    Count,
    Flag,
    Func,
    Obj,
    Positive,
    Real,
    Seq,
    Text,
    api,
    entry,
)

XS = [0.5, 1.0, 2.0]
YS = [1.0, 3.0, 2.0]


def _panel(**changes: Any) -> Any:
    """A panel of a fresh canvas: x from 0.5 to 5, y from 1 to 10 (linear unless changed)."""
    canvas = api("Canvas")(200, 150)
    return canvas.panel((30, 10, 150, 100), (0.5, 5), (1, 10), **changes)


def _draw(canvas: Any, at: tuple[int, ...]) -> None:
    panel = canvas.panel((30, 10, 150, 100), (0, 2), (0, 4))
    panel.axes(title="a title", xticks=[0, 2])
    panel.line([0, 2], [0, at[0] + at[1]])
    canvas.readout("end", str(at[0] + at[1]))


def _controls() -> list[Any]:
    Control = api("Control")
    return [Control("a", ["0", "1", "2"], default=1), Control("b", ["off", "on"])]


def _figure() -> Any:
    return api("Interactive")("fig", "A figure", _controls(), _draw, width=200, height=150)


@entry("Control")
def _() -> Call:
    return Call(api("Control"), {"label": Text("slope"), "values": Seq(["1", "2", "3"]),
                                 "default": Count(1, minimum=0, maximum=2),
                                 "translate_values": Flag(False)},
                bad=[Bad("one-value", {"values": ["1"]})])


@entry("Canvas")
def _() -> Call:
    return Call(api("Canvas"), {"width": Count(200), "height": Count(150),
                                "panels": Count(0, minimum=0), "prefix": Text("fig-")})


@entry("Panel")
def _() -> Call:
    return Call(api("Panel"), {
        "canvas": Obj(api("Canvas")(200, 150)), "box": Seq((30, 10, 150, 100), item="float"),
        "xlim": Seq((0, 5), item="float"), "ylim": Seq((1, 10), item="float"),
        "xlog": Flag(False), "clip": Text("clip1"), "ylog": Flag(False)},
        bad=[Bad("equal-limits", {"xlim": (2, 2)}),
             Bad("five-numbers-in-the-box", {"box": (30, 10, 150, 100, 4)}),
             Bad("zero-width", {"box": (30, 10, 0, 100)}, names=("box[2]",)),
             Bad("three-limits", {"ylim": (1, 5, 10)})])


@entry("Canvas.panel")
def _() -> Call:
    return Call(api("Canvas")(200, 150).panel, {
        "box": Seq((30, 10, 150, 100), item="float"), "xlim": Seq((1, 5), item="float"),
        "ylim": Seq((1, 10), item="float"), "xlog": Flag(False), "ylog": Flag(False)},
        bad=[Bad("log-axis-from-0", {"xlim": (0, 5), "xlog": True}, names=("xlim",)),
             Bad("negative-height", {"box": (30, 10, 150, -100)}, names=("box[3]",))])


@entry("Panel.line")
def _() -> Call:
    return Call(_panel().line, {"xs": Seq(XS, item="float"), "ys": Seq(YS, item="any"),
                                "colour": Text("#1f77b4"), "width": Positive(2.0),
                                "dash": Text(None, optional=True)},
                bad=[Bad("a-str-y", {"ys": ["x", 3.0, 2.0]}),
                     Bad("a-nan-y-is-left-out", {"ys": [math.nan, 3.0, 2.0]}, expect=EITHER),
                     Bad("one-y-too-many", {"ys": [*YS, 1.0]}),
                     Bad("x-0-on-a-log-axis", call=lambda: _panel(xlog=True).line([0, 1], YS[:2]),
                         names=("xs",))])


@entry("Panel.points")
def _() -> Call:
    return Call(_panel().points, {"xs": Seq(XS, item="float"), "ys": Seq(YS, item="float"),
                                  "colour": Text("currentColor"), "radius": Positive(2.0),
                                  "opacity": Real(0.5, minimum=0.0)},
                bad=[Bad("opacity-above-1", {"opacity": 1.5}),
                     Bad("opacity-1", {"opacity": 1}, expect=EITHER),
                     Bad("one-x-too-many", {"xs": [*XS, 4.0]})])


@entry("Panel.bars")
def _() -> Call:
    return Call(_panel().bars, {"xs": Seq(XS, item="float"), "heights": Seq(YS, item="float"),
                                "colour": Text("#1f77b4"), "width": Positive(6.0),
                                "base": Real(2.0, optional=True)},
                bad=[Bad("no-base", {"base": None}, expect=EITHER),
                     Bad("height-0-on-a-log-axis",
                         call=lambda: _panel(ylog=True).bars([1, 2], [0, 5]),
                         names=("heights",))])


@entry("Panel.cells")
def _() -> Call:
    return Call(_panel().cells, {"matrix": Seq([[0.2, 0.8], [1.0, 0.0]], item="any"),
                                 "colour": Text("#1f77b4")},
                bad=[Bad("ragged", {"matrix": [[0.2, 0.8], [1.0]]}),
                     Bad("an-empty-row", {"matrix": [[]]}),
                     Bad("a-str-entry", {"matrix": [[0.2, "x"], [1.0, 0.0]]},
                         names=("matrix[0][1]",)),
                     Bad("a-nan-entry", {"matrix": [[0.2, math.nan], [1.0, 0.0]]},
                         names=("matrix[0][1]",)),
                     Bad("a-bare-row", {"matrix": [0.2, 0.8]}, names=("matrix[0]",))])


@entry("Panel.vline")
def _() -> Call:
    return Call(_panel().vline, {"x": Real(2.5), "colour": Text("currentColor"),
                                 "dash": Text("4 3", optional=True), "width": Positive(1.0)})


@entry("Panel.text")
def _() -> Call:
    return Call(_panel().text, {"x": Real(2.5), "y": Real(5.0), "text": Text("0.250"),
                                "message": Flag(False), "anchor": Choice("middle"),
                                "colour": Text("currentColor"), "size": Count(11)})


@entry("Panel.axes")
def _() -> Call:
    return Call(_panel().axes, {
        "title": Text("a title"), "xlabel": Text("x"), "ylabel": Text("y"),
        "xticks": Seq([1, 5], item="float"), "yticks": Seq([1, 10], item="float"),
        "xtick_labels": Seq(["zero", "five"], optional=True),
        "ytick_labels": Seq(["one", "ten"], optional=True), "frame": Flag(True)},
        bad=[Bad("one-label-too-few", {"xtick_labels": ["zero"]})])


@entry("Canvas.legend")
def _() -> Call:
    return Call(api("Canvas")(200, 150).legend, {
        "x": Real(20.0), "y": Real(130.0),
        "entries": Seq([("#1f77b4", "estimate", None), ("currentColor", "true f", "5 4")],
                       item="any")},
        bad=[Bad("two-fields", {"entries": [("#1f77b4", "estimate")]}),
             Bad("a-number-label", {"entries": [("#1f77b4", 3, None)]})])


@entry("Canvas.readout")
def _() -> Call:
    return Call(api("Canvas")(200, 150).readout, {"label": Text("test MSE"),
                                                  "value": Text("0.0123")})


@entry("Interactive")
def _() -> Call:
    return Call(api("Interactive"), {
        "name": Text("fig"), "title": Text("A figure"), "controls": Seq(_controls(), item="any"),
        "draw": Func(_draw), "width": Count(200), "height": Count(150)},
        bad=[Bad("a-space-in-the-name", {"name": "a fig"}),
             Bad("a-str-control", {"controls": ["a"]}, names=("controls[0]",))])


@entry("Interactive.state")
def _() -> Call:
    return Call(_figure().state, {"position": Seq((1, 0), item="int", minimum=0)},
                bad=[Bad("one-index-too-many", {"position": (1, 0, 0)}),
                     Bad("past-the-last-value", {"position": (3, 0)}, names=("position[0]",))])


@entry("Interactive.words")
def _() -> Call:
    def repeated() -> list[str]:  # the title is also a control's label: listed once
        words = api("Interactive")("fig", "a", _controls(), _draw).words()
        assert words.count("a") == 1, words
        return words

    return Call(_figure().words, {},
                bad=[Bad("a-word-twice", expect=EITHER, names=("words",), call=repeated)])


@entry("Interactive.glue")
def _() -> Call:
    return Call(_figure().glue, {"name": Text("fig-live")},
                bad=[Bad("empty-name", {"name": ""})])


@entry("Message")
def _() -> Call:
    return Call(api("Message"), {"template": Text("pair {0}: θ = {1} per position"),
                                 "values": Seq(["0", "0.316"])},
                bad=[Bad("a-value-without-a-place", {"template": "pair {0}"},
                         names=("template",)),
                     Bad("a-format-spec", {"template": "pair {0}: θ = {1:.3g}"},
                         names=("template",)),
                     Bad("a-number-value", {"values": ["0", 0.316]}, names=("values[1]",))])
