r"""Associative recall: key-value pairs, then queries; and a memory written without training.

:func:`recall_task` writes ``pairs`` key-value pairs as tokens, ``k1 v1 k2 v2 ...``, then
``queries`` keys drawn from them; the target at a query is its value. Keys are ids
[0, num_keys), values [num_keys, num_keys + num_values), all drawn without repetition within
a line. A model must store every pair as it reads it and find one later: softmax attention
keeps them all in its cache, a linear-attention or delta-rule layer in a state of fixed size.

:func:`recall_model` builds one-layer softmax, linear-attention and DeltaNet models (and a
DeltaNet + attention hybrid) with the same short convolution before q, k, v;
:func:`train_recall` trains them with a curriculum of growing lines. A :class:`RecallConfig`
describes one such model for :func:`attnlib.train.runs.train_runs`, which trains several side
by side in worker processes.

:func:`write_and_read` is the same question without training: ``pairs`` random unit keys in
``dim`` dimensions and Gaussian values written into a memory by accumulation
(:math:`M \mathrel{+}= k v^\top`) or by the delta rule, then read back with each key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlib._checks import check_choice, check_instance, check_int, check_positive
from attnlib.blocks.delta_rule import DeltaNet, delta_rule_recurrent
from attnlib.blocks.gated_attention import CausalSelfAttention
from attnlib.models.mixer_lm import MixerLM

KINDS = ("softmax", "linear", "delta", "accumulate", "gated", "hybrid")
"""The recall models :func:`recall_model` builds."""

__all__ = ["KINDS", "RecallConfig", "recall_accuracy", "recall_model", "recall_task", "train_recall",
           "write_and_read"]


def recall_task(n: int, pairs: int, queries: int = 8, num_keys: int = 64,
                num_values: int = 64, seed: int = 0) -> tuple[Tensor, Tensor]:
    """``n`` lines of ``pairs`` key-value pairs and ``queries`` queries; and the targets.

    Shape:
        - output: tokens (n, 2 pairs + queries); targets the same, -100 except at queries

    Raises:
        TypeError: if an argument is not an int. ValueError: if a size is < 1, ``seed`` < 0,
            ``pairs`` exceeds ``num_keys`` or ``num_values``, or ``queries`` exceeds ``pairs``.
    """
    for name, v in (("n", n), ("pairs", pairs), ("queries", queries),
                    ("num_keys", num_keys), ("num_values", num_values)):
        check_int(name, v, minimum=1)
    check_int("seed", seed, minimum=0)
    if pairs > min(num_keys, num_values) or queries > pairs:
        raise ValueError(f"pairs must be <= num_keys and num_values, and queries <= pairs, "
                         f"got pairs = {pairs}, queries = {queries}, num_keys = {num_keys}, "
                         f"num_values = {num_values}")
    g = torch.Generator().manual_seed(seed)
    keys = torch.rand(n, num_keys, generator=g).argsort(1)[:, :pairs]  # (n, pairs)
    values = num_keys + torch.rand(n, num_values, generator=g).argsort(1)[:, :pairs]
    asked = torch.rand(n, pairs, generator=g).argsort(1)[:, :queries]  # pair indices
    tokens = torch.cat((torch.stack((keys, values), 2).flatten(1),
                        keys.gather(1, asked)), dim=1)  # (n, 2 pairs + queries)
    targets = torch.full_like(tokens, -100)
    targets[:, 2 * pairs:] = values.gather(1, asked)
    return tokens, targets


def recall_model(kind: str, dim: int = 32, num_heads: int = 1, conv_size: int = 2,
                 seed: int | None = 0) -> MixerLM:
    """A recall model: one layer of ``kind``, or ``"hybrid"`` (a DeltaNet layer, then attention).

    ``kind`` is ``"softmax"``
    (:class:`~attnlib.blocks.gated_attention.CausalSelfAttention`), ``"linear"`` (chapter 9's
    linear attention, ``DeltaNet(rule="linear")``), ``"delta"``
    (:class:`~attnlib.blocks.delta_rule.DeltaNet`), ``"accumulate"`` (DeltaNet's keys, values
    and beta with ``M += beta k v^T``, ``DeltaNet(rule="accumulate")``),
    ``"gated"`` (Gated DeltaNet, ``DeltaNet(gated=True)``) or ``"hybrid"``.
    Every layer gets the same short causal convolution of ``conv_size`` taps before q, k, v,
    so a key read at a value's token can carry the key token before it. The vocabulary is
    :func:`recall_task`'s default 64 keys and 64 values. ``seed`` seeds torch's generator
    before the weights are drawn; ``None`` leaves the generator as it is.

    Raises:
        ValueError: if ``kind`` is unknown or a size is < 1.
    """
    check_choice("kind", kind, KINDS)
    for name, v in (("dim", dim), ("num_heads", num_heads), ("conv_size", conv_size)):
        check_int(name, v, minimum=1)
    if seed is not None:
        torch.manual_seed(check_int("seed", seed, minimum=0))

    def layer(k: str) -> nn.Module:
        if k == "softmax":
            return CausalSelfAttention(dim, num_heads, conv_size=conv_size)
        if k == "gated":
            return DeltaNet(dim, num_heads, gated=True, conv_size=conv_size)
        return DeltaNet(dim, num_heads, rule=k, conv_size=conv_size)

    kinds = ["delta", "softmax"] if kind == "hybrid" else [kind]
    model = MixerLM(128, [layer(k) for k in kinds], d_ff=2 * dim)
    for mixer in list(model.modules()):
        if isinstance(mixer, CausalSelfAttention | DeltaNet) and mixer.conv is not None:
            mixer.conv = _ShortConv.of(mixer.conv)
    return model


class _ShortConv(nn.Conv1d):
    """A depthwise convolution without bias, computed as ``K`` shifted products.

    The same function and parameters as the ``nn.Conv1d`` it replaces: on a CPU without oneDNN
    (:func:`~attnlib.book.repro.fix_cpu_kernels` turns it off), PyTorch computes a depthwise
    convolution of 2 taps several times slower than these products, forward and backward.
    """

    @classmethod
    def of(cls, conv: nn.Conv1d) -> _ShortConv:
        if conv.bias is not None or not conv.in_channels == conv.out_channels == conv.groups:
            raise ValueError("only a depthwise convolution without bias has a _ShortConv")
        short = cls(conv.in_channels, conv.out_channels, conv.kernel_size[0],
                    groups=conv.groups, bias=False, device="meta")
        short.weight = conv.weight  # the same parameter, not a copy
        return short

    def forward(self, x: Tensor) -> Tensor:  # (B, C, K - 1 + L) -> (B, C, L)
        taps = self.weight[:, 0]  # (C, K)
        length = x.shape[-1] - taps.shape[1] + 1
        out = x[..., :length] * taps[:, :1]
        for j in range(1, taps.shape[1]):
            out = out + x[..., j:j + length] * taps[:, j:j + 1]
        return out


@dataclass(frozen=True)
class RecallConfig:
    """A recall model for :func:`~attnlib.train.runs.train_runs`: :func:`recall_model`'s sizes.

    ``build`` draws the weights from torch's generator as it stands (``train_runs`` seeds it
    with the run's ``init_seed``); ``fit`` is :func:`train_recall` with the run's options.

    Raises:
        TypeError: if a size is not an int. ValueError: if ``kind`` is unknown or a size
            is < 1.
    """

    kind: str
    dim: int = 32
    num_heads: int = 1
    conv_size: int = 2

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, KINDS)
        for name in ("dim", "num_heads", "conv_size"):
            check_int(name, getattr(self, name), minimum=1)

    def build(self) -> MixerLM:
        return recall_model(self.kind, self.dim, self.num_heads, self.conv_size, seed=None)

    def fit(self, model: nn.Module, **options: Any) -> list[float]:
        if not isinstance(model, MixerLM):
            raise TypeError(f"model must be a MixerLM, got {type(model).__name__}")
        return train_recall(model, **options)


def train_recall(model: MixerLM, steps: int = 250, max_pairs: int = 32, lr: float = 2e-2,
                 batch: int = 32, seed: int = 0) -> list[float]:
    """Train on lines of 1 to n pairs, every pair asked; n rises from 4 to ``max_pairs``.

    A curriculum: at step s the number of pairs is drawn uniformly from 1 to
    ``min(max_pairs, max(4, max_pairs (s + 1) / (steps / 2)))``, so the longest lines come in
    the second half. AdamW (no weight decay), one-cycle rate peaking at ``lr``.

    Returns:
        The training loss of every step.

    Raises:
        TypeError: if ``model`` is not a :class:`~attnlib.models.mixer_lm.MixerLM` or a size
            not an int. ValueError: if a size is < 1, ``max_pairs`` > 64 (the keys of
            :func:`recall_task`) or ``lr`` <= 0.
    """
    check_instance("model", model, MixerLM, "a MixerLM")
    check_int("steps", steps, minimum=1)
    check_int("max_pairs", max_pairs, minimum=1, maximum=64)  # recall_task's 64 keys
    check_int("batch", batch, minimum=1)
    check_int("seed", seed, minimum=0)
    check_positive("lr", lr)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, lr, total_steps=steps,
                                                   pct_start=0.1)
    g = torch.Generator().manual_seed(seed + 12345)
    model.train()
    losses: list[float] = []
    for step in range(steps):
        cap = min(max_pairs, max(4, int(max_pairs * (step + 1) / (0.5 * steps))))
        pairs = int(torch.randint(1, cap + 1, (), generator=g).item())
        tokens, targets = recall_task(batch, pairs, pairs, seed=seed * 100000 + step)
        loss = F.cross_entropy(model(tokens).flatten(0, 1), targets.flatten(),
                               ignore_index=-100)
        optimizer.zero_grad()
        loss.backward()  # type: ignore[no-untyped-call]  # untyped in torch 2.13
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
    model.eval()
    return losses


@torch.no_grad()
def recall_accuracy(model: MixerLM, pairs: int, n: int = 200, seed: int = 10**6
                    ) -> tuple[float, Tensor]:
    """Share of queries answered right; and the share by the asked pair's place (oldest first).

    Every pair is asked once (``queries = pairs``).

    Shape:
        - second output: (pairs,)

    Raises:
        TypeError: if ``model`` is not a :class:`~attnlib.models.mixer_lm.MixerLM`; as
            :func:`recall_task` for the others.
    """
    check_instance("model", model, MixerLM, "a MixerLM")
    tokens, targets = recall_task(n, pairs, pairs, seed=seed)
    right = model(tokens)[:, 2 * pairs:].argmax(-1) == targets[:, 2 * pairs:]  # (n, pairs)
    keys = tokens[:, 0:2 * pairs:2]  # (n, pairs): the keys in the order written
    place = (tokens[:, 2 * pairs:, None] == keys[:, None, :]).double().argmax(-1)
    by_place = torch.zeros(pairs, dtype=torch.float64).index_add_(
        0, place.flatten(), right.double().flatten()) / n
    return right.double().mean().item(), by_place


def write_and_read(pairs: int, dim: int, rule: str, seed: int = 0) -> Tensor:
    r"""Write ``pairs`` (unit key, random value) pairs into a ``dim`` x ``dim`` memory; read back.

    ``rule`` is ``"sum"`` (linear attention's :math:`M \mathrel{+}= k v^\top`) or
    ``"delta"`` (the delta rule with :math:`\beta = 1`). Keys and values are Gaussian, the
    keys scaled to length 1. Returns, for each pair in the order written, the relative error
    of what its key reads: :math:`\lVert M^\top k_i - v_i \rVert / \lVert v_i \rVert`.

    Shape:
        - output: (pairs,)

    Raises:
        TypeError: if a size is not an int. ValueError: if one is < 1, ``seed`` < 0 or
            ``rule`` is unknown.
    """
    check_int("pairs", pairs, minimum=1)
    check_int("seed", seed, minimum=0)
    check_int("dim", dim, minimum=1)
    check_choice("rule", rule, ("sum", "delta"))
    g = torch.Generator().manual_seed(seed)
    keys = F.normalize(torch.randn(1, 1, pairs, dim, generator=g, dtype=torch.float64), dim=-1)
    values = torch.randn(1, 1, pairs, dim, generator=g, dtype=torch.float64)
    if rule == "sum":
        memory = keys[0, 0].T @ values[0, 0]  # (dim, dim): every k v^T added
    else:
        beta = torch.ones(1, 1, pairs, dtype=torch.float64)
        memory = delta_rule_recurrent(keys, keys, values, beta)[1][0, 0]
    read = keys[0, 0] @ memory  # (pairs, dim): row i = what key i reads
    error: Tensor = (read - values[0, 0]).norm(dim=-1) / values[0, 0].norm(dim=-1)
    return error
