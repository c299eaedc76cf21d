"""The Triton FlashAttention kernel, run by Triton's interpreter on CPU tensors, against its twins.

The twins are attnlib's ``tiled_attention`` (the same loop in PyTorch) and
``F.scaled_dot_product_attention``; the log-sum-exp against ``torch.logsumexp``. Shapes that are
and are not multiples of the tiles, L != S both ways, causal and not, float32 and float16 (the
interpreter's bfloat16 products are wrong and are refused). The compiled path is checked as far
as a machine without a GPU allows: the kernel compiles to a cubin for an sm_90 GPU. The tests
marked ``needs_cuda`` run the compiled kernel and compare it with ``F.scaled_dot_product_attention``
on the GPU; without CUDA they are reported as skipped (``s``, with the reason), never as passed.
"""

from __future__ import annotations

import math
import sys
import warnings

import pytest
import torch
import torch.nn.functional as F

from attnlib.blocks.efficient import tiled_attention

triton = pytest.importorskip("triton")
from attnlib.blocks.triton_flash import (  # noqa: E402
    _flash_forward_kernel,
    triton_flash_attention,
)

pytestmark = pytest.mark.usefixtures("one_thread")

#: Runs the compiled kernel: only where torch sees a CUDA GPU; skipped (not passed) elsewhere.
needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="needs a CUDA GPU (runs the compiled kernel)")


def qkv(*shape: int, L: int, S: int, E: int, Ev: int, dtype: torch.dtype = torch.float32,
        seed: int = 0) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(*shape, n, e, generator=g).to(dtype)
            for n, e in ((L, E), (S, E), (S, Ev))]


def reference_lse(q: torch.Tensor, k: torch.Tensor, causal: bool) -> torch.Tensor:
    """log sum_j e^{s_ij} of the scaled (and causally masked) scores, in float64."""
    s = (q.double() @ k.double().transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if causal:
        above = torch.ones(s.shape[-2:], dtype=torch.bool).triu(1)
        s = s.masked_fill(above, -math.inf)
    return torch.logsumexp(s, -1)


CASES = [  # L, S, E, Ev, causal, block_size_q, block_size_k
    (64, 64, 32, 32, False, 16, 32),  # multiples of the tiles
    (64, 64, 32, 32, True, 32, 16),
    (37, 53, 20, 24, False, 16, 16),  # neither L, S nor E a multiple
    (37, 53, 20, 24, True, 16, 16),  # L < S, causal: the keys past L unseen
    (90, 21, 16, 8, True, 32, 16),  # L > S, causal: the rows past S see every key
    (5, 1, 3, 2, False, 16, 64),  # one key: 63 padded columns in its tile
    (130, 70, 64, 64, True, 64, 64),  # the defaults, causal, last tiles partial
]


@pytest.mark.parametrize(("L", "S", "E", "Ev", "causal", "bq", "bk"), CASES)
def test_equals_tiled_attention_and_sdpa_in_float32(
        L: int, S: int, E: int, Ev: int, causal: bool, bq: int, bk: int) -> None:
    q, k, v = qkv(2, L=L, S=S, E=E, Ev=Ev)
    out, lse = triton_flash_attention(q, k, v, is_causal=causal, block_size_q=bq,
                                      block_size_k=bk, interpret=True, return_lse=True)
    assert out.shape == (2, L, Ev) and out.dtype == torch.float32
    assert lse.shape == (2, L) and lse.dtype == torch.float32
    tiled = tiled_attention(q, k, v, is_causal=causal, block_size_q=bq, block_size_k=bk)
    sdpa = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    assert (out - tiled).abs().max() < 2e-6
    assert (out - sdpa).abs().max() < 2e-6
    assert (lse.double() - reference_lse(q, k, causal)).abs().max() < 2e-6


def test_batch_dimensions_broadcast_and_a_scale() -> None:
    g = torch.Generator().manual_seed(1)
    q = torch.randn(2, 3, 19, 16, generator=g)
    k = torch.randn(1, 3, 23, 16, generator=g)  # one batch entry for both of query's
    v = torch.randn(2, 1, 23, 16, generator=g)  # one head for all three
    out = triton_flash_attention(q, k, v, scale=0.3, block_size_q=16, block_size_k=16,
                                 interpret=True)
    sdpa = F.scaled_dot_product_attention(q, k.expand(2, 3, 23, 16), v.expand(2, 3, 23, 16),
                                          scale=0.3)
    assert out.shape == (2, 3, 19, 16)
    assert (out - sdpa).abs().max() < 2e-6


def test_float16_against_float32_references() -> None:
    q, k, v = qkv(1, 2, L=40, S=70, E=32, Ev=32, dtype=torch.float16)
    for causal in (False, True):
        out = triton_flash_attention(q, k, v, is_causal=causal, block_size_q=16,
                                     block_size_k=32, interpret=True)
        assert out.dtype == torch.float16
        exact = F.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                               is_causal=causal)
        sdpa = F.scaled_dot_product_attention(q, k, v, is_causal=causal)  # float16 in and out
        # the weights are rounded to float16 before the product with V, as FlashAttention does
        assert (out.float() - exact).abs().max() < 2e-3
        assert (out.float() - sdpa.float()).abs().max() < 2e-3


