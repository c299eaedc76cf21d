"""The online-softmax tiling of chapter 8 on a small causal example: which tiles the loop
computes, which it skips, and the running maximum and sum of one query row, tile by tile.

The tile kinds follow attnlib.blocks.efficient.tiled_attention's rule (key blocks up to
k_end = min(S, q1); a tile is masked inside when it crosses the diagonal); the scores are
random, and the running m and l are the recursion of attnlib.blocks.efficient.online_softmax, checked
here against the row's maximum and sum and against tiled_attention's output.
"""

from __future__ import annotations

import math
from typing import Any

from _style import ROLES, matplotlib_svg

NAME = "online_softmax_tiling"
CHAPTER = "08_efficient_attention"
TOOL = "matplotlib"

L = 16  # queries = keys (self-attention)
BLOCK = 4  # tile size: 4 x 4 tiles of 4 x 4
ROW = 13  # the query row followed tile by tile (in the last query block)
E = 4


def values() -> dict[str, Any]:
    import torch

    from attnlib.blocks.efficient import tiled_attention

    g = torch.Generator().manual_seed(0)
    q = torch.randn(L, E, generator=g, dtype=torch.float64)
    k = torch.randn(L, E, generator=g, dtype=torch.float64)
    v = torch.randn(L, E, generator=g, dtype=torch.float64)
    n = L // BLOCK
    kinds = [["skipped"] * n for _ in range(n)]
    for i in range(n):
        q0, q1 = i * BLOCK, (i + 1) * BLOCK
        for j in range(n):
            k0, k1 = j * BLOCK, (j + 1) * BLOCK
            if k0 < min(L, q1):  # the loop's k_end = min(S, q1)
                kinds[i][j] = "masked inside" if k1 - 1 > q0 else "computed in full"
    scores = (q[ROW] @ k.T / math.sqrt(E)).tolist()
    visible = [s for j, s in enumerate(scores) if j <= ROW]
    m, ell, steps = -math.inf, 0.0, []
    for k0 in range(0, min(L, (ROW // BLOCK + 1) * BLOCK), BLOCK):
        block = [scores[j] for j in range(k0, k0 + BLOCK) if j <= ROW]
        new_m = max(m, *block)
        ell = ell * math.exp(m - new_m) + sum(math.exp(s - new_m) for s in block)
        steps.append({"block": k0 // BLOCK, "m": round(new_m, 6), "l": round(ell, 6),
                      "rescale": round(math.exp(m - new_m), 6)})
        m = new_m
    # The recursion ends at the row's max and sum, and its output is tiled_attention's.
    assert abs(m - max(visible)) < 1e-12
    assert abs(ell - sum(math.exp(s - m) for s in visible)) < 1e-12
    weights = [math.exp(s - m) / ell for s in visible]
    row_out = [sum(w * float(v[j, c]) for j, w in enumerate(weights)) for c in range(E)]
    tiled = tiled_attention(q, k, v, is_causal=True, block_size_q=BLOCK, block_size_k=BLOCK)
    assert max(abs(a - float(b)) for a, b in zip(row_out, tiled[ROW], strict=True)) < 1e-12
    return {"L": L, "block": BLOCK, "row": ROW, "kinds": kinds,
            "scores": [round(s, 6) for s in scores], "steps": steps}


def render(values: dict[str, Any]) -> str:
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Rectangle

    from attnlib.book.plot import use_book_style

    use_book_style()
    n_tok, block, row = values["L"], values["block"], values["row"]
    score_stroke, score_fill = ROLES["score"]
    mask_stroke, mask_fill = ROLES["mask"]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10.5, 4.4), constrained_layout=True,
                                  gridspec_kw={"width_ratios": [1, 1.35]})
    styles = {"computed in full": {"facecolor": score_fill, "edgecolor": score_stroke},
              "masked inside": {"facecolor": score_fill, "edgecolor": score_stroke},
              "skipped": {"facecolor": "#eeeeee", "edgecolor": "#bbbbbb"}}
    for i, kinds in enumerate(values["kinds"]):
        for j, kind in enumerate(kinds):
            ax.add_patch(Rectangle((j * block, i * block), block, block, lw=1.5, **styles[kind]))
            if kind == "skipped":
                ax.text((j + 0.5) * block, (i + 0.5) * block, "×", ha="center", va="center",
                        color="#888888", fontsize=16)
            if kind == "masked inside":  # the entries above the diagonal are masked one by one
                for r in range(i * block, (i + 1) * block):
                    for c in range(j * block, (j + 1) * block):
                        if c > r:
                            ax.add_patch(Rectangle((c, r), 1, 1, facecolor=mask_fill,
                                                   edgecolor=mask_stroke, lw=0.5))
    ax.add_patch(Rectangle((0, row), row + 1, 1, fill=False, edgecolor=ROLES["query"][0], lw=2.2))
    ax.plot([0, n_tok], [0, n_tok], color="#222222", lw=0.8)
    ax.set_xlim(0, n_tok)
    ax.set_ylim(n_tok, 0)
    ax.set_aspect("equal")
    ticks = list(range(0, n_tok + 1, block))
    ax.set_xticks(ticks)
    ax.set_yticks(ticks)
    ax.set_xlabel("key position j (key blocks of 4)")
    ax.set_ylabel("query position i (query blocks of 4)")
    ax.set_title(f"Causal tiles, L = S = {n_tok}, {block} × {block}", fontsize=11)
    ax.legend(handles=[Patch(facecolor=score_fill, edgecolor=score_stroke, label="tile computed"),
                       Patch(facecolor=mask_fill, edgecolor=mask_stroke, label="masked entry (−∞)"),
                       Patch(facecolor="#eeeeee", edgecolor="#bbbbbb", label="tile skipped"),
                       Patch(facecolor="none", edgecolor=ROLES["query"][0], label=f"query row i = {row}")],
              loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize=8, frameon=False)

    scores = values["scores"][: row + 1]
    ax2.stem(range(row + 1), scores, linefmt=score_stroke, markerfmt="o", basefmt=" ")
    steps = values["steps"]
    for step in steps:
        b = step["block"]
        x0, x1 = b * block - 0.5, min((b + 1) * block, row + 1) - 0.5
        ax2.hlines(step["m"], x0, x1, color="#222222", lw=2.2)
        ax2.axvline(x1, color="#cccccc", lw=0.8, ls="--")
        rescale = "" if b == 0 else f"\nrescale ×{step['rescale']:.3f}"
        ax2.text((x0 + x1) / 2, max(scores) + 0.55,
                 f"after tile {b}\nm = {step['m']:.3f}\nℓ = {step['l']:.3f}{rescale}",
                 ha="center", va="bottom", fontsize=8, color="#222222")
    ax2.set_ylim(min(scores) - 0.5, max(scores) + 2.4)
    ax2.set_xlim(-0.7, row + 1.6)  # room for the last tile's note
    ax2.set_xlabel("key position j")
    ax2.set_ylabel("score s$_{ij}$ = q$_i$·k$_j$ / √E")
    ax2.set_title(f"Row i = {row}: scores; running max m (black) and sum ℓ per tile", fontsize=11)
    return matplotlib_svg(fig)
