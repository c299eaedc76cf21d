"""Block masks (chapter 11): the tiles of a 512 x 512 score grid, cut into 8 x 8 tiles of 64,
sorted by attnlib.blocks.block_mask.create_block_mask into empty (never computed), partial
(computed, then masked) and full (computed, no mask), for four masks: causal, sliding window,
documents packed in one sequence, prefix-LM. The allowed (query, key) pairs are drawn under
the tiles, from the same mask functions."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from _style import INK, ROLES, matplotlib_svg

NAME = "block_mask"
CHAPTER = "11_sparse_and_stable_attention"
TOOL = "matplotlib"

L, TILE = 512, 64
WINDOW, PREFIX, DOCUMENTS = 128, 160, (200, 120, 192)


def values() -> dict[str, Any]:
    import torch

    from attnlib.blocks import block_mask as bm

    ids = torch.repeat_interleave(torch.arange(len(DOCUMENTS)), torch.tensor(DOCUMENTS))[None]
    masks = {
        "causal": bm.causal_mask_mod(),
        f"sliding window of {WINDOW}": bm.sliding_window_mask_mod(WINDOW),
        f"{len(DOCUMENTS)} documents ({', '.join(map(str, DOCUMENTS))})":
            bm.document_mask_mod(ids),
        f"prefix-LM, prefix of {PREFIX}": bm.prefix_lm_mask_mod(PREFIX),
    }
    zero = torch.zeros(1, 1, 1, 1, dtype=torch.long)
    q_idx, kv_idx = torch.arange(L).view(1, 1, L, 1), torch.arange(L).view(1, 1, 1, L)
    panels = []
    for title, mask_mod in masks.items():
        block_mask = bm.create_block_mask(mask_mod, 1, 1, L, L, TILE, TILE)
        allowed = mask_mod(zero, zero, q_idx, kv_idx).expand(1, 1, L, L)[0, 0]
        # each query row's allowed keys as runs [start, stop), to draw the mask exactly
        runs = []
        for row in allowed.tolist():
            spans, start = [], None
            for j, ok in enumerate([*row, False]):
                if ok and start is None:
                    start = j
                elif not ok and start is not None:
                    spans.append([start, j])
                    start = None
            runs.append(spans)
        panels.append({"title": title, "kinds": block_mask.kinds[0, 0].tolist(),
                       "counts": block_mask.counts,
                       "skipped": round(block_mask.fraction_skipped, 3), "runs": runs})
    return {"L": L, "tile": TILE, "panels": panels}


def render(values: dict[str, Any]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch, Polygon, Rectangle

    n, tile = values["L"], values["tile"]
    fills = {0: "#ffffff", 1: ROLES["mask"][1], 2: ROLES["score"][1]}
    edges = {0: "#bbbbbb", 1: ROLES["mask"][0], 2: ROLES["score"][0]}
    fig, axes = plt.subplots(1, 4, figsize=(11.5, 3.9))
    for ax, panel in zip(axes, values["panels"], strict=True):
        for i, row in enumerate(panel["kinds"]):
            for j, kind in enumerate(row):
                ax.add_patch(Rectangle((j * tile, i * tile), tile, tile, facecolor=fills[kind],
                                       edgecolor=edges[kind], linewidth=0.9, zorder=1))
        for outline in _outlines(panel["runs"]):  # the allowed pairs
            ax.add_patch(Polygon(outline, closed=True, facecolor="#55555555",
                                 edgecolor="none", zorder=2))
        ax.set_xlim(0, n)
        ax.set_ylim(n, 0)
        ax.set_aspect("equal")
        ax.set_xticks(range(0, n + 1, 2 * tile))
        ax.set_yticks(range(0, n + 1, 2 * tile))
        ax.tick_params(labelsize=7)
        ax.set_xlabel("key position", fontsize=8)
        c = panel["counts"]
        ax.set_title(f"{panel['title']}\n{c['empty']} empty, {c['partial']} partial, "
                     f"{c['full']} full", fontsize=8.5, color=INK)
    axes[0].set_ylabel("query position", fontsize=8)
    handles = [Patch(facecolor=fills[0], edgecolor=edges[0], label="empty tile: skipped"),
               Patch(facecolor=fills[1], edgecolor=edges[1],
                     label="partial tile: computed, then masked"),
               Patch(facecolor=fills[2], edgecolor=edges[2], label="full tile: no mask"),
               Patch(facecolor="#55555555", edgecolor="none",
                     label="(query, key) pairs the mask allows")]
    fig.legend(handles=handles, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return matplotlib_svg(fig)


def _outlines(runs: list[list[list[int]]]) -> list[list[tuple[int, int]]]:
    """The allowed region as polygons: consecutive rows whose one span of keys overlaps the
    row before's form one polygon (its right edge down, its left edge up), points on a
    straight line dropped; a row of several spans is drawn span by span."""
    shapes: list[list[tuple[int, int]]] = []
    track: list[tuple[int, int, int]] = []  # (row, start, stop)

    def close() -> None:
        if track:
            last = track[-1][0] + 1
            right = [(b, i) for i, _, b in track] + [(track[-1][2], last)]
            left = [(track[-1][1], last)] + [(a, i) for i, a, _ in reversed(track)]
            shapes.append(_straight(right + left))
            track.clear()

    for i, spans in enumerate(runs):
        if (len(spans) == 1 and track and spans[0][0] < track[-1][2]
                and track[-1][1] < spans[0][1]):
            track.append((i, *spans[0]))
            continue
        close()
        if len(spans) == 1:
            track.append((i, *spans[0]))
        else:
            shapes += [[(a, i), (b, i), (b, i + 1), (a, i + 1)] for a, b in spans]
    close()
    return shapes


def _straight(points: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The points without those on the line through their neighbours."""
    kept = [points[0]]
    for here, after in pairwise(points[1:]):
        before = kept[-1]
        cross = ((here[0] - before[0]) * (after[1] - before[1])
                 - (after[0] - before[0]) * (here[1] - before[1]))
        if cross:
            kept.append(here)
    kept.append(points[-1])
    return kept
