"""Figures a reader moves in the rendered book, with no server and no plotting library.

A chapter computes the data of every position of the figure's controls (sliders) and draws each
state with a :class:`Canvas`: lines, points, bars and text in data coordinates, on panels with
fixed axes, plus readouts (a label and a value printed under the figure). :class:`Interactive`
calls the drawing function once per state and compares the drawings: what is the same in every
state is written once, as an SVG of the default state, and what differs (a path, a bar, a
readout's text) is written as a table with one row per state. In the notebook the output is
that SVG (what a reader without JavaScript, or a plain notebook viewer, sees) with the table in
a ``<script type="application/json">``; in the book, ``_ext/static/attn-interactive.js`` (a few
kilobytes, served once) shows the controls and copies a state's row into the SVG when a slider
moves. nbval compares the whole output, so every state's data is checked, not only the default.

The chapter shows the figure with :meth:`Interactive.glue` and places it with a
``{glue:figure}`` directive in the next markdown cell, whose caption is prose like any other.
Text that a reader reads as words (titles, axis labels, legend entries, control names, readout
labels) is marked ``data-msg``; the same markdown cell lists those words in a ``{container}`` of
class ``attn-words``, so they are messages of the chapter's catalogue, and the book's
``_ext/interactive.py`` writes each word in the page's language into the figure. Numbers are
never messages: words around a number are a :class:`Message`, whose template (the catalogue's
message) holds ``{0}``, ``{1}``, ... where the numbers go, so that a new number does not make
a new message (nor leave the translation stale).
"""

from __future__ import annotations

import html
import itertools
import json
import math
import re
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from attnlib._checks import (
    check_choice,
    check_flag,
    check_instance,
    check_int,
    check_ints,
)
from attnlib.book._figure_checks import (
    _num,
    _positive,
    _real,
    _reals,
    _same_length,
    _sequence,
    _text,
)

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")
"""Series colours (matplotlib's tab10), legible on the theme's light and dark backgrounds."""

_Element = tuple[str, dict[str, str], str, bool]  # (tag, attributes, text, is a message)


class Message(str):
    """Words with numbers put in: ``Message("pair {0}: θ = {1} per position", ["0", "1"])`` is
    the str "pair 0: θ = 1 per position" that remembers its template and values.

    Wherever a figure takes words (a title, an axis label, a legend entry, a readout's label, a
    text marked ``message``) it may take a Message: the HTML then carries the template as the
    message (``data-msg="..."``) and the values (``data-args``), and the book translates the
    template and puts the values back in. The template marks each value's place as ``{0}``,
    ``{1}``, ... (each used, no other braces); the values are str, numbers already formatted.
    """

    template: str
    values: tuple[str, ...]

    def __new__(cls, template: str, values: Sequence[str]) -> Message:
        _text("template", template)
        _sequence("values", values, "str")
        for i, value in enumerate(values):
            check_instance(f"values[{i}]", value, str, "a str")
        try:
            fields = [name for _, name, spec, conv in string.Formatter().parse(template)
                      if name is not None and not spec and not conv]
            every = [name for _, name, _, _ in string.Formatter().parse(template)
                     if name is not None]
        except ValueError as error:
            raise ValueError(f"template must mark each value as {{0}}, {{1}}, ...: {error}, got "
                             f"{template!r}") from None
        wanted = {str(i) for i in range(len(values))}
        if fields != every or set(fields) != wanted:
            raise ValueError(f"template must mark each of the {len(values)} values once or more as "
                             f"{{0}}, {{1}}, ... (no other braces, no format spec), got "
                             f"{template!r}")
        message = super().__new__(cls, template.format(*values))
        message.template, message.values = template, tuple(values)
        return message


def _msg(text: str) -> str:
    """The attributes that mark ``text`` as a message: ``data-msg``, with the template and the
    values of a :class:`Message`."""
    if isinstance(text, Message):
        args = json.dumps(list(text.values), ensure_ascii=False, separators=(",", ":"))
        return (f' data-msg="{html.escape(text.template)}"'
                f' data-args="{html.escape(args)}"')
    return " data-msg"


