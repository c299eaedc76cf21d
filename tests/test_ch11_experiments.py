"""Chapter 11's experiments: sparse retrieval, stability, differential attention (small sizes)."""

from __future__ import annotations

import math

import pytest
import torch

from attnlib.experiments import sparse_retrieval as sr

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny tensors: one thread is faster

# --- sparse retrieval ----------------------------------------------------------------------------


def test_task_plants_each_queried_key_once_in_the_first_half() -> None:
    keys, values, targets = sr.retrieval_task(5, 40, queries=3, num_keys=10, num_values=4,
                                              seed=1)
    assert keys.shape == values.shape == targets.shape == (5, 40)
    assert (targets[:, :-3] == -100).all() and (values[:, -3:] == 4).all()
    for line in range(5):
        for j in range(3):
            asked = keys[line, 40 - 3 + j]
            where = (keys[line, :-3] == asked).nonzero().flatten()
            assert where.tolist() and len(where) == 1 and int(where[0]) < (40 - 3) // 2
            assert targets[line, 40 - 3 + j] == values[line, where[0]]


def test_task_refuses_a_line_too_short() -> None:
    with pytest.raises(ValueError, match="queries"):
        sr.retrieval_task(1, 8, queries=4)


def _model(mode: str, k: int = 4) -> sr.RetrievalModel:
    torch.manual_seed(0)
    model = sr.RetrievalModel(mode, k, dim=8, num_keys=10, num_values=4, block_size=2)
    model.sparse = True
    return model.eval()


def test_window_cannot_reach_the_planted_key() -> None:
    score = sr.retrieval_accuracy(_model("window"), length=40, queries=3, n=8)
    assert score.reach == 0.0 and score.keys_per_query == 4.0


def test_dense_reaches_every_planted_key() -> None:
    score = sr.retrieval_accuracy(_model("dense"), length=40, queries=3, n=8)
    assert score.reach == 1.0 and score.keys_per_query == sum(range(38, 41)) / 3


@pytest.mark.parametrize("mode", ["topk", "moba", "window"])
def test_a_budget_of_every_key_is_dense_attention(mode: str) -> None:
    keys, values, _ = sr.retrieval_task(3, 16, queries=2, num_keys=10, num_values=4)
    sparse = _model(mode, k=16)
    dense = _model("dense", k=16)
    torch.testing.assert_close(sparse(keys, values, 2), dense(keys, values, 2))
    assert bool(sparse.last["chosen"].any(1).all())  # every key of the line chosen


def test_topk_attends_to_the_keys_its_indexer_picks() -> None:
    model = _model("topk", k=3)
    keys, values, _ = sr.retrieval_task(2, 16, queries=2, num_keys=10, num_values=4)
    out = model(keys, values, 2)
    chosen = model.last["chosen"]  # (B, Q, L)
    assert (chosen.sum(-1) == 3).all()
    x = model.key_embed(keys) + model.value_embed(values)
    q = model.q_proj(x[:, -2:])
    k, v = model.k_proj(x), model.v_proj(x)
    scores = (q @ k.transpose(-2, -1) / 8**0.5).masked_fill(~chosen, float("-inf"))
    torch.testing.assert_close(out, model.head(scores.softmax(-1) @ v))


def test_training_switches_to_sparse_and_learns_nothing_it_cannot_see() -> None:
    torch.manual_seed(0)
    model = sr.RetrievalModel("topk", 4, dim=8, num_keys=10, num_values=4)
    losses = sr.train_retrieval(model, warmup=2, steps=2, length=24, queries=2, batch=2)
    assert len(losses) == 4 and model.sparse
    with pytest.raises(TypeError, match="RetrievalModel"):
        sr.train_retrieval(torch.nn.Linear(2, 2), steps=1)  # type: ignore[arg-type]


def test_runs_and_config_build_the_same_weights_from_a_seed() -> None:
    runs = sr.retrieval_runs(seeds=(3,), steps=1)
    assert [r.name for r in runs] == list(sr.MODES) and runs[0].options == {"seed": 3,
                                                                             "steps": 1}
    a, b = runs[0].build(), runs[0].build()
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    state = torch.random.get_rng_state()
    sr.RetrievalConfig("moba")  # checking the sizes draws nothing
    assert torch.equal(state, torch.random.get_rng_state())
    with pytest.raises(ValueError, match="multiple"):
        sr.RetrievalConfig("moba", keys_per_query=6, block_size=4)


def test_counted_cost_and_its_crossover() -> None:
    small = {"keys_per_query": 4, "dim": 2, "value_dim": None, "heads": 1, "index_heads": 1,
             "index_dim": 1}
    assert sr.attention_macs(3, "dense", **small) == 2 * 2 * 6  # 1 + 2 + 3 keys
    assert sr.attention_macs(6, "window", **small) == 2 * 2 * (1 + 2 + 3 + 4 + 4 + 4)
    assert sr.attention_macs(6, "topk", **small) == (2 * 2 * 18 + 21 * 2)
    for mode in ("window", "topk", "moba"):
        at = sr.macs_crossover(mode, **small)
        assert at is not None and at > 4
        assert sr.attention_macs(at, mode, **small) < sr.attention_macs(at, "dense", **small)
        assert (sr.attention_macs(at - 1, mode, **small)
                >= sr.attention_macs(at - 1, "dense", **small))
    assert sr.macs_crossover("topk", longest=4, **small) is None


