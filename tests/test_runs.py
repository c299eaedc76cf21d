"""attnlib.train.runs: runs trained in worker processes give the numbers of runs trained in turn;
the worker and thread counts read from the environment; the CPU kernels fixed by
attnlib.book.repro.fix_cpu_kernels."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from attnlib import data
from attnlib.experiments.recall import RecallConfig, recall_model, train_recall
from attnlib.models.seq2seq import Seq2Seq, Seq2SeqConfig
from attnlib.models.transformer import TransformerConfig
from attnlib.train.runs import Run, default_workers, train_runs
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


def test_workers_give_the_numbers_of_one_process(corpus: Any) -> None:
    runs = make_runs(corpus)
    sources = [p.src for p in corpus.test[:20]]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the workers take the caller's count; 2 workers on 2 cores
    try:
        alone = train_runs(runs, corpus.train[:160], corpus.src_vocab, corpus.tgt_vocab,
                           sources=sources, workers=1)
        parallel = train_runs(runs, corpus.train[:160], corpus.src_vocab, corpus.tgt_vocab,
                              sources=sources, workers=2)
    finally:
        torch.set_num_threads(threads)
    # results come back in run order: a mix-up would pair different weights below
    for a, b in zip(alone, parallel, strict=True):
        assert a.history.losses == b.history.losses
        state_a, state_b = a.model.state_dict(), b.model.state_dict()
        assert state_a.keys() == state_b.keys()
        for key in state_a:
            assert torch.equal(state_a[key], state_b[key]), key
        assert [t.tokens for t in a.translations] == [t.tokens for t in b.translations]
        for ta, tb in zip(a.translations, b.translations, strict=True):
            assert torch.equal(ta.weights, tb.weights)
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


def test_trainable_runs_in_workers_are_the_runs_trained_in_turn() -> None:
    """Runs that build and train themselves (chapter 10's recall models): two workers give the
    weights and losses of one, which are those of recall_model + train_recall in this process."""
    runs = [Run(kind, RecallConfig(kind, dim=8), init_seed=seed,
                options={"steps": 6, "max_pairs": 8, "batch": 8, "seed": seed})
            for kind, seed in (("delta", 1), ("hybrid", 2), ("softmax", 3))]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        alone = train_runs(runs, workers=1)
        parallel = train_runs(runs, workers=2)
        model = recall_model("hybrid", dim=8, seed=2)  # the same thread count as the runs
        losses = train_recall(model, steps=6, max_pairs=8, batch=8, seed=2)
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(alone, parallel, strict=True):
        assert a.history.losses == b.history.losses and len(a.history.losses) == 6
        assert a.translations == b.translations == []
        for key, value in a.model.state_dict().items():
            assert torch.equal(value, b.model.state_dict()[key]), key
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


def _python(code: str, capability: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter that imports this attnlib, ATEN_CPU_CAPABILITY set."""
    env = {**os.environ, "ATEN_CPU_CAPABILITY": capability,
           "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300, check=False)


def _cpu_has_avx2() -> bool:
    result = _python("import torch; print(torch.backends.cpu.get_cpu_capability())", "")
    return result.stdout.strip() in ("AVX2", "AVX512")


FIX = ("import attnlib.book.repro, torch\n"
       "print(attnlib.book.repro.fix_cpu_kernels({path!r}), torch.backends.cpu.get_cpu_capability(),"
       " attnlib.book.repro._mkl_code_path())\n")
# A float32 matrix product whose last bits depend on MKL's code path; prints a digest of them.
PRODUCT = ("g = torch.Generator().manual_seed(0)\n"
           "a, b = torch.randn(64, 64, generator=g), torch.randn(64, 64, generator=g)\n"
           "import hashlib\n"
           "print(hashlib.sha256((a @ b).numpy().tobytes()).hexdigest())\n")
needs_mkl = pytest.mark.skipif(not torch.backends.mkl.is_available(), reason="no MKL in this torch")


@pytest.mark.parametrize("flags", ["fpu sse2 avx", "fpu sse2 avx2", None])
def test_fix_cpu_kernels_without_avx2_and_fma_chooses_the_plain_kernels(
    tmp_path: Path, flags: str | None
) -> None:
    """Without both AVX2 and FMA (or without a cpuinfo file) the plain kernels, whatever the
    environment asked for."""
    path = tmp_path / "cpuinfo"
    if flags is not None:
        path.write_text(f"processor : 0\nflags : {flags}\n")
    result = _python(FIX.format(path=str(path)), "avx2")
    assert result.returncode == 0, result.stderr
    mkl = "COMPATIBLE" if torch.backends.mkl.is_available() else "None"
    assert result.stdout.split() == ["default", "DEFAULT", mkl]


def test_fix_cpu_kernels_chooses_avx2_after_the_imports(tmp_path: Path) -> None:
    """AVX2 where the CPU has AVX2 and FMA, even after the chapters' imports and with
    ATEN_CPU_CAPABILITY=default in the environment (make reproduce sets it)."""
    if not _cpu_has_avx2():
        pytest.skip("this CPU has no AVX2")
    path = tmp_path / "cpuinfo"
    path.write_text("processor : 0\nflags : fpu sse2 avx avx2 fma avx512f\n")
    code = ("import attnlib, matplotlib.pyplot, numpy, torch\n"
            "from attnlib import data\n"
            "from attnlib.book import plot\n"
            "from attnlib.models import seq2seq, transformer\n"
            "from attnlib.train import comparison, runs, seq2seq_loop\n"
            + FIX.format(path=str(path)))
    result = _python(code, "default")
    assert result.returncode == 0, result.stderr
    mkl = "AVX2" if torch.backends.mkl.is_available() else "None"
    assert result.stdout.split() == ["avx2", "AVX2", mkl]


def test_fix_cpu_kernels_after_a_computation_raises(tmp_path: Path) -> None:
    """Once PyTorch has chosen its kernels it keeps them: the call says so instead of
    returning a choice that is not in force."""
    if not _cpu_has_avx2():
        pytest.skip("this CPU has no AVX2")
    path = tmp_path / "cpuinfo"
    path.write_text("flags : avx2 fma\n")
    code = ("import torch, attnlib.book.repro\n"
            "torch.ones(64).add_(1)\n"
            f"attnlib.book.repro.fix_cpu_kernels({str(path)!r})")
    result = _python(code, "default")
    assert result.returncode != 0
    assert ("RuntimeError: PyTorch already runs its 'default' CPU kernels, not 'avx2': call "
            "fix_cpu_kernels() before any tensor is computed") in result.stderr


@needs_mkl
def test_fix_cpu_kernels_pins_mkls_code_path_and_replaces_the_users(tmp_path: Path) -> None:
    """Matrix products go through MKL, which picks its own code path per CPU (AVX-512 where
    there is one): fix_cpu_kernels pins it to AVX2 after the imports, replacing an MKL_CBWR
    already set, and the products then have the bits of a process started with MKL_CBWR=AVX2."""
    if not _cpu_has_avx2():
        pytest.skip("this CPU has no AVX2")
    path = tmp_path / "cpuinfo"
    path.write_text("flags : avx2 fma\n")
    code = ("import os\nos.environ['MKL_CBWR'] = 'AUTO'\n"
            "import attnlib, torch\n" + FIX.format(path=str(path))
            + "print(os.environ['MKL_CBWR'])\n" + PRODUCT)
    fixed = _python(code, "default")
    assert fixed.returncode == 0, fixed.stderr
    *choices, variable, digest = fixed.stdout.split()
    assert choices == ["avx2", "AVX2", "AVX2"] and variable == "AVX2"
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"}
    pinned = subprocess.run([sys.executable, "-c", "import torch\n" + PRODUCT], env=env,
                            capture_output=True, text=True, timeout=300, check=False)
    assert pinned.returncode == 0, pinned.stderr
    assert digest == pinned.stdout.strip()


@needs_mkl
def test_fix_cpu_kernels_after_a_matrix_product_raises(tmp_path: Path) -> None:
    """MKL keeps the code path of its first matrix product: a later call says so, even when
    PyTorch's own kernels were already the wanted ones."""
    if not _cpu_has_avx2():
        pytest.skip("this CPU has no AVX2")
    path = tmp_path / "cpuinfo"
    path.write_text("flags : avx2 fma\n")
    code = ("import os\nos.environ.pop('MKL_CBWR', None)\n"
            "import torch, attnlib.book.repro\n" + PRODUCT
            + "try:\n"
            + f"    attnlib.book.repro.fix_cpu_kernels({str(path)!r})\n"
            + "finally:\n"
            + "    print(os.environ.get('MKL_CBWR'), os.environ.get('ATEN_CPU_CAPABILITY'))\n")
    result = _python(code, "avx2")
    assert result.returncode != 0
    assert ("RuntimeError: MKL already runs its 'automatic' code path, not 'AVX2': call "
            "fix_cpu_kernels() before any tensor is computed") in result.stderr
    # the environment child processes inherit is left as it was: they compute like this one
    assert result.stdout.split()[-2:] == ["None", "avx2"]
