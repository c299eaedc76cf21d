"""attnlib.book.repro.fix_cpu_kernels: the same CPU code on Intel and AMD processors (PyTorch's
avx2 kernels, MKL's COMPATIBLE branch, oneDNN off), the same bits as the machine that stored the
chapters' outputs, and, where a path cannot be pinned, chapters whose first cell runs and says so.

Each check runs in a fresh interpreter: PyTorch and MKL choose their code paths once a process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from attnlib.book.repro import mkl_branch_taken

ROOT = Path(__file__).resolve().parents[1]
NOTE = "the book's outputs were computed with"
HAS_AVX2 = bool(torch.cpu._is_avx2_supported())
needs_mkl = pytest.mark.skipif(not torch.backends.mkl.is_available(), reason="no MKL in this torch")
needs_avx2 = pytest.mark.skipif(not HAS_AVX2, reason="this CPU has no AVX2")


def _python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter that imports this attnlib, with ``env`` added and no
    inherited choice of code paths."""
    base = {k: v for k, v in os.environ.items()
            if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ATTNLIB_CPU_VENDOR")}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**base, "PYTHONPATH": str(ROOT), **env}, timeout=300,
                            check=False, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    return result


def _cpuinfo(tmp_path: Path, vendor: str, flags: str) -> str:
    path = tmp_path / f"cpuinfo-{vendor}-{flags.replace(' ', '-')}"
    path.write_text(f"processor : 0\nvendor_id : {vendor}\nflags : {flags}\n")
    return str(path)


# What fix_cpu_kernels chose and what is in force afterwards, one word each.
FIX = ("import os, attnlib, torch\n"
       "p = attnlib.fix_cpu_kernels({path!r})\n"
       "print(p.kernels, torch.backends.cpu.get_cpu_capability(), p.mkl, p.pinned,\n"
       "      os.environ.get('ATEN_CPU_CAPABILITY'), os.environ.get('MKL_CBWR'),\n"
       "      torch.backends.mkldnn.enabled)\n")
# A float32 matrix product whose last bits depend on MKL's code path; prints a digest of them.
PRODUCT = ("import hashlib\n"
           "g = torch.Generator().manual_seed(0)\n"
           "a, b = torch.randn(64, 64, generator=g), torch.randn(64, 64, generator=g)\n"
           "print(hashlib.sha256((a @ b).numpy().tobytes()).hexdigest()[:16])\n")
AVX2 = "fpu sse2 avx avx2 fma avx512f"


def test_mkl_honours_an_instruction_set_on_intel_only() -> None:
    assert mkl_branch_taken("GenuineIntel", "AVX2") == "AVX2"
    for vendor in ("AuthenticAMD", "HygonGenuine", "unknown"):
        assert mkl_branch_taken(vendor, "AVX2") == "AUTO"
        assert mkl_branch_taken(vendor, "AVX512") == "AUTO"
    for vendor in ("GenuineIntel", "AuthenticAMD"):
        assert mkl_branch_taken(vendor, "COMPATIBLE") == "COMPATIBLE"


@needs_avx2
@needs_mkl
def test_intel_and_amd_processors_get_the_same_paths_and_bits(tmp_path: Path) -> None:
    """The choice does not depend on the vendor (as a file, or as make reproduce's
    ATTNLIB_CPU_VENDOR), even with MKL_CBWR and ATEN_CPU_CAPABILITY set otherwise before."""
    outputs = set()
    for vendor in ("GenuineIntel", "AuthenticAMD"):
        code = FIX.format(path=_cpuinfo(tmp_path, vendor, AVX2)) + PRODUCT
        outputs.add(_python(code, MKL_CBWR="AVX2", ATEN_CPU_CAPABILITY="default").stdout)
    code = FIX.format(path=_cpuinfo(tmp_path, "GenuineIntel", AVX2)) + PRODUCT
    outputs.add(_python(code, ATTNLIB_CPU_VENDOR="AuthenticAMD").stdout)
    assert len(outputs) == 1
    *choice, digest = outputs.pop().split()
    assert choice == ["avx2", "AVX2", "COMPATIBLE", "True", "avx2", "COMPATIBLE", "False"]
    # the bits of a process started with the pinned variables
    started = _python("import torch\n" + PRODUCT, MKL_CBWR="COMPATIBLE",
                      ATEN_CPU_CAPABILITY="avx2").stdout.strip()
    assert digest == started


@pytest.mark.parametrize("flags", ["fpu sse2 avx", "fpu sse2 avx avx2"])
def test_without_avx2_and_fma_the_plain_kernels_and_one_note(tmp_path: Path,
                                                             flags: str) -> None:
    result = _python(FIX.format(path=_cpuinfo(tmp_path, "AuthenticAMD", flags)))
    assert result.stdout.count(NOTE) == 1
    mkl = "COMPATIBLE" if torch.backends.mkl.is_available() else "None"
    # kept in the environment: worker processes compute as this one
    assert result.stdout.splitlines()[-1].split() == ["default", "DEFAULT", mkl, "False",
                                                      "default", "COMPATIBLE", "False"]


@needs_avx2
def test_without_a_cpuinfo_file_pytorch_says_whether_there_is_avx2(tmp_path: Path) -> None:
    result = _python(FIX.format(path=str(tmp_path / "absent")))
    assert result.stdout.split()[:2] == ["avx2", "AVX2"]


@needs_avx2
def test_kernels_chosen_before_the_call_are_kept_and_named(tmp_path: Path) -> None:
    """A tensor computed first fixes PyTorch's kernels: the call does not raise, says which run,
    and leaves the environment that child processes inherit as it was."""
    code = ("import torch\ntorch.ones(64).add_(1)\n"
            + FIX.format(path=_cpuinfo(tmp_path, "GenuineIntel", AVX2)))
    result = _python(code, ATEN_CPU_CAPABILITY="default")
    assert result.stdout.count(NOTE) == 1
    assert "This machine runs PyTorch default kernels" in result.stdout
    words = result.stdout.splitlines()[-1].split()
    assert words[0] == "default" and words[3] == "False" and words[4:6] == ["default", "None"]


@needs_avx2
@needs_mkl
def test_an_mkl_path_chosen_before_the_call_is_kept_and_named(tmp_path: Path) -> None:
    code = ("import torch\n" + PRODUCT
            + FIX.format(path=_cpuinfo(tmp_path, "GenuineIntel", AVX2)))
    result = _python(code, ATEN_CPU_CAPABILITY="avx2")
    assert result.stdout.count(NOTE) == 1
    assert "MKL automatic" in result.stdout
    assert result.stdout.splitlines()[-1].split()[3:6] == ["False", "avx2", "None"]


# Each refusal a machine can give, simulated in the process before the chapter's first cell.
REFUSALS = {
    "MKL reports another branch": "repro._mkl_code_path = lambda: 'AUTO'",
    "no MKL": "repro._mkl_code_path = lambda: None",
    "no AVX2": "repro._cpu = lambda cpuinfo: ('AuthenticAMD', False)",
}
PINNED_CHAPTERS = ("04_seq2seq_attention", "07_transformer", "10_modern_attention",
                   "11_sparse_and_stable_attention")


def _first_cell(chapter: str) -> str:
    nb = json.loads((ROOT / "chapters" / f"{chapter}.ipynb").read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code")
    source = "".join(cell["source"])
    assert "attnlib.fix_cpu_kernels()" in source
    return source


@pytest.mark.parametrize("refusal", list(REFUSALS))
def test_the_chapters_first_cells_run_where_a_path_cannot_be_pinned(refusal: str) -> None:
    """Chapters 4, 7, 10 and 11 pin the paths in their first cell: under each refusal it runs to
    the end and prints the note once (each chapter runs in a kernel of its own; here one after
    another in one process)."""
    code = "import attnlib.book.repro as repro\n" + REFUSALS[refusal] + "\n"
    for chapter in PINNED_CHAPTERS:
        code += _first_cell(chapter) + f"\nprint('ran {chapter}')\n"
    result = _python(code)
    for chapter in PINNED_CHAPTERS:
        assert f"ran {chapter}" in result.stdout
    assert result.stdout.count(NOTE) == len(PINNED_CHAPTERS)


# Bitwise fingerprints of what the pinned chapters compute (float32, one thread): recorded on
# the machine that executed chapters 4, 7 and 10 (AMD EPYC, x86-64 with AVX2, FMA and AVX-512,
# torch 2.13.0, 2026-11-28). An Intel machine that prints other bits under the pinned paths
# would print other numbers in those chapters: this test names the operation.
PROBE = """
import hashlib, torch
from torch import nn
import attnlib
assert attnlib.fix_cpu_kernels().pinned
torch.set_num_threads(1)

def digest(*tensors):
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]

def train(model, loss):
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(20):
        opt.zero_grad()
        loss(model).backward()
        opt.step()
    return digest(*model.parameters())

g = torch.Generator().manual_seed(0)
a, b = torch.randn(257, 129, generator=g), torch.randn(129, 65, generator=g)
print("matmul", digest(a @ b, (a @ b).softmax(-1), torch.tanh(a).exp()))
torch.manual_seed(0)
gru = nn.ModuleDict({"rnn": nn.GRU(32, 48, batch_first=True, bidirectional=True),
                     "out": nn.Linear(96, 50)})
x, y = torch.randn(16, 12, 32, generator=g), torch.randint(0, 50, (16, 12), generator=g)
print("gru", train(gru, lambda m: nn.functional.cross_entropy(
    m["out"](m["rnn"](x)[0]).flatten(0, 1), y.flatten())))
torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
z = torch.randn(8, 20, 64, generator=g)
print("transformer", train(layer, lambda m: m(z).square().mean()))
torch.manual_seed(0)
conv = nn.Conv1d(32, 32, 4, groups=32, padding=3)
w = torch.randn(4, 32, 40, generator=g)
print("conv", train(conv, lambda m: m(w)[..., :40].tanh().square().mean()))
"""
REFERENCE = {
    "matmul": "452f93164db5f85b",
    "gru": "9a2dba44cef164dc",
    "transformer": "2d5da6c5b6145dc9",
    "conv": "27b8fc6d110c266c",
}


@needs_avx2
@needs_mkl
def test_the_pinned_paths_compute_the_bits_of_the_machine_that_stored_the_outputs() -> None:
    lines = _python(PROBE).stdout.split("\n")
    got = dict(line.split() for line in lines if line.strip())
    assert got == REFERENCE
