"""Small inputs and models shared by the records and the NaN sweep (built inside the calls, so
that collecting the tests stays cheap), and a way to name attnlib's callables that survives a
move of files: ``api_module("seq2seq").greedy_decode`` is the documented callable of that name,
whatever file defines it."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from attnlib import data

from .harness import api, documented_modules

F32, F64 = torch.float32, torch.float64


class api_module:
    """Attribute access by documented name: ``hint.name`` first, then ``name``."""

    def __init__(self, *hints: str) -> None:
        self._hints = hints

    def __getattr__(self, name: str) -> Any:
        for hint in self._hints:
            try:
                return api(f"{hint}.{name}")
            except KeyError:
                pass
        try:
            return api(name)
        except KeyError:
            # a constant, not a callable: from a documented module whose name holds a hint
            for module_name in documented_modules():
                if any(h in module_name.split(".") for h in self._hints):
                    module = importlib.import_module(module_name)
                    if hasattr(module, name):
                        return getattr(module, name)
            raise


def _ones(*shape: int, dtype: torch.dtype = F32) -> Tensor:
    return torch.ones(shape, dtype=dtype)


def _ids(*rows: list[int]) -> Tensor:
    return torch.tensor(rows, dtype=torch.long)


def _seeded(build: Callable[[], nn.Module]) -> nn.Module:
    """``build()`` under seed 0, leaving the global random state as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return build()


TINY = {"src_vocab_size": 10, "tgt_vocab_size": 12, "d_model": 8, "num_heads": 2,
        "num_encoder_layers": 1, "num_decoder_layers": 1, "d_ff": 16, "dropout": 0.0,
        "max_len": 8}


def _transformer(dtype: torch.dtype = F32) -> Any:
    model = _seeded(lambda: api("Transformer")(api("TransformerConfig")(**TINY), dtype=dtype))
    assert isinstance(model, api("Transformer"))
    return model.eval()


def _seq2seq(use_attention: bool = True, fixed_context: Any = "final") -> Any:
    config = api("Seq2SeqConfig")(10, 12, embed_dim=4, hidden_size=4, attention_size=4,
                               use_attention=use_attention, fixed_context=fixed_context)
    model = _seeded(lambda: api("Seq2Seq")(config))
    return model.eval()


def _mha(dtype: torch.dtype = F32) -> Any:
    return _seeded(lambda: api("MultiHeadAttention")(8, 2, dtype=dtype))


def _vocab() -> Any:
    return data.Vocab((*data.SPECIALS, "a"))


def _sentence(subject: str, verb: str, obj: str, **parts: Any) -> Any:
    return data.Sentence(data.Clause(data.NounPhrase(subject), verb, data.NounPhrase(obj),
                                     **parts))


def _note_pair() -> Any:
    return data.realize(data.NOTE_EXAMPLE)  # 我 爱 机器学习 -> i love machine learning

