"""The decoder-only language model, its cache, the echo text and the cache-memory formula."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attnlib.experiments import cache_memory as cm
from attnlib.experiments import lm_tasks as tasks
from attnlib.models.decoder_lm import (
    DecoderLM,
    DecoderLMConfig,
    LMCache,
    generate,
    lm_loss,
    train_lm,
)

pytestmark = pytest.mark.usefixtures("one_thread")

F64 = torch.float64


def _model(**changes: object) -> DecoderLM:
    torch.manual_seed(0)
    config = DecoderLMConfig(**{"vocab_size": 26, "max_len": 64, **changes})  # type: ignore[arg-type]
    return DecoderLM(config, dtype=F64).eval()


def test_causal_future_tokens_do_not_change_the_past() -> None:
    model = _model()
    tokens = tasks.echo_text(2, 12, 5, seed=1)
    changed = tokens.clone()
    changed[:, 8:] = (changed[:, 8:] + 1) % 26
    with torch.no_grad():
        a, b = model(tokens), model(changed)
    torch.testing.assert_close(a[:, :8], b[:, :8], atol=0, rtol=0)
    assert not torch.allclose(a[:, 8:], b[:, 8:])


@pytest.mark.parametrize("changes", [{}, {"num_kv_heads": 2}, {"num_kv_heads": 1},
                                     {"window": 4}, {"window": 4, "num_kv_heads": 1}])
def test_cached_logits_equal_full_forward(changes: dict[str, int]) -> None:
    """Prefill 7 tokens, then one token at a time: the logits of the uncached pass."""
    model = _model(**changes)
    tokens = tasks.echo_text(2, 20, 6, seed=2)
    with torch.no_grad():
        full = model(tokens)
        cache = LMCache()
        steps = [model(tokens[:, :7], cache)]
        for t in range(7, 20):
            steps.append(model(tokens[:, t:t + 1], cache))
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-12, rtol=1e-12)
    window = changes.get("window")
    kept = 20 if window is None else window
    assert cache.keys[0].shape[2] == kept
    head_dim = model.config.head_dim
    assert cache.nbytes() == cm.kv_cache_bytes(2, model.config.num_kv_heads, head_dim, 20,
                                               batch=2, bytes_per_number=8, window=window)


def test_generate_cached_equals_uncached_and_continues_prompt() -> None:
    model = _model(window=5)
    prompt = tasks.echo_text(3, 9, 4, seed=3)
    a = generate(model, prompt, 12)
    b = generate(model, prompt, 12, use_cache=False)
    assert a.shape == (3, 21)
    assert torch.equal(a, b)
    assert torch.equal(a[:, :9], prompt)


def test_windowed_model_equals_band_masked_attention() -> None:
    """A window as long as max_len is the causal model."""
    tokens = tasks.echo_text(2, 16, 5, seed=4)
    with torch.no_grad():
        torch.testing.assert_close(_model(window=64)(tokens), _model()(tokens), atol=0, rtol=0)


def test_with_kv_heads_keeps_queries_and_shrinks_cache() -> None:
    model = _model()
    pooled = model.with_kv_heads(2)
    assert pooled.config.num_kv_heads == 2 and model.config.num_kv_heads == 4
    assert pooled.parameter_count() < model.parameter_count()
    tokens = tasks.echo_text(1, 8, 4)
    cache = LMCache()
    with torch.no_grad():
        pooled(tokens, cache)
    assert cache.keys[0].shape == (1, 2, 8, 8)


def test_training_learns_the_echo() -> None:
    model = _model()

    def batch(step: int) -> tuple[torch.Tensor, torch.Tensor]:
        t = tasks.echo_text(16, 24, 6, seed=step)
        return t, tasks.echo_targets(t, 6)

    losses = train_lm(model, batch, steps=60, lr=0.01)
    assert losses[-1] < 0.5 * losses[0]
    test = tasks.echo_text(50, 24, 6, seed=10**6)
    with torch.no_grad():
        loss = lm_loss(model(test), tasks.echo_targets(test, 6))
    assert float(loss) < 1.0


def test_lm_loss_is_cross_entropy_over_kept_targets() -> None:
    logits = torch.randn(2, 5, 7, dtype=F64)
    targets = torch.tensor([[1, 2, -100, 3, -100], [-100, 0, 6, 6, 1]])
    keep = targets != -100
    torch.testing.assert_close(lm_loss(logits, targets),
                               F.cross_entropy(logits[keep], targets[keep]))


def test_echo_text_and_targets() -> None:
    t = tasks.echo_text(3, 10, 4, seed=5)
    assert t.shape == (3, 10)
    assert torch.equal(t[:, 4:], t[:, :-4])
    targets = tasks.echo_targets(t, 4)
    assert bool((targets[:, :3] == tasks.IGNORE_INDEX).all())
    assert torch.equal(targets[:, 3:-1], t[:, 4:])
    assert int(targets[0, -1]) == tasks.IGNORE_INDEX
    assert tasks.to_text(torch.tensor([0, 1, 25])) == ["abz"]
    assert torch.equal(tasks.echo_text(2, 8, 3, seed=1), tasks.echo_text(2, 8, 3, seed=1))


def test_cache_formula_and_published_shapes() -> None:
    assert cm.kv_cache_bytes(32, 32, 128, 4096) == 2 * 2**30  # Llama 2 7B, 16-bit: 2 GiB
    assert cm.kv_cache_bytes(2, 4, 8, 100, window=16) == cm.kv_cache_bytes(2, 4, 8, 16)
    mistral = cm.PUBLISHED["Mistral 7B"]
    assert mistral.cache_bytes() == mistral.cache_bytes(window=False) // 2
    llama70 = cm.PUBLISHED["Llama 2 70B"]
    assert llama70.num_heads // llama70.num_kv_heads == 8


def test_cache_formula_equals_allocated_cache_of_published_shapes_on_meta() -> None:
    """Allocate each published model's cache (meta tensors: shapes, no memory) and count it."""
    for shape in cm.PUBLISHED.values():
        t = shape.context if shape.window is None else shape.window
        keys = [torch.empty(1, shape.num_kv_heads, t, shape.head_dim, dtype=torch.float16,
                            device="meta") for _ in range(2 * shape.num_layers)]
        assert sum(k.numel() * k.element_size() for k in keys) == shape.cache_bytes()


