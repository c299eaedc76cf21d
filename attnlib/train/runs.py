"""Independent training runs (models × seeds) side by side in worker processes.

A chapter that compares models over seeds trains several models that never talk to each other.
:func:`train_runs` trains them in separate processes, one per CPU core, and returns the same
weights, losses and translations as training them one after another in the notebook's process:
each run starts from ``torch.manual_seed(run.init_seed)``, its trainer is deterministic given
its seed, and every worker uses the caller's thread count and the caller's CPU kernels: the
workers inherit the environment (``ATEN_CPU_CAPABILITY`` and ``MKL_CBWR`` included) and the
caller's oneDNN switch (:func:`~attnlib.book.repro.fix_cpu_kernels` turns it off). Only the
wall-clock time changes with the number of workers; ``tests/test_runs.py`` checks that the weights are
bit-identical with one worker and with two.

The workers are started with ``spawn`` (a fresh interpreter, never ``fork``, which is unsafe in a
process with threads, such as a Jupyter kernel), so everything a run needs travels by pickling:
the model is described by its config, and the trainer is chosen by the config's type
(:class:`~attnlib.models.seq2seq.Seq2SeqConfig` → :func:`~attnlib.train.seq2seq_loop.train_seq2seq`,
:class:`~attnlib.models.transformer.config.TransformerConfig` → :func:`~attnlib.train.transformer_loop.train_transformer`),
or the config is a :class:`Trainable`, which builds and trains its own model (an experiment's
model that translates nothing, such as chapter 10's recall models).
"""

from __future__ import annotations

import multiprocessing
import os
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import torch
from torch import nn

from attnlib._checks import check_instance, check_int, positive_int_from_env
from attnlib.book.progress import progress
from attnlib.book.repro import set_onednn
from attnlib.data import TokenPair, Vocab
from attnlib.models.seq2seq import Seq2Seq, Seq2SeqConfig
from attnlib.models.seq2seq import greedy_decode as seq2seq_greedy_decode
from attnlib.models.transformer.config import TransformerConfig
from attnlib.models.transformer.model import Transformer
from attnlib.train._arguments import check_pairs, check_vocabs
from attnlib.train.decoding import greedy_decode as transformer_greedy_decode
from attnlib.train.seq2seq_loop import History, train_seq2seq
from attnlib.train.transformer_loop import train_transformer
from attnlib.train.translation import GreedyDecoder, Translation, translate

__all__ = ["Run", "RunResult", "Trainable", "default_workers", "train_runs"]


@runtime_checkable
class Trainable(Protocol):
    """A model description that builds and trains its own model, for runs that translate nothing.

    It travels to a worker by pickling (define it at a module's top level). ``build`` is
    called just after ``torch.manual_seed(init_seed)``; ``fit`` trains the model in place
    with the run's options and returns the training loss of each step (or epoch).
    """

    def build(self) -> nn.Module: ...

    def fit(self, model: nn.Module, **options: Any) -> list[float]: ...


@dataclass(frozen=True)
class Run:
    """One training run.

    Args:
        name: the model's name in the chapter ("attention", "GRU", ...).
        config: the model: a :class:`~attnlib.models.seq2seq.Seq2SeqConfig`, a
            :class:`~attnlib.models.transformer.config.TransformerConfig` or a
            :class:`Trainable`.
        init_seed: ``torch.manual_seed`` just before the model is built (its initial weights).
        options: keyword arguments of the trainer (``epochs``, ``batch_size``, ``seed``, ...).
    """

    name: str
    config: Seq2SeqConfig | TransformerConfig | Trainable
    init_seed: int
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_instance("name", self.name, str, "a str")
        if not isinstance(self.config, (Seq2SeqConfig, TransformerConfig, Trainable)):
            raise TypeError(f"config must be a Seq2SeqConfig, a TransformerConfig or a "
                            f"Trainable (with build and fit), got "
                            f"{type(self.config).__name__}")
        check_int("init_seed", self.init_seed, minimum=0)
        check_instance("options", self.options, Mapping, "a mapping of keyword arguments")

    def build(self) -> nn.Module:
        """The model with its initial weights."""
        torch.manual_seed(self.init_seed)
        if isinstance(self.config, Seq2SeqConfig):
            return Seq2Seq(self.config)
        if isinstance(self.config, TransformerConfig):
            return Transformer(self.config)
        return self.config.build()


@dataclass
class RunResult:
    """A trained model, its :class:`~attnlib.train.seq2seq_loop.History`, and its greedy translations of
    the ``sources`` given to :func:`train_runs` (empty if none were given)."""

    run: Run
    model: nn.Module
    history: History
    translations: list[Translation]


@dataclass(frozen=True)
class _Tokens:
    """A training pair reduced to what the trainers read (cheap to send to a worker)."""

    src: tuple[str, ...]
    tgt: tuple[str, ...]


@dataclass(frozen=True)
class _Shared:
    pairs: tuple[_Tokens, ...]
    src_vocab: Vocab | None
    tgt_vocab: Vocab | None
    sources: tuple[tuple[str, ...], ...]
    threads: int
    onednn: bool


_SHARED: _Shared | None = None


def _init_worker(shared: _Shared) -> None:
    global _SHARED
    _SHARED = shared
    os.environ["ATTNLIB_PROGRESS"] = "0"  # no bars from workers; the caller shows one
    torch.set_num_threads(shared.threads)
    set_onednn(shared.onednn)


