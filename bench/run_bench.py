"""Benchmarks: attnlib side by side with its PyTorch twins, in one run (``make bench``).

Each case times two callables, A (attnlib) and B (the reference), with warm-up, then alternates
A and B for every repetition, so a slow spell on a shared machine hits both alike, and reports
the median time of each and the ratio A / B. The table is printed and written as CSV.

Targets (from the book's benchmark issue): the fused scaled dot-product path within 1.05x of
PyTorch, MultiHeadAttention within 1.1x, a Transformer training step within 1.1x of
``nn.Transformer``; grouped-query attention within 1.1x of ``F.scaled_dot_product_attention(...,
enable_gqa=True)`` (2.5x causal), sliding-window attention in blocks at most 0.5x of the fused
kernel given the band mask (n = 4096, w = 128). A missed target is printed as such; the run
still completes. It fails only when a correctness check fails (the cached and uncached decoders
must produce the same tokens).

``--quick`` (``make bench-quick``, a step of ``make test``) runs every case once, without
warm-up, at small sizes, in a few seconds: it checks that the benchmark still runs, not the
targets, whose verdicts it leaves out.
"""

from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
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
    check: bool | None = None  # a correctness check of the case: False fails the run

    @property
    def ratio(self) -> float:
        return self.a_ms / self.b_ms

    @property
    def verdict(self) -> str:
        if self.target is None:
            return ""
        return "ok" if self.ratio <= self.target else "MISSED"


@dataclass(frozen=True)
class Sizes:
    """The sizes of every case, and how often it is timed."""

    reps: int = 40  # timed repetitions (some cases use a fraction of it, at least 3)
    warmup: int = 3
    min_reps: int = 3  # the fewest repetitions of the slow cases
    sdpa: tuple[int, int, int, int] = (8, 8, 256, 64)  # B, H, L, E
    mha: tuple[int, int, int, int] = (256, 8, 16, 128)  # D, H, B, L
    tiled: int = 4096  # L = S
    transformer: tuple[int, int, int, int, int] = (256, 8, 3, 1024, 32)  # d, heads, layers, d_ff, B
    decoder: tuple[int, int, int] = (256, 3, 1024)  # d, layers, d_ff of the decoding case
    decode_tokens: int = 64
    gqa: tuple[int, int] = (8, 256)  # B, L
    window: tuple[int, int] = (4096, 128)  # n, w


#: ``--quick``: every case once, without warm-up, at sizes that take milliseconds.
QUICK = Sizes(reps=1, warmup=0, min_reps=1, sdpa=(2, 2, 32, 16), mha=(32, 4, 2, 16), tiled=256,
              transformer=(32, 4, 1, 64, 4), decoder=(32, 1, 64), decode_tokens=8, gqa=(2, 32), window=(256, 32))


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


def bench_sdpa(z: Sizes) -> list[Result]:
    gen = torch.Generator().manual_seed(0)
    B, H, L, E = z.sdpa
    shape = "x".join(map(str, z.sdpa))
    q, k, v = (torch.randn(B, H, L, E, generator=gen) for _ in range(3))
    mask = torch.rand(B, 1, L, L, generator=gen) > 0.1
    reps, warmup = z.reps, z.warmup
    out: list[Result] = []
    with torch.no_grad():
        a, b = compare(lambda: attnlib.scaled_dot_product_attention(q, k, v, attn_mask=mask),
                       lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), reps,
                       warmup)
        out.append(Result(f"SDPA fused path, bool mask ({shape})", "attnlib", "F.sdpa", a, b, 1.05))
        a, b = compare(lambda: attnlib.scaled_dot_product_attention(q, k, v, is_causal=True),
                       lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), reps,
                       warmup)
        out.append(Result(f"SDPA fused path, causal ({shape})", "attnlib", "F.sdpa", a, b, 1.05))
        a, b = compare(
            lambda: attnlib.scaled_dot_product_attention(q, k, v, attn_mask=mask, need_weights=True),
            lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), reps, warmup)
        out.append(Result("SDPA returning weights, bool mask", "attnlib", "F.sdpa", a, b, None,
                          "explicit softmax(QK^T)V: materialises the weights"))
    return out


