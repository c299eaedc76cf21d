"""Training a Transformer: label smoothing vs F.cross_entropy, the warm-up schedule, the loop."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from attnlib.data import BOS_ID, PAD_ID, make_corpus
from attnlib.models.transformer import Transformer, TransformerConfig
from attnlib.train.recipe import LabelSmoothingLoss, noam_lr, noam_schedule
from attnlib.train.transformer_loop import TransformerHistory, train_transformer

# ---------------------------------------------------------------------------------------------
# Label smoothing
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.5])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_label_smoothing_equals_cross_entropy(smoothing: float, reduction: str) -> None:
    torch.manual_seed(0)
    B, L, V = 3, 5, 7
    logits = torch.randn(B, L, V, dtype=torch.float64, requires_grad=True)
    target = torch.randint(0, V, (B, L))
    target[0, 3:] = PAD_ID  # padding, ignored
    target[2, 1:] = PAD_ID
    logits_ref = logits.detach().clone().requires_grad_()

    ours = LabelSmoothingLoss(smoothing, ignore_index=PAD_ID, reduction=reduction)(logits, target)
    expected = F.cross_entropy(logits_ref.flatten(0, 1), target.flatten(), ignore_index=PAD_ID,
                               label_smoothing=smoothing, reduction=reduction)
    if reduction == "none":
        expected = expected.view(B, L)
    torch.testing.assert_close(ours, expected, atol=1e-12, rtol=0)
    seed = torch.randn_like(ours)
    (ours * seed).sum().backward()
    (expected * seed).sum().backward()  # type: ignore[no-untyped-call]
    assert logits.grad is not None and logits_ref.grad is not None
    torch.testing.assert_close(logits.grad, logits_ref.grad, atol=1e-12, rtol=0)
    assert bool((logits.grad[0, 3:] == 0).all())  # padding gets no gradient


def test_label_smoothing_spreads_epsilon_uniformly() -> None:
    """With a perfect one-hot prediction the smoothed loss is not 0: confidence is penalised."""
    V, eps = 4, 0.2
    logits = torch.tensor([[50.0, 0.0, 0.0, 0.0]])
    target = torch.tensor([0])
    loss = LabelSmoothingLoss(eps, ignore_index=-100)(logits, target)
    assert float(loss) == pytest.approx(eps * (V - 1) / V * 50.0, rel=1e-6)
    # The minimiser is q itself: p = (1 - eps) one_hot + eps / V.
    q = torch.full((1, V), eps / V)
    q[0, 0] += 1 - eps
    best = LabelSmoothingLoss(eps, ignore_index=-100)(q.log(), target)
    entropy = -(q * q.log()).sum()
    assert float(best) == pytest.approx(float(entropy))


def test_label_smoothing_errors() -> None:
    with pytest.raises(ValueError, match=r"smoothing must be a float in \[0, 1\)"):
        LabelSmoothingLoss(1.0)
    with pytest.raises(ValueError, match="reduction must be"):
        LabelSmoothingLoss(0.1, reduction="max")
    with pytest.raises(ValueError, match="must agree"):
        LabelSmoothingLoss(0.1)(torch.zeros(2, 3, 5), torch.zeros(2, 4, dtype=torch.long))


# ---------------------------------------------------------------------------------------------
# The warm-up schedule
# ---------------------------------------------------------------------------------------------


def test_noam_lr_values() -> None:
    # The paper's base model: d_model 512, 4000 warm-up steps; peak 512^-0.5 * 4000^-0.5.
    assert noam_lr(4000, 512, 4000) == pytest.approx(6.987712429686844e-4)
    assert noam_lr(1, 512, 4000) == pytest.approx(512**-0.5 * 4000**-1.5)
    assert noam_lr(16000, 512, 4000) == pytest.approx(512**-0.5 / 16000**0.5)
    assert noam_lr(100, 64, 10, factor=2.0) == pytest.approx(2 * 64**-0.5 * 100**-0.5)


def test_noam_lr_shape() -> None:
    warmup = 50
    lrs = [noam_lr(s, 128, warmup) for s in range(1, 4 * warmup)]
    assert max(range(len(lrs)), key=lrs.__getitem__) + 1 == warmup  # peak at step = warmup
    for s in range(1, warmup // 2):  # linear warm-up
        assert noam_lr(2 * s, 128, warmup) == pytest.approx(2 * noam_lr(s, 128, warmup))
    for s in range(warmup, 2 * warmup):  # then 1 / sqrt(step)
        assert noam_lr(4 * s, 128, warmup) == pytest.approx(noam_lr(s, 128, warmup) / 2)


def test_noam_schedule_drives_lambda_lr() -> None:
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.Adam([param], lr=1.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, noam_schedule(32, 5))
    for step in range(1, 12):
        assert optimizer.param_groups[0]["lr"] == pytest.approx(noam_lr(step, 32, 5))
        optimizer.step()
        scheduler.step()


@pytest.mark.parametrize(
    ("args", "match"),
    [((0, 512, 4000), "step must be >= 1"), ((1, 512, 0), "warmup must be >= 1"),
     ((1, 0, 10), "d_model must be >= 1")],
)
def test_noam_lr_errors(args: tuple[int, int, int], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        noam_lr(*args)
    with pytest.raises(ValueError, match="factor"):
        noam_schedule(512, 4000, factor=0.0)


# ---------------------------------------------------------------------------------------------
# The training loop
# ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus() -> Any:
    return make_corpus(n_pairs=2000, difficulty=0)  # short sentences: max_len=32 below


def tiny_model(corpus: Any, seed: int = 0, dropout: float = 0.1) -> Transformer:
    torch.manual_seed(seed)
    config = TransformerConfig(
        len(corpus.src_vocab), len(corpus.tgt_vocab), d_model=32, num_heads=4,
        num_encoder_layers=1, num_decoder_layers=1, d_ff=64, dropout=dropout, max_len=32,
    )
    return Transformer(config)


def train(corpus: Any, model: Transformer, **kwargs: Any) -> TransformerHistory:
    options: dict[str, Any] = {"epochs": 2, "batch_size": 32, "warmup": 10, "seed": 3}
    options.update(kwargs)
    return train_transformer(model, corpus.train[:128], corpus.src_vocab, corpus.tgt_vocab,
                             **options)


def test_training_is_deterministic_and_leaves_the_global_rng_alone(
    corpus: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ATTNLIB_PROGRESS", "0")
    first, second = tiny_model(corpus), tiny_model(corpus)
    torch.manual_seed(1234)
    state = torch.get_rng_state()
    h1 = train(corpus, first)
    assert torch.equal(torch.get_rng_state(), state)  # dropout drew from a forked generator
    h2 = train(corpus, second)
    assert h1.losses == h2.losses and h1.steps == h2.steps == 8  # 2 epochs x 128 / 32
    for p1, p2 in zip(first.parameters(), second.parameters(), strict=True):
        assert torch.equal(p1, p2)
    other = train(corpus, tiny_model(corpus), seed=4)  # another seed: another run
    assert other.losses != h1.losses
    assert not first.training  # left in eval mode
    assert len(h1.learning_rates) == 2 and h1.learning_rates[-1] == pytest.approx(
        noam_lr(8, 32, 10))
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""  # silent with ATTNLIB_PROGRESS=0


def test_training_feeds_the_targets_shifted_right(corpus: Any) -> None:
    """The decoder reads <bos> y (teacher forcing); the padding is described by tgt_lengths."""
    model = tiny_model(corpus)
    seen: list[tuple[Tensor, Tensor]] = []

    def spy(module: Any, args: tuple[Tensor, ...]) -> None:
        seen.append((args[2], args[3]))  # tgt_in, tgt_lengths

    model.register_forward_pre_hook(spy)
    train(corpus, model, epochs=1)
    for tgt_in, tgt_lengths in seen:
        assert bool((tgt_in[:, 0] == BOS_ID).all())
        for row, n in zip(tgt_in, tgt_lengths, strict=True):
            assert bool((row[1:n] != PAD_ID).all()) and bool((row[n:] == PAD_ID).all())


def test_training_by_length_batches_similar_lengths(corpus: Any) -> None:
    """by_length=True: the same pairs and steps, far less padding in the source batches."""

    def padding(by_length: bool) -> tuple[int, int]:
        model = tiny_model(corpus)
        seen: list[Tensor] = []
        model.register_forward_pre_hook(lambda module, args: seen.append(args[0]))  # src
        history = train(corpus, model, epochs=1, by_length=by_length)
        pads = sum(int((src == PAD_ID).sum()) for src in seen)
        return pads, history.steps

    (bucketed, steps), (shuffled, steps_shuffled) = padding(True), padding(False)
    assert steps == steps_shuffled == 4
    assert bucketed < shuffled / 2, (bucketed, shuffled)


def test_training_lowers_the_loss_and_callback_stops(corpus: Any) -> None:
    model = tiny_model(corpus, dropout=0.0)
    calls: list[int] = []

    def callback(epoch: int, loss: float) -> bool:
        calls.append(epoch)
        return epoch == 12

    history = train_transformer(model, corpus.train[:256], corpus.src_vocab, corpus.tgt_vocab,
                                epochs=20, batch_size=32, warmup=16, lr_factor=2.0,
                                callback=callback)
    assert calls == list(range(1, 13)) and history.epochs == 12 and history.steps == 96
    assert history.losses[-1] < 0.75 * history.losses[0]


def test_training_errors(corpus: Any) -> None:
    model = tiny_model(corpus)
    with pytest.raises(ValueError, match="epochs must be >= 1"):
        train(corpus, model, epochs=0)
    with pytest.raises(ValueError, match="smoothing"):
        train(corpus, model, label_smoothing=1.5)
    with pytest.raises(TypeError, match=r"config\.d_model"):
        train_transformer(torch.nn.Linear(2, 2), corpus.train[:4], corpus.src_vocab,
                          corpus.tgt_vocab, epochs=1)
