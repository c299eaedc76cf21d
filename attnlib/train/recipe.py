r"""The training recipe of "Attention Is All You Need": label smoothing and the warm-up schedule."""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from attnlib._checks import check_device, check_floating, check_int, check_positive, check_tensor
from attnlib.data import PAD_ID

__all__ = ["LabelSmoothingLoss", "noam_lr", "noam_schedule"]


class LabelSmoothingLoss(nn.Module):
    r"""Cross-entropy against a smoothed target distribution {Szegedy et al. 2016}.

    The paper trains with :math:`\varepsilon_{ls} = 0.1`: the target is not the one-hot vector
    of the right word y but puts :math:`\varepsilon` of its mass uniformly on all V words,

    .. math::

        q_c = (1 - \varepsilon)\,[c = y] + \frac{\varepsilon}{V},

        \begin{aligned}
        \ell &= -\sum_{c} q_c \log p_c \\
             &= (1 - \varepsilon)\,(-\log p_y) + \varepsilon \cdot \frac{1}{V}\sum_c (-\log p_c),
        \end{aligned}

    so the model is penalised for becoming over-confident; this hurts perplexity and helps
    BLEU. Tokens whose target is ``ignore_index`` (``<pad>``) count neither in the sum nor in
    the mean. The uniform part covers all V classes, ``<pad>`` included: exactly
    ``F.cross_entropy(logits, target, label_smoothing=smoothing, ignore_index=ignore_index)``.

    Args:
        smoothing: :math:`\varepsilon` in [0, 1); 0 is the ordinary cross-entropy.
        ignore_index: the target id that contributes nothing.
        reduction: ``"mean"`` over the counted tokens, ``"sum"``, or ``"none"``.

    Shape:
        - logits: (..., V), e.g. (B, L, V)
        - target: (...), e.g. (B, L), integer ids
        - output: scalar, or (...) for ``"none"`` (0 where ignored). With ``"mean"`` and every
          target ignored the loss is 0 (``F.cross_entropy`` returns NaN there).

    Raises:
        ValueError: if ``smoothing`` is not in [0, 1), ``reduction`` is unknown, the shapes
            of ``logits`` and ``target`` do not match, or a target id is outside [0, V) and
            not ``ignore_index``.
        TypeError: if ``logits`` is not floating point or ``target`` not integer.
    """

    def __init__(
        self, smoothing: float = 0.1, ignore_index: int = PAD_ID, reduction: str = "mean"
    ) -> None:
        super().__init__()
        if isinstance(smoothing, bool) or not isinstance(smoothing, int | float) or \
                not 0.0 <= smoothing < 1.0:
            raise ValueError(f"smoothing must be a float in [0, 1), got {smoothing!r}")
        if reduction not in ("mean", "sum", "none"):
            raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
        check_int("ignore_index", ignore_index)
        self.smoothing = float(smoothing)
        self.ignore_index = ignore_index
        self.reduction = reduction

    def extra_repr(self) -> str:
        return (f"smoothing={self.smoothing}, ignore_index={self.ignore_index}, "
                f"reduction={self.reduction!r}")

    def forward(self, logits: Tensor, target: Tensor) -> Tensor:
        self._check_inputs(logits, target)
        log_probs = F.log_softmax(logits, dim=-1)  # (..., V)
        counted = target != self.ignore_index  # (...)
        safe = target.masked_fill(~counted, 0)  # any valid index; masked out below
        nll = -log_probs.gather(-1, safe[..., None]).squeeze(-1)  # (...)
        uniform = -log_probs.mean(dim=-1)  # (...)
        eps = self.smoothing
        loss = ((1.0 - eps) * nll + eps * uniform) * counted  # (...)
        if self.reduction == "none":
            return loss
        if self.reduction == "sum":
            return loss.sum()
        # 0, not 0/0, if every target is ignored
        return loss.sum() / counted.sum().clamp(min=1)

    def _check_inputs(self, logits: Tensor, target: Tensor) -> None:
        logits = check_tensor("logits", logits)
        target = check_tensor("target", target)
        check_floating("logits", logits)
        if logits.ndim >= 1 and logits.shape[-1] == 0:
            raise ValueError(f"logits must have V >= 1 classes in its last dimension, got shape "
                             f"{tuple(logits.shape)}")
        check_device("target", target, logits.device, "logits")
        if logits.ndim < 1 or logits.shape[:-1] != target.shape:
            raise ValueError(
                f"logits (..., V) and target (...) must agree in (...), got logits of shape "
                f"{tuple(logits.shape)} and target of shape {tuple(target.shape)}"
            )
        if target.is_floating_point() or target.is_complex() or target.dtype == torch.bool:
            raise TypeError(f"target must hold integer class ids, got dtype {target.dtype}")
        V = logits.shape[-1]
        outside = ((target < 0) | (target >= V)) & (target != self.ignore_index)
        if bool(outside.any()):
            raise ValueError(f"target must hold ids in [0, V) = [0, {V}) or ignore_index = "
                             f"{self.ignore_index}, got id {int(target[outside][0])}")


def noam_lr(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    r"""The learning rate of "Attention Is All You Need" at (1-based) step ``step``.

    .. math::

        \text{lr}(s) = \text{factor} \cdot d_{model}^{-0.5}
            \cdot \min\!\left(s^{-0.5},\; s \cdot \text{warmup}^{-1.5}\right)

    It grows linearly for the first ``warmup`` steps, peaks at s = ``warmup`` with
    :math:`\text{factor} / \sqrt{d_{model} \cdot \text{warmup}}`, then decays like
    :math:`1/\sqrt{s}`. The paper: d_model = 512, warmup = 4000, factor = 1.

    Raises:
        ValueError: if ``step``, ``d_model`` or ``warmup`` is < 1, or ``factor`` is not > 0.
    """
    check_int("step", step, minimum=1)
    check_int("d_model", d_model, minimum=1)
    check_int("warmup", warmup, minimum=1)
    check_positive("factor", factor)
    return float(factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5))


def noam_schedule(d_model: int, warmup: int, factor: float = 1.0) -> Callable[[int], float]:
    """The paper's schedule as a ``LambdaLR`` function: index i (from 0) gives ``noam_lr(i + 1)``.

    ``torch.optim.lr_scheduler.LambdaLR`` multiplies the optimiser's own learning rate by the
    function's value, so create the optimiser with ``lr=1.0``::

        optimizer = torch.optim.Adam(model.parameters(), lr=1.0,
                                     betas=(0.9, 0.98), eps=1e-9)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, noam_schedule(512, 4000))
        # after each optimizer.step(): scheduler.step()

    Raises:
        The errors of :func:`noam_lr`.
    """
    noam_lr(1, d_model, warmup, factor)  # validates the arguments now, not at the first step

    def schedule(index: int) -> float:
        return noam_lr(index + 1, d_model, warmup, factor)

    return schedule
