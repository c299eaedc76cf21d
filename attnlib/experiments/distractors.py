r"""Retrieval among distractors: how much weight one softmax and a difference of two put on the
answer.

The DIFF Transformer (Ye et al., "Differential Transformer", ICLR 2025) subtracts a second
softmax map from the first, :math:`(\operatorname{softmax}(Q_1K_1^\top/\sqrt d) - \lambda
\operatorname{softmax}(Q_2K_2^\top/\sqrt d))V`, and reports that the difference cancels the
weight a softmax leaves on irrelevant context (its "attention noise"): on their key-retrieval
probes the DIFF Transformer puts more of its attention on the answer span than a Transformer.

:func:`distractor_task` writes lines of tokens that each carry a two-part key
:math:`(a, b)` and a value; the last token asks for the value of one key :math:`(a^*, b^*)`,
held by exactly one earlier token. ``distractors`` tokens share :math:`a^*` (with another
:math:`b`) and as many share :math:`b^*`: each matches the query half-way, so a single
softmax whose logit adds the two matches leaves weight on them. :class:`DistractorModel` is
one attention layer, ``"softmax"`` (one head) or ``"diff"`` (one differential head of the same
width, :func:`~attnlib.blocks.stable_attention.differential_attention`, with the paper's
learnable :math:`\lambda`); :func:`answer_weights` measures the query's signed weights: on the answer,
net on the distractors, on the query's own place (it holds the asked key too), and the negative
weight the difference spreads over the line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlib._checks import (
    check_choice,
    check_instance,
    check_int,
    check_ints,
    check_positive,
    check_token_ids,
    shape_str,
)
from attnlib.blocks.stable_attention import differential_attention
from attnlib.train.runs import Run

KINDS = ("softmax", "diff")
"""The attention of :class:`DistractorModel`: one softmax, or a difference of two."""

__all__ = ["KINDS", "DistractorConfig", "DistractorModel", "DistractorWeights", "answer_weights",
           "distractor_runs", "distractor_task", "train_distractors"]


def distractor_task(n: int, length: int = 64, distractors: int = 8, parts: int = 8,
                    num_values: int = 16, seed: int = 0) -> tuple[Tensor, Tensor, Tensor]:
    """``n`` lines of ``length`` tokens, the last a query; the key halves, the values, the
    answer's place.

    A key is two halves (a, b), each in [0, ``parts``). The query's key is held by one token
    (the answer, at a random place); ``distractors`` tokens hold (a*, b) with b != b* and as
    many hold (a, b*) with a != a*; every other token holds a != a* and b != b*. Values are
    random in [0, ``num_values``); the query's value is ``num_values`` (none).

    Shape:
        - output: halves (n, length, 2), values (n, length), answer (n,), long

    Raises:
        TypeError: an argument that is not an int. ValueError: a size < 1 (``distractors`` may
            be 0), ``parts`` < 2, or a line too short for the answer and the distractors.
    """
    for name, v in (("n", n), ("length", length), ("num_values", num_values)):
        check_int(name, v, minimum=1)
    check_int("distractors", distractors, minimum=0)
    check_int("parts", parts, minimum=2)
    check_int("seed", seed, minimum=0)
    if length < 2 * distractors + 2:
        raise ValueError(f"length must hold the query, the answer and 2 distractors = "
                         f"{2 * distractors} distractors, got length = {length}")
    g = torch.Generator().manual_seed(seed)
    asked = torch.randint(0, parts, (n, 1, 2), generator=g)  # (n, 1, 2): a*, b*
    other = (asked + torch.randint(1, parts, (n, length, 2), generator=g)) % parts  # != a*, b*
    halves = other.clone()
    places = torch.rand(n, length - 1, generator=g).argsort(1)  # (n, length - 1)
    answer = places[:, 0]
    share_a = places[:, 1:1 + distractors]  # a = a*, b != b*
    share_b = places[:, 1 + distractors:1 + 2 * distractors]  # a != a*, b = b*
    rows = torch.arange(n).view(n, 1)
    halves[rows, share_a, 0] = asked[:, :, 0].expand(n, distractors)
    halves[rows, share_b, 1] = asked[:, :, 1].expand(n, distractors)
    halves[torch.arange(n), answer] = asked[:, 0]
    halves[:, -1] = asked[:, 0]
    values = torch.randint(0, num_values, (n, length), generator=g)
    values[:, -1] = num_values
    return halves, values, answer


class DistractorModel(nn.Module):
    r"""One attention layer reading the value at the last token, ``"softmax"`` or ``"diff"``.

    A token's vector is the sum of embeddings of its key's two halves and of its value (D
    features). ``"softmax"``: one head with queries and keys of D features. ``"diff"``: one
    differential head, the D query and key features split in two halves of D / 2, and
    :math:`\lambda = e^{\lambda_{q_1}\cdot\lambda_{k_1}} - e^{\lambda_{q_2}\cdot\lambda_{k_2}}
    + 0.8 - 0.6 e^{0}` (layer 1: :math:`\lambda_{\text{init}} = 0.2`) as in the paper. Both read
    values of D features and map them to the values' logits. ``last_weights`` keeps the query's
    weights over the line (B, L) after each forward: for ``"diff"`` the difference of the maps.

    Shape:
        halves (B, L, 2), values (B, L); returns logits (B, num_values).

    Raises:
        ValueError: an unknown kind, a size < 1, an odd ``dim`` for ``"diff"``.
    """

    def __init__(self, kind: str = "softmax", dim: int = 32, parts: int = 8,
                 num_values: int = 16) -> None:
        super().__init__()
        _check_sizes(kind, dim)
        check_int("parts", parts, minimum=2)
        check_int("num_values", num_values, minimum=1)
        self.kind, self.parts, self.num_values = kind, parts, num_values
        self.first_half, self.second_half = nn.Embedding(parts, dim), nn.Embedding(parts, dim)
        self.value_embed = nn.Embedding(num_values + 1, dim)
        self.q_proj, self.k_proj = nn.Linear(dim, dim, bias=False), nn.Linear(dim, dim, bias=False)
        self.v_proj = nn.Linear(dim, dim, bias=False)
        self.head = nn.Linear(dim, num_values)
        self.lambda_init = 0.2  # 0.8 - 0.6 exp(-0.3 (l - 1)) at layer l = 1
        self.lambdas = nn.Parameter(torch.randn(4, dim // 2) * 0.1)  # q1, k1, q2, k2
        self.last_weights = torch.zeros(0)

    @property
    def lam(self) -> Tensor:
        r""":math:`\lambda` (a 0-d tensor; ``"diff"`` only uses it)."""
        q1, k1, q2, k2 = self.lambdas
        return torch.exp(q1 @ k1) - torch.exp(q2 @ k2) + self.lambda_init

    def forward(self, halves: Tensor, values: Tensor) -> Tensor:
        device = self.value_embed.weight.device
        halves = check_token_ids("halves", halves, self.parts, ndim=3, expected="(B, L, 2)",
                                 device=device)
        values = check_token_ids("values", values, self.num_values + 1, device=device)
        if halves.shape[2] != 2 or halves.shape[:2] != values.shape or values.shape[1] == 0:
            raise ValueError(f"halves must have shape (B, L, 2) and values (B, L), L >= 1, got "
                             f"{shape_str(halves.shape)} and {shape_str(values.shape)}")
        x = (self.first_half(halves[..., 0]) + self.second_half(halves[..., 1])
             + self.value_embed(values))  # (B, L, D)
        B, L, D = x.shape
        q = self.q_proj(x[:, -1:]).unsqueeze(1)  # (B, 1, 1, D): the query only
        k, v = self.k_proj(x).unsqueeze(1), self.v_proj(x).unsqueeze(1)  # (B, 1, L, D)
        if self.kind == "softmax":
            weights = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(D), dim=-1)
        else:
            eye = torch.eye(L, dtype=x.dtype, device=x.device).expand(B, 1, L, L)
            weights = differential_attention(q, k, eye, self.lam)  # (B, 1, 1, L): the weights
        self.last_weights = weights[:, 0, 0].detach()  # (B, L)
        logits: Tensor = self.head((weights @ v)[:, 0, 0])  # (B, num_values)
        return logits


def _check_sizes(kind: str, dim: int) -> None:
    check_choice("kind", kind, KINDS)
    check_int("dim", dim, minimum=1)
    if kind == "diff" and dim % 2:
        raise ValueError(f"dim must be even for a differential head (two halves), got {dim}")


@dataclass(frozen=True)
class DistractorConfig:
    """A :class:`DistractorModel` for :func:`~attnlib.train.runs.train_runs` (a Trainable).

    Raises:
        ValueError: as :class:`DistractorModel`.
    """

    kind: str
    dim: int = 32

    def __post_init__(self) -> None:
        _check_sizes(self.kind, self.dim)

    def build(self) -> DistractorModel:
        return DistractorModel(self.kind, self.dim)

    def fit(self, model: nn.Module, **options: Any) -> list[float]:
        check_instance("model", model, DistractorModel, "a DistractorModel")
        assert isinstance(model, DistractorModel)
        return train_distractors(model, **options)


def train_distractors(model: DistractorModel, steps: int = 300, length: int = 64,
                      distractors: int = 8, batch: int = 32, lr: float = 1e-2, seed: int = 0
                      ) -> list[float]:
    """Train on :func:`distractor_task` lines with AdamW (no weight decay) at a constant
    ``lr``; return the cross-entropy of every step.

    Raises:
        TypeError: ``model`` not a :class:`DistractorModel`, a size not an int. ValueError: a
            size < 1, ``lr`` <= 0, as :func:`distractor_task`.
    """
    check_instance("model", model, DistractorModel, "a DistractorModel")
    check_int("steps", steps, minimum=1)
    check_int("batch", batch, minimum=1)
    check_int("seed", seed, minimum=0)
    check_positive("lr", lr)
    distractor_task(1, length, distractors, model.parts, model.num_values)  # checks the sizes
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    losses: list[float] = []
    for step in range(steps):
        halves, values, answer = distractor_task(batch, length, distractors, model.parts,
                                                 model.num_values, seed=seed * 100000 + step)
        target = values.gather(1, answer.view(-1, 1)).flatten()
        loss = F.cross_entropy(model(halves, values), target)
        optimizer.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]  # untyped in torch 2.13
        optimizer.step()
        losses.append(loss.item())
    model.eval()
    return losses


@dataclass(frozen=True)
class DistractorWeights:
    """What :func:`answer_weights` measures, means over the lines: the query's signed weight
    on the answer, the net (signed) weight on the half-matching distractors, the weight on the
    query's own place (it holds the asked key too: a full match), the sum of the negative
    weights (0 for one softmax), and the share answered right."""

    answer: float
    distractors: float
    own: float
    negative: float
    accuracy: float


@torch.no_grad()
def answer_weights(model: DistractorModel, length: int = 64, distractors: int = 8, n: int = 256,
                   seed: int = 10**6) -> DistractorWeights:
    r"""On ``n`` fresh lines: the query's signed weights :math:`w_s` (one softmax's, or the
    difference of the two maps, which may be negative) summed over the answer, over the
    ``2 distractors`` half-matching tokens, and over the query's own place; the sum of the
    negative weights over the line; and the accuracy. The weights of a line sum to 1 for one
    softmax and to :math:`1 - \lambda` for the difference.

    Raises:
        TypeError: ``model`` not a :class:`DistractorModel`; as :func:`distractor_task`.
    """
    check_instance("model", model, DistractorModel, "a DistractorModel")
    halves, values, answer = distractor_task(n, length, distractors, model.parts,
                                             model.num_values, seed=seed)
    right = model(halves, values).argmax(-1) == values.gather(1, answer.view(-1, 1)).flatten()
    w = model.last_weights.double()  # (n, L), signed
    on_answer = w.gather(1, answer.view(-1, 1)).flatten()
    half_match = (halves == halves[:, -1:]).sum(-1) == 1  # (n, L): one half of the key
    on_distractors = (w * half_match).sum(-1)
    return DistractorWeights(on_answer.mean().item(), on_distractors.mean().item(),
                             w[:, -1].mean().item(), w.clamp_max(0).sum(-1).mean().item(),
                             right.double().mean().item())


def distractor_runs(seeds: Sequence[int] = (0, 1, 2), **options: Any) -> list[Run]:
    """The runs for :func:`~attnlib.train.runs.train_runs`: ``"softmax"`` and ``"diff"`` at each
    seed (named by kind), with :func:`train_distractors`'s ``options``.

    Raises:
        TypeError, ValueError: seeds not ints >= 0.
    """
    seeds = check_ints("seeds", seeds, minimum=0)
    return [Run(kind, DistractorConfig(kind), seed, {"seed": seed, **options})
            for seed in seeds for kind in KINDS]
