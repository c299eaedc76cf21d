r"""Training a Transformer as the paper does, on a small scale: the loop of chapter 7."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from attnlib._checks import check_flag, check_int, check_positive, check_probability
from attnlib.book.progress import progress
from attnlib.data import PAD_ID, Batch, TokenPair, Vocab, batches
from attnlib.train._arguments import check_model, check_pairs, check_vocabs
from attnlib.train.recipe import LabelSmoothingLoss, noam_schedule
from attnlib.train.seq2seq_loop import History

__all__ = ["TransformerHistory", "train_transformer"]


@dataclass
class TransformerHistory(History):
    """What :func:`train_transformer` did.

    ``losses[k]`` is the mean cross-entropy per target token (nats, *without* label smoothing,
    so comparable across smoothing settings) over epoch k + 1; ``learning_rates[k]`` the
    learning rate of the last step of that epoch; ``steps`` the optimiser steps taken.
    """

    learning_rates: list[float] = field(default_factory=list)
    steps: int = 0


def _to(batch: Batch, device: torch.device) -> Batch:
    """The batch's tensors on ``device``."""
    if device.type == "cpu":
        return batch
    return dataclasses.replace(batch, **{name: getattr(batch, name).to(device) for name in
                                         ("src", "src_lengths", "tgt_in", "tgt_out",
                                          "tgt_lengths")})


def _training_step(model: nn.Module, batch: Batch, criterion: nn.Module,
                   optimizer: torch.optim.Optimizer,
                   scheduler: torch.optim.lr_scheduler.LRScheduler,
                   clip: float | None) -> tuple[float, float]:
    """One optimiser step on one batch. Returns the batch's summed
    cross-entropy (without smoothing) and the learning rate it used."""
    # teacher forcing: the decoder reads <bos> y, the target shifted right
    logits = model(batch.src, batch.src_lengths, batch.tgt_in,
                   batch.tgt_lengths)  # (B, L, V): every position at once
    loss = criterion(logits, batch.tgt_out)  # y <eos>; <pad> ignored
    optimizer.zero_grad()
    loss.backward()
    if clip is not None:
        nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    lr = float(optimizer.param_groups[0]["lr"])  # the rate this step used
    scheduler.step()  # the next step's rate
    with torch.no_grad():
        ce = F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(),
                             ignore_index=PAD_ID, reduction="sum")
    return float(ce), lr


def train_transformer(
    model: nn.Module,
    pairs: Sequence[TokenPair],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    *,
    epochs: int,
    batch_size: int = 64,
    warmup: int = 400,
    lr_factor: float = 1.0,
    label_smoothing: float = 0.1,
    clip: float | None = 1.0,
    seed: int = 0,
    by_length: bool = False,
    callback: Callable[[int, float], bool | None] | None = None,
    desc: str | None = None,
) -> TransformerHistory:
    r"""Train an :class:`attnlib.models.transformer.model.Transformer` as the paper does, on a small scale.

    Teacher forcing: the decoder reads ``tgt_in`` = ``<bos>`` y (the target shifted right) and
    learns to predict ``tgt_out`` = y ``<eos>`` at every position at once, the causal mask
    keeping each position from seeing its answer. The loss is :class:`~attnlib.train.recipe.LabelSmoothingLoss`
    (``label_smoothing``, ``<pad>`` ignored); Adam with :math:`\beta_1 = 0.9`,
    :math:`\beta_2 = 0.98`, :math:`\epsilon = 10^{-9}`; the learning rate of :func:`~attnlib.train.recipe.noam_lr`
    (``d_model`` from ``model.config``, ``warmup`` steps, times ``lr_factor``), updated every
    step; gradients clipped to norm ``clip`` (None: no clipping).

    Deterministic given ``seed`` and the model's initial weights: epoch k visits the pairs in
    the order of ``random.Random(seed + k)`` and dropout draws from ``torch.manual_seed(seed)``
    inside ``torch.random.fork_rng``, so the caller's global random state is left as it was
    (on CPU). Progress is shown with :func:`~attnlib.book.progress.progress` (silent when ``ATTNLIB_PROGRESS=0``).
    The model is left in eval mode.

    Args:
        model: a Transformer (``model(src, src_lengths, tgt_in, tgt_lengths)`` gives logits
            (B, L, V) and ``model.config.d_model`` exists).
        pairs: training pairs (anything with ``src`` and ``tgt`` token sequences).
        epochs: passes over ``pairs``.
        by_length: batches of pairs of similar source length (``batches(by_length=True)``),
            so that little of each batch is padding.
        callback: called after each epoch as ``callback(epoch, loss)``, epoch from 1;
            returning True stops training (e.g. once a validation score is reached).
        desc: the progress bar's label.

    Returns:
        The :class:`TransformerHistory`.

    Raises:
        TypeError, ValueError: for an ``epochs``, ``batch_size`` or ``warmup`` that is not an
            int >= 1, an ``lr_factor`` or ``clip`` not finite and > 0, a ``label_smoothing``
            not in [0, 1), a model without ``config.d_model``, or bad ``pairs`` (see
            :func:`attnlib.data.batches`; sentences longer than the model's ``max_len``).
    """
    check_int("epochs", epochs, minimum=1)
    check_int("batch_size", batch_size, minimum=1)
    if clip is not None:
        check_positive("clip", clip)
    check_int("warmup", warmup, minimum=1)
    check_positive("lr_factor", lr_factor)
    check_probability("label_smoothing", label_smoothing)
    check_int("seed", seed, minimum=0)
    check_flag("by_length", by_length)
    config = getattr(model, "config", None)
    d_model = getattr(config, "d_model", None)
    if not isinstance(d_model, int):
        raise TypeError(f"model must have config.d_model (a Transformer), got "
                        f"{type(model).__name__}")
    max_len = getattr(config, "max_len", None)
    check_model(model, 4, "model(src, src_lengths, tgt_in, tgt_lengths)")
    check_pairs("pairs", pairs)
    check_vocabs(src_vocab, tgt_vocab)
    criterion = LabelSmoothingLoss(label_smoothing, ignore_index=PAD_ID)
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, noam_schedule(d_model, warmup, lr_factor)
    )
    device = next(model.parameters()).device
    history = TransformerHistory()
    start = time.perf_counter()
    model.train()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        bar = progress(range(epochs), total=epochs, desc=desc or "training", unit="epoch")
        for epoch in bar:
            total_loss, total_tokens = 0.0, 0
            for batch in batches(pairs, src_vocab, tgt_vocab, batch_size, shuffle=True,
                                 seed=seed + epoch, max_len=max_len, by_length=by_length):
                ce, lr = _training_step(model, _to(batch, device), criterion, optimizer,
                                        scheduler, clip)
                history.steps += 1
                total_loss += ce
                total_tokens += int(batch.tgt_lengths.sum())
            history.losses.append(total_loss / total_tokens)
            history.learning_rates.append(lr)
            if hasattr(bar, "set_postfix"):
                bar.set_postfix(loss=f"{history.losses[-1]:.4f}")
            if callback is not None and callback(epoch + 1, history.losses[-1]):
                break
    history.seconds = time.perf_counter() - start
    model.eval()
    return history