def _train_one(run: Run) -> tuple[dict[str, torch.Tensor], History, list[Translation]]:
    shared = _SHARED
    assert shared is not None, "the worker was not initialised"
    model = run.build()
    if not isinstance(run.config, (Seq2SeqConfig, TransformerConfig)):
        start = time.perf_counter()
        losses = run.config.fit(model, **run.options)
        return model.state_dict(), History(losses, time.perf_counter() - start), []
    assert shared.src_vocab is not None and shared.tgt_vocab is not None
    if isinstance(run.config, Seq2SeqConfig):
        history: History = train_seq2seq(model, shared.pairs, shared.src_vocab,
                                         shared.tgt_vocab, **run.options)
        decode: GreedyDecoder = seq2seq_greedy_decode
    else:
        history = train_transformer(model, shared.pairs, shared.src_vocab, shared.tgt_vocab,
                                    **run.options)
        decode = transformer_greedy_decode
    translations = (translate(model, list(shared.sources), shared.src_vocab, shared.tgt_vocab,
                              decode=decode) if shared.sources else [])
    return model.state_dict(), history, translations


def default_workers() -> int:
    """The worker count :func:`train_runs` uses by default: ``ATTNLIB_WORKERS`` if set, else
    the CPU cores this process may run on."""
    affinity = getattr(os, "sched_getaffinity", None)
    cores = len(affinity(0)) if affinity is not None else (os.cpu_count() or 1)
    return positive_int_from_env("ATTNLIB_WORKERS", cores)


def train_runs(
    runs: Sequence[Run],
    pairs: Sequence[TokenPair] = (),
    src_vocab: Vocab | None = None,
    tgt_vocab: Vocab | None = None,
    *,
    sources: Sequence[Sequence[str]] = (),
    workers: int | None = None,
    desc: str | None = None,
) -> list[RunResult]:
    """Train every run on ``pairs`` and translate ``sources`` with it; the results in run order.

    Runs whose config is a :class:`Trainable` train themselves (``pairs``, the vocabularies
    and ``sources`` are not used for them; they may be left out if every run is one).

    With ``workers`` = 1 the runs are trained one after another in this process; with more,
    in that many worker processes (at most one per run). The numbers are the same either way.
    A notebook that keeps one pool of worker processes for all its training can submit
    ``train_runs(runs, workers=1)`` to it (``pool.submit``), and collect the results later;
    in a worker process it shows no progress bar.
    Each model is built with :meth:`Run.build`, which calls ``torch.manual_seed(init_seed)``:
    afterwards the caller's global torch generator is in the state that seed leaves, as it
    would be after building the models in the notebook.

    Args:
        runs: the runs; their names need not be unique.
        pairs: the training pairs (anything with ``src`` and ``tgt`` token sequences).
        src_vocab, tgt_vocab: the vocabularies; needed when a run is a translation model.
        sources: source sentences (token sequences) each trained model translates greedily.
        workers: worker processes; ``None``: :func:`default_workers`.
        desc: the label of the progress bar over finished runs.

    Raises:
        TypeError: if a run is not a :class:`Run` (a Run checks its config itself).
        ValueError: if ``runs`` is empty, ``workers`` is not an int >= 1, or a translation
            model's run comes without ``src_vocab`` and ``tgt_vocab``.
    """
    if isinstance(runs, str) or not isinstance(runs, Sequence):
        raise TypeError(f"runs must be a sequence of Run, got {type(runs).__name__}")
    if not runs:
        raise ValueError("runs must hold at least one Run, got none")
    for i, run in enumerate(runs):
        if not isinstance(run, Run):
            raise TypeError(f"runs[{i}] must be a Run, got {type(run).__name__}")
        translator = isinstance(run.config, (Seq2SeqConfig, TransformerConfig))
        if translator and (src_vocab is None or tgt_vocab is None):
            raise ValueError(f"runs[{i}] trains a translation model: src_vocab and tgt_vocab "
                             f"must be given, got src_vocab = {src_vocab!r}, "
                             f"tgt_vocab = {tgt_vocab!r}")
    workers = default_workers() if workers is None else workers
    check_int("workers", workers, minimum=1)
    check_pairs("pairs", pairs)
    if src_vocab is not None or tgt_vocab is not None:
        check_vocabs(src_vocab, tgt_vocab)
    if isinstance(sources, str) or not isinstance(sources, Sequence):
        raise TypeError(f"sources must be a sequence of token sequences, got "
                        f"{type(sources).__name__}")
    shared = _Shared(tuple(_Tokens(tuple(p.src), tuple(p.tgt)) for p in pairs), src_vocab,
                     tgt_vocab, tuple(tuple(s) for s in sources), torch.get_num_threads(),
                     bool(torch.backends.mkldnn.enabled))
    outputs: dict[int, tuple[dict[str, torch.Tensor], History, list[Translation]]] = {}
    workers = min(workers, len(runs))
    if workers == 1:
        global _SHARED
        saved = _SHARED
        _SHARED = shared
        # no bar from a worker process (train_runs submitted to a caller's pool): its
        # output would land in the caller's
        order = (range(len(runs)) if multiprocessing.parent_process() is not None
                 else progress(range(len(runs)), total=len(runs), desc=desc))
        try:
            for i in order:
                outputs[i] = _train_one(runs[i])
        finally:
            _SHARED = saved
    else:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(workers, mp_context=context, initializer=_init_worker,
                                 initargs=(shared,)) as pool:
            futures = {pool.submit(_train_one, run): i for i, run in enumerate(runs)}
            for future in progress(as_completed(futures), total=len(runs), desc=desc):
                outputs[futures[future]] = future.result()
    results = []
    for i, run in enumerate(runs):
        state, history, translations = outputs[i]
        model = run.build()
        model.load_state_dict(state)
        results.append(RunResult(run, model, history, translations))
    return results
