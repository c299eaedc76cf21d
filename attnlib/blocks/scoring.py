"""Attention scoring functions and key-value attention built on them.

Four ways to score a query against a key, one interface: each is an ``nn.Module`` whose
``forward(query, key)`` maps queries (B, L, Eq) and keys (B, S, Ek) to scores (B, L, S).
:class:`KeyValueAttention` turns any of them into attention: masked softmax over the keys,
then a weighted average of the values. :class:`AttentionPooling` asks one learnable query of
a set of inputs and returns their weighted average. :func:`hard_attention` picks the single
best key instead, which is not differentiable with respect to the scores.
"""

from __future__ import annotations

import inspect
import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlib._checks import (
    check_device,
    check_flag,
    check_floating,
    check_input,
    check_instance,
    check_int,
    check_mask,
    check_ndim,
    check_probability,
    check_tensor,
    shape_str,
)
from attnlib.blocks.attention import LOW_PRECISION
from attnlib.blocks.masking import masked_softmax

__all__ = [
    "AdditiveScore",
    "AttentionPooling",
    "BilinearScore",
    "DotScore",
    "KeyValueAttention",
    "ScaledDotScore",
    "hard_attention",
]


def _check_query_key(
    query: Tensor, key: Tensor, query_size: int | None = None, key_size: int | None = None,
    like: Tensor | None = None,
) -> None:
    """Check queries (B, L, Eq) and keys (B, S, Ek); optionally their feature sizes, and the
    dtype and device of a parameter ``like``. Without parameters (dot-product scores) float16
    and bfloat16 are refused: raw scores overflow float16 (65504) at ordinary magnitudes."""
    if like is None:
        check_floating("query", query)
    else:
        check_input("query", query, like)
    check_floating("key", key)
    check_device("key", key, query.device, "query")
    if like is None and query.dtype in LOW_PRECISION:
        raise TypeError(f"query must be float32 or float64, got {query.dtype}: dot-product "
                        f"scores overflow it; convert the inputs with .float()")
    check_ndim("query", query, 3, "(B, L, Eq)")
    check_ndim("key", key, 3, "(B, S, Ek)")
    if query.shape[0] != key.shape[0]:
        raise ValueError(
            f"query and key must have the same batch size B, got query of shape "
            f"{shape_str(query.shape)} and key of shape {shape_str(key.shape)}"
        )
    if query.dtype != key.dtype:
        raise TypeError(
            f"query and key must have the same dtype, got {query.dtype} and {key.dtype}"
        )
    for name, value, size, letter in (
        ("query", query, query_size, "Eq"),
        ("key", key, key_size, "Ek"),
    ):
        if size is not None and value.shape[-1] != size:
            raise ValueError(
                f"{name} must have shape (B, *, {letter}) with {letter} = {size}, "
                f"got shape {shape_str(value.shape)}"
            )


def _check_same_size(query: Tensor, key: Tensor) -> None:
    """Dot-product scores need queries and keys of the same size E, at least 1."""
    if query.shape[-1] == 0:
        raise ValueError(f"query and key must have E >= 1 features, got query of shape "
                         f"{shape_str(query.shape)}")
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(
            f"query and key must have the same size E in their last dimension, got query of "
            f"shape {shape_str(query.shape)} and key of shape {shape_str(key.shape)}; "
            f"use AdditiveScore or BilinearScore for different sizes"
        )


