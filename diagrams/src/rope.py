"""RoPE: each 2-D feature pair of a query turned by an angle proportional to its position (chapter 6).

The points are computed by attnlib.blocks.positional.RotaryPositionalEmbedding itself, so the picture
shows what the chapter's code does: pair i = (2i, 2i + 1) at position m turned by m θ_i.
"""

from __future__ import annotations

import math
from typing import Any

from _style import ROLES, matplotlib_svg

NAME = "rope_rotation"
CHAPTER = "06_positional_encoding"
TOOL = "matplotlib"

HEAD_DIM = 8  # E: four pairs, small enough to draw every one
POSITIONS = 6  # m = 0, ..., 5
BASE = 10000.0  # the chapter's (and the paper's) base


def values() -> dict[str, Any]:
    import torch

    from attnlib.blocks.positional import RotaryPositionalEmbedding

    rope = RotaryPositionalEmbedding(HEAD_DIM, base=BASE)
    # The same vector at every position: each pair starts at (1, 0).
    x = torch.tensor([1.0, 0.0] * (HEAD_DIM // 2), dtype=torch.float64).repeat(POSITIONS, 1)
    rotated = rope(x[None])[0]  # (L, E)
    pairs = []
    for i in range(HEAD_DIM // 2):
        theta = BASE ** (-2 * i / HEAD_DIM)
        points = [[round(float(rotated[m, 2 * i]), 6), round(float(rotated[m, 2 * i + 1]), 6)]
                  for m in range(POSITIONS)]
        # The drawn angle of each point is m * theta_i (checked, so the picture cannot drift).
        for m, (c, s) in enumerate(points):
            angle = math.atan2(s, c) % (2 * math.pi)
            assert abs(angle - (m * theta) % (2 * math.pi)) < 1e-5, (i, m, angle)
        pairs.append({"i": i, "theta": round(theta, 10), "points": points})
    return {"head_dim": HEAD_DIM, "base": BASE, "positions": POSITIONS, "pairs": pairs}


def render(values: dict[str, Any]) -> str:
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib import colormaps

    from attnlib.book.plot import use_book_style

    use_book_style()
    stroke = ROLES["query"][0]
    pairs = values["pairs"]
    fig, axes = plt.subplots(1, len(pairs), figsize=(10, 3.2), constrained_layout=True)
    shades = colormaps["Blues"](np.linspace(0.35, 1.0, values["positions"]))
    circle = np.linspace(0, 2 * np.pi, 361)
    for ax, pair in zip(axes, pairs, strict=True):
        i, theta = pair["i"], pair["theta"]
        ax.plot(np.cos(circle), np.sin(circle), color="0.8", lw=0.8)
        ax.axhline(0, color="0.85", lw=0.6)
        ax.axvline(0, color="0.85", lw=0.6)
        for m, (c, s) in enumerate(pair["points"]):
            ax.annotate("", xy=(c, s), xytext=(0, 0),
                        arrowprops={"arrowstyle": "-|>", "color": shades[m], "lw": 1.6})
        last_m = values["positions"] - 1
        if theta >= 0.3:  # arrows far apart: label each position
            for m, (c, s) in enumerate(pair["points"]):
                ax.text(1.17 * c, 1.17 * s, f"m={m}", ha="center", va="center", fontsize=8,
                        color=stroke)
        else:  # arrows nearly on top of each other: label the first and the last
            (c0, s0), (c1, s1) = pair["points"][0], pair["points"][-1]
            ax.text(c0 + 0.05, s0 - 0.14, "m=0", ha="center", va="center", fontsize=8, color=stroke)
            ax.text(c1 + 0.05, s1 + 0.14, f"m={last_m}", ha="center", va="center", fontsize=8,
                    color=stroke)
        last = last_m * theta
        arc = np.linspace(0, last, 100)
        ax.plot(0.35 * np.cos(arc), 0.35 * np.sin(arc), color=ROLES["score"][0], lw=1.2)
        ax.set_title(f"pair i = {i}: features ({2 * i}, {2 * i + 1})\n"
                     f"θ$_{i}$ = {theta:g} rad per position", fontsize=10)
        ax.set_xlim(-1.35, 1.35)
        ax.set_ylim(-1.35, 1.35)
        ax.set_aspect("equal")
        ax.set_xlabel(f"feature {2 * i}")
        ax.set_ylabel(f"feature {2 * i + 1}")
        ax.tick_params(labelsize=8)
    fig.suptitle(f"RoPE turns pair i of a query or key at position m by the angle m·θ$_i$ "
                 f"(E = {values['head_dim']}, base {values['base']:g}; the purple arc is "
                 f"{values['positions'] - 1}·θ$_i$)", fontsize=11)
    return matplotlib_svg(fig)
