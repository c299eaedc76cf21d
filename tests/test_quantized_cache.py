"""The quantized key/value cache against PyTorch's fake quantization and the full cache."""

from __future__ import annotations

import math

import pytest
import torch

from attnlib.experiments import lm_tasks as tasks
from attnlib.models import quantized_cache as qc
from attnlib.models.decoder_lm import DecoderLM, DecoderLMConfig, LMCache, generate

pytestmark = pytest.mark.usefixtures("one_thread")

F64 = torch.float64


def _x(*shape: int, dtype: torch.dtype = torch.float32, scale: float = 3.0) -> torch.Tensor:
    return scale * torch.randn(*shape, generator=torch.Generator().manual_seed(0), dtype=dtype)


@pytest.mark.parametrize("bits", [8, 4])
def test_per_token_codes_equal_pytorch_fake_quantization(bits: int) -> None:
    x = _x(2, 3, 7, 16)
    x[0, 0, 0] = 0.0  # an all-zero vector: scale 1, codes 0
    codes, scale = qc.quantize_per_token(x, bits)
    q_max = 2 ** (bits - 1) - 1
    flat = x.reshape(-1, 16)
    twin = torch.fake_quantize_per_channel_affine(
        flat, scale.reshape(-1), torch.zeros(flat.shape[0], dtype=torch.int32), 0, -q_max, q_max)
    ours = qc.dequantize_per_token(codes, scale, torch.float32).reshape(-1, 16)
    torch.testing.assert_close(ours, twin, atol=1e-6, rtol=1e-5)
    assert int(codes.abs().max()) == q_max and codes.dtype == torch.int8
    assert bool((codes[0, 0, 0] == 0).all()) and float(scale[0, 0, 0]) == 1.0
    # the error of each number is at most half a step
    assert bool(((ours.reshape(x.shape) - x).abs() <= scale / 2 + 1e-6).all())


def test_quantizing_what_was_read_back_gives_the_same_codes() -> None:
    x = _x(4, 2, 9, 8, dtype=F64)
    codes, scale = qc.quantize_per_token(x)
    again, _ = qc.quantize_per_token(qc.dequantize_per_token(codes, scale, F64))
    assert torch.equal(codes, again)


@pytest.mark.parametrize("fmt", qc.FORMATS)
def test_store_reads_back_what_it_keeps(fmt: str) -> None:
    x = _x(2, 3, 5, 8, dtype=F64)
    store = qc.QuantizedStore(fmt)
    store.append(x)
    read = store[0]
    assert read.dtype == F64 and read.shape == x.shape and len(store) == 1
    if fmt == "fp8":
        torch.testing.assert_close(read, x.to(torch.float8_e4m3fn).to(F64), atol=0, rtol=0)
        assert bool(((read - x).abs() <= x.abs() * 2**-4 + 2**-10).all())
    elif fmt == "bf16":
        torch.testing.assert_close(read, x.to(torch.bfloat16).to(F64), atol=0, rtol=0)
        assert bool(((read - x).abs() <= x.abs() * 2**-8).all())
    else:
        codes, scale = qc.quantize_per_token(x, 8 if fmt == "int8" else 4)
        torch.testing.assert_close(read, qc.dequantize_per_token(codes, scale, F64),
                                   atol=0, rtol=0)
    vectors = 2 * 3 * 5
    assert store.nbytes() == vectors * qc.bytes_per_vector(8, fmt)
    store[0] = x[:, :, :2]
    assert store[0].shape == (2, 3, 2, 8)


def _lm() -> DecoderLM:
    torch.manual_seed(0)
    config = DecoderLMConfig(vocab_size=26, num_kv_heads=2, max_len=64)
    return DecoderLM(config, dtype=F64).eval()