@dataclass(frozen=True)
class Control:
    """A slider: its name, the value shown at each position, and where it starts.

    ``translate_values`` makes the shown values messages too (words such as "with scale");
    numbers and model names are not.
    """

    label: str
    values: Sequence[str]
    default: int = 0
    translate_values: bool = False

    def __post_init__(self) -> None:
        _text("label", self.label)
        if isinstance(self.values, str) or not isinstance(self.values, Sequence):
            raise TypeError(f"values must be a sequence of str, got {type(self.values).__name__}")
        for i, value in enumerate(self.values):
            check_instance(f"values[{i}]", value, str, "a str")
        if len(self.values) < 2:
            raise ValueError(f"Control {self.label!r}: values needs at least 2 positions, "
                             f"got {len(self.values)}")
        check_int("default", self.default, minimum=0, maximum=len(self.values) - 1)
        check_flag("translate_values", self.translate_values)


@dataclass
class Panel:
    """One set of axes on a :class:`Canvas`: data coordinates mapped to a box of pixels."""

    canvas: Canvas
    box: tuple[float, float, float, float]  # left, top, width, height in pixels
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    xlog: bool = False
    clip: str = ""
    ylog: bool = False

    def __post_init__(self) -> None:
        check_instance("canvas", self.canvas, Canvas, "a Canvas")
        box = _reals("box", self.box)
        if len(box) != 4:
            raise ValueError(f"box must be 4 numbers (left, top, width, height), got {len(box)}")
        _positive("box[2]", box[2])
        _positive("box[3]", box[3])
        check_flag("xlog", self.xlog)
        check_flag("ylog", self.ylog)
        for name, lim, log in (("xlim", self.xlim, self.xlog), ("ylim", self.ylim, self.ylog)):
            lo, hi = self._pair(name, lim)
            if lo == hi:
                raise ValueError(f"{name} must be two different numbers, got {lo} and {hi}")
            if log and not (lo > 0 and hi > 0):
                raise ValueError(f"{name} must be > 0 where {name[0]}log is True (a log axis), "
                                 f"got {lo} and {hi}")
        _text("clip", self.clip)

    @staticmethod
    def _pair(name: str, value: object) -> tuple[float, float]:
        pair = _reals(name, value)
        if len(pair) != 2:
            raise ValueError(f"{name} must be 2 numbers (lower, upper), got {len(pair)}")
        return pair[0], pair[1]

    def _on_axis(self, name: str, values: Sequence[float], axis: str) -> None:
        """Values of data on a log axis must be > 0 (NaN and infinities are checked apart)."""
        if (self.xlog if axis == "x" else self.ylog):
            bad = [v for v in values if math.isfinite(v) and v <= 0]
            if bad:
                raise ValueError(f"{name} must be > 0 on this panel's log {axis} axis, got "
                                 f"{bad[0]}")

    def _points(self, xs: object, ys: object, ys_name: str = "ys",
                finite: bool = True) -> None:
        fx, fy = _reals("xs", xs), _reals(ys_name, ys, finite)
        _same_length("xs", len(fx), ys_name, len(fy))
        self._on_axis("xs", fx, "x")
        self._on_axis(ys_name, fy, "y")

    def x(self, value: float) -> float:
        lo, hi = self.xlim
        if self.xlog:
            value, lo, hi = math.log10(value), math.log10(lo), math.log10(hi)
        return self.box[0] + (value - lo) / (hi - lo) * self.box[2]

    def y(self, value: float) -> float:
        lo, hi = self.ylim
        if self.ylog:
            value, lo, hi = math.log10(value), math.log10(lo), math.log10(hi)
        return self.box[1] + self.box[3] - (value - lo) / (hi - lo) * self.box[3]

    def _path(self, xs: Sequence[float], ys: Sequence[float]) -> str:
        points = [(self.x(float(a)), self.y(float(b))) for a, b in zip(xs, ys, strict=True)
                  if math.isfinite(float(b))]
        return "M" + "L".join(f"{_num(a)},{_num(b)}" for a, b in points) if points else "M0,0"

    def line(self, xs: Sequence[float], ys: Sequence[float], colour: str = PALETTE[0], *,
             width: float = 2.0, dash: str | None = None) -> None:
        """A polyline through (xs, ys), clipped to the panel; a point whose y is NaN or
        infinite is left out."""
        self._points(xs, ys, finite=False)
        _text("colour", colour)
        _positive("width", width)
        _text("dash", dash, optional=True)
        attrs = {"d": self._path(xs, ys), "fill": "none", "stroke": colour,
                 "stroke-width": _num(width), "clip-path": f"url(#{self.clip})"}
        if dash:
            attrs["stroke-dasharray"] = dash
        self.canvas.add("path", attrs)

    def points(self, xs: Sequence[float], ys: Sequence[float], colour: str = "currentColor", *,
               radius: float = 2.0, opacity: float = 0.5) -> None:
        """Dots at (xs, ys), drawn as one path of tiny circles; ``opacity`` in [0, 1]. Not
        clipped to the panel: a dot at the first or last position of an axis is drawn whole."""
        self._points(xs, ys)
        _text("colour", colour)
        _positive("radius", radius)
        if _real("opacity", opacity, minimum=0.0) > 1:
            raise ValueError(f"opacity must be in [0, 1], got {opacity}")
        r = _num(radius)
        d = "".join(f"M{_num(self.x(float(a)) - radius)},{_num(self.y(float(b)))}"
                    f"a{r},{r} 0 1,0 {_num(2 * radius)},0a{r},{r} 0 1,0 -{_num(2 * radius)},0"
                    for a, b in zip(xs, ys, strict=True))
        self.canvas.add("path", {"d": d, "fill": colour, "fill-opacity": f"{opacity:g}"})

    def bars(self, xs: Sequence[float], heights: Sequence[float], colour: str = PALETTE[0], *,
             width: float = 6.0, base: float | None = None) -> None:
        """Vertical bars of ``width`` pixels centred at xs, from ``base`` (0, or the lower
        limit of a log axis) to each height."""
        self._points(xs, heights, "heights")
        _text("colour", colour)
        _positive("width", width)
        if base is not None:
            self._on_axis("base", [_real("base", base)], "y")
        y0 = self.y(base if base is not None else self.ylim[0] if self.ylog else 0.0)
        d = "".join(f"M{_num(self.x(float(a)) - width / 2)},{_num(y0)}"
                    f"V{_num(self.y(float(h)))}h{_num(width)}V{_num(y0)}z"
                    for a, h in zip(xs, heights, strict=True))
        self.canvas.add("path", {"d": d, "fill": colour, "clip-path": f"url(#{self.clip})"})

    def cells(self, matrix: Sequence[Sequence[float]], colour: str = PALETTE[0]) -> None:
        """A heatmap of values in [0, 1] (attention weights) filling the panel: row i at the
        top, one square per entry, its opacity the value to one decimal (ten shades: a float32
        value that moves in its sixth digit between machines rarely changes a shade). The
        panel's limits are not used."""
        if isinstance(matrix, str) or not isinstance(matrix, Sequence):
            raise TypeError(f"matrix must be a sequence of rows of numbers, got "
                            f"{type(matrix).__name__}")
        if not matrix:
            raise ValueError("matrix must have at least one row, got 0 rows")
        widths = {len(_reals(f"matrix[{i}]", row)) for i, row in enumerate(matrix)}
        if len(widths) != 1 or 0 in widths:
            raise ValueError(f"matrix must have rows of one length > 0, got lengths "
                             f"{sorted(widths)}")
        _text("colour", colour)
        left, top, w, h = self.box
        rows, cols = len(matrix), len(matrix[0])
        for i, row in enumerate(matrix):
            for j, value in enumerate(row):
                self.canvas.add("rect", {
                    "x": _num(left + j * w / cols), "y": _num(top + i * h / rows),
                    "width": _num(w / cols), "height": _num(h / rows), "fill": colour,
                    "fill-opacity": f"{min(1.0, max(0.0, float(value))):.1f}"})

    def vline(self, x: float, colour: str = "currentColor", *, dash: str | None = "4 3",
              width: float = 1.0) -> None:
        """A vertical line across the panel at data x."""
        self._on_axis("x", [_real("x", x)], "x")
        _text("colour", colour)
        _text("dash", dash, optional=True)
        _positive("width", width)
        px = _num(self.x(x))
        attrs = {"d": f"M{px},{_num(self.box[1])}V{_num(self.box[1] + self.box[3])}",
                 "stroke": colour, "stroke-width": _num(width), "fill": "none"}
        if dash:
            attrs["stroke-dasharray"] = dash
        self.canvas.add("path", attrs)

    def text(self, x: float, y: float, text: str, *, message: bool = False,
             anchor: str = "middle", colour: str = "currentColor", size: int = 11) -> None:
        """Text at data (x, y); ``message`` marks words to translate (never numbers).
        ``anchor`` is "start", "middle" or "end"."""
        self._on_axis("x", [_real("x", x)], "x")
        self._on_axis("y", [_real("y", y)], "y")
        _text("text", text)
        check_flag("message", message)
        check_choice("anchor", anchor, ("start", "middle", "end"))
        _text("colour", colour)
        check_int("size", size, minimum=1)
        self.canvas.text(self.x(x), self.y(y), text, message=message, anchor=anchor,
                         colour=colour, size=size)

    def axes(self, *, title: str = "", xlabel: str = "", ylabel: str = "",
             xticks: Sequence[float] = (), yticks: Sequence[float] = (),
             xtick_labels: Sequence[str] | None = None,
             ytick_labels: Sequence[str] | None = None, frame: bool = True) -> None:
        """The frame (left and bottom axes), ticks and labels (title and axis labels are
        messages; tick labels, one per tick, are not)."""
        for name, value in (("title", title), ("xlabel", xlabel), ("ylabel", ylabel)):
            _text(name, value)
        for axis, ticks, labels in (("x", xticks, xtick_labels), ("y", yticks, ytick_labels)):
            values = _reals(f"{axis}ticks", ticks)
            self._on_axis(f"{axis}ticks", values, axis)
            if labels is not None:
                if isinstance(labels, str) or not isinstance(labels, Sequence):
                    raise TypeError(f"{axis}tick_labels must be a sequence of str or None, got "
                                    f"{type(labels).__name__}")
                for i, label in enumerate(labels):
                    check_instance(f"{axis}tick_labels[{i}]", label, str, "a str")
                _same_length(f"{axis}ticks", len(values), f"{axis}tick_labels", len(labels))
        check_flag("frame", frame)
        left, top, w, h = self.box
        c = self.canvas
        if frame:
            c.add("path", {"d": f"M{_num(left)},{_num(top)}V{_num(top + h)}H{_num(left + w)}",
                           "stroke": "currentColor", "fill": "none", "stroke-width": "1"})
        for i, t in enumerate(xticks):
            px = self.x(t)
            c.add("path", {"d": f"M{_num(px)},{_num(top + h)}v4", "stroke": "currentColor"})
            label = xtick_labels[i] if xtick_labels is not None else f"{t:g}"
            c.text(px, top + h + 15, label, size=10)
        for i, t in enumerate(yticks):
            py = self.y(t)
            c.add("path", {"d": f"M{_num(left)},{_num(py)}h-4", "stroke": "currentColor"})
            label = ytick_labels[i] if ytick_labels is not None else f"{t:g}"
            c.text(left - 7, py + 3.5, label, anchor="end", size=10)
        if title:
            c.text(left + w / 2, top - 8, title, message=True, size=12)
        if xlabel:
            c.text(left + w / 2, top + h + 32, xlabel, message=True)
        if ylabel:
            c.text(left - 38, top + h / 2, ylabel, message=True, rotate=True)