def test_linear_attention_model_trains_and_keeps_no_cache() -> None:
    model = _model(attention="linear")
    tokens = tasks.echo_text(2, 10, 3, seed=1)
    with torch.no_grad():
        full = model(tokens)
        # causal: the first 6 positions do not see the last 4
        torch.testing.assert_close(model(tokens[:, :6]), full[:, :6], atol=1e-12, rtol=0)
    with pytest.raises(ValueError, match="past must be None"):
        generate(model, tokens[:, :4], 2)
    assert generate(model, tokens[:, :4], 2, use_cache=False).shape == (2, 6)
    losses = train_lm(model, lambda step: (tokens, tasks.echo_targets(tokens, 3)), steps=30,
                      lr=0.01)
    assert losses[-1] < losses[0]


def test_constant_rate_keeps_the_rate() -> None:
    model = _model()
    tokens = tasks.echo_text(2, 10, 3, seed=1)
    rates = []
    original = torch.optim.Adam.step

    def spy(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        rates.append(self.param_groups[0]["lr"])
        return original(self, *args, **kwargs)

    torch.optim.Adam.step = spy  # type: ignore[method-assign]
    try:
        train_lm(model, lambda step: (tokens, tasks.echo_targets(tokens, 3)), steps=4, lr=0.01,
                 constant_lr=True)
        train_lm(model, lambda step: (tokens, tasks.echo_targets(tokens, 3)), steps=4, lr=0.01)
    finally:
        torch.optim.Adam.step = original  # type: ignore[method-assign]
    assert rates[:4] == [0.01] * 4 and rates[4] == 0.01 and rates[7] < 0.01


BAD = [
    (lambda: DecoderLMConfig(vocab_size=26, attention="sparse"),
     ["attention", "'sparse'", "'linear'"]),
    (lambda: DecoderLMConfig(vocab_size=26, attention="linear", window=4),
     ["window", "None", "4"]),
    (lambda: DecoderLMConfig(vocab_size=26, num_heads=4, num_kv_heads=3),
     ["num_kv_heads", "num_heads = 4", "3"]),
    (lambda: DecoderLMConfig(vocab_size=26, d_model=36, num_heads=4),
     ["even", "36 / 4 = 9"]),
    (lambda: DecoderLMConfig(vocab_size=26, window=0), ["window", "0"]),
    (lambda: _model()(torch.zeros(2, 3, 4, dtype=torch.long)), ["tokens", "(2, 3, 4)", "(B, L)"]),
    (lambda: _model()(torch.full((1, 3), 26)), ["tokens", "[0, 26)", "26"]),
    (lambda: _model()(torch.zeros(1, 65, dtype=torch.long)), ["tokens", "(1, 65)", "max_len = 64"]),
    (lambda: generate(_model(), torch.zeros(1, 3, dtype=torch.long), -1), ["steps", "-1"]),
    (lambda: cm.kv_cache_bytes(0, 1, 1, 1), ["num_layers", "0"]),
    (lambda: cm.kv_cache_bytes(1, 1, 1, -1), ["tokens", "-1"]),
    (lambda: tasks.echo_text(2, 5, 0), ["period", "0"]),
    (lambda: tasks.echo_targets(torch.zeros(5, dtype=torch.long), 2), ["tokens", "(5)", "(B, L)"]),
    (lambda: tasks.to_text(torch.tensor([27])), ["tokens", "[0, 26)", "27"]),
]


@pytest.mark.parametrize(("call", "fragments"), BAD)
def test_bad_input_names_argument_got_and_expected(call, fragments) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError)) as info:
        call()
    for fragment in fragments:
        assert fragment in str(info.value), (fragment, str(info.value))