@pytest.mark.parametrize("fmt", qc.FORMATS)
def test_model_decodes_through_the_quantized_cache(fmt: str) -> None:
    model = _lm()
    tokens = tasks.echo_text(2, 12, 4, seed=1)
    full, quantized = LMCache(), qc.QuantizedLMCache(format=fmt)
    with torch.no_grad():
        a = torch.cat([model(tokens[:, i:i + 1], full) for i in range(12)], 1)
        b = torch.cat([model(tokens[:, i:i + 1], quantized) for i in range(12)], 1)
    # close, not equal: the past is read back rounded
    assert 0 < float((a - b).abs().max()) < (0.5 if fmt == "int4" else 0.1)
    per_vector = qc.bytes_per_vector(model.config.head_dim, fmt)
    assert quantized.nbytes() == 2 * 2 * 2 * 2 * 12 * per_vector  # K, V x N x B x H_kv x t
    assert quantized.nbytes() < full.nbytes()
    assert quantized.length == 12


def test_eight_bit_cache_keeps_the_greedy_text_of_a_random_model() -> None:
    model = _lm()
    prompt = tasks.echo_text(2, 6, 3, seed=2)
    reference = generate(model, prompt, 10)
    cache = qc.QuantizedLMCache(format="int8")
    tokens, new = prompt, prompt
    with torch.no_grad():
        for _ in range(10):
            new = model(new, cache)[:, -1].argmax(-1, keepdim=True)
            tokens = torch.cat((tokens, new), 1)
    assert torch.equal(tokens, reference)



@pytest.mark.parametrize("fmt", ["int8", "int4"])
def test_bfloat16_model_quantizes_each_position_once(fmt: str) -> None:
    """Review of chapter 9, finding 1: the model writes cat(past read back, new); re-encoding
    the bfloat16 read-back gave other codes, step after step. Only new positions are encoded."""
    torch.manual_seed(0)
    config = DecoderLMConfig(vocab_size=26, num_kv_heads=2, max_len=64)
    model = DecoderLM(config, dtype=torch.bfloat16).eval()
    tokens = tasks.echo_text(2, 30, 4, seed=1)
    cache = qc.QuantizedLMCache(format=fmt)
    first: list[torch.Tensor] = []
    with torch.no_grad():
        model(tokens[:, :10], cache)
        stores = (cache.keys, cache.values)
        assert all(isinstance(s, qc.QuantizedStore) for s in stores)
        first = [s._layers[n].codes.clone() for s in stores  # type: ignore[attr-defined]
                 for n in range(config.num_layers)]
        for i in range(10, 30):
            model(tokens[:, i:i + 1], cache)
    later = [s._layers[n].codes[:, :, :10] for s in stores  # type: ignore[attr-defined]
             for n in range(config.num_layers)]
    assert all(torch.equal(a, b) for a, b in zip(first, later, strict=True))


def test_store_keeps_the_codes_of_a_windowed_past() -> None:
    """A rolling window writes the past's last positions and the new ones: the kept positions
    keep their codes, the dropped ones go."""
    x = _x(1, 2, 6, 8, dtype=torch.bfloat16)
    store = qc.QuantizedStore("int8")
    store.append(x[:, :, :4])
    codes = store._layers[0].codes.clone()
    store[0] = torch.cat((store[0], x[:, :, 4:]), dim=2)[:, :, -4:]  # window 4
    assert torch.equal(store._layers[0].codes[:, :, :2], codes[:, :, 2:])
    assert store[0].shape == (1, 2, 4, 8)


def test_tiny_half_precision_vector_keeps_its_scale() -> None:
    """Finding 18: a float16 vector of magnitude 3e-6 got a scale that underflowed to 0 in
    float16, and read back as zeros. The scale is computed in float32."""
    x = torch.tensor([[3e-6, -1.5e-6, 1e-6, 0.0]], dtype=torch.float16)
    codes, scale = qc.quantize_per_token(x)
    assert float(scale) > 0 and int(codes.abs().max()) == 127
    read = qc.dequantize_per_token(codes, scale, torch.float32)
    assert bool(((read - x.float()).abs() <= scale / 2 + 1e-12).all())
    assert bool((qc.dequantize_per_token(codes, scale, torch.float16) != 0).any())
    zero, floor = qc.quantize_per_token(torch.zeros(1, 4, dtype=F64))
    assert float(floor) == 1.0 and not bool(zero.any())


