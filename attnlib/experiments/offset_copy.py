r"""The offset-copy task: a probe that one attention head cannot solve and two heads can.

Every position t of a random token sequence must name the tokens at fixed offsets from it,
e.g. :math:`x_{t-1}` and :math:`x_{t+1}`. Positions wrap around (offsets are taken modulo the
length L), so every position has a left and a right neighbour and the ideal attention of a
head that reads offset o is a shifted identity. One self-attention layer solves it if it has
one head per offset: a head attends to one neighbour and copies its token. A single head must
spread its weights over both neighbours and returns a blend of their tokens, from which a
linear read-out recovers the token with the larger weight but not the other one.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlib._checks import (
    check_floating,
    check_instance,
    check_int,
    check_ndim,
    check_positive,
    check_tensor,
    check_token_ids,
    shape_str,
)
from attnlib.blocks.multihead import MultiHeadAttention
from attnlib.blocks.positional import LearnedPositionalEmbedding

__all__ = [
    "OffsetCopyModel",
    "attention_by_offset",
    "fit_offset_copy",
    "offset_accuracy",
    "offset_copy_task",
]


def _generator(seed: int) -> torch.Generator:
    """A private generator seeded with ``seed``, an int >= 0."""
    return torch.Generator().manual_seed(check_int("seed", seed, minimum=0))


def _check_offsets(offsets: Sequence[int]) -> tuple[int, ...]:
    if isinstance(offsets, str) or not isinstance(offsets, Sequence):
        raise TypeError(f"offsets must be a non-empty sequence of ints, got {offsets!r}")
    offsets = tuple(offsets)
    if not offsets or any(isinstance(o, bool) or not isinstance(o, int) for o in offsets):
        raise TypeError(f"offsets must be a non-empty sequence of ints, got {offsets!r}")
    return offsets


def offset_copy_task(
    n: int,
    length: int = 8,
    num_symbols: int = 8,
    offsets: Sequence[int] = (-1, 1),
    seed: int = 0,
) -> tuple[Tensor, Tensor]:
    r"""Random token sequences and, for each position, the tokens at the given offsets.

    .. math::

        \text{target}_{b, t, k} = x_{b, (t + o_k) \bmod L}

    Tokens are 0..``num_symbols`` - 1, drawn from a private ``torch.Generator`` seeded with
    ``seed`` (the global random state is untouched).

    Shape:
        Returns ``(tokens, targets)``: tokens (n, L) and targets (n, L, K) with
        K = ``len(offsets)``, both long.

    Raises:
        TypeError: if a size is not an int or ``offsets`` holds a non-int.
        ValueError: if a size is < 1.
    """
    sizes = (("n", n), ("length", length), ("num_symbols", num_symbols))
    for name, value in sizes:
        check_int(name, value, minimum=1)
    offsets = _check_offsets(offsets)
    g = _generator(seed)
    tokens = torch.randint(0, num_symbols, (n, length), generator=g)  # (n, L)
    # roll by -o moves x_{t+o} to position t; (n, L, K)
    targets = torch.stack([tokens.roll(-o, dims=1) for o in offsets], dim=-1)
    return tokens, targets


class OffsetCopyModel(nn.Module):
    r"""Token and position embeddings, one multi-head self-attention layer, a linear read-out.

    .. math::

        H = E[x] + P,

        Y = \mathrm{MultiHead}(H, H, H),

        \text{logits}_{t, k} = Y_t W_k + b_k

    No residual connection: the output at t is what attention fetched, nothing else. The
    position embedding P is learned; without it, attention could not tell a left from a
    right neighbour.

    Args:
        length: L, the sequence length (the number of learned positions).
        num_symbols: V, the vocabulary size.
        num_offsets: K, the number of tokens each position must name.
        embed_dim: D.
        num_heads: H; must divide D. The parameter count does not depend on it.

    Shape:
        - tokens: (B, L), long
        - output: ``(logits, weights)``: logits (B, L, K, V), weights (B, H, L, L)
    """

    def __init__(
        self,
        length: int,
        num_symbols: int,
        num_offsets: int,
        embed_dim: int = 32,
        num_heads: int = 2,
    ) -> None:
        super().__init__()
        self.length = check_int("length", length, minimum=1)
        self.num_symbols = check_int("num_symbols", num_symbols, minimum=1)
        self.num_offsets = check_int("num_offsets", num_offsets, minimum=1)
        check_int("embed_dim", embed_dim, minimum=1)
        self.embedding = nn.Embedding(num_symbols, embed_dim)
        self.position = LearnedPositionalEmbedding(length, embed_dim)
        self.attention = MultiHeadAttention(embed_dim, num_heads)
        self.readout = nn.Linear(embed_dim, num_offsets * num_symbols)

    def forward(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        _check_tokens(self, tokens)  # (B, L) ids in [0, V)
        h = self.position(self.embedding(tokens))  # (B, L, D)
        # (B, L, D), (B, H, L, L)
        y, weights = self.attention(h, h, h, need_weights=True)
        assert weights is not None
        B, L = tokens.shape
        logits = self.readout(y)  # (B, L, K V)
        K, V = self.num_offsets, self.num_symbols
        return logits.view(B, L, K, V), weights  # (B, L, K, V), (B, H, L, L)


def _check_tokens(model: OffsetCopyModel, tokens: Tensor) -> None:
    check_token_ids("tokens", tokens, model.num_symbols, device=model.readout.weight.device)
    if tokens.shape[1] != model.length:
        raise ValueError(f"tokens must have shape (B, L) with L = {model.length}, "
                         f"got {shape_str(tokens.shape)}")


def fit_offset_copy(
    model: OffsetCopyModel,
    tokens: Tensor,
    targets: Tensor,
    steps: int = 150,
    lr: float = 0.01,
    batch_size: int = 64,
    seed: int = 0,
) -> list[float]:
    """Train ``model`` with Adam on random mini-batches of the cross-entropy.

    The loss is averaged over examples, positions and offsets.

    Mini-batches are drawn from a private generator seeded with ``seed``.

    Shape:
        - tokens: (n, L), targets: (n, L, K), as from :func:`offset_copy_task`

    Returns:
        The loss of every step.

    Raises:
        ValueError: if ``steps`` or ``batch_size`` < 1, or the shapes do not match.
    """
    check_int("steps", steps, minimum=1)
    check_int("batch_size", batch_size, minimum=1)
    check_positive("lr", lr)
    _check_data(model, tokens, targets)
    generator = _generator(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    losses = []
    for _ in range(steps):
        idx = torch.randint(0, len(tokens), (batch_size,), generator=generator)  # (batch,)
        logits, _ = model(tokens[idx])  # (batch, L, K, V)
        loss = F.cross_entropy(logits.flatten(0, 2), targets[idx].flatten())
        optimizer.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]  # untyped in torch 2.13
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    return losses


@torch.no_grad()
def offset_accuracy(model: OffsetCopyModel, tokens: Tensor, targets: Tensor) -> Tensor:
    """The fraction of positions whose token at each offset the model names correctly.

    Shape:
        - tokens: (n, L), targets: (n, L, K)
        - output: (K,), one accuracy per offset
    """
    _check_data(model, tokens, targets)
    logits: Tensor = model(tokens)[0]  # (n, L, K, V)
    return (logits.argmax(dim=-1) == targets).double().mean(dim=(0, 1))  # (K,)


def attention_by_offset(weights: Tensor) -> Tensor:
    r"""The mean weight each head puts on the key at each offset from its query, cyclically.

    .. math::

        \text{profile}_{h, i} = \frac{1}{BL} \sum_{b, t} A_{b, h, t, (t + o_i) \bmod L},

        o_i = i - \lfloor L/2 \rfloor

    so column :math:`\lfloor L/2 \rfloor` is the query's own position and its neighbours sit
    left and right of it. Each row sums to 1 (every weight has exactly one offset).

    Shape:
        - weights: (B, H, L, L) self-attention weights
        - output: (H, L)

    Raises:
        ValueError: if ``weights`` is not (B, H, L, L).
    """
    check_floating("weights", weights)
    check_ndim("weights", weights, 4, "(B, H, L, L)")
    if weights.shape[0] == 0:
        raise ValueError(f"weights must hold at least one sequence (B >= 1), got shape "
                         f"{shape_str(weights.shape)}")
    L = weights.shape[-1]
    if weights.shape[-2] != L:
        raise ValueError(f"weights must be self-attention weights (B, H, L, L), "
                         f"got {shape_str(weights.shape)}")
    t = torch.arange(L, device=weights.device)  # (L,)
    columns = [weights[:, :, t, (t + i - L // 2) % L].mean(dim=(0, 2)) for i in range(L)]
    return torch.stack(columns, dim=-1)  # (H, L)


def _check_data(model: OffsetCopyModel, tokens: Tensor, targets: Tensor) -> None:
    """An :class:`OffsetCopyModel`, its tokens (n, L) and targets (n, L, K) of its symbols."""
    check_instance("model", model, OffsetCopyModel, "an OffsetCopyModel")
    _check_tokens(model, tokens)
    check_tensor("targets", targets)
    if targets.shape != (*tokens.shape, model.num_offsets):
        raise ValueError(f"targets must have shape (n, L, K) = "
                         f"{shape_str((*tokens.shape, model.num_offsets))}, "
                         f"got {shape_str(targets.shape)}")
    check_token_ids("targets", targets, model.num_symbols, 3, "(n, L, K)",
                    model.readout.weight.device)
    if tokens.shape[0] == 0:
        raise ValueError(f"tokens must hold at least one sequence (n >= 1), got shape "
                         f"{shape_str(tokens.shape)}")
