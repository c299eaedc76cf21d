r"""Reading past the training length, as practice does it: chapter 9's long-context study.

A causal two-layer :class:`~attnlib.models.decoder_lm.DecoderLM` learns echo text whose period
changes from line to line (:func:`~attnlib.experiments.lm_tasks.varied_echo`): to predict a
token it must find where the current token stood before and copy what followed, whatever the
distance (an induction head), so it reads content, not a fixed offset. Trained on lines of
L tokens, whose periods lie in [L/4, L/2], it is tested on lines of 2L and 4L tokens whose
periods scale with the length, so the token it needs lies further back than any distance it
met in training; a control tests the model as trained at 4L with the periods of training.
Each RoPE method of :mod:`attnlib.blocks.rope_scaling` is tested as it is, then after a short fine-tuning at 4L with the same steps and data for every method. The same
model with ALiBi instead of RoPE, trained and tuned alike, is the like-for-like comparison.

:func:`context_study` runs the seeds (one RoPE model and one ALiBi model each) in worker
processes; each run uses one thread, and the numbers do not depend on the worker count.

:class:`EchoTraining` is the chapter's other training run, the model of its first section on echo
text of one fixed period, as a :class:`~attnlib.train.runs.Trainable`: its models trained from
scratch (grouped-query and linear attention) run side by side with
:func:`~attnlib.train.runs.train_runs`.
"""

from __future__ import annotations

import copy
import math
import multiprocessing
import os
from collections.abc import Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import dataclass, field, replace

import torch
import torch.nn.functional as F

from attnlib._checks import (
    check_choice,
    check_instance,
    check_int,
    check_ints,
    check_positive,
    check_real,
)
from attnlib.blocks.rope_scaling import METHODS, ScaledRotaryEmbedding
from attnlib.experiments.lm_tasks import IGNORE_INDEX, echo_targets, echo_text, varied_echo
from attnlib.models.decoder_lm import DecoderBlock, DecoderLM, DecoderLMConfig, train_lm

__all__ = [
    "ContextRun",
    "ContextSetup",
    "EchoTraining",
    "context_run",
    "context_study",
    "echo_accuracy",
    "extend_context",
]


@dataclass(frozen=True)
class ContextSetup:
    """The study's model, task and budget (the defaults are chapter 9's).

    Args:
        config: the model; its ``max_len`` must hold the longest test.
        train_length: L, the length trained on; tests run at 1, 2 and 4 times it.
        steps, batch_size, lr: training at L, Adam with a constant rate.
        tune_steps, tune_batch_size: the fine-tuning at 4L (same rate).
        test_lines: lines per test length.
        yarn_alpha, yarn_beta: YaRN's ramp, 0 <= alpha < beta.

    Raises:
        TypeError: a config that is not a DecoderLMConfig, or a size that is not an int.
        ValueError: a size < 1, ``lr`` <= 0, a ramp outside 0 <= alpha < beta, or a config
            too small for the test lengths.
    """

    config: DecoderLMConfig = field(default_factory=lambda: DecoderLMConfig(
        vocab_size=64, d_model=32, num_heads=4, num_kv_heads=4, num_layers=2, d_ff=64,
        max_len=128, rope_base=300.0))
    train_length: int = 32
    steps: int = 600
    batch_size: int = 16
    lr: float = 3e-3
    tune_steps: int = 50
    tune_batch_size: int = 4
    test_lines: int = 100
    yarn_alpha: float = 1.0
    yarn_beta: float = 4.0

    def __post_init__(self) -> None:
        check_instance("config", self.config, DecoderLMConfig, "a DecoderLMConfig")
        alpha = check_real("yarn_alpha", self.yarn_alpha, minimum=0.0)
        if check_real("yarn_beta", self.yarn_beta, minimum=0.0) <= alpha:
            raise ValueError(f"yarn_beta must be above yarn_alpha (YaRN's ramp), got "
                             f"yarn_alpha = {self.yarn_alpha}, yarn_beta = {self.yarn_beta}")
        for name in ("train_length", "steps", "batch_size", "tune_steps", "tune_batch_size",
                     "test_lines"):
            check_int(name, getattr(self, name), minimum=1)
        check_positive("lr", self.lr)
        if 4 * self.train_length > self.config.max_len:
            raise ValueError(f"config.max_len must hold 4 x train_length = "
                             f"{4 * self.train_length} tokens, got {self.config.max_len}")
        if self.config.vocab_size < 2 * self.train_length:
            raise ValueError(f"config.vocab_size must be >= 2 x train_length = "
                             f"{2 * self.train_length} (a word of 4L / 2 distinct tokens), got "
                             f"{self.config.vocab_size}")

    @property
    def lengths(self) -> tuple[int, int, int]:
        """The test lengths L, 2L, 4L."""
        return self.train_length, 2 * self.train_length, 4 * self.train_length


