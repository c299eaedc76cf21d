r"""Trainable sparse attention: DeepSeek Sparse Attention's indexer and top-k keys, and MoBA.

**DeepSeek Sparse Attention** (DSA; DeepSeek-AI, "DeepSeek-V3.2-Exp: Boosting Long-Context
Efficiency with DeepSeek Sparse Attention", 2025, section 1, "Prototype of DSA"). A small
*lightning indexer* scores every (query t, key s) pair with :math:`H^I` indexer heads of :math:`d^I` features,
a ReLU and a weight per head computed from the query token:

.. math::

    I_{t,s} = \sum_{j=1}^{H^I} w^I_{t,j}\,\operatorname{ReLU}(\mathbf q^I_{t,j} \cdot
    \mathbf k^I_s)

(:func:`lightning_indexer`). Each query then keeps the :math:`k` keys of largest
:math:`I_{t,s}` (:func:`top_k_keys`; 2048 in the paper) and attends to them only
(:func:`sparse_attention`): the attention costs :math:`O(Lk)` instead of :math:`O(L^2)`; the
indexer is still :math:`O(L^2)`, but with few heads, small keys and FP8 in the paper.
Selection has no gradient. The indexer learns from a KL loss towards the main attention's
distribution, summed over heads and normalised (:func:`indexer_kl_loss`): over all keys in
the dense warm-up, over the selected keys in sparse training, with the indexer's input
detached from the main model.

**MoBA** (Lu et al., "MoBA: Mixture of Block Attention for Long-Context LLMs", 2025): the keys
are cut into blocks of ``block_size``; query :math:`\mathbf q` scores block :math:`i` by
:math:`\mathbf q \cdot \operatorname{mean}(K_{[i]})`, keeps its ``top_k`` blocks, and attends
to their keys. A block that starts after the query is never chosen, the query's own block
always is (with the causal mask inside it). :func:`moba_mask`, :func:`moba_attention`. MoBA
is the smaller of the two block methods the issue names (NSA adds a compressed branch, a
sliding window and gates to the selected blocks).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from attnlib._checks import (
    check_flag,
    check_input,
    check_int,
    check_mask,
    check_not_meta,
    check_qkv,
    check_tensor,
    shape_str,
)
from attnlib.blocks.attention import LOW_PRECISION

__all__ = [
    "indexer_kl_loss",
    "lightning_indexer",
    "moba_attention",
    "moba_mask",
    "sparse_attention",
    "top_k_keys",
]


def lightning_indexer(
    index_query: Tensor, index_key: Tensor, index_weights: Tensor, is_causal: bool = True,
) -> Tensor:
    r"""DSA's index scores :math:`I_{t,s} = \sum_j w_{t,j} \operatorname{ReLU}(\mathbf
    q_{t,j} \cdot \mathbf k_s)`; with ``is_causal``, :math:`-\infty` where :math:`s > t`.

    Shape:
        index_query (B, L, H_I, d_I), index_key (B, S, d_I) (one key per position, shared by
        the indexer heads), index_weights (B, L, H_I). Returns (B, L, S), in float32 for
        float16 or bfloat16 input.

    Raises:
        TypeError: non-floating tensors, or of another dtype than ``index_query``.
        ValueError: shapes that do not fit, another device.
    """
    check_input("index_query", index_query, _floating("index_query", index_query), ndim=4,
                expected="(B, L, H_I, d_I)")
    check_input("index_key", index_key, index_query, ndim=3, expected="(B, S, d_I)",
                other="index_query")
    check_input("index_weights", index_weights, index_query, ndim=3, expected="(B, L, H_I)",
                other="index_query")
    check_flag("is_causal", is_causal)
    B, L, HI, dI = index_query.shape
    if index_key.shape[0] != B or index_key.shape[2] != dI:
        raise ValueError(f"index_key must have shape (B, S, d_I) = ({B}, S, {dI}) for "
                         f"index_query of shape {shape_str(index_query.shape)}, got "
                         f"{shape_str(index_key.shape)}")
    if index_weights.shape != (B, L, HI):
        raise ValueError(f"index_weights must have shape (B, L, H_I) = {shape_str((B, L, HI))}, "
                         f"got {shape_str(index_weights.shape)}")
    if index_query.dtype in LOW_PRECISION:  # an index score may pass float16's range
        index_query, index_key = index_query.float(), index_key.float()
        index_weights = index_weights.float()
    dots = torch.einsum("blhd,bsd->blhs", index_query, index_key)  # (B, L, H_I, S)
    scores = torch.einsum("blh,blhs->bls", index_weights, torch.relu(dots))  # (B, L, S)
    if is_causal:
        S = index_key.shape[1]
        future = torch.ones(L, S, dtype=torch.bool, device=scores.device).triu(1)
        scores = scores.masked_fill(future, -math.inf)
    return scores


def _floating(name: str, value: object) -> Tensor:
    t = check_tensor(name, value)
    if not t.is_floating_point():
        raise TypeError(f"{name} must have a floating-point dtype, got {t.dtype}")
    return t


def top_k_keys(index_scores: Tensor, k: int) -> tuple[Tensor, Tensor]:
    r"""The ``k`` keys of largest index score for each query, and which of them are real.

    A query with fewer than ``k`` keys it may see (scores :math:`> -\infty`; an early query
    under a causal mask) gets its real keys first and fills the rest with masked ones
    (``valid`` False there). Ties are broken as :func:`torch.topk` breaks them.

    Shape:
        index_scores (B, L, S). Returns indices (B, L, k), int64, and valid (B, L, k), bool.

    Raises:
        TypeError: non-floating scores, a ``k`` that is not an int.
        ValueError: ``k`` < 1 or > S, scores that are not 3-D, or hold NaN or +inf.
    """
    scores = _floating("index_scores", index_scores)
    if scores.ndim != 3:
        raise ValueError(f"index_scores must have 3 dimensions (B, L, S), got shape "
                         f"{shape_str(scores.shape)}")
    S = scores.shape[-1]
    if S == 0:
        raise ValueError(f"index_scores must have at least one key (S >= 1), got shape "
                         f"{shape_str(scores.shape)}")
    k = check_int("k", k, minimum=1, maximum=S)
    check_not_meta("index_scores", scores, "that it holds no NaN or +inf")
    if bool((torch.isnan(scores) | torch.isposinf(scores)).any()):
        raise ValueError("index_scores holds NaN or +inf")
    top, indices = scores.topk(k, dim=-1)  # (B, L, k)
    return indices, ~torch.isneginf(top)


def sparse_attention(
    query: Tensor, key: Tensor, value: Tensor, indices: Tensor, valid: Tensor | None = None,
    scale: float | None = None,
) -> Tensor:
    r"""Attention of each query over its own ``k`` keys only: DSA's
    :math:`\mathbf u_t = \operatorname{Attn}(\mathbf q_t, \{\mathbf k_s, \mathbf v_s :
    s \in S_t\})`, every head of a query sharing its selection :math:`S_t` (``indices``).

    The keys and values of each query are gathered, (B, H, L, k, E): the work and the memory
    follow :math:`L k`, not :math:`L S`. Where ``valid`` is False the key is masked; a query
    with no valid key gets output 0. An index listed twice counts twice.

    Shape:
        query (B, H, L, E), key (B, H, S, E), value (B, H, S, Ev); indices (B, L, k) integers in
        [0, S); valid (B, L, k) bool, or None (all valid). Returns (B, H, L, Ev).

    Raises:
        TypeError, ValueError: as attention for query, key, value and ``scale``; indices that
            are not integers, out of range or of another shape; a non-bool ``valid``.
    """
    check_qkv(query, key, value, layout="heads", need_keys=True, scale=scale)
    B, H, L, E = query.shape
    S = key.shape[2]
    idx = check_tensor("indices", indices)
    if idx.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"indices must be an int64 or int32 tensor, got dtype {idx.dtype}")
    if idx.ndim != 3 or idx.shape[:2] != (B, L):
        raise ValueError(f"indices must have shape (B, L, k) = ({B}, {L}, k), got "
                         f"{shape_str(idx.shape)}")
    if idx.device != query.device:
        raise ValueError(f"indices is on device {idx.device}, but query is on {query.device}")
    check_not_meta("indices", idx, "that they lie in [0, S)")
    if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= S):
        raise ValueError(f"indices must lie in [0, S) = [0, {S}), got {int(idx.min())} to "
                         f"{int(idx.max())}")
    if valid is not None:
        valid = check_mask("valid", valid, idx.shape, expected="(B, L, k)",
                           device=query.device, bool_only=True).expand(idx.shape)
    if query.dtype in LOW_PRECISION:  # scores and softmax in float32
        return sparse_attention(query.float(), key.float(), value.float(), idx, valid,
                                scale).to(query.dtype)
    scale = 1 / math.sqrt(E) if scale is None else float(scale)
    b = torch.arange(B, device=query.device).view(B, 1, 1, 1)
    h = torch.arange(H, device=query.device).view(1, H, 1, 1)
    picked = idx.long().unsqueeze(1)  # (B, 1, L, k)
    k_sel, v_sel = key[b, h, picked], value[b, h, picked]  # (B, H, L, k, E), (..., Ev)
    scores = (k_sel @ query.unsqueeze(-1)).squeeze(-1) * scale  # (B, H, L, k)
    if valid is not None:
        scores = scores.masked_fill(~valid.unsqueeze(1), -math.inf)
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)  # no valid key: 0
    return (weights.unsqueeze(-2) @ v_sel).squeeze(-2)  # (B, H, L, Ev)


def indexer_kl_loss(
    index_scores: Tensor, attention_weights: Tensor, selected: Tensor | None = None,
) -> Tensor:
    r"""DSA's indexer loss: :math:`\operatorname{KL}(p_t \,\|\, \operatorname{softmax}(I_t))`,
    averaged over the queries.

    The target :math:`p_{t,:}` sums the main attention's weights over its heads and is
    L1-normalised over the keys; it is detached (the loss trains the indexer only). With
    ``selected`` (the keys :math:`S_t` of :func:`top_k_keys`, as a bool mask), both
    distributions are restricted to :math:`S_t` and renormalised there: the sparse training
    stage. Without it, all keys the index scores do not mask: the dense warm-up. The paper
    writes a sum over t; the mean here differs by the constant factor B L. Terms with
    :math:`p = 0` count 0; where :math:`p > 0` the index score must be finite.

    Shape:
        index_scores (B, L, S); attention_weights (B, H, L, S), each row a distribution over
        keys; selected (B, L, S) bool or None. Returns a 0-d tensor (float32 for float16 or
        bfloat16 input).

    Raises:
        TypeError: non-floating tensors, dtypes other than ``index_scores``'s, a non-bool
            ``selected``. ValueError: shapes that do not fit, another device, no query,
            attention weights that are negative or not finite.
    """
    check_input("index_scores", index_scores, _floating("index_scores", index_scores), ndim=3,
                expected="(B, L, S)")
    check_input("attention_weights", attention_weights, index_scores, ndim=4,
                expected="(B, H, L, S)", other="index_scores")
    B, L, S = index_scores.shape
    if (attention_weights.shape[0], *attention_weights.shape[2:]) != (B, L, S):
        raise ValueError(f"attention_weights must have shape (B, H, L, S) = ({B}, H, {L}, {S}) "
                         f"for index_scores of shape {shape_str(index_scores.shape)}, got "
                         f"{shape_str(attention_weights.shape)}")
    if B * L == 0 or S == 0:
        raise ValueError(f"index_scores must hold at least one query and key, got shape "
                         f"{shape_str(index_scores.shape)}")
    check_not_meta("attention_weights", attention_weights, "that they are >= 0")
    if not bool(((attention_weights >= 0) & torch.isfinite(attention_weights)).all()):
        raise ValueError("attention_weights must be finite weights >= 0 (softmax outputs)")
    if index_scores.dtype in LOW_PRECISION:  # the loss in float32
        index_scores, attention_weights = index_scores.float(), attention_weights.float()
    target = attention_weights.detach().sum(1)  # (B, L, S): the heads summed
    scores = index_scores
    if selected is not None:
        check_mask("selected", selected, (B, L, S), expected="(B, L, S)",
                   device=index_scores.device, bool_only=True)
        target = target * selected
        none = ~selected.any(-1, keepdim=True)  # a query with no key selected: loss 0
        scores = scores.masked_fill(~selected & ~none, -math.inf)
    target = target / target.sum(-1, keepdim=True).clamp_min(torch.finfo(target.dtype).tiny)
    log_q = torch.log_softmax(scores, dim=-1)  # (B, L, S)
    terms = torch.where(target > 0, target * (torch.log(target.clamp_min(
        torch.finfo(target.dtype).tiny)) - log_q), 0.0)
    return terms.sum(-1).mean()


def moba_mask(query: Tensor, key: Tensor, block_size: int, top_k: int) -> Tensor:
    r"""MoBA's choice of keys, as a mask: query :math:`t` (head h) may attend to key
    :math:`s \le t` iff the block of :math:`s` is among its ``top_k`` blocks by the gate
    :math:`\mathbf q_t \cdot \operatorname{mean}(K_{[i]})`. Blocks that start after :math:`t`
    are never chosen; the block holding :math:`t` always is. Self-attention, L = S.

    Shape:
        query (B, H, L, E), key (B, H, L, E). Returns (B, H, L, L), bool.

    Raises:
        TypeError, ValueError: as attention for query and key (L = S); ``block_size`` or
            ``top_k`` not ints >= 1.
    """
    check_qkv(query, key, key, layout="self")
    bs = check_int("block_size", block_size, minimum=1)
    top_k = check_int("top_k", top_k, minimum=1)
    B, H, L, E = query.shape
    if query.dtype in LOW_PRECISION:  # the gate in float32
        query, key = query.float(), key.float()
    nb = -(-L // bs)
    block_of = torch.arange(L, device=query.device) // bs  # (L,)
    sums = key.new_zeros(B, H, nb, E).index_add_(2, block_of, key)  # (B, H, nb, E)
    counts = torch.bincount(block_of, minlength=nb).to(key.dtype).clamp_min(1)
    gate = query @ (sums / counts.view(nb, 1)).transpose(-2, -1)  # (B, H, L, nb)
    own = block_of.view(L, 1) == torch.arange(nb, device=query.device)  # (L, nb)
    later = block_of.view(L, 1) < torch.arange(nb, device=query.device)
    gate = gate.masked_fill(later, -math.inf).masked_fill(own, math.inf)
    chosen = gate.topk(min(top_k, nb), dim=-1).indices  # (B, H, L, k)
    blocks = torch.zeros_like(gate, dtype=torch.bool).scatter_(-1, chosen, True)
    blocks &= ~later  # a query with fewer than top_k earlier blocks: no later one
    causal = torch.ones(L, L, dtype=torch.bool, device=query.device).tril()
    return blocks[..., block_of] & causal  # (B, H, L, L)


def moba_attention(
    query: Tensor, key: Tensor, value: Tensor, block_size: int, top_k: int,
) -> Tensor:
    r"""Causal attention over the keys MoBA chooses (:func:`moba_mask`), every head its own.

    Written as attention with the mask (it computes every score, then masks): equal to MoBA's
    output, not to its cost, which follows ``top_k * block_size`` keys per query.

    Shape:
        query (B, H, L, E), key (B, H, L, E), value (B, H, L, Ev). Returns (B, H, L, Ev).

    Raises:
        TypeError, ValueError: as :func:`moba_mask`, and value's shape.
    """
    check_qkv(query, key, value, layout="self")
    if query.dtype in LOW_PRECISION:  # scores and softmax in float32
        return moba_attention(query.float(), key.float(), value.float(), block_size,
                              top_k).to(query.dtype)
    allowed = moba_mask(query, key, block_size, top_k)  # (B, H, L, L)
    scores = query @ key.transpose(-2, -1) / math.sqrt(query.shape[-1])
    weights = torch.softmax(scores.masked_fill(~allowed, -math.inf), dim=-1)
    return weights.nan_to_num(0.0) @ value  # (B, H, L, Ev)
