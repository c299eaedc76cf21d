"""The book's visual language for diagrams: one colour per role, the same in every figure.

Queries are blue, keys orange, values green, masks red, scores and weights purple, outputs grey,
operations white boxes. Every diagram is drawn on its own white panel, so it stays legible when
the book is switched to dark mode (the theme only dims images; a transparent background would
put dark strokes on a dark page).
"""

from __future__ import annotations

import io
from typing import Any

# role: (stroke / text colour, fill colour). Strokes are dark enough for a contrast ratio of at
# least 4.5 against their fill and against white.
ROLES: dict[str, tuple[str, str]] = {
    "query": ("#1a56a8", "#dce9fa"),
    "key": ("#a64d00", "#fde4cc"),
    "value": ("#1f6b2a", "#d9f0dc"),
    "mask": ("#b3261e", "#fbdcd9"),
    "score": ("#5b2d91", "#ebe0f5"),
    "output": ("#37474f", "#e6eaed"),
    "op": ("#222222", "#ffffff"),
    "norm": ("#6d5a00", "#fbf3c8"),
    "note": ("#444444", "#ffffff"),
}
BACKGROUND = "#ffffff"
INK = "#222222"
FONT = "Helvetica,Arial,sans-serif"


def graph_header(name: str, rankdir: str = "TB", nodesep: float = 0.3, ranksep: float = 0.35) -> str:
    """The opening of every DOT graph: white panel, the book's font, thin dark strokes."""
    return f"""digraph {name} {{
  graph [bgcolor="{BACKGROUND}", pad="0.25", rankdir={rankdir}, nodesep={nodesep},
         ranksep={ranksep}, fontname="{FONT}", fontsize=12, fontcolor="{INK}", newrank=true];
  node [fontname="{FONT}", fontsize=12, fontcolor="{INK}", color="{INK}", penwidth=1.2,
        shape=box, style="rounded,filled", fillcolor="{BACKGROUND}", margin="0.12,0.06"];
  edge [fontname="{FONT}", fontsize=10, fontcolor="{INK}", color="{INK}", arrowsize=0.7,
        penwidth=1.1];
"""


def role(name: str, **extra: str) -> str:
    """Node attributes for a role: its stroke, fill and (dark) text colour."""
    stroke, fill = ROLES[name]
    attrs = {"color": stroke, "fillcolor": fill, "fontcolor": stroke, "penwidth": "1.6"}
    attrs.update(extra)
    return ", ".join(f'{key}="{value}"' for key, value in attrs.items())


def striped(first: str, second: str) -> str:
    """A node that plays two roles (keys that are also the values): two fills side by side."""
    return (f'style="filled,striped", fillcolor="{ROLES[first][1]};0.5:{ROLES[second][1]}", '
            f'color="{ROLES[first][0]}", fontcolor="{INK}", penwidth="1.6"')


def edge_role(name: str) -> str:
    """Edge attributes for an arrow that carries a role's tensor."""
    stroke = ROLES[name][0]
    return f'color="{stroke}", fontcolor="{stroke}"'


def matplotlib_svg(fig: Any) -> str:
    """A matplotlib figure as deterministic SVG text: fixed ids, no date, glyphs as paths."""
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    with plt.rc_context({"svg.hashsalt": "attnlib-diagrams", "svg.fonttype": "path"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None}, facecolor=BACKGROUND)
    plt.close(fig)
    return buffer.getvalue()