def test_counted_cost_with_a_value_size_and_for_one_decoding_step() -> None:
    small = {"keys_per_query": 4, "dim": 2, "value_dim": 3, "heads": 1, "index_heads": 1,
             "index_dim": 1, "block_size": 2}
    assert sr.attention_macs(3, "dense", **small) == 5 * 6  # (2 + 3) per pair, 1 + 2 + 3
    assert sr.attention_macs(6, "dense", decode=True, **small) == 5 * 6  # 6 cached keys
    assert sr.attention_macs(6, "window", decode=True, **small) == 5 * 4
    assert sr.attention_macs(6, "topk", decode=True, **small) == 5 * 4 + 6 * 2
    assert sr.attention_macs(6, "moba", decode=True, **small) == 2 * 3 + 5 * 4  # 3 blocks
    # DeepSeek-V3.2's sizes, MLA's absorbed form: the reviewer's independent count
    assert sr.macs_crossover("topk") == 2707
    assert sr.macs_crossover("topk", dim=128, value_dim=None) == 4112
    assert sr.macs_crossover("topk", decode=True, dim=128, value_dim=None) == 2738
    ratio = sr.attention_macs(131072, "topk") / sr.attention_macs(131072, "dense")
    assert round(ratio, 3) == 0.090
    for mode in ("window", "topk", "moba"):
        at = sr.macs_crossover(mode, decode=True, **small)
        assert at is not None
        assert (sr.attention_macs(at, mode, decode=True, **small)
                < sr.attention_macs(at, "dense", decode=True, **small))
        assert (sr.attention_macs(at - 1, mode, decode=True, **small)
                >= sr.attention_macs(at - 1, "dense", decode=True, **small))


def test_moba_gets_one_block_more_than_the_others_keys() -> None:
    configs = {r.name: r.config for r in sr.retrieval_runs(seeds=(0,), keys_per_query=16)}
    assert configs["moba"].keys_per_query == 16 + configs["moba"].block_size
    assert all(configs[m].keys_per_query == 16 for m in ("dense", "window", "topk"))


@pytest.mark.parametrize("mode", ["topk", "moba", "window", "dense"])
def test_accuracy_given_reach_adds_up(mode: str) -> None:
    score = sr.retrieval_accuracy(_model(mode), length=40, queries=3, n=16)
    if mode == "window":
        assert math.isnan(score.accuracy_reached) and score.accuracy == score.accuracy_missed
    elif mode == "dense":
        assert math.isnan(score.accuracy_missed) and score.accuracy == score.accuracy_reached
    else:
        parts = [(score.reach, score.accuracy_reached),
                 (1 - score.reach, score.accuracy_missed)]
        assert sum(share * acc for share, acc in parts if share > 0) == pytest.approx(
            score.accuracy)


@pytest.mark.parametrize("decode", [False, True])
def test_timing_runs_every_mode(decode: bool) -> None:
    for mode in ("dense", "window", "topk"):
        assert sr.attention_seconds(32, mode, keys_per_query=4, decode=decode, repeats=1) > 0
    with pytest.raises(ValueError, match="mode"):
        sr.attention_seconds(32, "moba")


# --- stability -----------------------------------------------------------------------------------

from attnlib.experiments import stability as st  # noqa: E402


def test_spikes_are_counted_once_per_run_of_high_steps() -> None:
    assert st.count_spikes([3.0, 2.0, 1.0, 0.5, 0.4]) == 0
    assert st.count_spikes([3.0, 0.5, 2.0, 2.5, 0.4, 1.6, 0.3]) == 2
    assert st.count_spikes([3.0, 0.5, float("nan")]) == 1
    assert st.count_spikes(torch.tensor([1.0, 0.1, 0.9]), jump=0.5) == 1


def _stability_model(variant: str, steps: int = 3) -> st.StabilityLM:
    torch.manual_seed(0)
    return st.StabilityLM(variant, dim=8, heads=2, layers=2, steps=steps, cap=2.0, tau=1.0)


def test_training_records_loss_and_largest_logit() -> None:
    model = _stability_model("plain")
    losses = st.train_stability(model, steps=3, batch=2, length=12, period=4)
    assert model.loss_history.tolist() == losses and bool((model.logit_history > 0).all())
    summary = st.stability_summary(model, last=2)
    assert summary.final_loss == pytest.approx(sum(losses[-2:]) / 2)
    assert summary.max_logit == float(model.logit_history.max())
    assert summary.lowest_loss == min(losses)
    with pytest.raises(ValueError, match="steps"):
        st.train_stability(model, steps=4)