def test_bfloat16_is_refused_under_the_interpreter() -> None:
    q, k, v = qkv(1, L=8, S=8, E=16, Ev=16, dtype=torch.bfloat16)
    with pytest.raises(TypeError, match="query is bfloat16"):
        triton_flash_attention(q, k, v, interpret=True)


def test_the_environment_variable_is_read_at_the_call(monkeypatch: pytest.MonkeyPatch) -> None:
    q, k, v = qkv(1, L=8, S=8, E=16, Ev=16)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    out = triton_flash_attention(q, k, v)
    assert (out - F.scaled_dot_product_attention(q, k, v)).abs().max() < 2e-6
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match=r"query is on the CPU.*TRITON_INTERPRET=1"):
        triton_flash_attention(q, k, v)
    with pytest.raises(ValueError, match="interpret=False was given"):
        triton_flash_attention(q, k, v, interpret=False)


def test_runs_whatever_mode_triton_was_imported_in() -> None:
    """torch's FlopCounterMode imports triton: its own functions are then wrapped for the
    compiler (TRITON_INTERPRET unset), and the interpreter's run rewraps them for its time."""
    import triton.language as tl
    from torch.utils.flop_counter import FlopCounterMode  # noqa: F401  (imports triton)

    assert "triton" in sys.modules
    before = {name: getattr(tl, name) for name in ("max", "sum", "zeros")}
    q, k, v = qkv(1, L=20, S=20, E=16, Ev=16)
    out = triton_flash_attention(q, k, v, is_causal=True, interpret=True)
    assert (out - F.scaled_dot_product_attention(q, k, v, is_causal=True)).abs().max() < 2e-6
    assert all(getattr(tl, name) is fn for name, fn in before.items())  # restored


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"block_size_q": 48}, ValueError, "block_size_q must be a power of two from 16 to 256"),
    ({"block_size_k": 8}, ValueError, "block_size_k must be a power of two from 16 to 256"),
    ({"block_size_k": 64.0}, TypeError, "block_size_k"),
    ({"interpret": 1}, TypeError, "interpret"),
    ({"return_lse": None}, TypeError, "return_lse"),
])
def test_bad_arguments(kwargs: dict[str, object], error: type[Exception], match: str) -> None:
    q, k, v = qkv(1, L=8, S=8, E=16, Ev=16)
    with pytest.raises(error, match=match):
        triton_flash_attention(q, k, v, **{"interpret": True, **kwargs})  # type: ignore[arg-type]


def test_bad_tensors() -> None:
    q, k, v = qkv(1, L=8, S=8, E=16, Ev=16)
    with pytest.raises(TypeError, match="query must be float32, float16 or bfloat16"):
        triton_flash_attention(q.double(), k.double(), v.double(), interpret=True)
    with pytest.raises(ValueError, match=r"value has shape \(1, 8, 300\): Ev = 300 is above 256"):
        triton_flash_attention(q, k, torch.zeros(1, 8, 300), interpret=True)
    with pytest.raises(ValueError, match="key requires grad"):
        triton_flash_attention(q, k.requires_grad_(), v, interpret=True)
    with torch.no_grad():  # no gradient asked for: it runs
        triton_flash_attention(q, k, v, interpret=True)