class AdditiveScore(nn.Module):
    r"""Additive (Bahdanau) attention scores.

    .. math::

        a(\mathbf q, \mathbf k) = \mathbf w_v^\top \tanh(\mathbf W_q \mathbf q
            + \mathbf W_k \mathbf k + \mathbf b)

    with :math:`\mathbf W_q \in \mathbb R^{d_h \times E_q}`,
    :math:`\mathbf W_k \in \mathbb R^{d_h \times E_k}`, :math:`\mathbf w_v \in \mathbb R^{d_h}`,
    and :math:`\mathbf b \in \mathbb R^{d_h}` only if ``bias``. Queries and keys may differ in
    size. The learnable parameters number :math:`d_h(E_q + E_k + 1)`, plus :math:`d_h` with a
    bias. The bias sits in ``q_proj`` only: a second one in ``k_proj`` would add to the same
    sum inside the tanh, one bias counted twice.

    Args:
        query_size: Eq, the size of a query.
        key_size: Ek, the size of a key.
        hidden_size: :math:`d_h`, the size of the hidden layer (``h`` in the shape comments).
        bias: whether to learn the bias :math:`\mathbf b`.

    Shape:
        - query: (B, L, Eq)
        - key: (B, S, Ek)
        - output: (B, L, S)

    Raises:
        ValueError: in ``forward``, if a rank, the batch size or a feature size is wrong.
        TypeError: in ``forward``, if query or key is not a floating-point tensor.
    """

    def __init__(
        self, query_size: int, key_size: int, hidden_size: int,
        bias: bool = False,
    ):
        super().__init__()
        _check_sizes(
            query_size=query_size, key_size=key_size, hidden_size=hidden_size,
            bias=bias,
        )
        self.q_proj = nn.Linear(query_size, hidden_size, bias=bias)
        self.k_proj = nn.Linear(key_size, hidden_size, bias=False)
        # Same initialisation as nn.Linear(hidden_size, 1) would give w_v.
        bound = 1.0 / math.sqrt(hidden_size)
        w_v = torch.empty(hidden_size).uniform_(-bound, bound)  # (h,)
        self.w_v = nn.Parameter(w_v)

    def forward(self, query: Tensor, key: Tensor) -> Tensor:
        _check_query_key(query, key, self.q_proj.in_features,
                         self.k_proj.in_features, self.w_v)
        q = self.q_proj(query)  # (B, L, h)
        k = self.k_proj(key)  # (B, S, h)
        # (B, L, S, h)
        features = torch.tanh(q[:, :, None, :] + k[:, None, :, :])
        return torch.einsum("blsh,h->bls", features, self.w_v)  # (B, L, S)


class DotScore(nn.Module):
    r"""Dot-product attention scores, :math:`a(\mathbf q, \mathbf k) = \mathbf q^\top \mathbf k`.

    No parameters. Queries and keys must have the same size E.

    Shape:
        - query: (B, L, E)
        - key: (B, S, E)
        - output: (B, L, S)

    Raises:
        ValueError: if a rank or the batch size is wrong, or query and key differ in size E.
        TypeError: if query or key is not a floating-point tensor.
    """

    def forward(self, query: Tensor, key: Tensor) -> Tensor:
        _check_query_key(query, key)
        _check_same_size(query, key)
        return query @ key.transpose(-2, -1)  # (B, L, S)


class ScaledDotScore(nn.Module):
    r"""Scaled dot-product scores, :math:`a(\mathbf q, \mathbf k) = \mathbf q^\top \mathbf k / \sqrt{E}`.

    Dividing by :math:`\sqrt E` keeps the scores' variance near 1 when the entries of q and k
    have variance 1, so the softmax does not saturate as E grows. No parameters.

    Shape:
        - query: (B, L, E)
        - key: (B, S, E)
        - output: (B, L, S)

    Raises:
        ValueError: if a rank or the batch size is wrong, or query and key differ in size E.
        TypeError: if query or key is not a floating-point tensor.
    """

    def forward(self, query: Tensor, key: Tensor) -> Tensor:
        _check_query_key(query, key)
        _check_same_size(query, key)
        scale = math.sqrt(query.shape[-1])  # sqrt(E)
        return query @ key.transpose(-2, -1) / scale  # (B, L, S)


