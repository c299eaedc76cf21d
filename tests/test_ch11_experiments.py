"""Chapter 11's experiments: sparse retrieval, stability, differential attention (small sizes)."""

from __future__ import annotations

import pytest
import torch

from attnlib.experiments import sparse_retrieval as sr

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
    small = {"keys_per_query": 4, "dim": 2, "heads": 1, "index_heads": 1, "index_dim": 1}
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


@pytest.mark.parametrize("decode", [False, True])
def test_timing_runs_every_mode(decode: bool) -> None:
    for mode in ("dense", "window", "topk"):
        assert sr.attention_seconds(32, mode, keys_per_query=4, decode=decode, repeats=1) > 0
    with pytest.raises(ValueError, match="mode"):
        sr.attention_seconds(32, "moba")
