"""Benchmarks: attnlib side by side with its PyTorch twins, in one run (``make bench``).

Each case times two callables, A (attnlib) and B (the reference), with warm-up, then alternates
A and B for every repetition, so a slow spell on a shared machine hits both alike, and reports
the median time of each and the ratio A / B. The table is printed and written as CSV.

Targets (from the book's benchmark issue): the fused scaled dot-product path within 1.05x of
PyTorch, MultiHeadAttention within 1.1x, a Transformer training step within 1.1x of
``nn.Transformer``; grouped-query attention within 1.1x of ``F.scaled_dot_product_attention(...,
enable_gqa=True)`` (2.5x causal), sliding-window attention in blocks at most 0.5x of the fused
kernel given the band mask (n = 4096, w = 128). A missed target is printed as such; the run
still completes.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

import attnlib
from attnlib.blocks.efficient import naive_attention, peak_memory, tiled_attention
from attnlib.blocks.gqa import grouped_query_attention
from attnlib.blocks.multihead import MultiHeadAttention
from attnlib.blocks.sliding_window import sliding_window_attention, sliding_window_mask


@dataclass
class Result:
    case: str
    a_name: str
    b_name: str
    a_ms: float
    b_ms: float
    target: float | None
    note: str = ""

    @property
    def ratio(self) -> float:
        return self.a_ms / self.b_ms

    @property
    def verdict(self) -> str:
        if self.target is None:
            return ""
        return "ok" if self.ratio <= self.target else "MISSED"


def compare(a: Callable[[], object], b: Callable[[], object], reps: int, warmup: int = 3) -> tuple[float, float]:
    """Median milliseconds of a and b, measured alternately after warm-up."""
    for _ in range(warmup):
        a()
        b()
    ta: list[float] = []
    tb: list[float] = []
    for i in range(reps):
        # Alternate which goes first, so cache warmth from the previous call does not favour one.
        order = ((a, ta), (b, tb)) if i % 2 == 0 else ((b, tb), (a, ta))
        for fn, times in order:
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return statistics.median(ta) * 1e3, statistics.median(tb) * 1e3


def bench_sdpa(reps: int) -> list[Result]:
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(8, 8, 256, 64, generator=gen) for _ in range(3))
    mask = torch.rand(8, 1, 256, 256, generator=gen) > 0.1
    out: list[Result] = []
    with torch.no_grad():
        a, b = compare(lambda: attnlib.scaled_dot_product_attention(q, k, v, attn_mask=mask),
                       lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), reps)
        out.append(Result("SDPA fused path, bool mask (8x8x256x64)", "attnlib", "F.sdpa", a, b, 1.05))
        a, b = compare(lambda: attnlib.scaled_dot_product_attention(q, k, v, is_causal=True),
                       lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), reps)
        out.append(Result("SDPA fused path, causal (8x8x256x64)", "attnlib", "F.sdpa", a, b, 1.05))
        a, b = compare(
            lambda: attnlib.scaled_dot_product_attention(q, k, v, attn_mask=mask, need_weights=True),
            lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), reps)
        out.append(Result("SDPA returning weights, bool mask", "attnlib", "F.sdpa", a, b, None,
                          "explicit softmax(QK^T)V: materialises the weights"))
    return out


def bench_mha(reps: int) -> list[Result]:
    torch.manual_seed(0)
    D, H, B, L = 256, 8, 16, 128
    ref = nn.MultiheadAttention(D, H, batch_first=True)
    ours = MultiHeadAttention.from_torch(ref)
    x = torch.randn(B, L, D)
    keep = torch.ones(B, L, dtype=torch.bool)
    keep[:, 100:] = False
    out: list[Result] = []
    ref.eval()
    ours.eval()
    with torch.no_grad():
        a, b = compare(lambda: ours(x, x, x), lambda: ref(x, x, x, need_weights=False), reps)
        out.append(Result("MultiHeadAttention forward (16x128x256, 8 heads)", "attnlib",
                          "nn.MultiheadAttention", a, b, 1.1))
        # Key padding: ours takes True = keep, PyTorch True = ignore, hence ~keep.
        a, b = compare(lambda: ours(x, x, x, key_padding_mask=keep),
                       lambda: ref(x, x, x, key_padding_mask=~keep, need_weights=False), reps)
        out.append(Result("MultiHeadAttention forward, key padding", "attnlib",
                          "nn.MultiheadAttention", a, b, 1.1))
    ref.train()
    ours.train()
    xa = x.clone().requires_grad_()
    xb = x.clone().requires_grad_()

    def fwd_bwd_ours() -> None:
        ours(xa, xa, xa)[0].sum().backward()

    def fwd_bwd_ref() -> None:
        ref(xb, xb, xb, need_weights=False)[0].sum().backward()

    a, b = compare(fwd_bwd_ours, fwd_bwd_ref, reps)
    out.append(Result("MultiHeadAttention forward+backward", "attnlib", "nn.MultiheadAttention",
                      a, b, 1.1))
    return out


def bench_tiled(reps: int) -> list[Result]:
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 4096, 64, generator=gen) for _ in range(3))
    out: list[Result] = []
    with torch.no_grad():
        for causal in (False, True):
            a, b = compare(lambda c=causal: tiled_attention(q, k, v, is_causal=c),
                           lambda c=causal: naive_attention(q, k, v, is_causal=c), max(3, reps // 4))
            mem_a = peak_memory(lambda c=causal: tiled_attention(q, k, v, is_causal=c))
            mem_b = peak_memory(lambda c=causal: naive_attention(q, k, v, is_causal=c))
            out.append(Result(f"tiled vs naive attention, L=S=4096{', causal' if causal else ''}",
                              "tiled", "naive", a, b, 1.3,
                              f"peak extra memory {mem_a / 2**20:.1f} MiB vs {mem_b / 2**20:.1f} MiB "
                              f"(ratio {mem_a / mem_b:.3f})"))
    return out


class TorchTransformerModel(nn.Module):
    """nn.Transformer with the same embeddings, positions and output layer as attnlib's model.

    So that a training step of the two compares the attention stacks, not the wrapping.
    """

    def __init__(self, config: attnlib.TransformerConfig) -> None:
        super().__init__()
        self.config = config
        self.src_embed = nn.Embedding(config.src_vocab_size, config.d_model, padding_idx=config.pad_id)
        self.tgt_embed = nn.Embedding(config.tgt_vocab_size, config.d_model, padding_idx=config.pad_id)
        self.positions = attnlib.SinusoidalPositionalEncoding(config.d_model, config.max_len,
                                                              dropout=config.dropout)
        self.core = nn.Transformer(config.d_model, config.num_heads, config.num_encoder_layers,
                                   config.num_decoder_layers, config.d_ff, config.dropout,
                                   batch_first=True, norm_first=config.norm_first)
        self.out = nn.Linear(config.d_model, config.tgt_vocab_size, bias=False)
        self.out.weight = self.tgt_embed.weight

    def forward(self, src: torch.Tensor, src_keep: torch.Tensor, tgt: torch.Tensor,
                tgt_keep: torch.Tensor) -> torch.Tensor:
        scale = self.config.d_model ** 0.5
        x = self.positions(self.src_embed(src) * scale)
        y = self.positions(self.tgt_embed(tgt) * scale)
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1], dtype=torch.bool)
        # PyTorch's masks are True = ignore: the opposite of attnlib's.
        h = self.core(x, y, tgt_mask=causal, src_key_padding_mask=~src_keep,
                      tgt_key_padding_mask=~tgt_keep, memory_key_padding_mask=~src_keep,
                      tgt_is_causal=True)
        return self.out(h)  # type: ignore[no-any-return]


def bench_transformer(reps: int) -> list[Result]:
    torch.manual_seed(0)
    config = attnlib.TransformerConfig(src_vocab_size=1000, tgt_vocab_size=1000, d_model=256,
                                       num_heads=8, num_encoder_layers=3, num_decoder_layers=3,
                                       d_ff=1024, dropout=0.1, max_len=128)
    ours = attnlib.Transformer(config)
    ref = TorchTransformerModel(config)
    B, S, L = 32, 40, 40
    gen = torch.Generator().manual_seed(0)
    src = torch.randint(4, 1000, (B, S), generator=gen)
    tgt_in = torch.randint(4, 1000, (B, L), generator=gen)
    tgt_out = torch.randint(4, 1000, (B, L), generator=gen)
    src_lengths = torch.randint(S // 2, S + 1, (B,), generator=gen)
    tgt_lengths = torch.randint(L // 2, L + 1, (B,), generator=gen)
    src_keep = attnlib.lengths_to_mask(src_lengths, S)
    tgt_keep = attnlib.lengths_to_mask(tgt_lengths, L)
    src = src.masked_fill(~src_keep, 0)
    tgt_in = tgt_in.masked_fill(~tgt_keep, 0)
    tgt_out = tgt_out.masked_fill(~tgt_keep, 0)
    opt_a = torch.optim.Adam(ours.parameters(), lr=1e-4)
    opt_b = torch.optim.Adam(ref.parameters(), lr=1e-4)

    def step_ours() -> None:
        opt_a.zero_grad()
        logits = ours(src, src_lengths, tgt_in, tgt_lengths)
        F.cross_entropy(logits.transpose(1, 2), tgt_out, ignore_index=0).backward()
        opt_a.step()

    def step_ref() -> None:
        opt_b.zero_grad()
        logits = ref(src, src_keep, tgt_in, tgt_keep)
        F.cross_entropy(logits.transpose(1, 2), tgt_out, ignore_index=0).backward()
        opt_b.step()

    a, b = compare(step_ours, step_ref, max(5, reps // 2))
    return [Result("Transformer training step (d 256, 3+3 layers, 32x40 tokens)", "attnlib",
                   "nn.Transformer", a, b, 1.1)]


def bench_decoding(reps: int) -> list[Result]:
    from attnlib.train.decoding import greedy_decode

    torch.manual_seed(0)
    config = attnlib.TransformerConfig(src_vocab_size=100, tgt_vocab_size=100, d_model=256,
                                       num_heads=4, num_encoder_layers=3, num_decoder_layers=3,
                                       d_ff=1024, dropout=0.0, max_len=128)
    model = attnlib.Transformer(config).eval()
    gen = torch.Generator().manual_seed(0)
    src = torch.randint(4, 100, (8, 20), generator=gen)
    lengths = torch.full((8,), 20)
    # eos_id=-1 never matches, so both decoders produce exactly 64 tokens.
    cached = greedy_decode(model, src, lengths, 64, eos_id=-1, use_cache=True)
    uncached = greedy_decode(model, src, lengths, 64, eos_id=-1, use_cache=False)
    same = bool(torch.equal(cached.tokens, uncached.tokens))
    a, b = compare(lambda: greedy_decode(model, src, lengths, 64, eos_id=-1, use_cache=True),
                   lambda: greedy_decode(model, src, lengths, 64, eos_id=-1, use_cache=False),
                   max(3, reps // 4))
    return [Result("greedy decoding of 64 tokens, batch 8 (d 256, 3+3 layers)", "cached",
                   "uncached", a, b, 1 / 3,
                   f"speed-up {b / a:.1f}x (target >= 3x); same tokens: {same}")]


def bench_gqa(reps: int) -> list[Result]:
    """Grouped-query attention (8 query heads over 2 key/value heads) against PyTorch's GQA."""
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(8, 8, 256, 64, generator=gen)
    k, v = (torch.randn(8, 2, 256, 64, generator=gen) for _ in range(2))
    out: list[Result] = []
    with torch.no_grad():
        a, b = compare(lambda: grouped_query_attention(q, k, v),
                       lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), reps)
        out.append(Result("GQA 8 heads / 2 kv heads (8x256x64)", "attnlib", "F.sdpa(enable_gqa)",
                          a, b, 1.1, "groups stacked as query rows, fused kernel"))
        a, b = compare(lambda: grouped_query_attention(q, k, v, is_causal=True),
                       lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                              enable_gqa=True), reps)
    # Causal: the stacked rows need an explicit (G L, S) mask, so the fused kernel cannot skip
    # the tiles above the diagonal as it does for is_causal: about twice the work.
    out.append(Result("GQA 8 heads / 2 kv heads, causal", "attnlib", "F.sdpa(enable_gqa)",
                      a, b, 2.5, "explicit causal mask: no tile skipping"))
    return out


