"""Argument checks shared by the training loops, the runs and the comparisons."""

from __future__ import annotations

import inspect
from collections.abc import Sequence

from torch import nn

from attnlib._checks import check_instance
from attnlib.data import Vocab


def check_pairs(name: str, pairs: object) -> None:
    """A sequence of pairs, each with a source and a target token sequence (``src``, ``tgt``)."""
    if isinstance(pairs, str) or not isinstance(pairs, Sequence):
        raise TypeError(f"{name} must be a sequence of pairs (with .src and .tgt), got "
                        f"{type(pairs).__name__}")
    for i, pair in enumerate(pairs):
        if not (hasattr(pair, "src") and hasattr(pair, "tgt")):
            raise TypeError(f"{name}[{i}] must be a pair with .src and .tgt, got "
                            f"{type(pair).__name__}")


def check_vocabs(src_vocab: object, tgt_vocab: object) -> None:
    check_instance("src_vocab", src_vocab, Vocab, "a Vocab")
    check_instance("tgt_vocab", tgt_vocab, Vocab, "a Vocab")


def check_model(model: object, arity: int, call: str) -> None:
    """An nn.Module that can be called as ``call`` (``arity`` positional arguments)."""
    check_instance("model", model, nn.Module, "an nn.Module")
    assert isinstance(model, nn.Module)
    try:
        inspect.signature(model.forward).bind(*([None] * arity))
    except TypeError:
        raise TypeError(f"model must be called as {call}, got {type(model).__name__}, whose "
                        f"forward takes {inspect.signature(model.forward)}") from None