@dataclass
class Canvas:
    """One state's drawing: SVG elements in order, and the readouts under the figure.

    ``prefix`` starts the id of each panel's clip path (an :class:`Interactive` passes its name),
    so that two figures on one page, or in one JupyterLab window, never share an id."""

    width: int
    height: int
    elements: list[_Element] = field(default_factory=list)
    readouts: list[tuple[str, str]] = field(default_factory=list)
    panels: int = 0
    prefix: str = ""

    def __post_init__(self) -> None:
        check_int("width", self.width, minimum=1)
        check_int("height", self.height, minimum=1)
        check_int("panels", self.panels, minimum=0)
        _text("prefix", self.prefix)

    def add(self, tag: str, attrs: dict[str, str], text: str = "", message: bool = False) -> None:
        self.elements.append((tag, attrs, text, message))

    def text(self, x: float, y: float, text: str, *, message: bool = False,
             anchor: str = "middle", colour: str = "currentColor", size: int = 11,
             rotate: bool = False) -> None:
        attrs = {"x": _num(x), "y": _num(y), "text-anchor": anchor, "fill": colour,
                 "font-size": str(size)}
        if rotate:
            attrs["transform"] = f"rotate(-90 {_num(x)} {_num(y)})"
        self.add("text", attrs, text, message)

    def panel(self, box: tuple[float, float, float, float], xlim: tuple[float, float],
              ylim: tuple[float, float], *, xlog: bool = False, ylog: bool = False) -> Panel:
        """A panel in the pixel box (left, top, width, height) with these data limits (log
        scales where ``xlog`` or ``ylog``)."""
        clip = f"{self.prefix}clip{self.panels + 1}"
        panel = Panel(self, box, xlim, ylim, xlog, clip, ylog)  # checks the arguments
        self.panels += 1
        left, top, w, h = box
        self.add("clipPath", {"id": clip})
        self.add("rect", {"x": _num(left), "y": _num(top - 2), "width": _num(w + 2),
                          "height": _num(h + 4)})
        self.add("/clipPath", {})
        return panel

    def legend(self, x: float, y: float, entries: Sequence[tuple[str, str, str | None]]) -> None:
        """Entries (colour, label, dash) stacked from pixel (x, y); labels are messages, dash
        is None for a solid line."""
        _real("x", x)
        _real("y", y)
        _sequence("entries", entries, "(colour, label, dash)")
        for i, item in enumerate(entries):
            if (isinstance(item, str) or not isinstance(item, Sequence) or len(item) != 3
                    or not isinstance(item[0], str) or not isinstance(item[1], str)
                    or not (item[2] is None or isinstance(item[2], str))):
                raise TypeError(f"entries[{i}] must be (colour, label, dash): two str and a str "
                                f"or None, got {item!r}")
        for i, (colour, label, dash) in enumerate(entries):
            yy = y + 15 * i
            attrs = {"d": f"M{_num(x)},{_num(yy)}h18", "stroke": colour, "stroke-width": "2"}
            if dash:
                attrs["stroke-dasharray"] = dash
            self.add("path", attrs)
            self.text(x + 23, yy + 4, label, message=True, anchor="start", size=10)

    def readout(self, label: str, value: str) -> None:
        """A line under the figure: ``label: value`` (the label is a message)."""
        _text("label", label)
        _text("value", value)
        self.readouts.append((label, value))


