"""attnlib.train.runs: runs trained in worker processes give the numbers of runs trained in turn;
the worker and thread counts read from the environment; the workers take the caller's CPU
settings (tests/test_cpu_paths.py tests attnlib.book.repro.fix_cpu_kernels itself)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from attnlib import data
from attnlib.experiments.recall import RecallConfig, recall_model, train_recall
from attnlib.models.seq2seq import Seq2Seq, Seq2SeqConfig
from attnlib.models.transformer import TransformerConfig
from attnlib.train.runs import Run, RunResult, default_workers, train_runs
from attnlib.train.seq2seq_loop import train_seq2seq
from attnlib.train.translation import translate


@pytest.fixture(scope="module")
def corpus() -> Any:
    return data.make_corpus(seed=0, n_pairs=400, difficulty=1, max_src_len=12)


def make_runs(corpus: Any) -> list[Run]:
    gru = Seq2SeqConfig(len(corpus.src_vocab), len(corpus.tgt_vocab), embed_dim=16,
                        hidden_size=16, attention_size=16, max_src_len=24)
    fixed = Seq2SeqConfig(len(corpus.src_vocab), len(corpus.tgt_vocab), embed_dim=16,
                          hidden_size=16, attention_size=16, max_src_len=24, use_attention=False)
    transformer = TransformerConfig(len(corpus.src_vocab), len(corpus.tgt_vocab), d_model=16,
                                    num_heads=2, num_encoder_layers=1, num_decoder_layers=1,
                                    d_ff=32, dropout=0.1, max_len=64)
    seq2seq_options = {"epochs": 2, "batch_size": 16, "lr": 1e-2, "lr_schedule": "cosine",
                       "seed": 5, "by_length": True}
    return [
        Run("attention", gru, 1, seq2seq_options),
        Run("fixed", fixed, 2, seq2seq_options),
        Run("transformer", transformer, 3, {"epochs": 2, "batch_size": 16, "warmup": 10,
                                            "seed": 7}),
    ]


def recall_runs() -> list[Run]:
    """Runs that build and train themselves (chapter 10's recall models)."""
    return [Run(kind, RecallConfig(kind, dim=8), init_seed=seed,
                options={"steps": 6, "max_pairs": 8, "batch": 8, "seed": seed})
            for kind, seed in (("delta", 1), ("hybrid", 2), ("softmax", 3))]


@pytest.fixture(scope="module")
def trained(corpus: Any) -> tuple[list[RunResult], list[RunResult]]:
    """The translation runs and the self-training runs, trained in one call in turn in this
    process and in one call in two worker processes (one pool of spawned workers for both
    kinds of run: each worker process costs an interpreter, torch and attnlib, about 4 s of
    CPU). One thread: the workers take the caller's count; 2 workers on 2 cores."""
    runs = make_runs(corpus) + recall_runs()
    sources = [p.src for p in corpus.test[:20]]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        alone = train_runs(runs, corpus.train[:160], corpus.src_vocab, corpus.tgt_vocab,
                           sources=sources, workers=1)
        parallel = train_runs(runs, corpus.train[:160], corpus.src_vocab, corpus.tgt_vocab,
                              sources=sources, workers=2)
    finally:
        torch.set_num_threads(threads)
    return alone, parallel


def _same_results(alone: list[RunResult], parallel: list[RunResult]) -> None:
    # results come back in run order: a mix-up would pair different weights below
    assert len(alone) == len(parallel)
    for a, b in zip(alone, parallel, strict=True):
        assert a.run == b.run
        assert a.history.losses == b.history.losses
        state_a, state_b = a.model.state_dict(), b.model.state_dict()
        assert state_a.keys() == state_b.keys()
        for key in state_a:
            assert torch.equal(state_a[key], state_b[key]), key
        assert [t.tokens for t in a.translations] == [t.tokens for t in b.translations]
        for ta, tb in zip(a.translations, b.translations, strict=True):
            assert torch.equal(ta.weights, tb.weights)


def test_workers_give_the_numbers_of_one_process(
        trained: tuple[list[RunResult], list[RunResult]]) -> None:
    alone, parallel = (results[:3] for results in trained)
    assert [r.run.name for r in alone] == ["attention", "fixed", "transformer"]
    _same_results(alone, parallel)
    assert all(len(r.translations) == 20 for r in alone)
    # different runs really are different models
    assert alone[0].history.losses != alone[1].history.losses


def test_a_run_is_the_run_a_notebook_would_train(corpus: Any) -> None:
    (run,) = make_runs(corpus)[:1]
    (result,) = train_runs([run], corpus.train[:160], corpus.src_vocab, corpus.tgt_vocab,
                           sources=[corpus.test[0].src], workers=1)
    torch.manual_seed(run.init_seed)
    model = Seq2Seq(run.config)  # type: ignore[arg-type]
    history = train_seq2seq(model, corpus.train[:160], corpus.src_vocab, corpus.tgt_vocab,
                            **run.options)
    assert history.losses == result.history.losses
    for key, value in model.state_dict().items():
        assert torch.equal(value, result.model.state_dict()[key]), key
    (expected,) = translate(model, [corpus.test[0].src], corpus.src_vocab, corpus.tgt_vocab)
    assert result.translations[0].tokens == expected.tokens


def test_trainable_runs_in_workers_are_the_runs_trained_in_turn(
        trained: tuple[list[RunResult], list[RunResult]]) -> None:
    """Runs that build and train themselves (chapter 10's recall models): two workers give the
    weights and losses of one, which are those of recall_model + train_recall in this process.
    They are trained in the call of the translation runs (the fixture ``trained``); a call
    with no corpus, as chapter 10 makes it, gives the same results."""
    alone, parallel = (results[3:] for results in trained)
    assert [r.run for r in alone] == recall_runs()
    _same_results(alone, parallel)
    for a in alone:
        assert len(a.history.losses) == 6 and a.translations == []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the thread count of the runs
    try:
        (hybrid,) = train_runs(recall_runs()[1:2], workers=1)  # no pairs, no vocabularies
        model = recall_model("hybrid", dim=8, seed=2)
        losses = train_recall(model, steps=6, max_pairs=8, batch=8, seed=2)
    finally:
        torch.set_num_threads(threads)
    _same_results([hybrid], alone[1:2])
    assert losses == alone[1].history.losses
    for key, value in model.state_dict().items():
        assert torch.equal(value, alone[1].model.state_dict()[key]), key
    assert alone[0].history.losses != alone[2].history.losses


def test_bad_arguments(corpus: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    args = (corpus.train, corpus.src_vocab, corpus.tgt_vocab)
    with pytest.raises(ValueError, match="runs must hold at least one Run"):
        train_runs([], *args)
    with pytest.raises(TypeError, match=r"runs\[0\] must be a Run, got dict"):
        train_runs([{}], *args)  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"config must be a Seq2SeqConfig, a TransformerConfig "
                                         r"or a Trainable"):
        Run("x", {}, 0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"runs\[0\] trains a translation model: src_vocab"):
        train_runs(make_runs(corpus)[:1], corpus.train)
    with pytest.raises(ValueError, match="workers must be >= 1, got 0"):
        train_runs(make_runs(corpus), *args, workers=0)
    monkeypatch.setenv("ATTNLIB_WORKERS", "three")
    with pytest.raises(ValueError, match="ATTNLIB_WORKERS must be a positive integer, got 'three'"):
        default_workers()
    monkeypatch.setenv("ATTNLIB_WORKERS", "0")
    with pytest.raises(ValueError, match="ATTNLIB_WORKERS must be a positive integer, got '0'"):
        default_workers()
    monkeypatch.setenv("ATTNLIB_WORKERS", "3")
    assert default_workers() == 3
    monkeypatch.delenv("ATTNLIB_WORKERS")
    assert default_workers() >= 1


def test_thread_count_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """attnlib.reproducible reads ATTNLIB_NUM_THREADS with the same rule as ATTNLIB_WORKERS."""
    import attnlib

    threads = torch.get_num_threads()
    try:
        monkeypatch.setenv("ATTNLIB_NUM_THREADS", "1")
        assert attnlib.reproducible(0) == 1 and torch.get_num_threads() == 1
        monkeypatch.delenv("ATTNLIB_NUM_THREADS")
        assert attnlib.reproducible(0) == attnlib.book.repro.DEFAULT_NUM_THREADS
        for bad in ("two", "0", "-1"):
            monkeypatch.setenv("ATTNLIB_NUM_THREADS", bad)
            with pytest.raises(ValueError,
                               match=f"ATTNLIB_NUM_THREADS must be a positive integer, got '{bad}'"):
                attnlib.reproducible(0)
    finally:
        torch.set_num_threads(threads)


def test_workers_take_the_callers_onednn_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    """fix_cpu_kernels turns oneDNN off in the notebook's process; a worker process starts with it
    on, so the worker's initialiser sets the caller's choice (its convolutions then compute as
    the caller's)."""
    from attnlib.train import runs

    monkeypatch.setenv("ATTNLIB_PROGRESS", "1")  # the initialiser sets it; restored afterwards
    monkeypatch.setattr(runs, "_SHARED", None)
    before = torch.backends.mkldnn.enabled
    try:
        for wanted in (False, True):
            torch.backends.mkldnn.enabled = not wanted
            runs._init_worker(runs._Shared((), None, None, (), torch.get_num_threads(), wanted))
            assert torch.backends.mkldnn.enabled is wanted
    finally:
        torch.backends.mkldnn.enabled = before
