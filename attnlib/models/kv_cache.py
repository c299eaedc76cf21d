r"""The key/value cache of a Transformer decoder: what a decoding step keeps for the next one.

At inference the decoder produces one token at a time (:mod:`attnlib.train.decoding`). Re-running it
over the whole prefix at step t repeats the work of the t - 1 steps before; instead each decoder
layer keeps

- the **self-attention** keys and values of every target token fed so far (a step projects
  only the newest token and appends its key and value), and
- the **cross-attention** keys and values of the encoder output, projected once per sentence,

so that a step costs one token's work. :class:`LayerCache` is one layer's part,
:class:`DecoderCache` the whole decoder's; :meth:`attnlib.models.transformer.layers.DecoderLayer.forward`
reads and fills them, :meth:`attnlib.models.transformer.model.Transformer.init_cache` and
:meth:`attnlib.models.transformer.model.Transformer.decode_step` drive them. Beam search reorders them along
with its hypotheses (``reorder``).
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor

from attnlib._checks import check_token_ids
from attnlib.blocks.attention import scaled_dot_product_attention
from attnlib.blocks.multihead import MultiHeadAttention, merge_heads, split_heads

__all__ = ["DecoderCache", "LayerCache"]


@dataclass
class LayerCache:
    """What one decoder layer keeps between decoding steps.

    The self-attention keys and values of every target token fed so far (each step appends
    one), and the cross-attention keys and values of the encoder output (computed once).

    Shape:
        - self_key, self_value: (B, H, t, E) after t steps
        - memory_key, memory_value: (B, H, S, E)
    """

    self_key: Tensor
    self_value: Tensor
    memory_key: Tensor
    memory_value: Tensor

    def reorder(self, index: Tensor) -> None:
        """Keep rows ``index`` of the batch (beam search's reordering), in place.

        Shape:
            - index: (B',) row numbers of the current batch
        """
        index = _check_index(index, self.memory_key)
        # (B', H, t, E) for the self-attention, (B', H, S, E) for the memory
        self.self_key = self.self_key.index_select(0, index)
        self.self_value = self.self_value.index_select(0, index)
        self.memory_key = self.memory_key.index_select(0, index)
        self.memory_value = self.memory_value.index_select(0, index)


def _check_index(index: object, batch: Tensor) -> Tensor:
    """Row numbers (B',) of a batch of ``batch.shape[0]`` rows, as an int64 tensor."""
    index = check_token_ids("index", index, batch.shape[0], 1, "(B',)", batch.device)
    return index.long()


def _project_key_value(mha: MultiHeadAttention, x: Tensor) -> tuple[Tensor, Tensor]:
    """The keys and values ``mha`` computes from ``x``, split into heads.

    Shape:
        - x: (B, S, D); output: two (B, H, S, E)
    """
    H = mha.num_heads
    return split_heads(mha.k_proj(x), H), split_heads(mha.v_proj(x), H)  # (B, H, S, E) x 2


def _attend_cached(
    mha: MultiHeadAttention,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None,
    need_weights: bool,
) -> tuple[Tensor, Tensor | None]:
    """``mha(query, ., .)`` with keys and values already projected: what a cached step needs.

    Shape:
        - query: (B, L, D); key, value: (B, H, S, E); mask: broadcastable to (B, H, L, S)
        - output: (B, L, D); weights: (B, H, L, S) or None
    """
    q = split_heads(mha.q_proj(query), mha.num_heads)  # (B, H, L, E)
    p = mha.dropout if mha.training else 0.0
    weights: Tensor | None = None
    if need_weights:
        heads, weights = scaled_dot_product_attention(q, key, value, mask, False, p,
                                                      need_weights=True)  # (B, H, L, E)
    else:
        heads = scaled_dot_product_attention(q, key, value, mask, False, p)  # (B, H, L, E)
    out: Tensor = mha.out_proj(merge_heads(heads))  # (B, L, D)
    return out, weights



@dataclass
class DecoderCache:
    """A :class:`LayerCache` per decoder layer, the source padding mask, and the step count.

    Made by :meth:`~attnlib.models.transformer.model.Transformer.init_cache`; :meth:`~attnlib.models.transformer.model.Transformer.decode_step` appends one token.

    Shape:
        - memory_key_padding_mask: (B, S), True at real source tokens
    """

    layers: list[LayerCache]
    memory_key_padding_mask: Tensor
    length: int = 0

    def reorder(self, index: Tensor) -> None:
        """Keep rows ``index`` of the batch, in every layer (beam search), in place.

        Shape:
            - index: (B',)
        """
        index = _check_index(index, self.memory_key_padding_mask)
        for layer in self.layers:
            layer.reorder(index)
        self.memory_key_padding_mask = self.memory_key_padding_mask.index_select(0, index)

