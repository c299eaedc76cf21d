"""Plotting: the attention heatmap every chapter reuses, and the book's figure style.

This is the only attnlib module that imports matplotlib.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import font_manager
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from torch import Tensor

from attnlib._checks import check_flag, check_int, check_real

CJK_FONT: Path = Path(__file__).parent / "fonts" / "NotoSansSC-attnlib-subset.ttf"
"""The Chinese characters of the book's corpus and glossary, cut from Noto Sans CJK SC (OFL 1.1).

Made by tools/make_cjk_font.py; see attnlib/fonts/README.md.
"""
CJK_FAMILY = "Noto Sans CJK SC attnlib"

BOOK_STYLE: dict[str, Any] = {
    # Latin text keeps the default sans-serif (DejaVu Sans); a character that font lacks (the
    # corpus's Chinese tokens) falls back to the shipped subset. The fallback needs the families
    # listed in font.family itself: matplotlib resolves a generic "sans-serif" to one font only.
    "font.family": ["sans-serif", CJK_FAMILY],
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "figure.figsize": (6.4, 3.6),
    "axes.grid": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 9,
    "legend.frameon": False,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
}


def use_book_style() -> None:
    """Apply the book's matplotlib settings (call once, in a chapter's first cell).

    Also registers the shipped CJK font (:data:`CJK_FONT`), so heatmaps labelled with Chinese
    tokens draw them without "Glyph missing" warnings and without any download.
    """
    if not any(entry.fname == str(CJK_FONT) for entry in font_manager.fontManager.ttflist):
        font_manager.fontManager.addfont(CJK_FONT)
    plt.style.use(BOOK_STYLE)


def _to_numpy(matrix: Tensor | np.ndarray[Any, Any], name: str = "weights"
              ) -> np.ndarray[Any, Any]:
    """A real matrix (a tensor, an array or nested lists of numbers) as float64 numbers."""
    if isinstance(matrix, Tensor):
        if matrix.is_complex():
            raise TypeError(f"{name} must hold real numbers, got dtype {matrix.dtype}")
        return matrix.detach().cpu().double().numpy()
    try:
        return np.asarray(matrix, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a tensor or an array of real numbers, got "
                        f"{type(matrix).__name__}") from None


def heatmap(
    weights: Tensor | np.ndarray[Any, Any],
    ax: Axes | None = None,
    *,
    xlabel: str = "keys",
    ylabel: str = "queries",
    title: str | None = None,
    xticklabels: Sequence[str] | None = None,
    yticklabels: Sequence[str] | None = None,
    cmap: str = "Reds",
    vmin: float | None = 0.0,
    vmax: float | None = None,
    colorbar: bool = True,
    colorbar_label: str = "attention weight",
    extent: tuple[float, float, float, float] | None = None,
    xcoords: Sequence[float] | Tensor | None = None,
    ycoords: Sequence[float] | Tensor | None = None,
    xtick_rotation: float = 90,
) -> Axes:
    """Draw one matrix of attention weights: queries down the rows, keys along the columns.

    Shape:
        weights: (L, S).

    Args:
        ax: axes to draw into; a new figure is made when None.
        xticklabels, yticklabels: token labels for the keys and the queries.
        extent: (left, right, bottom, top) data coordinates for evenly spaced queries and keys.
        xcoords, ycoords: the positions of the keys and of the queries (sorted), for continuous
            inputs that are not evenly spaced (e.g. random training inputs of kernel
            regression): each cell then spans half-way to its neighbours, so the axes are to
            scale. Give both or neither; not with ``extent``.
        xtick_rotation: angle of the key labels; 0 suits short Chinese tokens.

    Raises:
        ValueError: weights that are not 2-D, or tick labels whose count does not match.
    """
    m = _to_numpy(weights)
    check_flag("colorbar", colorbar)
    for name, limit in (("vmin", vmin), ("vmax", vmax)):
        if limit is not None:
            check_real(name, limit)
    check_real("xtick_rotation", xtick_rotation)
    for name, text in (("title", title), ("xlabel", xlabel), ("ylabel", ylabel)):
        if text is not None and not isinstance(text, str):
            raise TypeError(f"{name} must be a str, got {type(text).__name__}")
    if m.ndim != 2:
        raise ValueError(f"weights must be 2-D (L, S), got shape {m.shape}")
    if xticklabels is not None and len(xticklabels) != m.shape[1]:
        raise ValueError(f"xticklabels must have S={m.shape[1]} labels, got {len(xticklabels)}")
    if yticklabels is not None and len(yticklabels) != m.shape[0]:
        raise ValueError(f"yticklabels must have L={m.shape[0]} labels, got {len(yticklabels)}")
    if ax is None:
        _, ax = plt.subplots(figsize=(4.2, 3.6))
    if (xcoords is None) != (ycoords is None) or (xcoords is not None and extent is not None):
        raise ValueError("give xcoords and ycoords together, and not with extent")
    if xcoords is not None and ycoords is not None:
        xe, ye = _edges(np.asarray(xcoords, dtype=float), m.shape[1], "xcoords"), _edges(
            np.asarray(ycoords, dtype=float), m.shape[0], "ycoords")
        image: Any = ax.pcolormesh(xe, ye, m, cmap=cmap, vmin=vmin, vmax=vmax, shading="flat")
    else:
        image = ax.imshow(m, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto",
                          interpolation="nearest", extent=extent,
                          origin="upper" if extent is None else "lower")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if xticklabels is not None:
        ax.set_xticks(range(m.shape[1]), list(xticklabels), rotation=xtick_rotation)
    if yticklabels is not None:
        ax.set_yticks(range(m.shape[0]), list(yticklabels))
    if colorbar:
        cb = ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
        cb.set_label(colorbar_label)
    return ax


def _edges(coords: np.ndarray[Any, Any], size: int, name: str) -> np.ndarray[Any, Any]:
    """Cell edges half-way between sorted coordinates, the outer ones mirrored."""
    if coords.ndim != 1 or coords.shape[0] != size or size < 2:
        raise ValueError(f"{name} must be 1-D with one coordinate per cell ({size}), got shape "
                         f"{coords.shape}")
    if not bool(np.all(np.diff(coords) > 0)):
        raise ValueError(f"{name} must be strictly increasing")
    mid = (coords[1:] + coords[:-1]) / 2
    return np.concatenate([[2 * coords[0] - mid[0]], mid, [2 * coords[-1] - mid[-1]]])


def heatmaps(
    matrices: Sequence[Tensor | np.ndarray[Any, Any]],
    titles: Sequence[str],
    *,
    ncols: int | None = None,
    figsize: tuple[float, float] | None = None,
    share_scale: bool = True,
    **kwargs: Any,
) -> Figure:
    """A row (or grid) of :func:`heatmap` panels with one shared colour scale and colour bar.

    Shape:
        each matrix: (L, S).
    """
    for name, value in (("matrices", matrices), ("titles", titles)):
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise TypeError(f"{name} must be a sequence, got {type(value).__name__}")
    for i, title in enumerate(titles):
        if not isinstance(title, str):
            raise TypeError(f"titles[{i}] must be a str, got {type(title).__name__}")
    if ncols is not None:
        check_int("ncols", ncols, minimum=1)
    check_flag("share_scale", share_scale)
    if len(matrices) != len(titles):
        raise ValueError(f"titles must have one entry per matrix: {len(matrices)} matrices, "
                         f"{len(titles)} titles")
    if not matrices:
        raise ValueError("matrices must not be empty")
    n = len(matrices)
    ncols = ncols or n
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=figsize or (3.0 * ncols + 1.0, 2.9 * nrows),
                             squeeze=False, constrained_layout=True)
    vmax = max(float(_to_numpy(m).max()) for m in matrices) if share_scale else None
    for i, ax in enumerate(axes.flat):
        if i >= n:
            ax.axis("off")
            continue
        heatmap(matrices[i], ax, title=titles[i], vmax=vmax, colorbar=False, **kwargs)
        if i % ncols:
            ax.set_ylabel("")
    first = axes.flat[0]
    mappable = first.images[0] if first.images else first.collections[0]
    fig.colorbar(mappable, ax=axes.ravel().tolist(), shrink=0.8,
                 label=kwargs.get("colorbar_label", "attention weight"))
    return fig