def _tag(tag: str, attrs: dict[str, str], extra: str = "") -> str:
    inner = "".join(f' {k}="{html.escape(v)}"' for k, v in attrs.items())
    return f"<{tag}{inner}{extra}>"


class Interactive:
    """A figure computed for every combination of its controls' positions.

    ``draw(canvas, position)`` draws one state: ``position`` holds one index per control. The
    structure (which elements, in which order) must be the same in every state; only attribute
    values and texts may change. Displayed by Jupyter as HTML (the SVG of the default state, the
    controls, the readouts and the table of states) and as text (every state's readouts).
    """

    def __init__(self, name: str, title: str, controls: Sequence[Control],
                 draw: Callable[[Canvas, tuple[int, ...]], None], *,
                 width: int = 680, height: int = 300) -> None:
        _text("name", name)
        _text("title", title)
        _sequence("controls", controls, "Control")
        for i, control in enumerate(controls):
            check_instance(f"controls[{i}]", control, Control, "a Control")
        if not callable(draw):
            raise TypeError(f"draw must be a function (canvas, position), got "
                            f"{type(draw).__name__}")
        check_int("width", width, minimum=1)
        check_int("height", height, minimum=1)
        if not name or not all(ch.isalnum() or ch == "-" for ch in name):
            raise ValueError(f"Interactive: name must be letters, digits and '-', got {name!r}")
        if not controls:
            raise ValueError("controls must hold at least one Control, got none")
        self.name, self.title, self.controls = name, title, list(controls)
        self.width, self.height = width, height
        self.positions = list(itertools.product(*(range(len(c.values)) for c in controls)))
        self.default = tuple(c.default for c in controls)
        self.canvases = []
        for position in self.positions:
            canvas = Canvas(width, height, prefix=f"{name}-")
            draw(canvas, position)
            self.canvases.append(canvas)
        self._diff()

    def _diff(self) -> None:
        """Which (element, attribute) pairs change between states; one row of values a state."""
        first = self.canvases[0]
        for position, canvas in zip(self.positions, self.canvases, strict=True):
            shape = [(tag, list(attrs), message) for tag, attrs, _, message in canvas.elements]
            if shape != [(tag, list(attrs), message) for tag, attrs, _, message in first.elements]:
                raise ValueError(f"Interactive {self.name!r}: the drawing at {position} has other "
                                 "elements than at the first position; only values may change")
            if [label for label, _ in canvas.readouts] != [label for label, _ in first.readouts]:
                raise ValueError(f"Interactive {self.name!r}: readout labels differ at {position}")
        keys: list[tuple[int, str]] = []
        for i, (_, attrs, text, message) in enumerate(first.elements):
            for attr in attrs:
                if any(c.elements[i][1][attr] != attrs[attr] for c in self.canvases):
                    keys.append((i, attr))
            if any(c.elements[i][2] != text for c in self.canvases):
                if message:
                    raise ValueError(f"Interactive {self.name!r}: a message changes between "
                                     f"states ({text!r}); make the changing part a separate text")
                keys.append((i, "#text"))
        for j, _ in enumerate(first.readouts):
            if any(c.readouts[j][1] != first.readouts[j][1] for c in self.canvases):
                keys.append((-1 - j, "#text"))
        self.keys = keys
        self.states = [[(c.elements[i][1][attr] if attr != "#text" else c.elements[i][2])
                        if i >= 0 else c.readouts[-1 - i][1] for i, attr in keys]
                       for c in self.canvases]

    def state(self, position: Sequence[int]) -> Canvas:
        """The drawing at one position of the controls: one index per control."""
        index = check_ints("position", position, minimum=0)
        if len(index) != len(self.controls):
            raise ValueError(f"position must have one index per control ({len(self.controls)}), "
                             f"got {len(index)}")
        for i, (j, control) in enumerate(zip(index, self.controls, strict=True)):
            check_int(f"position[{i}]", j, minimum=0, maximum=len(control.values) - 1)
        return self.canvases[self.positions.index(tuple(position))]

    def _svg(self, canvas: Canvas, dynamic: set[int]) -> str:
        parts = [_tag("svg", {"xmlns": "http://www.w3.org/2000/svg",
                              "viewBox": f"0 0 {self.width} {self.height}",
                              "width": str(self.width), "height": str(self.height),
                              "role": "img", "class": "attn-svg"})]
        parts.append(f"<title{_msg(self.title)}>" + html.escape(self.title) + "</title>")
        for i, (tag, attrs, text, message) in enumerate(canvas.elements):
            if tag.startswith("/"):
                parts.append(f"<{tag}>")
                continue
            extra = (f' data-e="{i}"' if i in dynamic else "") + (_msg(text) if message else "")
            if tag == "clipPath":
                parts.append(_tag(tag, attrs, extra))
            elif tag == "text":
                parts.append(_tag(tag, attrs, extra) + html.escape(text) + "</text>")
            else:
                parts.append(_tag(tag, attrs, extra)[:-1] + "/>")
        parts.append("</svg>")
        return "".join(parts)

    def _repr_html_(self) -> str:
        n = self.positions.index(self.default)
        canvas = self.canvases[n]
        dynamic = {i for i, _ in self.keys if i >= 0}
        out = [f'<div class="attn-fig" data-attn-fig="{self.name}">',
               '<div class="attn-controls" hidden>']
        for c in self.controls:
            value = html.escape(c.values[c.default])
            msg = " data-msg" if c.translate_values else ""
            out.append(f'<div class="attn-c"><label><span class="attn-cl"{_msg(c.label)}>'
                       f'{html.escape(c.label)}</span> <input type="range" min="0" '
                       f'max="{len(c.values) - 1}" step="1" value="{c.default}" '
                       f'aria-valuetext="{value}"></label> <output>{value}</output>')
            out.extend(f'<span class="attn-vl" hidden{msg}>{html.escape(v)}</span>'
                       for v in c.values)
            out.append("</div>")
        out.append("</div>")
        out.append(self._svg(canvas, dynamic))
        out.append('<div class="attn-readouts">')
        readout_keys = {i for i, _ in self.keys if i < 0}
        for j, (label, value) in enumerate(canvas.readouts):
            e = f' data-e="r{j}"' if -1 - j in readout_keys else ""
            out.append(f'<div class="attn-r"><span{_msg(label)}>{html.escape(label)}</span>: '
                       f'<span class="attn-rv"{e}>{html.escape(value)}</span></div>')
        out.append("</div>")
        table = {"keys": [[str(i) if i >= 0 else f"r{-1 - i}", attr] for i, attr in self.keys],
                 "states": self.states}
        data = json.dumps(table, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
        out.append(f'<script type="application/json" class="attn-data">{data}</script></div>')
        return "\n".join(out)

    def words(self) -> list[str]:
        """The figure's words (``data-msg`` texts; a :class:`Message`'s template), each once,
        in the order of the HTML."""
        seen: dict[str, None] = {}
        for match in re.finditer(r"<(\w+)\b([^>]*)\sdata-msg\b([^>]*)>([^<]*)</\1>",
                                 self._repr_html_()):
            template = re.match(r'="([^"]*)"', match.group(3))
            seen.setdefault(html.unescape(template.group(1) if template else match.group(4)),
                            None)
        return list(seen)

    def glue(self, name: str) -> None:
        """Display the figure and store it under ``name`` for a ``{glue:figure}`` directive.

        The output carries myst-nb's glue metadata (``scrapbook``), as ``myst_nb.glue`` writes
        it, so the book places the figure, numbered, where the markdown pastes it.
        """
        _text("name", name)
        if not name:
            raise ValueError("name must be a non-empty str (the glue key), got ''")
        from IPython.display import display

        bundle = {"text/html": self._repr_html_(), "text/plain": repr(self)}
        display(bundle, raw=True,  # type: ignore[no-untyped-call]
                metadata={"scrapbook": {"name": name, "mime_prefix": ""}})

    def __repr__(self) -> str:
        names = " x ".join(f"{c.label} ({len(c.values)})" for c in self.controls)
        lines = [f"{self.title}: {len(self.positions)} states of {names}"]
        for position, canvas in zip(self.positions, self.canvases, strict=True):
            setting = ", ".join(f"{c.label} = {c.values[i]}"
                                for c, i in zip(self.controls, position, strict=True))
            shown = "; ".join(f"{label}: {value}" for label, value in canvas.readouts)
            lines.append(f"{setting} -> {shown}" if shown else setting)
        return "\n".join(lines)
