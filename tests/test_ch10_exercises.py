"""Chapter 10's exercises name calls a reader can make: each one runs, at a few steps."""

import torch

from attnlib.blocks.delta_rule import DeltaNet
from attnlib.experiments import recall as rc
from attnlib.experiments import sinks as sk


def test_recall_calls_of_exercises_3_4_and_6() -> None:
    for kind, conv_size in (("delta", 2), ("gated", 2), ("accumulate", 2), ("softmax", 1),
                            ("delta", 1)):
        model = rc.recall_model(kind, conv_size=conv_size, seed=0)
        losses = rc.train_recall(model, steps=2, max_pairs=4, batch=4, lr=0.02, seed=0)
        assert len(losses) == 2
        accuracy = rc.recall_accuracy(model, 4, n=8)[0]
        assert 0.0 <= accuracy <= 1.0


def test_recall_model_with_a_seed_is_the_runs_build() -> None:
    """recall_model(kind, seed=s) draws the weights that a Run with init_seed=s builds."""
    torch.manual_seed(3)
    built = rc.RecallConfig("delta").build()
    seeded = rc.recall_model("delta", seed=3)
    for a, b in zip(built.state_dict().values(), seeded.state_dict().values(), strict=True):
        assert torch.equal(a, b)


def test_sink_calls_of_exercise_5() -> None:
    text = sk.backcopy_text(4, 32, seed=1)
    where = ~sk.is_trigger(text)
    for gate in (False, True):
        torch.manual_seed(0)
        model = sk.BackcopyModel(((("gate", gate),),)).build()
        assert len(sk.train(model, 32, 2)) == 2
        assert sk.first_token_mass(model, text, where)[0].shape == (2,)  # by head
        assert sk.loss_by_position(model, text, 16).shape == (4, 31)


def test_exercise_7_needs_its_own_layer() -> None:
    """attnlib's DeltaNet has no decay on accumulation: the exercise asks the reader for it."""
    try:
        DeltaNet(8, 1, gated=True, rule="accumulate")
    except ValueError:
        return
    raise AssertionError("DeltaNet(gated=True, rule='accumulate') was accepted")
