"""Entries of the catalogue: the construction of every module that takes a ``dtype`` or a
``device`` (``Name#construction``), so that the kinds :class:`DType` and :class:`Device` are
tried on each: an integer or bool dtype, a string that is no device, an accelerator index on a
machine without one. The valid call builds the module and returns it (its parameters are the
result); the scalars a constructor takes and no other entry tries are tried here as well.

``test_issue34.test_every_scalar_device_and_dtype_parameter_is_tried`` fails for a documented
callable whose ``int``, ``float``, device or dtype parameter no entry tries with its kind, so a
new module cannot escape these entries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .harness import Call, Count, Device, DType, Positive, api, entry, seeded


def _construction(name: str, make: Callable[..., Any], device: bool = True,
                  **scalars: object) -> None:
    """Register ``name#construction``: ``make(dtype=..., [device=...], **scalars)`` under seed 0.

    ``make`` builds the module from the arguments the catalogue mutates."""

    def build() -> Call:
        def fn(**kw: Any) -> Any:
            return seeded(lambda: make(**kw))

        args: dict[str, object] = {"dtype": DType(torch.float32), **scalars}
        if device:
            args["device"] = Device(None)
        return Call(fn, args)

    entry(f"{name}#construction")(build)


def _tf_config() -> Any:
    return api("TransformerConfig")(src_vocab_size=10, tgt_vocab_size=12, d_model=8, num_heads=2,
                                    num_encoder_layers=1, num_decoder_layers=1, d_ff=16,
                                    dropout=0.0, max_len=8)


def _lm_config() -> Any:
    return api("DecoderLMConfig")(vocab_size=12, d_model=8, num_heads=2, num_kv_heads=1,
                                  num_layers=1, d_ff=16, max_len=12)


def _csa() -> Any:
    return api("CausalSelfAttention")(8, 2, 1)


# --- blocks -------------------------------------------------------------------------------------

_construction("MultiHeadAttention", lambda **kw: api("MultiHeadAttention")(8, 2, **kw))
_construction("LearnedPositionalEmbedding",
              lambda **kw: api("LearnedPositionalEmbedding")(6, 8, **kw))
_construction("SinusoidalPositionalEncoding",
              lambda **kw: api("SinusoidalPositionalEncoding")(8, 6, **kw))
_construction("GroupedQueryAttention", lambda **kw: api("GroupedQueryAttention")(8, 2, 1, **kw))
_construction("LinearSelfAttention", lambda **kw: api("LinearSelfAttention")(8, 2, 1, **kw))
_construction("MultiHeadLatentAttention",
              lambda **kw: api("MultiHeadLatentAttention")(8, 2, 4, 4, 2, **kw), device=False,
              rope_base=Positive(10000.0))
_construction("CausalSelfAttention", lambda **kw: api("CausalSelfAttention")(8, 2, 1, **kw),
              device=False, conv_size=Count(2, 0), rope_base=Positive(10000.0))
_construction("DeltaNet", lambda **kw: api("DeltaNet")(8, 2, **kw), device=False)

# --- the Transformer ----------------------------------------------------------------------------

_construction("FeedForward", lambda **kw: api("FeedForward")(8, 16, **kw))
_construction("EncoderLayer", lambda **kw: api("EncoderLayer")(8, 2, 16, **kw))
_construction("DecoderLayer", lambda **kw: api("DecoderLayer")(8, 2, 16, **kw))
_construction("stacks.Encoder", lambda **kw: api("stacks.Encoder")(_tf_config(), **kw))
_construction("Decoder", lambda **kw: api("Decoder")(_tf_config(), **kw))
_construction("Transformer", lambda **kw: api("Transformer")(_tf_config(), **kw))

# --- language models ----------------------------------------------------------------------------

_construction("DecoderBlock", lambda **kw: api("DecoderBlock")(_lm_config(), **kw), device=False)
_construction("DecoderLM", lambda **kw: api("DecoderLM")(_lm_config(), **kw), device=False)
_construction("MixerBlock", lambda **kw: api("MixerBlock")(_csa(), 16, **kw), device=False)
_construction("MixerLM", lambda **kw: api("MixerLM")(12, [_csa()], d_ff=16, **kw), device=False)
_construction("LookbackModel",
              lambda **kw: api("LookbackModel")(api("LookbackConfig")(d_model=8, max_len=8), **kw),
              device=False)