class BilinearScore(nn.Module):
    r"""Bilinear (general, Luong) scores, :math:`a(\mathbf q, \mathbf k) = \mathbf q^\top \mathbf W \mathbf k`.

    :math:`\mathbf W \in \mathbb R^{E_q \times E_k}` (``weight``) is learned, so queries and keys
    may differ in size and the score is asymmetric: :math:`a(\mathbf x, \mathbf y) \ne
    a(\mathbf y, \mathbf x)` in general. With :math:`\mathbf W = \mathbf I` it is
    :class:`DotScore`. The parameters number :math:`E_q E_k`.

    Args:
        query_size: Eq, the size of a query.
        key_size: Ek, the size of a key.

    Shape:
        - query: (B, L, Eq)
        - key: (B, S, Ek)
        - output: (B, L, S)

    Raises:
        ValueError: in ``forward``, if a rank, the batch size or a feature size is wrong.
        TypeError: in ``forward``, if query or key is not a floating-point tensor.
    """

    def __init__(self, query_size: int, key_size: int):
        super().__init__()
        _check_sizes(query_size=query_size, key_size=key_size)
        bound = 1.0 / math.sqrt(key_size)
        weight = torch.empty(query_size, key_size).uniform_(-bound, bound)
        self.weight = nn.Parameter(weight)  # (Eq, Ek)

    def forward(self, query: Tensor, key: Tensor) -> Tensor:
        Eq, Ek = self.weight.shape
        _check_query_key(query, key, Eq, Ek, self.weight)
        return query @ self.weight @ key.transpose(-2, -1)  # (B, L, S)