@pytest.mark.parametrize("bad", [math.inf, -math.inf, math.nan])
def test_non_finite_numbers_are_refused(bad: float) -> None:
    """Finding 18: one infinity made the whole int8 vector NaN; FP8 read it back as 448."""
    x = torch.ones(1, 1, 2, 4)
    x[0, 0, 1, 2] = bad
    with pytest.raises(ValueError, match="x must be finite"):
        qc.quantize_per_token(x)
    for fmt in qc.FORMATS:
        with pytest.raises(ValueError, match="x must be finite"):
            qc.QuantizedStore(fmt).append(x)


def _fp8_read_back(x: torch.Tensor) -> torch.Tensor:
    """``x`` (float32, any shape) through an FP8 store and back."""
    store = qc.QuantizedStore("fp8")
    store.append(x.reshape(1, 1, -1, 1))  # (B, H_kv, t, E)
    return store[0].reshape(x.shape)


def test_fp8_error_bound_holds_for_normal_numbers_only() -> None:
    """Issue 34: the bound 2^-4 is relative only from 2^-6 (e4m3's smallest normal) to 448."""
    assert torch.finfo(torch.float8_e4m3fn).tiny == 2**-6
    assert torch.finfo(torch.float8_e4m3fn).max == 448
    # every multiple of 2^-12 times a power of two from 2^-6 to 448: all the midpoints
    mantissas = 1 + torch.arange(4096, dtype=F64) / 4096
    grid = torch.cat([mantissas * 2.0**e for e in range(-6, 9)])
    grid = torch.cat([grid[grid <= 448], -grid[grid <= 448]]).float()
    relative = ((_fp8_read_back(grid) - grid).abs() / grid.abs()).max().item()
    assert relative <= 2**-4
    assert relative == pytest.approx(1 / 17)  # 2^-4 / (1 + 2^-4), at 1.0625 * 2^e
    # subnormal: 2^-9 apart, an absolute error of at most 2^-10, not a relative one
    x = torch.tensor([1.5 * 2**-9])
    assert _fp8_read_back(x).item() == 2**-8  # a third too large
    assert (_fp8_read_back(x) - x).abs().item() / x.item() == pytest.approx(1 / 3)
    small = torch.linspace(2**-10, 2**-6, 10001)
    assert (_fp8_read_back(small) - small).abs().max().item() == 2**-10
    # 2^-10 is the largest magnitude that reads back as 0: the next float32 reads 2^-9
    tie = torch.tensor([2**-10, -(2**-10)])
    assert bool((_fp8_read_back(tie) == 0).all())
    above = torch.nextafter(tie, torch.tensor([1.0, -1.0]))  # away from 0
    assert _fp8_read_back(above).tolist() == [2**-9, -(2**-9)]
    # above 448 PyTorch's cast saturates (an infinity is refused by the store)
    big = torch.tensor([448.0, 449.0, 500.0, 1e4, -500.0])
    assert _fp8_read_back(big).tolist() == [448.0] * 4 + [-448.0]
    # the module's docstring states these ranges (it said "at most 2^-4" for every number)
    doc = " ".join((qc.__doc__ or "").split())
    for claim in (r":math:`2^{-6} \le |x| \le 448` (the normal numbers) the relative error is "
                  r"at most :math:`2^{-4}`",
                  r":math:`1.5 \cdot 2^{-9}` reads back as :math:`2^{-8}`",
                  r":math:`|x| \le 2^{-10}` reads back as 0", "saturates"):
        assert claim in doc, claim


BAD = [
    (lambda: qc.quantize_per_token(torch.ones(2, 3, dtype=torch.long)),
     ["x", "floating-point", "torch.int64"]),
    (lambda: qc.quantize_per_token(torch.ones(2, 3), bits=3), ["bits", "4 or 8", "3"]),
    (lambda: qc.QuantizedLMCache(format="int2"), ["format", "'int2'", "'fp8'"]),
    (lambda: qc.QuantizedStore("int4").append(torch.ones(1, 1, 2, 5)),
     ["last size", "even", "5"]),
    (lambda: qc.bytes_per_vector(0, "int8"), ["head_dim", "0", ">= 1"]),
]


@pytest.mark.parametrize(("call", "fragments"), BAD)
def test_bad_input_names_argument_got_and_expected(call, fragments) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
