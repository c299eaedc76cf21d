"""attnlib.book.plot: heatmaps on coordinates that are not evenly spaced (chapter 1's keys)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from attnlib.book import plot


def test_cells_reach_half_way_to_their_neighbours() -> None:
    edges = plot._edges(np.array([0.0, 1.0, 4.0]), 3, "xcoords")
    np.testing.assert_allclose(edges, [-0.5, 0.5, 2.5, 5.5])


def test_heatmap_on_coordinates_puts_each_column_at_its_key() -> None:
    keys = torch.tensor([0.0, 0.1, 3.0])  # (S,), unevenly spaced
    queries = torch.tensor([0.0, 1.0])  # (L,)
    ax = plot.heatmap(torch.rand(2, 3), xcoords=keys, ycoords=queries)
    mesh = ax.collections[0]
    assert mesh.get_array().size == 6
    x0, x1 = ax.get_xlim()
    assert x0 == pytest.approx(-0.05) and x1 == pytest.approx(4.45)
    fig = plot.heatmaps([torch.rand(2, 3)] * 2, ["a", "b"], xcoords=keys, ycoords=queries)
    assert len(fig.axes) == 3  # two panels and the shared colour bar
    plt.close("all")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"xcoords": [0.0, 1.0, 2.0]}, "together"),
        ({"xcoords": [0.0, 1.0, 2.0], "ycoords": [0.0, 1.0], "extent": (0, 1, 0, 1)}, "not with extent"),
        ({"xcoords": [0.0, 1.0], "ycoords": [0.0, 1.0]}, "one coordinate per cell"),
        ({"xcoords": [0.0, 2.0, 1.0], "ycoords": [0.0, 1.0]}, "strictly increasing"),
    ],
)
def test_heatmap_coordinates_bad_input(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        plot.heatmap(torch.rand(2, 3), **kwargs)  # type: ignore[arg-type]
    plt.close("all")