class KeyValueAttention(nn.Module):
    r"""Attention with any scoring function: softmax of the scores, then averaged values.

    .. math::

        \mathrm{attn}(\mathbf q_i) = \sum_{j=1}^{S} \alpha_{ij} \mathbf v_j,

        \alpha_{ij} = \frac{m_{ij} \exp a(\mathbf q_i, \mathbf k_j)}
            {\sum_{j'} m_{ij'} \exp a(\mathbf q_i, \mathbf k_{j'})}

    where :math:`m_{ij} = 1` if query i may attend to key j (``mask`` True). A query that may
    attend to no key gets zero weights and a zero output. Dropout is applied to the weights
    in training only; the returned weights are the ones used (after dropout), as in
    ``torch.nn.MultiheadAttention``, so ``output == weights @ value`` always holds.

    Args:
        score: a scoring module mapping (B, L, Eq), (B, S, Ek) to (B, L, S), e.g.
            :class:`AdditiveScore` or :class:`ScaledDotScore`.
        dropout: dropout probability on the attention weights, in [0, 1).

    Shape:
        - query: (B, L, Eq)
        - key: (B, S, Ek)
        - value: (B, S, Ev)
        - mask: bool (True = may attend), broadcastable to (B, L, S), e.g. (B, 1, S) from
          :func:`attnlib.blocks.masking.lengths_to_mask` with ``[:, None, :]``
        - output: (B, L, Ev)
        - weights: (B, L, S)

    Raises:
        ValueError: if ``dropout`` is not in [0, 1); in ``forward``, if key and value differ in
            length S or batch size, a rank is wrong, or ``mask`` does not broadcast.
        TypeError: if ``score`` is not an ``nn.Module`` or ``dropout`` not a number; in
            ``forward``, if ``mask`` is not bool, or value is not floating point.
    """

    def __init__(self, score: nn.Module, dropout: float = 0.0):
        super().__init__()
        _check_score(score)
        self.score = score
        self.dropout = check_probability("dropout", dropout)

    def forward(
        self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        _check_key_value(key, value)
        scores: Tensor = self.score(query, key)  # (B, L, S)
        mask = _check_bool_mask(mask, scores)
        weights = masked_softmax(scores, mask)  # (B, L, S)
        dropout_p = self.dropout if self.training else 0.0
        weights = F.dropout(weights, p=dropout_p)
        return weights @ value, weights  # (B, L, Ev), (B, L, S)


class AttentionPooling(nn.Module):
    r"""Attention pooling with a learnable query: a set of inputs summarised by one vector.

    .. math::

        \mathbf c = \sum_{n=1}^{S} \alpha_n \mathbf x_n,

        \alpha_n = \operatorname{softmax}_n \frac{\mathbf q^\top \mathbf x_n}{\sqrt E}

    The query :math:`\mathbf q` is a parameter, the same for every example, trained with the
    model; the inputs are both the keys and the values. This is :class:`KeyValueAttention`
    with a :class:`ScaledDotScore` and a single query, and equal to
    :func:`attnlib.blocks.attention.scaled_dot_product_attention` with query ``q`` (B, 1, E) and
    key = value = ``inputs``. The query starts at zero, so an untrained pooling gives every
    input the weight :math:`1/S`: average pooling. Inputs where ``mask`` is False get weight 0;
    an example with no valid input gets zero weights and a zero vector.

    Args:
        input_size: E, the size of an input and of the query.

    Shape:
        - inputs: (B, S, E)
        - mask: bool (B, S), True = a real input; optional
        - output: (B, E), the pooled vectors
        - weights: (B, S)

    Raises:
        ValueError: if ``input_size`` < 1; in ``forward``, if ``inputs`` is not (B, S, E) with
            E = ``input_size``, or ``mask`` is not (B, S).
        TypeError: if ``input_size`` is not an int; in ``forward``, if ``inputs`` is not a
            floating-point tensor of the query's dtype, or ``mask`` is not a bool tensor.
    """

    def __init__(self, input_size: int):
        super().__init__()
        _check_sizes(input_size=input_size)
        # Zero at first: all scores 0, so training starts from average pooling.
        self.query = nn.Parameter(torch.zeros(input_size))  # (E,)
        self.attention = KeyValueAttention(ScaledDotScore())

    def forward(
        self, inputs: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        _check_pooling_args(inputs, mask, self.query)
        query = self.query.expand(len(inputs), 1, -1)  # (B, 1, E): one for all
        if mask is not None:
            mask = mask[:, None, :]  # (B, 1, S)
        # The inputs are both the keys and the values.
        pooled, weights = self.attention(query, inputs, inputs, mask)
        return pooled[:, 0], weights[:, 0]  # (B, E), (B, S)


def hard_attention(
    scores: Tensor, value: Tensor, mask: Tensor | None = None
) -> tuple[Tensor, Tensor]:
    r"""Hard attention: each query takes the value of its single best-scoring key.

    .. math::

        j^*_i = \operatorname*{arg\,max}_{j:\, m_{ij}} a(\mathbf q_i, \mathbf k_j),

        \mathrm{out}_i = \mathbf v_{j^*_i}

    This is the deterministic variant, the :math:`\tau \to 0` limit of the softmax. (Xu et al.'s
    stochastic hard attention *samples* the index from the weights instead.) The argmax is
    piecewise constant, so no gradient flows back to ``scores`` (the output depends on them only
    through an integer index); gradients still reach ``value``. A query that may attend to no
    key gets index -1 and a zero output. Where several keys share the largest score, the index
    is the first of them, while the softmax's :math:`\tau \to 0` limit splits the weight
    equally among them (scores [2.5, 0.5, 2.5] tend to weights [0.5, 0, 0.5]): the two agree
    only for a unique maximum. A NaN score is not refused: ``torch.argmax`` treats NaN as the
    largest value, so a query with a NaN score selects that key.

    Args:
        scores: attention scores, e.g. from a scoring module.
        value: the values to select from.
        mask: bool, True = may attend, broadcastable to (B, L, S).

    Returns:
        ``(output, index)``.

    Shape:
        - scores: (B, L, S)
        - value: (B, S, Ev)
        - mask: broadcastable to (B, L, S)
        - output: (B, L, Ev)
        - index: (B, L), torch.long

    Raises:
        ValueError: if a rank is wrong, scores and value disagree in B or S, or ``mask`` does
            not broadcast to ``scores``.
        TypeError: if ``scores`` or ``value`` is not floating point or ``mask`` is not bool.
    """
    mask = _check_hard_attention_args(scores, value, mask)
    if mask is not None:
        scores = torch.where(mask, scores, float("-inf"))  # (B, L, S)
    index = scores.argmax(dim=-1)  # (B, L): each query's best key
    output = torch.take_along_dim(value, index[..., None], dim=1)  # (B, L, Ev)
    return _no_key_no_output(scores, output, index)


def _no_key_no_output(scores: Tensor, output: Tensor, index: Tensor) -> tuple[Tensor, Tensor]:
    """A query whose scores are all -inf (every key masked) gets index -1 and a zero output.

    The argmax of such a row is an arbitrary key; its value is replaced by zeros, so that no
    gradient reaches it either.
    """
    dead = torch.isneginf(scores).all(dim=-1)  # (B, L)
    return output.masked_fill(dead[:, :, None], 0.0), index.masked_fill(dead, -1)


def _check_key_value(key: Tensor, value: Tensor) -> None:
    """The argument checks of :meth:`KeyValueAttention.forward` before the scores."""
    value = check_floating("value", value)
    check_ndim("value", value, 3, "(B, S, Ev)")
    check_tensor("key", key)
    if key.is_floating_point() and value.dtype != key.dtype:
        raise TypeError(f"value must have key's dtype {key.dtype}, got {value.dtype}")
    check_device("value", value, key.device, "key")
    if key.ndim == 3 and key.shape[:2] != value.shape[:2]:
        raise ValueError(
            f"key (B, S, Ek) and value (B, S, Ev) must agree in B and S, got key of shape "
            f"{shape_str(key.shape)} and value of shape {shape_str(value.shape)}"
        )


def _check_hard_attention_args(scores: Tensor, value: Tensor, mask: Tensor | None) -> Tensor | None:
    """The argument checks of :func:`hard_attention`; returns the mask, typed."""
    _check_scores_value(scores, value)
    return _check_bool_mask(mask, scores)


def _check_scores_value(scores: Tensor, value: Tensor) -> None:
    """Scores (B, L, S) and values (B, S, Ev) that agree in B and S."""
    check_floating("scores", scores)
    check_floating("value", value)
    check_device("value", value, scores.device, "scores")
    check_ndim("scores", scores, 3, "(B, L, S)")
    check_ndim("value", value, 3, "(B, S, Ev)")
    if scores.shape[2] == 0:
        raise ValueError(f"scores must have at least one key (S >= 1) to select from, got "
                         f"scores of shape {shape_str(scores.shape)}")
    if scores.shape[0] != value.shape[0] or scores.shape[2] != value.shape[1]:
        raise ValueError(
            f"scores (B, L, S) and value (B, S, Ev) must agree in B and S, got scores of shape "
            f"{shape_str(scores.shape)} and value of shape {shape_str(value.shape)}"
        )


def _check_pooling_args(inputs: Tensor, mask: Tensor | None, query: Tensor) -> None:
    """The argument checks of :meth:`AttentionPooling.forward`."""
    check_floating("inputs", inputs)
    check_device("inputs", inputs, query.device, "the learnable query")
    check_ndim("inputs", inputs, 3, "(B, S, E)")
    if inputs.shape[-1] != query.shape[0]:
        raise ValueError(
            f"inputs must have shape (B, S, E) with E = input_size = {query.shape[0]}, "
            f"got shape {shape_str(inputs.shape)}"
        )
    if inputs.dtype != query.dtype:
        raise TypeError(
            f"inputs must have the dtype of the learnable query, {query.dtype}, got "
            f"{inputs.dtype}; convert the module with .to(dtype) or the inputs"
        )
    if mask is None:
        return
    check_tensor("mask", mask)
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must be a bool tensor (True = a real input), got dtype {mask.dtype}")
    check_device("mask", mask, inputs.device, "inputs")
    if mask.shape != inputs.shape[:2]:
        raise ValueError(
            f"mask must have shape (B, S) = {shape_str(inputs.shape[:2])}, the first two "
            f"dimensions of inputs, got shape {shape_str(mask.shape)}"
        )


def _check_bool_mask(mask: Tensor | None, scores: Tensor) -> Tensor | None:
    """A bool mask (True = may attend) broadcastable to the (B, L, S) scores, or None."""
    if mask is None:
        return None
    return check_mask("mask", mask, scores.shape, expected="(B, L, S)", device=scores.device,
                      bool_only=True)


def _check_sizes(*, bias: object = False, **sizes: int) -> None:
    check_flag("bias", bias)
    for name, size in sizes.items():
        check_int(name, size, minimum=1)


def _check_score(score: object) -> None:
    """A scoring module: an nn.Module called as ``score(query, key)``."""
    check_instance("score", score, nn.Module, "an nn.Module")
    assert isinstance(score, nn.Module)
    try:
        inspect.signature(score.forward).bind(None, None)
    except TypeError:
        raise TypeError(f"score must be a scoring module called as score(query, key), got "
                        f"{type(score).__name__}, whose forward takes "
                        f"{inspect.signature(score.forward)}") from None