@dataclass(frozen=True)
class EchoTraining:
    """Chapter 9's decoder-only model trained from scratch on echo text, for
    :func:`~attnlib.train.runs.train_runs`.

    ``build`` makes a :class:`~attnlib.models.decoder_lm.DecoderLM` of ``config`` in ``dtype``
    from torch's generator as it stands (``train_runs`` seeds it with the run's ``init_seed``);
    ``fit`` trains it with :func:`~attnlib.models.decoder_lm.train_lm` for ``steps`` steps at
    rate ``lr`` (cosine-decayed) on batch ``step`` = :func:`~attnlib.experiments.lm_tasks.echo_text`
    of ``batch_size`` lines of ``length`` letters with ``period``, seeded ``step``, on one
    thread (restored afterwards), so the weights do not depend on the caller's thread count.

    Raises:
        TypeError: a config that is not a DecoderLMConfig, a size that is not an int, or a
            dtype that is not a floating torch.dtype. ValueError: a size < 1, ``lr`` <= 0, or
            a ``config`` whose vocabulary is not the 26 letters or whose ``max_len`` is below
            ``length``.
    """

    config: DecoderLMConfig
    steps: int = 150
    lr: float = 0.01
    batch_size: int = 16
    length: int = 48
    period: int = 16
    dtype: torch.dtype = torch.float32

    def __post_init__(self) -> None:
        check_instance("config", self.config, DecoderLMConfig, "a DecoderLMConfig")
        for name in ("steps", "batch_size", "length", "period"):
            check_int(name, getattr(self, name), minimum=1)
        check_positive("lr", self.lr)
        if not isinstance(self.dtype, torch.dtype) or not self.dtype.is_floating_point:
            raise TypeError(f"dtype must be a floating torch.dtype, got {self.dtype!r}")
        if self.config.vocab_size != 26:
            raise ValueError(f"config.vocab_size must be 26 (the letters of echo text), got "
                             f"{self.config.vocab_size}")
        if self.config.max_len < self.length:
            raise ValueError(f"config.max_len must hold length = {self.length} letters, got "
                             f"{self.config.max_len}")

    def build(self) -> DecoderLM:
        return DecoderLM(self.config, dtype=self.dtype)

    def fit(self, model: torch.nn.Module, **options: object) -> list[float]:
        if not isinstance(model, DecoderLM):
            raise TypeError(f"model must be a DecoderLM, got {type(model).__name__}")
        if options:
            raise TypeError(f"EchoTraining.fit takes no options, got {sorted(options)}")

        def batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:
            tokens = echo_text(self.batch_size, self.length, self.period, seed=step)
            return tokens, echo_targets(tokens, self.period)

        previous = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return train_lm(model, batch, steps=self.steps, lr=self.lr)
        finally:
            torch.set_num_threads(previous)


def extend_context(model: DecoderLM, method: str, scale: float, train_length: int, *,
                   alpha: float = 1.0, beta: float = 32.0) -> DecoderLM:
    """A copy of a RoPE ``model`` whose every layer rotates by ``method``'s frequencies.

    The weights are copied unchanged; only the rotation of queries and keys changes
    (:class:`~attnlib.blocks.rope_scaling.ScaledRotaryEmbedding` for a context ``scale`` times
    ``train_length``).

    Raises:
        ValueError: if ``model`` has no RoPE (ALiBi or linear), or as
            :func:`~attnlib.blocks.rope_scaling.scaled_frequencies`.
    """
    if not isinstance(model, DecoderLM):
        raise TypeError(f"model must be a DecoderLM, got {type(model).__name__}")
    if model.config.alibi:
        raise ValueError("model must use RoPE to extend it, got an ALiBi model (alibi=True); "
                         "ALiBi needs no rescaling")
    check_choice("method", method, METHODS)
    c = model.config
    extended = copy.deepcopy(model)
    for block in extended.blocks:
        assert isinstance(block, DecoderBlock)
        block.attn.rope = ScaledRotaryEmbedding(c.head_dim, c.rope_base, method, scale,
                                                train_length, alpha, beta)
    return extended


