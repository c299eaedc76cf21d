r"""Retrieval of one far token at an equal budget of keys per query: top-k, MoBA, a window.

:func:`retrieval_task` writes lines of ``length`` tokens, each token a (key, value) pair; the
last ``queries`` tokens carry a key and no value, and the target at each is the value of the
one token, planted in the line's first half, that holds the same key. No other token holds a
queried key. The answer is one token at least half a line back: a query that cannot see it is
left guessing among ``num_values`` values.

:class:`RetrievalModel` is one attention layer that reads the value at each query (no position
encoding: the task is found by content). Its keys per query are chosen by ``mode``:

* ``"dense"``: every earlier key (the ceiling);
* ``"window"``: the last ``keys_per_query`` keys (a sliding window);
* ``"topk"``: the ``keys_per_query`` keys of largest index score of DeepSeek Sparse
  Attention's lightning indexer (DeepSeek-AI 2025, "DeepSeek-V3.2-Exp", section 1,
  "Prototype of DSA";
  :func:`~attnlib.blocks.sparse_attention.lightning_indexer`);
* ``"moba"``: MoBA's ``keys_per_query // block_size`` blocks (Lu et al. 2025,
  :func:`~attnlib.blocks.sparse_attention.moba_mask`), the query's own block among them
  (:func:`retrieval_runs` gives MoBA one block more than the others' keys: the queries' own
  block holds only queries, so its choosable keys equal the others' ``keys_per_query``).

:func:`train_retrieval` trains as DSA's two stages, in small: a dense warm-up, in which the
indexer learns from the KL loss to the main attention over all keys
(:func:`~attnlib.blocks.sparse_attention.indexer_kl_loss`) with its input detached, then
sparse training, in which the model attends to the selected keys only and the KL loss is
taken over them. The paper starts from a trained dense model and freezes it during the
warm-up; here the model and the indexer learn side by side in the warm-up (the indexer's loss
reaches the indexer only, either way). Every mode gets the same two stages.

:func:`attention_macs` counts the multiply-adds of each mode as the line grows, for a whole
causal layer or for one decoding step (the indexer is still quadratic: it scores every key,
with few heads of few features);
:func:`attention_seconds` times them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlib._checks import (
    check_choice,
    check_flag,
    check_instance,
    check_int,
    check_ints,
    check_positive,
    check_token_ids,
    shape_str,
)
from attnlib.blocks.sparse_attention import (
    indexer_kl_loss,
    lightning_indexer,
    moba_mask,
    sparse_attention,
    top_k_keys,
)
from attnlib.train.runs import Run

MODES = ("dense", "window", "topk", "moba")
"""The ways :class:`RetrievalModel` chooses the keys of each query."""

__all__ = ["MODES", "RetrievalConfig", "RetrievalModel", "RetrievalScore", "attention_macs",
           "attention_seconds", "macs_crossover", "retrieval_accuracy", "retrieval_runs", "retrieval_task",
           "train_retrieval"]


def retrieval_task(n: int, length: int, queries: int = 4, num_keys: int = 64,
                   num_values: int = 16, seed: int = 0) -> tuple[Tensor, Tensor, Tensor]:
    """``n`` lines of (key, value) tokens ending in ``queries`` queries; and the targets.

    The queried keys are drawn without repetition; each is planted once, at a random place in
    the first half of the line (before ``(length - queries) // 2``), with a random value; every
    other token has a key that is not queried and a random value. A query's value id is
    ``num_values`` (none).

    Shape:
        - output: keys (n, length) in [0, num_keys), values (n, length) in [0, num_values],
          targets (n, length): -100 except at the last ``queries`` places.

    Raises:
        TypeError: if an argument is not an int. ValueError: if a size is < 1, ``seed`` < 0,
            ``queries`` >= ``num_keys``, or the first half holds fewer than ``queries`` places.
    """
    for name, v in (("n", n), ("length", length), ("queries", queries),
                    ("num_keys", num_keys), ("num_values", num_values)):
        check_int(name, v, minimum=1)
    check_int("seed", seed, minimum=0)
    half = (length - queries) // 2
    if queries >= num_keys or half < queries:
        raise ValueError(f"queries must be < num_keys and fit twice before the queries, got "
                         f"queries = {queries}, num_keys = {num_keys}, length = {length}")
    g = torch.Generator().manual_seed(seed)
    order = torch.rand(n, num_keys, generator=g).argsort(1)  # (n, num_keys)
    asked, others = order[:, :queries], order[:, queries:]
    keys = others.gather(1, torch.randint(0, num_keys - queries, (n, length), generator=g))
    values = torch.randint(0, num_values, (n, length), generator=g)
    places = torch.rand(n, half, generator=g).argsort(1)[:, :queries]  # (n, queries)
    keys.scatter_(1, places, asked)
    keys[:, length - queries:] = asked
    values[:, length - queries:] = num_values
    targets = torch.full_like(keys, -100)
    targets[:, length - queries:] = values.gather(1, places)
    return keys, values, targets


def _check_sizes(mode: str, keys_per_query: int, dim: int, block_size: int,
                 **sizes: int) -> None:
    check_choice("mode", mode, MODES)
    for name, v in (("keys_per_query", keys_per_query), ("dim", dim),
                    ("block_size", block_size), *sizes.items()):
        check_int(name, v, minimum=1)
    if mode == "moba" and keys_per_query % block_size:
        raise ValueError(f"keys_per_query must be a multiple of block_size for MoBA, got "
                         f"{keys_per_query} and {block_size}")


class RetrievalModel(nn.Module):
    r"""One attention head that reads a value at each query, its keys chosen by ``mode``.

    A token's vector is the sum of its key's and its value's embeddings (D features); the
    query, key and value projections have D features; a linear layer maps the attention's
    output to the values. Only the query places are computed. The indexer (``"topk"``) has
    ``index_heads`` heads of ``index_dim`` features and a weight per head from the query
    token, and reads the embeddings detached. ``sparse`` (False at first) switches from the
    dense warm-up to the mode's own keys; ``"dense"`` stays dense.

    Shape:
        keys, values: (B, L); forward returns logits (B, Q, num_values) for the Q queries
        (values = num_values).

    Raises:
        ValueError: an unknown ``mode``, a size < 1, ``keys_per_query`` not a multiple of
            ``block_size`` (``"moba"``).
    """

    def __init__(self, mode: str, keys_per_query: int = 16, dim: int = 32,
                 num_keys: int = 64, num_values: int = 16, block_size: int = 4,
                 index_heads: int = 2, index_dim: int = 8) -> None:
        super().__init__()
        _check_sizes(mode, keys_per_query, dim, block_size, num_keys=num_keys,
                     num_values=num_values, index_heads=index_heads, index_dim=index_dim)
        self.mode, self.keys_per_query, self.block_size = mode, keys_per_query, block_size
        self.num_values, self.sparse = num_values, False
        self.key_embed = nn.Embedding(num_keys, dim)
        self.value_embed = nn.Embedding(num_values + 1, dim)
        self.q_proj, self.k_proj = nn.Linear(dim, dim, bias=False), nn.Linear(dim, dim, bias=False)
        self.v_proj = nn.Linear(dim, dim, bias=False)
        self.head = nn.Linear(dim, num_values)
        self.index_heads, self.index_dim = index_heads, index_dim
        self.index_q = nn.Linear(dim, index_heads * index_dim, bias=False)
        self.index_k = nn.Linear(dim, index_dim, bias=False)
        self.index_w = nn.Linear(dim, index_heads, bias=False)
        self.last: dict[str, Tensor] = {}

    def forward(self, keys: Tensor, values: Tensor, queries: int) -> Tensor:
        device = self.key_embed.weight.device
        keys = check_token_ids("keys", keys, self.key_embed.num_embeddings, device=device)
        values = check_token_ids("values", values, self.num_values + 1, device=device)
        if values.shape != keys.shape:
            raise ValueError(f"values must have the shape of keys, {shape_str(keys.shape)}, "
                             f"got {shape_str(values.shape)}")
        Q = check_int("queries", queries, minimum=1)
        if keys.shape[1] < Q:
            raise ValueError(f"keys must hold at least queries = {Q} places, got shape "
                             f"{shape_str(keys.shape)}")
        x = self.key_embed(keys) + self.value_embed(values)  # (B, L, D)
        B, L, D = x.shape
        q = self.q_proj(x[:, L - Q:]).unsqueeze(1)  # (B, 1, Q, D)
        k, v = self.k_proj(x).unsqueeze(1), self.v_proj(x).unsqueeze(1)  # (B, 1, L, D)
        place = torch.arange(L - Q, L, device=x.device).view(Q, 1)
        causal = torch.arange(L, device=x.device).view(1, L) <= place  # (Q, L)
        scores = (q @ k.transpose(-2, -1) / math.sqrt(D)).masked_fill(~causal, -math.inf)
        dense = torch.softmax(scores, dim=-1)  # (B, 1, Q, L)
        self.last = {"dense": dense}
        sparse = self.sparse and self.mode != "dense"
        if self.mode == "topk":
            xd = x.detach()[:, L - Q:]
            index = lightning_indexer(
                self.index_q(xd).view(B, Q, self.index_heads, self.index_dim),
                self.index_k(x.detach()), self.index_w(xd), is_causal=False)
            index = index.masked_fill(~causal, -math.inf)  # (B, Q, L)
            indices, valid = top_k_keys(index, self.keys_per_query)
            chosen = torch.zeros(B, Q, L, dtype=torch.bool, device=x.device).scatter_(
                -1, indices, valid)
            self.last.update(index=index, chosen=chosen)
            if sparse:
                out = sparse_attention(q, k, v, indices, valid)  # (B, 1, Q, D)
                logits: Tensor = self.head(out[:, 0])
                return logits
        elif self.mode == "window":
            chosen = causal & (torch.arange(L, device=x.device).view(1, L)
                               > place - self.keys_per_query)
            self.last["chosen"] = chosen.expand(B, Q, L)
        elif self.mode == "moba":
            q_all = self.q_proj(x).unsqueeze(1)  # MoBA's gate needs every query's block
            chosen = moba_mask(q_all, k, self.block_size,
                               self.keys_per_query // self.block_size)[:, 0, L - Q:]
            self.last["chosen"] = chosen
        else:
            self.last["chosen"] = causal.expand(B, Q, L)
        if sparse:
            weights = torch.softmax(scores.masked_fill(~self.last["chosen"].unsqueeze(1),
                                                       -math.inf), dim=-1)
        else:
            weights = dense
        logits = self.head((weights @ v)[:, 0])  # (B, Q, num_values)
        return logits


@dataclass(frozen=True)
class RetrievalConfig:
    """A :class:`RetrievalModel` for :func:`~attnlib.train.runs.train_runs` (a Trainable).

    Raises:
        ValueError: as :class:`RetrievalModel`.
    """

    mode: str
    keys_per_query: int = 16
    dim: int = 32
    block_size: int = 4

    def __post_init__(self) -> None:
        _check_sizes(self.mode, self.keys_per_query, self.dim, self.block_size)

    def build(self) -> RetrievalModel:
        return RetrievalModel(self.mode, self.keys_per_query, self.dim,
                              block_size=self.block_size)

    def fit(self, model: nn.Module, **options: Any) -> list[float]:
        check_instance("model", model, RetrievalModel, "a RetrievalModel")
        assert isinstance(model, RetrievalModel)
        return train_retrieval(model, **options)


def train_retrieval(model: RetrievalModel, warmup: int = 150, steps: int = 150,
                    length: int = 256, queries: int = 4, batch: int = 16, lr: float = 1e-2,
                    seed: int = 0) -> list[float]:
    """Train ``warmup`` steps dense (the indexer on the KL loss to the dense attention), then
    ``steps`` steps on the mode's own keys (the indexer on the KL loss over its keys).

    AdamW (no weight decay) at a constant ``lr``; fresh lines every step. The cross-entropy at
    the queries trains the model; the KL loss trains the indexer only (its input and target
    are detached).

    Returns:
        The cross-entropy of every step.

    Raises:
        TypeError: ``model`` not a :class:`RetrievalModel`, a size not an int. ValueError: a
            size < 1 (``warmup`` and ``steps`` may be 0), ``lr`` <= 0, as
            :func:`retrieval_task`.
    """
    check_instance("model", model, RetrievalModel, "a RetrievalModel")
    check_int("warmup", warmup, minimum=0)
    check_int("steps", steps, minimum=0)
    check_int("batch", batch, minimum=1)
    check_int("seed", seed, minimum=0)
    check_positive("lr", lr)
    num_keys, num_values = model.key_embed.num_embeddings, model.num_values
    retrieval_task(1, length, queries, num_keys, num_values)  # checks the sizes
    short = max(length // 8, 4 * queries)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    losses: list[float] = []
    for step in range(warmup + steps):
        model.sparse = step >= warmup
        size = short if step < warmup // 2 else length
        keys, values, targets = retrieval_task(batch, size, queries, num_keys, num_values,
                                               seed=seed * 100000 + step)
        logits = model(keys, values, queries)
        loss = F.cross_entropy(logits.flatten(0, 1), targets[:, -queries:].flatten())
        total = loss
        if model.mode == "topk":
            selected = model.last["chosen"] if model.sparse else None
            total = total + indexer_kl_loss(model.last["index"], model.last["dense"], selected)
        optimizer.zero_grad()
        total.backward()  # type: ignore[no-untyped-call]  # untyped in torch 2.13
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    return losses


def retrieval_runs(seeds: Sequence[int] = (0, 1, 2), keys_per_query: int = 16,
                   **options: Any) -> list[Run]:
    """The runs of the experiment for :func:`~attnlib.train.runs.train_runs`: every mode of
    :data:`MODES` at each seed (named by its mode; the seed both draws the weights and the
    lines), with :func:`train_retrieval`'s ``options``.

    MoBA gets ``keys_per_query // block_size + 1`` blocks: the queries sit together at the
    end of the line, so the block of each query (always chosen) holds only queries; the
    other blocks it chooses hold ``keys_per_query`` keys, as many as the window and top-k.

    Raises:
        TypeError, ValueError: a seed that is not an int >= 0, as :class:`RetrievalConfig`.
    """
    seeds = check_ints("seeds", seeds, minimum=0)
    check_int("keys_per_query", keys_per_query, minimum=1)
    block = RetrievalConfig.block_size
    return [Run(mode, RetrievalConfig(mode, keys_per_query + block * (mode == "moba")), seed,
                {"seed": seed, **options})
            for seed in seeds for mode in MODES]


@dataclass(frozen=True)
class RetrievalScore:
    """What :func:`retrieval_accuracy` measures: the share of queries answered right, the mean
    number of keys a query attends to, and the share of queries whose planted key is among
    them (its *reach*); and the share answered right among the queries that reach their key
    and among those that do not (NaN where there are none)."""

    accuracy: float
    keys_per_query: float
    reach: float
    accuracy_reached: float = math.nan
    accuracy_missed: float = math.nan


@torch.no_grad()
def retrieval_accuracy(model: RetrievalModel, length: int = 256, queries: int = 4,
                       n: int = 256, seed: int = 10**6) -> RetrievalScore:
    """The model on ``n`` fresh lines, with its own keys (sparse, unless ``"dense"``).

    Raises:
        TypeError: ``model`` not a :class:`RetrievalModel`; as :func:`retrieval_task`.
    """
    check_instance("model", model, RetrievalModel, "a RetrievalModel")
    keys, values, targets = retrieval_task(n, length, queries, model.key_embed.num_embeddings,
                                           model.num_values, seed=seed)
    was = model.sparse
    model.sparse = True
    try:
        right = model(keys, values, queries).argmax(-1) == targets[:, -queries:]
    finally:
        model.sparse = was
    chosen = model.last["chosen"]  # (n, Q, L)
    planted = keys[:, :length - queries].unsqueeze(1) == keys[:, -queries:].unsqueeze(-1)
    reach = (chosen[..., :length - queries] & planted).any(-1)  # (n, Q)

    def given(where: Tensor) -> float:
        return right[where].double().mean().item() if bool(where.any()) else math.nan

    return RetrievalScore(right.double().mean().item(), chosen.double().sum(-1).mean().item(),
                          reach.double().mean().item(), given(reach), given(~reach))


def attention_macs(length: int, mode: str, keys_per_query: int = 2048, dim: int = 576,
                   heads: int = 128, index_heads: int = 64, index_dim: int = 128,
                   block_size: int = 64, value_dim: int | None = 512,
                   decode: bool = False) -> int:
    r"""Multiply-adds of one causal attention layer over a line of ``length`` tokens, or with
    ``decode`` of one decoding step (one new query over a cache of ``length`` keys).

    Per query :math:`t` (from 0) and head: :math:`n_t (E + E_v)` for :math:`n_t` keys, a key
    of ``dim`` = E features and a value of ``value_dim`` = :math:`E_v` (None: E);
    :math:`n_t = t + 1` dense, :math:`\min(t + 1, k)` for a window and top-k. Top-k adds the
    indexer, :math:`(t + 1)(H^I d^I + H^I)` per query, once for all heads; MoBA adds its
    gate, one product of E per earlier block and head, and its ``keys_per_query`` keys. The
    projections are left out (the same for every mode). The defaults are DeepSeek-V3.2's
    sizes: k = 2048 keys, an indexer of 64 heads of 128 features, and its attention, MLA in
    the absorbed (MQA) form DSA runs in: 128 heads, each scoring a key of 576 numbers (512 of
    the latent, 64 of RoPE) and reading a value of 512 (the latent).

    Raises:
        TypeError: a size not an int. ValueError: a size < 1, an unknown ``mode``.
    """
    check_choice("mode", mode, MODES)
    for name, v in (("length", length), ("keys_per_query", keys_per_query), ("dim", dim),
                    ("heads", heads), ("index_heads", index_heads), ("index_dim", index_dim),
                    ("block_size", block_size)):
        check_int(name, v, minimum=1)
    if value_dim is not None:
        check_int("value_dim", value_dim, minimum=1)
    check_flag("decode", decode)
    L, k, E = length, keys_per_query, dim
    pair = E + (E if value_dim is None else value_dim)  # per (query, key) pair and head
    if decode:  # the query at place L - 1
        seen, capped = L, min(L, k)
        blocks = (L - 1) // block_size + 1
    else:
        seen = L * (L + 1) // 2  # sum over t of t + 1
        capped = k * (k + 1) // 2 + (L - k) * k if L > k else seen  # sum of min(t + 1, k)
        full, rest = divmod(L, block_size)  # sum over t of t // block_size + 1: earlier
        blocks = L + block_size * full * (full - 1) // 2 + rest * full  # blocks and own
    if mode == "dense":
        return heads * pair * seen
    if mode == "window":
        return heads * pair * capped
    if mode == "topk":
        return heads * pair * capped + seen * index_heads * (index_dim + 1)
    return heads * (E * blocks + pair * capped)


def macs_crossover(mode: str, longest: int = 2**24, **sizes: Any) -> int | None:
    """The shortest line (or cache, with ``decode=True``) from which on ``mode`` counts fewer
    multiply-adds than dense attention (:func:`attention_macs` with ``sizes``), or None up to
    ``longest`` tokens.

    Raises:
        TypeError, ValueError: as :func:`attention_macs`; ``mode`` ``"dense"``.
    """
    check_choice("mode", mode, ("window", "topk", "moba"))
    check_int("longest", longest, minimum=1)
    attention_macs(1, mode, **sizes)  # checks the sizes

    def wins(length: int) -> bool:
        return attention_macs(length, mode, **sizes) < attention_macs(length, "dense", **sizes)

    if not wins(longest):
        return None
    # no mode wins with at most k keys (they all read every key then); past k the gap grows
    low, high = min(sizes.get("keys_per_query", 2048), longest - 1), longest
    while high - low > 1:
        middle = (low + high) // 2
        if wins(middle):
            high = middle
        else:
            low = middle
    return high


@torch.no_grad()
def attention_seconds(length: int, mode: str, keys_per_query: int = 64, dim: int = 64,
                      heads: int = 8, index_heads: int = 2, index_dim: int = 16,
                      decode: bool = False, repeats: int = 3, seed: int = 0) -> float:
    """Seconds of one forward pass of attention over a line of ``length`` tokens (the fastest
    of ``repeats``), float32, batch 1; with ``decode``, of the last query only (one step of
    generation over a cache of ``length`` keys).

    ``"dense"``: PyTorch's ``scaled_dot_product_attention`` (causal). ``"window"`` and
    ``"topk"``: :func:`~attnlib.blocks.sparse_attention.sparse_attention` over the gathered
    keys (the last ``keys_per_query``, or those of the lightning indexer and
    :func:`~attnlib.blocks.sparse_attention.top_k_keys`, the indexer timed too). ``"moba"`` is
    not timed (attnlib's MoBA computes every score, then masks). The timings vary by machine:
    plot them or compare them coarsely; do not print them.

    Raises:
        TypeError: a size not an int. ValueError: a size < 1, ``keys_per_query`` > ``length``,
            an unknown mode or ``"moba"``.
    """
    check_choice("mode", mode, ("dense", "window", "topk"))
    for name, size in (("length", length), ("dim", dim), ("heads", heads),
                       ("index_heads", index_heads), ("index_dim", index_dim),
                       ("repeats", repeats)):
        check_int(name, size, minimum=1)
    check_int("keys_per_query", keys_per_query, minimum=1, maximum=length)
    check_flag("decode", decode)
    check_int("seed", seed, minimum=0)
    g = torch.Generator().manual_seed(seed)
    L, k = length, keys_per_query
    Q = 1 if decode else L
    q = torch.randn(1, heads, Q, dim, generator=g)
    kk, v = (torch.randn(1, heads, L, dim, generator=g) for _ in range(2))
    iq = torch.randn(1, Q, index_heads, index_dim, generator=g)
    ik = torch.randn(1, L, index_dim, generator=g)
    iw = torch.randn(1, Q, index_heads, generator=g)
    place = torch.arange(L - Q, L).view(Q, 1)
    window = (place - torch.arange(k).view(1, k)).view(1, Q, k)  # t, t - 1, ..., t - k + 1
    window_valid = window >= 0

    def run() -> Tensor:
        if mode == "dense":
            return F.scaled_dot_product_attention(q, kk, v, is_causal=not decode)
        if mode == "window":
            return sparse_attention(q, kk, v, window.clamp_min(0), window_valid)
        indices, valid = top_k_keys(lightning_indexer(iq, ik, iw, is_causal=not decode), k)
        return sparse_attention(q, kk, v, indices, valid)

    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best