def bench_sliding_window(reps: int) -> list[Result]:
    """Block sliding-window attention against PyTorch's fused kernel given the band mask."""
    gen = torch.Generator().manual_seed(0)
    n, window = 4096, 128
    q, k, v = (torch.randn(1, 4, n, 64, generator=gen) for _ in range(3))
    band = sliding_window_mask(n, window)
    with torch.no_grad():
        a, b = compare(lambda: sliding_window_attention(q, k, v, window),
                       lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=band),
                       max(reps // 4, 3))
    # Target: O(n w) against O(n^2) work; at n = 4096, w = 128 the block version must take at
    # most half the time of the masked full attention.
    return [Result(f"sliding window w={window}, n={n} (4 heads x 64)", "attnlib blocks",
                   "F.sdpa + band mask", a, b, 0.5, "linear vs quadratic in n")]


EXTRA_CASES: list[Callable[[int], list[Result]]] = [bench_transformer, bench_decoding, bench_gqa,
                                                    bench_sliding_window]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=40, help="timed repetitions per case")
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    parser.add_argument("--csv", type=Path, default=Path("_build/bench.csv"))
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    results: list[Result] = []
    for case in (bench_sdpa, bench_mha, bench_tiled, *EXTRA_CASES):
        results.extend(case(args.reps))
    width = max(len(r.case) for r in results)
    print(f"torch {torch.__version__}, {args.threads} threads, median of {args.reps} alternating runs")
    print(f"{'case':{width}s}  {'A':>9s}  {'B':>9s}  {'A/B':>6s}  target  verdict  (A vs B)")
    for r in results:
        target = f"{r.target:.2f}x" if r.target is not None else "-"
        print(f"{r.case:{width}s}  {r.a_ms:7.2f}ms  {r.b_ms:7.2f}ms  {r.ratio:6.3f}  {target:>6s}  "
              f"{r.verdict:7s}  ({r.a_name} vs {r.b_name}) {r.note}")
    args.csv.parent.mkdir(parents=True, exist_ok=True)
    with args.csv.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["case", "a", "b", "a_ms", "b_ms", "ratio", "target", "verdict", "note"])
        for r in results:
            writer.writerow([r.case, r.a_name, r.b_name, f"{r.a_ms:.4f}", f"{r.b_ms:.4f}",
                             f"{r.ratio:.4f}", r.target if r.target is not None else "",
                             r.verdict, r.note])
    print(f"wrote {args.csv}; total {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
