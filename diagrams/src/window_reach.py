"""How far a stack of sliding windows reaches (chapter 9): each layer adds w - 1 positions
(attnlib.blocks.sliding_window.window_reach), drawn for a small window over three layers."""

from __future__ import annotations

from typing import Any

from _style import INK, ROLES, matplotlib_svg

NAME = "window_reach"
CHAPTER = "09_attention_in_language_models"
TOOL = "matplotlib"

WINDOW, LAYERS, POSITIONS = 4, 3, 16


def values() -> dict[str, Any]:
    import torch

    from attnlib.blocks.sliding_window import sliding_window_mask, window_reach

    mask = sliding_window_mask(POSITIONS, WINDOW)  # (n, n), True = may attend
    # Layer by layer, from the top: the positions the last position depends on.
    seen = torch.zeros(POSITIONS, dtype=torch.bool)
    seen[-1] = True
    reached = [seen.nonzero().flatten().tolist()]
    for _ in range(LAYERS):
        seen = (mask[seen]).any(0)  # every key some seen query attends to
        reached.append(seen.nonzero().flatten().tolist())
    reach = [window_reach(WINDOW, n) for n in range(1, LAYERS + 1)]
    assert [POSITIONS - 1 - r[0] for r in reached[1:]] == reach
    return {"window": WINDOW, "positions": POSITIONS, "reached": reached, "reach": reach}


def render(values: dict[str, Any]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, Rectangle

    n, w, reached = values["positions"], values["window"], values["reached"]
    layers = len(reached) - 1
    fig, ax = plt.subplots(figsize=(8.0, 3.4))
    qstroke, qfill = ROLES["query"]
    kstroke, kfill = ROLES["key"]
    for row in range(layers + 1):  # row 0: the input tokens; row layers: the top output
        level = layers - row  # reached[0] is the top
        for p in range(n):
            on = p in reached[level]
            fill = (qfill if level == 0 else kfill) if on else "#ffffff"
            edge = (qstroke if level == 0 else kstroke) if on else "#bbbbbb"
            ax.add_patch(Rectangle((p + 0.1, row + 0.1), 0.8, 0.6, facecolor=fill,
                                   edgecolor=edge, linewidth=1.3))
        label = "tokens" if row == 0 else f"layer {row}"
        ax.text(-0.3, row + 0.4, label, ha="right", va="center", fontsize=10, color=INK)
        if row > 0:
            back = values["reach"][layers - row] if level > 0 else 0
            del back
    for level in range(layers):  # arrows from the top position's window, layer by layer
        row = layers - level
        for p in reached[level]:
            if p == max(reached[level]):
                for j in range(max(0, p - w + 1), p + 1):
                    ax.add_patch(FancyArrowPatch((p + 0.5, row + 0.1), (j + 0.5, row - 0.3),
                                                 arrowstyle="-|>", mutation_scale=7,
                                                 color=kstroke, linewidth=0.8))
    for i, r in enumerate(values["reach"]):
        row = layers - 1 - i
        ax.text(n + 0.2, row + 0.4, f"{i + 1} layer{'s' if i else ''}: {r} back",
                ha="left", va="center", fontsize=10, color=INK)
    ax.set_xlim(-2.2, n + 3.6)
    ax.set_ylim(-0.2, layers + 1.0)
    ax.set_xticks([p + 0.5 for p in range(n)], [str(p) for p in range(n)], fontsize=8)
    ax.set_yticks([])
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    ax.set_xlabel("position", fontsize=10)
    ax.set_title(f"Window w = {w}: what position {n - 1} of the top layer depends on",
                 fontsize=11)
    fig.tight_layout()
    return matplotlib_svg(fig)
