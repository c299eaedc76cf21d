"""Documented edges of hard_attention and masked_softmax (review of chapter 2)."""

import torch

from attnlib.blocks.masking import masked_softmax, softmax_with_temperature
from attnlib.blocks.scoring import hard_attention


def test_hard_attention_takes_the_first_of_tied_maxima() -> None:
    scores = torch.tensor([[[2.5, 0.5, 2.5]]], dtype=torch.float64)
    value = torch.eye(3, dtype=torch.float64)[None]
    _, index = hard_attention(scores, value)
    assert index.tolist() == [[0]]
    # while the tau -> 0 limit of the softmax splits the weight between the ties
    weights = softmax_with_temperature(scores, temperature=1e-3)
    assert torch.allclose(weights, torch.tensor([[[0.5, 0.0, 0.5]]], dtype=torch.float64))


def test_finite_float_mask_fill_gives_weights_not_zeros() -> None:
    scores = torch.tensor([[0.3, -0.2, 1.0]], dtype=torch.float64)
    mask = torch.full((1, 3), -1e9, dtype=torch.float64)  # finite: not a masked entry
    weights = masked_softmax(scores, mask)
    assert torch.allclose(weights.sum(-1), torch.ones(1, dtype=torch.float64))
    inf_mask = torch.full((1, 3), float("-inf"), dtype=torch.float64)
    assert masked_softmax(scores, inf_mask).abs().sum() == 0
