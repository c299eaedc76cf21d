"""Tests for attnlib.blocks.positional: the sinusoidal table, learned and rotary positions."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib.blocks.positional import (
    LearnedPositionalEmbedding,
    RotaryPositionalEmbedding,
    SinusoidalPositionalEncoding,
    relative_shift_matrix,
    sinusoidal_encoding,
)

# Deterministic in CI: the same examples on every run.
PROPERTY = settings(deadline=None, max_examples=25, derandomize=True)
F64 = torch.float64


def test_sinusoidal_values_match_the_formula() -> None:
    pe = sinusoidal_encoding(20, 6, dtype=F64)
    assert pe.shape == (20, 6) and pe.dtype == F64
    for pos in range(20):
        for i in range(3):
            angle = pos / 10000 ** (2 * i / 6)
            assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-12)
            assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-12)
    # Position 0 is (sin 0, cos 0, ...) = (0, 1, 0, 1, ...).
    assert torch.equal(pe[0], torch.tensor([0.0, 1.0] * 3, dtype=F64))
    # Another base changes the wavelengths.
    pe2 = sinusoidal_encoding(5, 4, base=100.0, dtype=F64)
    assert pe2[3, 2].item() == pytest.approx(math.sin(3 / 100 ** (2 / 4)), abs=1e-12)


def test_sinusoidal_is_bounded_and_float32_by_default() -> None:
    pe = sinusoidal_encoding(3000, 32)
    assert pe.dtype == torch.float32 and pe.shape == (3000, 32)
    assert bool((pe.abs() <= 1).all())
    # Each (sin, cos) pair lies on the unit circle.
    pairs = pe.double().view(3000, 16, 2)  # (max_len, D/2, 2)
    torch.testing.assert_close(pairs.pow(2).sum(-1), torch.ones(3000, 16, dtype=F64))


@PROPERTY
@given(pos=st.integers(0, 500), k=st.integers(-100, 100), d=st.sampled_from([2, 8, 32]))
def test_shift_by_k_is_a_fixed_linear_map(pos: int, k: int, d: int) -> None:
    """PE(pos + k) = M_k PE(pos), with M_k independent of pos."""
    if pos + k < 0:
        k = -k
    pe = sinusoidal_encoding(max(pos, pos + k) + 1, d, dtype=F64)
    m = relative_shift_matrix(k, d, dtype=F64)
    torch.testing.assert_close(m @ pe[pos], pe[pos + k], atol=1e-10, rtol=0)
    # Row-vector form, as the whole table: one matrix for every position at once.
    n = pe.shape[0] - abs(k)
    rows = (pe[:n] @ m.T) if k >= 0 else (pe[-n:] @ m.T)
    expected = pe[k : k + n] if k >= 0 else pe[: n]
    torch.testing.assert_close(rows, expected, atol=1e-10, rtol=0)


def test_shift_matrix_structure() -> None:
    m3, m5 = relative_shift_matrix(3, 8, dtype=F64), relative_shift_matrix(5, 8, dtype=F64)
    eye = torch.eye(8, dtype=F64)
    torch.testing.assert_close(m3 @ m3.T, eye, atol=1e-12, rtol=0)  # orthogonal
    torch.testing.assert_close(m3 @ m5, relative_shift_matrix(8, 8, dtype=F64), atol=1e-12, rtol=0)
    torch.testing.assert_close(relative_shift_matrix(-3, 8, dtype=F64), m3.T, atol=1e-12, rtol=0)
    assert torch.equal(relative_shift_matrix(0, 8, dtype=F64), eye)
    # Block diagonal: one 2 x 2 rotation per frequency pair, zero elsewhere.
    diagonal = [m3[i : i + 2, i : i + 2] for i in range(0, 8, 2)]
    blocks = torch.block_diag(*diagonal)  # type: ignore[no-untyped-call]
    assert torch.equal(m3, blocks)
    assert relative_shift_matrix(3, 8).dtype == torch.float32


@PROPERTY
@given(p=st.integers(0, 300), q=st.integers(0, 300), t=st.integers(0, 300))
def test_dot_product_depends_only_on_the_distance(p: int, q: int, t: int) -> None:
    pe = sinusoidal_encoding(601, 16, dtype=F64)
    dot = pe[p] @ pe[q]
    torch.testing.assert_close(dot, pe[p + t] @ pe[q + t], atol=1e-10, rtol=0)
    torch.testing.assert_close(dot, pe[0] @ pe[abs(p - q)], atol=1e-10, rtol=0)
    omega = 10000.0 ** (-torch.arange(0, 16, 2, dtype=F64) / 16)
    torch.testing.assert_close(dot, torch.cos(omega * (p - q)).sum(), atol=1e-10, rtol=0)


def test_sinusoidal_module_adds_the_table() -> None:
    enc = SinusoidalPositionalEncoding(8, max_len=50, dtype=F64)
    x = torch.randn(2, 7, 8, dtype=F64)
    table = sinusoidal_encoding(50, 8, dtype=F64)
    out = enc(x)
    assert out.shape == (2, 7, 8)
    torch.testing.assert_close(out, x + table[:7], atol=0, rtol=0)
    torch.testing.assert_close(enc(x, offset=10), x + table[10:17], atol=0, rtol=0)


def test_sinusoidal_module_beyond_max_len_is_computed_on_the_fly() -> None:
    enc = SinusoidalPositionalEncoding(8, max_len=4, dtype=F64)
    x = torch.zeros(1, 10, 8, dtype=F64)
    torch.testing.assert_close(enc(x)[0], sinusoidal_encoding(10, 8, dtype=F64), atol=0, rtol=0)
    torch.testing.assert_close(
        enc(x, offset=3)[0], sinusoidal_encoding(13, 8, dtype=F64)[3:], atol=0, rtol=0
    )
    # A float32 table added to float64 input: the sum is float64, the table float32-exact.
    enc32 = SinusoidalPositionalEncoding(8, max_len=20)
    out = enc32(torch.zeros(1, 5, 8, dtype=F64))
    assert out.dtype == F64
    torch.testing.assert_close(out[0], sinusoidal_encoding(5, 8).double(), atol=0, rtol=0)


def test_sinusoidal_table_is_a_non_persistent_buffer() -> None:
    enc = SinusoidalPositionalEncoding(8, max_len=16)
    assert "pe" in dict(enc.named_buffers())
    assert enc.pe.shape == (16, 8) and not enc.pe.requires_grad
    assert "pe" not in enc.state_dict() and len(enc.state_dict()) == 0
    assert list(enc.parameters()) == []
    enc.load_state_dict({}, strict=True)  # nothing to load: the table is rebuilt, not saved


def test_sinusoidal_dropout_only_in_training() -> None:
    enc = SinusoidalPositionalEncoding(8, max_len=16, dropout=0.5)
    x = torch.randn(2, 6, 8)
    torch.manual_seed(0)
    train = enc(x)
    assert bool((train == 0).any())
    enc.eval()
    torch.testing.assert_close(enc(x), x + enc.pe[:6], atol=0, rtol=0)


def test_learned_embedding_looks_up_its_table() -> None:
    torch.manual_seed(0)
    emb = LearnedPositionalEmbedding(10, 4)
    x = torch.randn(3, 6, 4)
    out = emb(x)
    assert out.shape == (3, 6, 4)
    torch.testing.assert_close(out - x, emb.embedding.weight[:6].expand(3, 6, 4))
    torch.testing.assert_close(emb(x, offset=4) - x, emb.embedding.weight[4:].expand(3, 6, 4))
    assert "embedding.weight" in emb.state_dict()
    # Only the rows of positions used receive a gradient.
    emb(x[:, :3]).sum().backward()
    grad = emb.embedding.weight.grad
    assert grad is not None and bool((grad[:3] == 3).all()) and bool((grad[3:] == 0).all())


@pytest.mark.parametrize(("L", "offset", "message"), [
    (12, 0, r"sequence length L = 12, offset = 0\) exceed max_len = 10"),
    (5, 6, r"offset \+ L - 1 = 10 \(sequence length L = 5, offset = 6\) exceed max_len = 10"),
])
def test_learned_embedding_beyond_max_len(L: int, offset: int, message: str) -> None:
    emb = LearnedPositionalEmbedding(10, 4)
    emb(torch.randn(1, 10, 4))  # exactly max_len is fine
    with pytest.raises(ValueError, match=message):
        emb(torch.randn(1, L, 4), offset=offset)


def rope_matrix(m: int, head_dim: int) -> torch.Tensor:
    """R_m written out, one 2 x 2 rotation by m * theta_i per pair (the docstring's formula)."""
    r = torch.zeros(head_dim, head_dim, dtype=F64)
    for i in range(head_dim // 2):
        a = m * 10000.0 ** (-2 * i / head_dim)
        r[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = torch.tensor(
            [[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]], dtype=F64
        )
    return r


def test_rope_matches_the_rotation_matrices() -> None:
    rope = RotaryPositionalEmbedding(6)
    x = torch.randn(2, 5, 6, dtype=F64)
    out = rope(x)
    assert out.shape == x.shape and out.dtype == F64
    for m in range(5):
        torch.testing.assert_close(out[:, m], x[:, m] @ rope_matrix(m, 6).T, atol=1e-12, rtol=0)
        # R_m is M_m^T, the sinusoidal shift matrix transposed: in row form, x @ M_m.
        shift = relative_shift_matrix(m, 6, dtype=F64)
        torch.testing.assert_close(out[:, m], x[:, m] @ shift, atol=1e-12, rtol=0)
    torch.testing.assert_close(out[:, 0], x[:, 0], atol=0, rtol=0)  # position 0: identity


@PROPERTY
@given(m=st.integers(0, 2000), n=st.integers(0, 2000), t=st.integers(-500, 500),
       seed=st.integers(0, 2**16))
def test_rope_score_depends_only_on_the_offset(m: int, n: int, t: int, seed: int) -> None:
    """(R_m q) . (R_n k) is the same for (m + t, n + t): it depends only on m - n."""
    t = max(t, -min(m, n))  # keep positions >= 0
    g = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, 1, 1, 16, generator=g, dtype=F64)  # (B=1, L=1, E) each
    rope = RotaryPositionalEmbedding(16)

    def score(a: int, b: int) -> torch.Tensor:
        qa = rope(q, positions=torch.tensor([a]))
        kb = rope(k, positions=torch.tensor([b]))
        dot: torch.Tensor = (qa * kb).sum()
        return dot

    torch.testing.assert_close(score(m, n), score(m + t, n + t), atol=1e-10, rtol=0)
    torch.testing.assert_close(score(m, n), score(0, n - m) if n >= m else score(m - n, 0),
                               atol=1e-10, rtol=0)


def test_added_positions_are_not_shift_invariant_control() -> None:
    """The control for the test above: adding PE to q and k does not give the same property."""
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 8, generator=g, dtype=F64)
    pe = sinusoidal_encoding(10, 8, dtype=F64)
    assert not torch.allclose((q + pe[1]) @ (k + pe[4]), (q + pe[2]) @ (k + pe[5]))


@PROPERTY
@given(seed=st.integers(0, 2**16), offset=st.integers(0, 10**5))
def test_rope_preserves_norms(seed: int, offset: int) -> None:
    x = torch.randn(2, 3, 4, 8, generator=torch.Generator().manual_seed(seed), dtype=F64)
    out = RotaryPositionalEmbedding(8)(x, offset=offset)
    torch.testing.assert_close(out.norm(dim=-1), x.norm(dim=-1), atol=1e-10, rtol=0)


def test_rope_shapes_positions_and_offset() -> None:
    rope = RotaryPositionalEmbedding(8)
    x = torch.randn(2, 3, 5, 8)  # (B, H, L, E)
    out = rope(x)
    assert out.shape == (2, 3, 5, 8)
    for h in range(3):  # the same rotation for every head
        torch.testing.assert_close(out[:, h], rope(x[:, h]), atol=0, rtol=0)
    torch.testing.assert_close(rope(x, offset=7), rope(x, positions=torch.arange(7, 12)))
    per_batch = torch.tensor([[0, 1, 2, 3, 4], [10, 11, 12, 13, 14]])  # (B, L)
    out_b = rope(x, positions=per_batch)
    torch.testing.assert_close(out_b[0], out[0], atol=0, rtol=0)
    torch.testing.assert_close(out_b[1], rope(x, offset=10)[1])
    assert rope(x.half()).dtype == torch.float16
    assert list(rope.parameters()) == [] and len(rope.state_dict()) == 0


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: sinusoidal_encoding(10, 7), r"d_model must be even.*d_model = 7"),
        (lambda: SinusoidalPositionalEncoding(5), r"d_model must be even.*d_model = 5"),
        (lambda: relative_shift_matrix(2, 3), r"d_model must be even.*d_model = 3"),
        (lambda: RotaryPositionalEmbedding(9), r"head_dim must be even.*head_dim = 9"),
        (lambda: sinusoidal_encoding(-1, 8), r"max_len must be >= 0, got -1"),
        (lambda: sinusoidal_encoding(10, 8, base=0.0), r"base must be finite and > 0"),
        (lambda: SinusoidalPositionalEncoding(8, dropout=1.0), r"dropout must be in \[0, 1\)"),
        (lambda: SinusoidalPositionalEncoding(8)(torch.randn(2, 5, 6)),
         r"x must have shape \(B, L, D\) with D = d_model = 8, got shape \(2, 5, 6\)"),
        (lambda: SinusoidalPositionalEncoding(8)(torch.randn(5, 8)),
         r"x must have 3 dimensions \(B, L, D\), got shape \(5, 8\)"),
        (lambda: SinusoidalPositionalEncoding(8)(torch.randn(1, 5, 8), offset=-1),
         r"offset must be >= 0"),
        (lambda: LearnedPositionalEmbedding(10, 4)(torch.randn(1, 3, 5)),
         r"D = d_model = 4, got shape \(1, 3, 5\)"),
        (lambda: RotaryPositionalEmbedding(8)(torch.randn(2, 5, 6)),
         r"x must have last size E = head_dim = 8, got shape \(2, 5, 6\)"),
        (lambda: RotaryPositionalEmbedding(8)(torch.randn(8)),
         r"x must have 3 or 4 dimensions.*got shape \(8\)"),
        (lambda: RotaryPositionalEmbedding(8)(torch.randn(2, 5, 8), positions=torch.arange(4)),
         r"positions must have shape \(L,\) = \(5,\) or \(B, L\) = \(2, 5\).*got shape \(4\)"),
        (lambda: RotaryPositionalEmbedding(8)(torch.randn(2, 5, 8), positions=torch.arange(5),
                                              offset=2), r"either positions or offset"),
    ],
)
def test_bad_inputs(make: object, message: str) -> None:
    assert callable(make)
    with pytest.raises(ValueError, match=message):
        make()


def test_bad_types() -> None:
    with pytest.raises(TypeError, match=r"positions must have an integer dtype, got torch.float32"):
        RotaryPositionalEmbedding(8)(torch.randn(2, 5, 8), positions=torch.arange(5.0))
    with pytest.raises(TypeError, match=r"x must have a floating-point dtype"):
        SinusoidalPositionalEncoding(8)(torch.ones(1, 3, 8, dtype=torch.int64))
    with pytest.raises(TypeError, match=r"d_model must be an int"):
        sinusoidal_encoding(10, 8.0)  # type: ignore[arg-type]
