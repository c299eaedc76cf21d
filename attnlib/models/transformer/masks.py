r"""The masks of a Transformer batch, all made from lengths in one place.

Three masks, all boolean with True = may attend, all made by :func:`make_masks` from lengths
(through :func:`attnlib.blocks.masking.lengths_to_mask`):

- the source **padding mask**: no query attends to a padded source position (encoder
  self-attention and cross-attention);
- the **causal mask** ("sequence mask"): target position i sees positions 0..i only;
- the target padding mask, combined with the causal one in the decoder's self-attention.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attnlib._checks import check_device, check_int, check_ndim, check_tensor, shape_str
from attnlib.blocks.masking import causal_mask, lengths_to_mask

__all__ = ["Masks", "make_masks"]

@dataclass(frozen=True, eq=False)
class Masks:
    """The masks of one batch, all boolean, True = may attend.

    ``src_key_padding`` and ``tgt_key_padding`` are True at real tokens; ``causal`` is the
    lower triangle. The properties combine them into the mask each attention uses, expanded to
    one (L, S) matrix per sentence so the book can draw it.

    Shape:
        - src_key_padding: (B, S)
        - tgt_key_padding: (B, L), or None (no target, or no target padding)
        - causal: (L, L), or None (no target)
    """

    src_key_padding: Tensor
    tgt_key_padding: Tensor | None = None
    causal: Tensor | None = None

    @property
    def encoder_self(self) -> Tensor:
        """The encoder self-attention mask; every query sees the real source tokens.

        Shape:
            (B, S, S)
        """
        B, S = self.src_key_padding.shape
        return self.src_key_padding[:, None, :].expand(B, S, S)  # (B, S, S)

    @property
    def decoder_self(self) -> Tensor:
        """The decoder self-attention mask; causal, and real target tokens only.

        Shape:
            (B, L, L)

        Raises:
            ValueError: if the masks were made without a target.
        """
        if self.causal is None:
            raise ValueError("these masks were made without a target (L is None)")
        B, L = self.src_key_padding.shape[0], self.causal.shape[0]
        if self.tgt_key_padding is None:
            return self.causal.expand(B, L, L)  # (B, L, L)
        return self.causal & self.tgt_key_padding[:, None, :]  # (B, L, L)

    @property
    def cross(self) -> Tensor:
        """The cross-attention mask; every target query sees the real source tokens.

        Shape:
            (B, L, S)

        Raises:
            ValueError: if the masks were made without a target.
        """
        if self.causal is None:
            raise ValueError("these masks were made without a target (L is None)")
        (B, S), L = self.src_key_padding.shape, self.causal.shape[0]
        return self.src_key_padding[:, None, :].expand(B, L, S)  # (B, L, S)


def make_masks(
    src_lengths: Tensor,
    S: int,
    tgt_lengths: Tensor | None = None,
    L: int | None = None,
) -> Masks:
    r"""All the masks of a batch, from its lengths: the one place this module makes masks.

    .. math::

        \text{src}_{b,j} = [\, j < n^{src}_b \,],

        \text{tgt}_{b,j} = [\, j < n^{tgt}_b \,],

        \text{causal}_{i,j} = [\, j \le i \,]

    Args:
        src_lengths: the number of real source tokens of each sentence.
        S: the padded source length.
        tgt_lengths: the number of real decoder inputs of each sentence; None: no target
            padding (decoding, or a batch of equal lengths).
        L: the decoder input length; None: no target (encoding only).

    Shape:
        - src_lengths: (B,); tgt_lengths: (B,)
        - returns :class:`Masks` with src_key_padding (B, S), tgt_key_padding (B, L) and
          causal (L, L)

    Raises:
        ValueError: if ``tgt_lengths`` is given without ``L``, or a length is outside [0, S]
            (or [0, L]); the errors of :func:`attnlib.blocks.masking.lengths_to_mask`.
    """
    _check_lengths(src_lengths, S, tgt_lengths, L)
    src_key_padding = lengths_to_mask(src_lengths, S)  # (B, S)
    if L is None:
        if tgt_lengths is not None:
            raise ValueError(f"L (the decoder input length) must be given with "
                             f"tgt_lengths, got L = None and tgt_lengths "
                             f"{tgt_lengths.tolist()}")
        return Masks(src_key_padding)
    tgt_key_padding = (  # (B, L)
        None if tgt_lengths is None else lengths_to_mask(tgt_lengths, L)
    )
    causal = causal_mask(L, device=src_lengths.device)  # (L, L)
    return Masks(src_key_padding, tgt_key_padding, causal)


def _check_lengths(src_lengths: Tensor, S: int, tgt_lengths: Tensor | None,
                   L: int | None) -> None:
    """The arguments of :func:`make_masks`, named as the caller knows them."""
    check_tensor("src_lengths", src_lengths)
    check_int("S", S, minimum=0)
    for lengths_name, lengths, size_name, size in (("src_lengths", src_lengths, "S", S),
                                                   ("tgt_lengths", tgt_lengths, "L", L)):
        if size is not None:
            check_int(size_name, size, minimum=0)
        if lengths is None:
            continue
        lengths = check_tensor(lengths_name, lengths)
        if lengths.is_floating_point() or lengths.is_complex() or lengths.dtype == torch.bool:
            raise TypeError(f"{lengths_name} must have an integer dtype, got {lengths.dtype}")
        check_ndim(lengths_name, lengths, 1, "(B,)")
        check_device(lengths_name, lengths, src_lengths.device, "src_lengths")
        if size is not None and lengths.device.type != "meta" and bool(
                ((lengths < 0) | (lengths > size)).any()):
            raise ValueError(f"{lengths_name} must hold lengths in [0, {size_name}] = [0, {size}], "
                             f"got {lengths.tolist()}")
    if tgt_lengths is not None and tgt_lengths.shape != src_lengths.shape:
        raise ValueError(f"tgt_lengths must have one length per sentence, the shape (B,) = "
                         f"{shape_str(src_lengths.shape)} of src_lengths, got "
                         f"{shape_str(tgt_lengths.shape)}")