@torch.no_grad()
def echo_accuracy(model: DecoderLM, length: int, lines: int = 100,
                  seed: int = 10**6, *, min_period: int | None = None,
                  max_period: int | None = None) -> tuple[float, float]:
    """Loss (nats) and accuracy on the predictable tokens of ``lines`` test lines.

    The lines are :func:`~attnlib.experiments.lm_tasks.varied_echo` of ``length`` tokens with
    periods in [``min_period``, ``max_period``], by default [length/4, length/2], drawn with
    ``seed + length``.

    Raises:
        TypeError: if ``model`` is not a DecoderLM or a count not an int.
        ValueError: if ``length`` < 4 or passes the model's ``max_len``, ``lines`` < 1,
            ``seed`` < 0, or a period < 1, above ``length`` or (``max_period``) below
            ``min_period``.
    """
    check_instance("model", model, DecoderLM, "a DecoderLM")
    check_int("length", length, minimum=4)
    check_int("lines", lines, minimum=1)
    check_int("seed", seed, minimum=0)
    low = length // 4 if min_period is None else check_int("min_period", min_period,
                                                            minimum=1, maximum=length)
    high = length // 2 if max_period is None else check_int("max_period", max_period,
                                                             minimum=low, maximum=length)
    tokens, targets = varied_echo(lines, length, low, high, model.config.vocab_size,
                                  seed=seed + length)
    model.eval()
    logits = model(tokens)  # (lines, length, V)
    keep = targets != IGNORE_INDEX
    loss = F.cross_entropy(logits[keep], targets[keep]).item()
    right = logits.argmax(-1)[keep] == targets[keep]
    return loss, right.double().mean().item()


@dataclass(frozen=True)
class ContextRun:
    """One seed's accuracies, keyed (method, test length, tuned).

    ``positions`` is ``"rope"`` (methods ``rope``, ``pi``, ``ntk``, ``yarn``, and
    ``yarn-32``: YaRN with the paper's beta = 32, untuned) or ``"alibi"`` (method ``alibi``).
    ``near`` is the control for the distance: the accuracy of the model as trained (plain RoPE,
    or ALiBi) at 4L on lines whose periods are those of training, L/4 to L/2.
    ``near_by_position`` splits the same predictions in two: those made at positions below L
    (which see no more than L tokens, as in training) and those made at L and beyond.
    """

    seed: int
    positions: str
    accuracy: dict[tuple[str, int, bool], float]
    train_loss: float
    near: float
    near_by_position: tuple[float, float] = (math.nan, math.nan)


def context_run(setup: ContextSetup, seed: int, positions: str = "rope") -> ContextRun:
    """Train one model at L with ``seed``, test every method at L, 2L, 4L, tune at 4L, test.

    One thread (restored afterwards). ``positions`` is ``"rope"`` or ``"alibi"``.

    Raises:
        TypeError: if ``setup`` is not a ContextSetup. ValueError: an unknown ``positions``
            or ``seed`` < 0.
    """
    check_instance("setup", setup, ContextSetup, "a ContextSetup")
    check_choice("positions", positions, ("rope", "alibi"))
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _context_run(setup, check_int("seed", seed, minimum=0), positions)
    finally:
        torch.set_num_threads(previous)


