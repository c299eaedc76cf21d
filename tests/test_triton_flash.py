"""The Triton FlashAttention kernel, run by Triton's interpreter on CPU tensors, against its twins.

The twins are attnlib's ``tiled_attention`` (the same loop in PyTorch) and
``F.scaled_dot_product_attention``; the log-sum-exp against ``torch.logsumexp``. Shapes that are
and are not multiples of the tiles, L != S both ways, causal and not, float32 and float16 (the
interpreter's bfloat16 products are wrong and are refused). The compiled path is checked as far
as a machine without a GPU allows: the kernel compiles to a cubin for an sm_90 GPU.
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