def bench_mha(z: Sizes) -> list[Result]:
    torch.manual_seed(0)
    D, H, B, L = z.mha
    reps, warmup = z.reps, z.warmup
    ref = nn.MultiheadAttention(D, H, batch_first=True)
    ours = MultiHeadAttention.from_torch(ref)
    x = torch.randn(B, L, D)
    keep = torch.ones(B, L, dtype=torch.bool)
    keep[:, L * 25 // 32:] = False  # 100 of 128 real keys
    out: list[Result] = []
    ref.eval()
    ours.eval()
    with torch.no_grad():
        a, b = compare(lambda: ours(x, x, x), lambda: ref(x, x, x, need_weights=False), reps,
                       warmup)
        out.append(Result(f"MultiHeadAttention forward ({B}x{L}x{D}, {H} heads)", "attnlib",
                          "nn.MultiheadAttention", a, b, 1.1))
        # Key padding: ours takes True = keep, PyTorch True = ignore, hence ~keep.
        a, b = compare(lambda: ours(x, x, x, key_padding_mask=keep),
                       lambda: ref(x, x, x, key_padding_mask=~keep, need_weights=False), reps,
                       warmup)
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

    a, b = compare(fwd_bwd_ours, fwd_bwd_ref, reps, warmup)
    out.append(Result("MultiHeadAttention forward+backward", "attnlib", "nn.MultiheadAttention",
                      a, b, 1.1))
    return out


def bench_tiled(z: Sizes) -> list[Result]:
    gen = torch.Generator().manual_seed(0)
    n = z.tiled
    q, k, v = (torch.randn(1, n, 64, generator=gen) for _ in range(3))
    out: list[Result] = []
    with torch.no_grad():
        for causal in (False, True):
            a, b = compare(lambda c=causal: tiled_attention(q, k, v, is_causal=c),
                           lambda c=causal: naive_attention(q, k, v, is_causal=c),
                           max(z.min_reps, z.reps // 4), z.warmup)
            mem_a = peak_memory(lambda c=causal: tiled_attention(q, k, v, is_causal=c))
            mem_b = peak_memory(lambda c=causal: naive_attention(q, k, v, is_causal=c))
            out.append(Result(f"tiled vs naive attention, L=S={n}{', causal' if causal else ''}",
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


def bench_transformer(z: Sizes) -> list[Result]:
    torch.manual_seed(0)
    d, heads, layers, d_ff, B = z.transformer
    config = attnlib.TransformerConfig(src_vocab_size=1000, tgt_vocab_size=1000, d_model=d,
                                       num_heads=heads, num_encoder_layers=layers,
                                       num_decoder_layers=layers, d_ff=d_ff, dropout=0.1,
                                       max_len=128)
    ours = attnlib.Transformer(config)
    ref = TorchTransformerModel(config)
    S, L = 40, 40
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

    a, b = compare(step_ours, step_ref, max(min(5, z.reps), z.reps // 2), z.warmup)
    return [Result(f"Transformer training step (d {d}, {layers}+{layers} layers, {B}x{L} tokens)",
                   "attnlib", "nn.Transformer", a, b, 1.1)]


def bench_decoding(z: Sizes) -> list[Result]:
    from attnlib.train.decoding import Decoded, greedy_decode

    torch.manual_seed(0)
    d, layers, d_ff = z.decoder
    config = attnlib.TransformerConfig(src_vocab_size=100, tgt_vocab_size=100, d_model=d,
                                       num_heads=4, num_encoder_layers=layers,
                                       num_decoder_layers=layers, d_ff=d_ff, dropout=0.0,
                                       max_len=128)
    model = attnlib.Transformer(config).eval()
    gen = torch.Generator().manual_seed(0)
    src = torch.randint(4, 100, (8, 20), generator=gen)
    lengths = torch.full((8,), 20)
    n = z.decode_tokens

    def decode(use_cache: bool) -> Decoded:
        # stop_at_eos=False: both decoders produce exactly n tokens, whatever the model emits.
        return greedy_decode(model, src, lengths, n, use_cache=use_cache, stop_at_eos=False)

    cached, uncached = decode(True), decode(False)
    same = bool(torch.equal(cached.tokens, uncached.tokens)) and cached.tokens.shape[1] == n
    a, b = compare(lambda: decode(True), lambda: decode(False), max(z.min_reps, z.reps // 4),
                   z.warmup)
    return [Result(f"greedy decoding of {n} tokens, batch 8 (d {d}, {layers}+{layers} layers)",
                   "cached", "uncached", a, b, 1 / 3,
                   f"speed-up {b / a:.1f}x (target >= 3x); same tokens: {same}", check=same)]


def bench_gqa(z: Sizes) -> list[Result]:
    """Grouped-query attention (8 query heads over 2 key/value heads) against PyTorch's GQA."""
    gen = torch.Generator().manual_seed(0)
    B, L = z.gqa
    q = torch.randn(B, 8, L, 64, generator=gen)
    k, v = (torch.randn(B, 2, L, 64, generator=gen) for _ in range(2))
    out: list[Result] = []
    with torch.no_grad():
        a, b = compare(lambda: grouped_query_attention(q, k, v),
                       lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), z.reps,
                       z.warmup)
        out.append(Result(f"GQA 8 heads / 2 kv heads ({B}x{L}x64)", "attnlib",
                          "F.sdpa(enable_gqa)", a, b, 1.1,
                          "groups stacked as query rows, fused kernel"))
        a, b = compare(lambda: grouped_query_attention(q, k, v, is_causal=True),
                       lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                              enable_gqa=True), z.reps, z.warmup)
    # Causal: the stacked rows need an explicit (G L, S) mask, so the fused kernel cannot skip
    # the tiles above the diagonal as it does for is_causal: about twice the work.
    out.append(Result("GQA 8 heads / 2 kv heads, causal", "attnlib", "F.sdpa(enable_gqa)",
                      a, b, 2.5, "explicit causal mask: no tile skipping"))
    return out


def bench_sliding_window(z: Sizes) -> list[Result]:
    """Block sliding-window attention against PyTorch's fused kernel given the band mask."""
    gen = torch.Generator().manual_seed(0)
    n, window = z.window
    q, k, v = (torch.randn(1, 4, n, 64, generator=gen) for _ in range(3))
    band = sliding_window_mask(n, window)
    with torch.no_grad():
        a, b = compare(lambda: sliding_window_attention(q, k, v, window),
                       lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=band),
                       max(z.reps // 4, z.min_reps), z.warmup)
    # Target: O(n w) against O(n^2) work; at n = 4096, w = 128 the block version must take at
    # most half the time of the masked full attention.
    return [Result(f"sliding window w={window}, n={n} (4 heads x 64)", "attnlib blocks",
                   "F.sdpa + band mask", a, b, 0.5, "linear vs quadratic in n")]


EXTRA_CASES: list[Callable[[Sizes], list[Result]]] = [bench_transformer, bench_decoding,
                                                      bench_gqa, bench_sliding_window]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=None,
                        help="timed repetitions per case (default 40; 1 with --quick)")
    parser.add_argument("--threads", type=int, default=2, help="torch intra-op threads")
    parser.add_argument("--quick", action="store_true",
                        help="every case once at small sizes, no verdicts: a check that it runs")
    parser.add_argument("--csv", type=Path, default=None,
                        help="default _build/bench.csv (_build/bench-quick.csv with --quick)")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else Sizes()
    if args.reps is not None:
        if args.reps < 1:
            parser.error(f"--reps must be >= 1, got {args.reps}")
        sizes = replace(sizes, reps=args.reps)
    csv_path = args.csv or Path("_build/bench-quick.csv" if args.quick else "_build/bench.csv")
    torch.set_num_threads(args.threads)
    start = time.perf_counter()
    results: list[Result] = []
    for case in (bench_sdpa, bench_mha, bench_tiled, *EXTRA_CASES):
        results.extend(case(sizes))
    if args.quick:  # sizes too small for the targets to mean anything
        results = [replace(r, target=None) for r in results]
    width = max(len(r.case) for r in results)
    runs = f"median of {sizes.reps} alternating runs" if sizes.reps > 1 else "one run each"
    print(f"torch {torch.__version__}, {args.threads} threads, {runs}"
          f"{' (--quick: small sizes, no verdicts)' if args.quick else ''}")
    print(f"{'case':{width}s}  {'A':>9s}  {'B':>9s}  {'A/B':>6s}  target  verdict  (A vs B)")
    for r in results:
        target = f"{r.target:.2f}x" if r.target is not None else "-"
        print(f"{r.case:{width}s}  {r.a_ms:7.2f}ms  {r.b_ms:7.2f}ms  {r.ratio:6.3f}  {target:>6s}  "
              f"{r.verdict:7s}  ({r.a_name} vs {r.b_name}) {r.note}")
    csv_path.parent.mkdir(parents=True, exist_ok=True)
    with csv_path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["case", "a", "b", "a_ms", "b_ms", "ratio", "target", "verdict", "note"])
        for r in results:
            writer.writerow([r.case, r.a_name, r.b_name, f"{r.a_ms:.4f}", f"{r.b_ms:.4f}",
                             f"{r.ratio:.4f}", r.target if r.target is not None else "",
                             r.verdict, r.note])
    print(f"wrote {csv_path}; total {time.perf_counter() - start:.1f} s")
    failed = [r.case for r in results if r.check is False]
    for name in failed:
        print(f"run_bench: the correctness check of {name!r} failed", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
