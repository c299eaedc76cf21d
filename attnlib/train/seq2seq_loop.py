r"""Training an encoder-decoder by teacher forcing: the loop of chapter 4's recurrent models.

:func:`train_seq2seq` works with any model whose ``forward(src, src_lengths, tgt_in)`` returns
logits (B, L, V), or a tuple whose first element is the logits. Progress bars come from
:mod:`attnlib.book.progress`: a reader sees them, stored outputs never hold them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlib._checks import check_flag, check_int, check_positive
from attnlib.book.progress import progress
from attnlib.data import PAD_ID, TokenPair, Vocab, batches
from attnlib.train._arguments import check_model, check_pairs, check_vocabs

__all__ = ["History", "train_seq2seq"]


@dataclass
class History:
    """What :func:`train_seq2seq` did.

    ``losses[k]`` is the mean cross-entropy per target token (nats) over epoch k + 1, computed
    on the fly during the epoch. ``seconds`` is the wall-clock training time, which differs
    between machines: print it only in cells whose output is not compared.
    """

    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def epochs(self) -> int:
        return len(self.losses)


def _logits_of(output: Tensor | tuple[Tensor, ...]) -> Tensor:
    return output[0] if isinstance(output, tuple) else output


def train_seq2seq(
    model: nn.Module,
    pairs: Sequence[TokenPair],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    *,
    epochs: int,
    batch_size: int = 64,
    lr: float = 3e-3,
    clip: float | None = 1.0,
    seed: int = 0,
    callback: Callable[[int, float], bool | None] | None = None,
    desc: str | None = None,
    by_length: bool = False,
    lr_schedule: str = "constant",
) -> History:
    r"""Train an encoder-decoder by teacher forcing with Adam.

    Each step minimises the cross-entropy of the next target word given the true previous ones,

    .. math::

        \mathcal L = -\frac{1}{N} \sum_{b} \sum_{t=1}^{n_b + 1} \log p(y_{b,t} \mid y_{b,<t}, \mathbf x_b),

    where :math:`y_{b, n_b+1}` is ``<eos>`` and N counts the real target tokens (``<pad>`` is
    ignored). Gradients are clipped to norm ``clip`` (None: no clipping). Epoch k (from 0) visits
    the pairs in the order shuffled by ``random.Random(seed + k)``, so a run is reproducible and
    each epoch has a new order.

    Args:
        model: maps ``(src, src_lengths, tgt_in)`` to logits (B, L, V) or a tuple starting with them.
        pairs: training pairs (anything with ``src`` and ``tgt`` token sequences).
        epochs: number of passes over ``pairs``.
        callback: called after each epoch as ``callback(epoch, loss)`` with epoch from 1;
            returning True stops training.
        desc: the progress bar's label.
        by_length: batch pairs of similar source length together (see
            :func:`attnlib.data.batches`), so a recurrent model runs few padded steps.
        lr_schedule: ``"constant"`` (``lr`` at every step) or ``"cosine"``: step k of T (from
            0, T = ``epochs`` times the batches per epoch) uses
            :math:`\mathrm{lr}\cdot\tfrac12\,(1 + \cos(\pi k / T))`, from ``lr`` down to
            almost 0 {Loshchilov 2017}.

    Returns:
        The :class:`History` of epoch losses and the training time.

    Raises:
        TypeError, ValueError: for an ``epochs`` or ``batch_size`` that is not an int >= 1, an
            ``lr`` or ``clip`` that is not finite and > 0, or bad ``pairs`` (see
            :func:`attnlib.data.batches`).
    """
    check_int("epochs", epochs, minimum=1)
    check_int("batch_size", batch_size, minimum=1)
    check_positive("lr", lr)
    if clip is not None:
        check_positive("clip", clip)
    if lr_schedule not in ("constant", "cosine"):
        raise ValueError(f"lr_schedule must be 'constant' or 'cosine', got {lr_schedule!r}")
    check_int("seed", seed, minimum=0)
    check_flag("by_length", by_length)
    check_model(model, 3, "model(src, src_lengths, tgt_in)")
    check_pairs("pairs", pairs)
    check_vocabs(src_vocab, tgt_vocab)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    total_steps = epochs * math.ceil(len(pairs) / batch_size)
    step = 0
    history = History()
    start = time.perf_counter()
    model.train()
    bar = progress(range(epochs), total=epochs, desc=desc or "training", unit="epoch")
    for epoch in bar:
        total_loss, total_tokens = 0.0, 0
        for batch in batches(pairs, src_vocab, tgt_vocab, batch_size, shuffle=True,
                             seed=seed + epoch, by_length=by_length):
            logits = _logits_of(model(batch.src, batch.src_lengths, batch.tgt_in))  # (B, L, V)
            loss = F.cross_entropy(logits.flatten(0, 1), batch.tgt_out.flatten(),
                                   ignore_index=PAD_ID)
            optimizer.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]
            if clip is not None:
                nn.utils.clip_grad_norm_(model.parameters(), clip)
            if lr_schedule == "cosine":
                optimizer.param_groups[0]["lr"] = lr * 0.5 * (1 + math.cos(math.pi * step / total_steps))
            optimizer.step()
            step += 1
            tokens = int(batch.tgt_lengths.sum())
            total_loss += float(loss.detach()) * tokens
            total_tokens += tokens
        history.losses.append(total_loss / total_tokens)
        if hasattr(bar, "set_postfix"):
            bar.set_postfix(loss=f"{history.losses[-1]:.4f}")
        if callback is not None and callback(epoch + 1, history.losses[-1]):
            break
    history.seconds = time.perf_counter() - start
    model.eval()
    return history