def test_compiles_for_an_sm90_gpu_without_one() -> None:
    """The compiled path, as far as a CPU allows: Triton compiles the kernel to a cubin."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    signature = {name: "*fp16" for name in ("Q", "K", "V", "Out")}
    signature |= {"Lse": "*fp32", "scale": "fp32", "L": "i32", "S": "i32", "E": "i32",
                  "Ev": "i32"}
    constexprs = {"IS_CAUSAL": True, "BLOCK_Q": 64, "BLOCK_K": 64, "BLOCK_E": 64,
                  "BLOCK_EV": 64}
    signature |= dict.fromkeys(constexprs, "constexpr")
    source = ASTSource(JITFunction(_flash_forward_kernel), signature, constexprs=constexprs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a notice on TRITON_DEFAULT_FP_FUSION
        kernel = triton.compile(source, target=GPUTarget("cuda", 90, 32))
    assert kernel.asm["cubin"]
    assert "mma" in kernel.asm["ptx"]  # tl.dot became tensor-core instructions


def test_without_triton_the_module_imports_and_the_function_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib

    import attnlib.blocks.triton_flash as module

    for name in [n for n in sys.modules if n == "triton" or n.startswith("triton.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "triton", None)  # import triton raises ImportError
    try:
        fresh = importlib.reload(module)
        assert fresh.triton is None
        q, k, v = qkv(1, L=8, S=8, E=16, Ev=16)
        with pytest.raises(ModuleNotFoundError, match="pip install triton"):
            fresh.triton_flash_attention(q, k, v, interpret=True)
    finally:
        monkeypatch.undo()
        importlib.reload(module)


def test_more_batch_entries_than_a_launch_grid_holds_are_refused() -> None:
    q = torch.zeros(65536, 1, 16)  # 65536 batch entries of one query each
    with pytest.raises(ValueError, match="hold 65536 entries, above 65535"):
        triton_flash_attention(q, q, q, interpret=True)


GPU_CASES = [(L, S, E, Ev, causal, bq, bk) for L, S, _, _, causal, bq, bk in CASES
             for E, Ev in ((64, 64), (128, 128))]


@needs_cuda
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
@pytest.mark.parametrize(("L", "S", "E", "Ev", "causal", "bq", "bk"), GPU_CASES)
def test_compiled_kernel_on_a_gpu_equals_sdpa(
        L: int, S: int, E: int, Ev: int, causal: bool, bq: int, bk: int,
        dtype: torch.dtype) -> None:
    """The compiled kernel on CUDA tensors against sdpa in float32.

    float16/bfloat16 within 2e-2; float32 within 5e-3, since tl.dot multiplies float32 in TF32
    (10 mantissa bits) by default: about 1e-3 per score, a few times that in the output."""
    q, k, v = (t.cuda() for t in qkv(2, 3, L=L, S=S, E=E, Ev=Ev, dtype=dtype))
    with torch.no_grad():
        out, lse = triton_flash_attention(q, k, v, is_causal=causal, block_size_q=bq,
                                          block_size_k=bk, interpret=False, return_lse=True)
        reference = F.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                   is_causal=causal)
    assert out.dtype == dtype and out.device.type == "cuda"
    tolerance = {torch.float16: 2e-2, torch.bfloat16: 2e-2, torch.float32: 5e-3}[dtype]
    assert (out.float() - reference).abs().max().item() < tolerance
    exact_lse = reference_lse(q.cpu(), k.cpu(), causal)
    assert (lse.cpu().double() - exact_lse).abs().max().item() < tolerance


@needs_cuda
def test_compiled_kernel_with_64_bit_offsets() -> None:
    """B * L * E above 2**31: the last batch entry's output, against sdpa on that entry."""
    B, L, E = 1025, 32768, 64  # 2.15e9 elements per tensor, 4.3 GB each in float16
    free, _ = torch.cuda.mem_get_info()
    if free < 5 * B * L * E * 2:
        pytest.skip(f"needs about {5 * B * L * E * 2 / 2**30:.0f} GiB of free GPU memory")
    q = torch.zeros(B, L, E, dtype=torch.float16, device="cuda")
    g = torch.Generator(device="cuda").manual_seed(0)
    q[-1] = torch.randn(L, E, generator=g, device="cuda", dtype=torch.float16)
    with torch.no_grad():
        out = triton_flash_attention(q, q, q, is_causal=True, interpret=False)
        last = F.scaled_dot_product_attention(q[-1:].float(), q[-1:].float(),
                                              q[-1:].float(), is_causal=True)
    assert (out[-1:].float() - last).abs().max().item() < 2e-2
