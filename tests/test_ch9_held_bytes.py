"""Chapter 9's memory-wall figure counts the GPUs that hold a step's bytes.

A decoding step reads every matrix a token is multiplied by and its cache; the GPUs must also
hold the input embedding table of an untied model, which the step does not read (it only looks
rows up). The figure holds ``2 * shape.parameters()`` bytes of 16-bit weights beside the cache:
the bytes read plus that table, and nothing more for a tied model.
"""

from __future__ import annotations

import math

import pytest

from attnlib.experiments import memory_wall as mw
from attnlib.models.decoder_lm import DecoderLMConfig


@pytest.mark.parametrize("name", list(mw.PUBLISHED))
def test_the_bytes_held_are_the_bytes_read_and_the_input_embedding(name: str) -> None:
    shape = mw.PUBLISHED[name]
    assert not shape.tied
    step = mw.decode_cost(shape, 1024, 4)
    embedding = 2 * shape.vocab_size * shape.d_model  # 16-bit
    assert 2 * shape.parameters() == step.weight_bytes + embedding


def test_a_tied_model_holds_only_what_it_reads() -> None:
    config = DecoderLMConfig(vocab_size=26, d_model=32, num_heads=4, num_kv_heads=4,
                             num_layers=2, d_ff=64, max_len=128)
    shape = mw.ModelShape.from_config(config)
    assert 2 * shape.parameters() == mw.decode_cost(shape, 16).weight_bytes


def test_the_quoted_state_needs_twelve_gpus_not_eleven() -> None:
    """Llama 3.1 405B at 1,024 tokens, 256 sequences, a bfloat16 cache: 943 GB read, 947 held."""
    shape = mw.PUBLISHED["Llama 3.1 405B"]
    step = mw.decode_cost(shape, 1024, 256)
    gpu = 80 * 2**30
    assert math.ceil(step.bytes / gpu) == 11
    assert math.ceil((2 * shape.parameters() + step.cache_bytes) / gpu) == 12