def test_qk_norm_bounds_the_logits_by_the_gains() -> None:
    # RMS-normalised queries and keys of E features: |q.k| / sqrt(E) <= sqrt(E) g_q g_k
    model = _stability_model("qk-norm")
    st.train_stability(model, steps=3, batch=2, length=12, period=4, lr=1.0)
    for layer in model.attention_layers:
        assert layer.q_norm is not None and layer.k_norm is not None
        gains = layer.q_norm.detach().abs().max() * layer.k_norm.detach().abs().max()
        bound = 2.0 * float(gains)  # E = 4
        assert layer.last_max_logits is not None
        assert float(layer.last_max_logits.max()) <= bound * (1 + 1e-5)


def test_qk_clip_does_nothing_under_tau_and_lowers_the_logits_over_it() -> None:
    def trained(variant: str, tau: float) -> st.StabilityLM:
        torch.manual_seed(0)
        model = st.StabilityLM(variant, dim=8, heads=2, steps=4, tau=tau)
        st.train_stability(model, steps=4, batch=2, length=12, period=4, lr=1.0)
        return model

    plain, loose, tight = trained("plain", 1.0), trained("qk-clip", 1e9), trained("qk-clip", 1.0)
    assert torch.equal(plain.loss_history, loose.loss_history)
    assert float(tight.logit_history[1:].max()) < float(plain.logit_history[1:].max())


def test_stability_runs_name_every_variant_at_every_seed() -> None:
    runs = st.stability_runs(seeds=(0, 1), steps=5, lr=0.5)
    assert [(r.name, r.init_seed) for r in runs] == [(v, s) for s in (0, 1)
                                                      for v in st.VARIANTS]
    assert runs[0].options == {"seed": 0, "lr": 0.5}
    model = runs[0].build()
    assert isinstance(model, st.StabilityLM) and model.loss_history.shape == (5,)
    with pytest.raises(ValueError, match="variant"):
        st.stability_runs(variants=("plain", "nope"))


# --- differential attention among distractors ------------------------------------------------

from attnlib.experiments import distractors as ds  # noqa: E402


def test_distractor_lines_hold_one_answer_and_half_matches() -> None:
    halves, values, answer = ds.distractor_task(4, 20, distractors=3, parts=5, seed=2)
    query = halves[:, -1:]
    full = (halves[:, :-1] == query).all(-1)
    half = (halves[:, :-1] == query).sum(-1) == 1
    assert (full.sum(1) == 1).all() and (full.float().argmax(1) == answer).all()
    assert (half.sum(1) == 6).all() and (values[:, -1] == 16).all()
    with pytest.raises(ValueError, match="distractors"):
        ds.distractor_task(1, 7, distractors=3)


@pytest.mark.parametrize("kind", ds.KINDS)
def test_shares_are_of_the_weights_the_output_reads(kind: str) -> None:
    torch.manual_seed(0)
    model = ds.DistractorModel(kind, dim=8, parts=5, num_values=4)
    halves, values, _ = ds.distractor_task(3, 12, 2, parts=5, num_values=4)
    logits = model(halves, values)
    w = model.last_weights  # (B, L)
    x = (model.first_half(halves[..., 0]) + model.second_half(halves[..., 1])
         + model.value_embed(values))
    torch.testing.assert_close(logits, model.head((w.unsqueeze(1) @ model.v_proj(x))[:, 0]))
    if kind == "softmax":
        torch.testing.assert_close(w.sum(-1), torch.ones(3))
    else:  # each map sums to 1: the difference to 1 - lambda
        torch.testing.assert_close(w.sum(-1), (1 - model.lam.detach()).expand(3))
    got = ds.answer_weights(model, 12, 2, n=3, seed=0)  # the lines above
    _, _, answer = ds.distractor_task(3, 12, 2, parts=5, num_values=4, seed=0)
    w = model.last_weights.double()
    half = (halves == halves[:, -1:]).sum(-1) == 1
    assert int(half.sum()) == 3 * 4 and not bool(half[:, -1].any())  # 2 x 2 per line
    assert got.answer == pytest.approx(w[torch.arange(3), answer].mean().item())
    assert got.distractors == pytest.approx((w * half).sum(-1).mean().item())
    assert got.own == pytest.approx(w[:, -1].mean().item())
    assert got.negative == pytest.approx(w.clamp_max(0).sum(-1).mean().item())
    if kind == "softmax":
        assert got.negative == 0 and got.answer + got.distractors + got.own <= 1 + 1e-12
    else:
        assert got.negative <= 0
    assert 0 <= got.accuracy <= 1


def test_distractor_runs_and_training() -> None:
    runs = ds.distractor_runs(seeds=(1,), steps=2)
    assert [r.name for r in runs] == list(ds.KINDS)
    model = runs[1].build()
    assert isinstance(model, ds.DistractorModel)
    assert len(ds.train_distractors(model, steps=2, length=12, distractors=2, batch=2)) == 2
    with pytest.raises(ValueError, match="even"):
        ds.DistractorConfig("diff", dim=7)
