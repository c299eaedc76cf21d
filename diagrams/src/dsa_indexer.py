"""DeepSeek Sparse Attention's selection (chapter 11): the lightning indexer's scores
I_{t,s} of one query over the keys before it, and the top-k keys it keeps
(attnlib.blocks.sparse_attention.lightning_indexer and top_k_keys, random small weights)."""

from __future__ import annotations

from typing import Any

from _style import INK, ROLES, matplotlib_svg

NAME = "dsa_indexer"
CHAPTER = "11_sparse_and_stable_attention"
TOOL = "matplotlib"

S, TOP, HEADS, WIDTH = 40, 8, 2, 8  # keys, k, indexer heads H^I, their size d^I


def values() -> dict[str, Any]:
    import torch

    from attnlib.blocks.sparse_attention import lightning_indexer, top_k_keys

    g = torch.Generator().manual_seed(5)
    scores = lightning_indexer(torch.randn(1, S, HEADS, WIDTH, generator=g, dtype=torch.float64),
                               torch.randn(1, S, WIDTH, generator=g, dtype=torch.float64),
                               torch.rand(1, S, HEADS, generator=g, dtype=torch.float64))
    indices, valid = top_k_keys(scores, TOP)
    assert bool(valid[0, -1].all())
    return {"S": S, "k": TOP, "heads": HEADS, "width": WIDTH,
            "scores": [round(float(x), 4) for x in scores[0, -1]],
            "chosen": sorted(int(i) for i in indices[0, -1])}


def render(values: dict[str, Any]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    scores, chosen, n, top = values["scores"], set(values["chosen"]), values["S"], values["k"]
    kstroke, kfill = ROLES["key"]
    fig, (ax, strip) = plt.subplots(2, 1, figsize=(8.6, 3.6), height_ratios=(4, 1),
                                    sharex=True)
    colours = [kfill if s in chosen else "#eeeeee" for s in range(n)]
    edges = [kstroke if s in chosen else "#999999" for s in range(n)]
    ax.bar(range(n), scores, color=colours, edgecolor=edges, linewidth=1.0)
    threshold = min(scores[s] for s in chosen)
    ax.axhline(threshold, color=ROLES["score"][0], linestyle=":", linewidth=1.0)
    ax.text(n - 0.5, threshold, f"  the {top}th largest score", va="bottom", ha="right",
            fontsize=8, color=ROLES["score"][0])
    ax.set_ylabel("index score I(t, s)", fontsize=9)
    ax.set_title(f"The lightning indexer ({values['heads']} heads of {values['width']}) scores "
                 f"all {n} keys of query t = {n - 1}; attention reads the top k = {top}",
                 fontsize=10, color=INK)
    ax.tick_params(labelsize=8)
    for s in range(n):
        strip.add_patch(plt.Rectangle((s - 0.45, 0.1), 0.9, 0.8,
                                      facecolor=kfill if s in chosen else "#ffffff",
                                      edgecolor=kstroke if s in chosen else "#bbbbbb"))
    strip.set_ylim(0, 1)
    strip.set_yticks([])
    strip.set_xlim(-0.8, n - 0.2)
    strip.set_xlabel("key position s (all before or at t)", fontsize=9)
    strip.tick_params(labelsize=8)
    for side in ("left", "right", "top"):
        strip.spines[side].set_visible(False)
    fig.legend(handles=[Patch(facecolor=kfill, edgecolor=kstroke,
                              label="selected: key and value gathered, attended"),
                        Patch(facecolor="#ffffff", edgecolor="#bbbbbb",
                              label="not selected: never read by the attention")],
               loc="lower center", ncol=2, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    return matplotlib_svg(fig)