def _context_run(setup: ContextSetup, seed: int, positions: str) -> ContextRun:
    L, V = setup.train_length, setup.config.vocab_size
    config = replace(setup.config, alibi=positions == "alibi")
    torch.manual_seed(seed)
    model = DecoderLM(config, dtype=torch.float64)
    losses = train_lm(
        model, lambda step: varied_echo(setup.batch_size, L, L // 4, L // 2, V,
                                        seed=seed * 100_000 + step),
        steps=setup.steps, lr=setup.lr, constant_lr=True)
    accuracy: dict[tuple[str, int, bool], float] = {}
    methods = ["alibi"] if positions == "alibi" else [*METHODS, "yarn-32"]
    for method in methods:
        for length in setup.lengths:
            if length == L and method != methods[0]:  # s = 1: every method is plain RoPE
                accuracy[method, L, False] = accuracy[methods[0], L, False]
                continue
            tested = _with_method(model, method, length / L, setup)
            accuracy[method, length, False] = echo_accuracy(tested, length,
                                                            setup.test_lines)[1]
        if method == "yarn-32":
            continue
        tuned = _with_method(model, method, 4.0, setup)
        train_lm(tuned, lambda step: varied_echo(setup.tune_batch_size, 4 * L, L, 2 * L, V,
                                                 seed=7 * 10**6 + seed * 1000 + step),
                 steps=setup.tune_steps, lr=setup.lr, constant_lr=True)
        accuracy[method, 4 * L, True] = echo_accuracy(tuned, 4 * L, setup.test_lines)[1]
    near, near_by_position = _near_control(model, setup)
    return ContextRun(seed, positions, accuracy, sum(losses[-20:]) / 20, near, near_by_position)


@torch.no_grad()
def _near_control(model: DecoderLM, setup: ContextSetup) -> tuple[float, tuple[float, float]]:
    """The control: accuracy at 4L with the periods of training (the lines of
    :func:`echo_accuracy`), and on the predictions made below L and from L on."""
    L = setup.train_length
    tokens, targets = varied_echo(setup.test_lines, 4 * L, L // 4, L // 2,
                                  model.config.vocab_size, seed=10**6 + 4 * L)
    model.eval()
    right = model(tokens).argmax(-1) == targets  # (lines, 4L)
    keep = targets != IGNORE_INDEX
    below = torch.arange(4 * L) < L  # (4L,): predictions made at positions < L
    return (right[keep].double().mean().item(),
            (right[keep & below].double().mean().item(),
             right[keep & ~below].double().mean().item()))


def _with_method(model: DecoderLM, method: str, scale: float, setup: ContextSetup) -> DecoderLM:
    """``model`` for ``method`` at ``scale`` (a copy; ALiBi's model is copied as it is)."""
    if method == "alibi":
        return copy.deepcopy(model)
    beta = 32.0 if method == "yarn-32" else setup.yarn_beta
    return extend_context(model, "yarn" if method == "yarn-32" else method, scale,
                          setup.train_length, alpha=setup.yarn_alpha, beta=beta)


def _run_job(job: tuple[ContextSetup, int, str]) -> ContextRun:
    return context_run(*job)


def context_study(setup: ContextSetup, seeds: Sequence[int], *,
                  workers: int | None = None, pool: Executor | None = None) -> list[ContextRun]:
    """:func:`context_run` for every seed, RoPE and ALiBi: RoPE runs first, in seed order.

    ``workers`` processes (``None``: the CPU cores this process may use; 1: none, here) share
    the runs; the results are the same for any number. ``pool``, an executor of worker
    processes that import this module (started with ``spawn``), runs them instead, so that a
    notebook starts its workers once for all its training (``workers`` is then not used).

    Raises:
        TypeError: if ``setup`` is not a ContextSetup, ``seeds`` not a sequence of ints, or
            ``pool`` not an Executor.
        ValueError: if ``seeds`` is empty, a seed < 0, or ``workers`` < 1.
    """
    check_instance("setup", setup, ContextSetup, "a ContextSetup")
    check_ints("seeds", seeds, minimum=0)
    if not seeds:
        raise ValueError("seeds must hold at least one seed, got none")
    jobs = [(setup, check_int("seed", s, minimum=0), positions)
            for positions in ("rope", "alibi") for s in seeds]
    if pool is not None:
        check_instance("pool", pool, Executor, "a concurrent.futures.Executor")
        return list(pool.map(_run_job, jobs))
    if workers is None:
        affinity = getattr(os, "sched_getaffinity", None)
        workers = len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)
    workers = min(check_int("workers", workers, minimum=1), len(jobs))
    if workers == 1:
        return [_run_job(job) for job in jobs]
    context = multiprocessing.get_context("spawn")  # never fork a process with threads
    with ProcessPoolExecutor(workers, mp_context=context) as pool:
        return list(pool.map(_run_job, jobs))
