r"""The cache per token of multi-head latent attention in published models, beside MHA and GQA.

Per token and layer, multi-head attention caches :math:`2 H E` numbers, grouped-query
attention :math:`2 H_{kv} E`, MLA :math:`d_c + R` (the latent and the shared RoPE key;
DeepSeek-V2, Table 1). :data:`PUBLISHED_MLA` lists the sizes of DeepSeek's models with the
place each number comes from. :class:`EchoModel` describes chapter 10's two-layer decoders on
echo text (grouped-query or latent attention) for :func:`~attnlib.train.runs.train_runs`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import torch
from torch import Tensor, nn

from attnlib._checks import check_choice, check_instance, check_int
from attnlib.blocks.gated_attention import CausalSelfAttention
from attnlib.blocks.latent_attention import MultiHeadLatentAttention
from attnlib.experiments import lm_tasks
from attnlib.models.decoder_lm import DecoderLM, train_lm
from attnlib.models.mixer_lm import MixerLM

__all__ = ["PUBLISHED_MLA", "EchoModel", "LatentShape"]


@dataclass(frozen=True)
class LatentShape:
    """The sizes of an MLA model that decide its cache.

    Args:
        name: the model. num_layers: N. num_heads: H. head_dim: E (of a content key and
            value). latent_dim: :math:`d_c`. rope_dim: R. context: its context length.
        source: where the numbers come from.

    Raises:
        TypeError: a size that is not an int, or a name or source that is not a str.
        ValueError: a size < 1 (``rope_dim`` < 0).
    """

    name: str
    num_layers: int
    num_heads: int
    head_dim: int
    latent_dim: int
    rope_dim: int
    context: int
    source: str

    def __post_init__(self) -> None:
        for name in ("name", "source"):
            check_instance(name, getattr(self, name), str, "a str")
        for name in ("num_layers", "num_heads", "head_dim", "latent_dim", "context"):
            check_int(name, getattr(self, name), minimum=1)
        check_int("rope_dim", self.rope_dim, minimum=0)

    def per_token(self) -> dict[str, int]:
        """Numbers cached per token over all layers: as MLA, and as MHA of the same heads."""
        N, H, E = self.num_layers, self.num_heads, self.head_dim
        return {"MLA": (self.latent_dim + self.rope_dim) * N, "MHA": 2 * H * E * N}


PUBLISHED_MLA: dict[str, LatentShape] = {
    # DeepSeek-V2 technical report, Section 3.1.2: 60 layers, n_h = 128, d_h = 128,
    # d_c = 512, d_h^R = 64; 128K context (abstract).
    "DeepSeek-V2": LatentShape("DeepSeek-V2", 60, 128, 128, 512, 64, 131072,
                               "DeepSeek-V2 report, Section 3.1.2"),
    # DeepSeek-V3's released configuration (inference/configs/config_671B.json of its
    # repository): n_layers 61, n_heads 128, qk_nope_head_dim 128, kv_lora_rank 512,
    # qk_rope_head_dim 64; 128K context (its README).
    "DeepSeek-V3": LatentShape("DeepSeek-V3", 61, 128, 128, 512, 64, 131072,
                               "DeepSeek-V3 config_671B.json"),
}
"""MLA sizes of DeepSeek's models, each with its source."""


@dataclass(frozen=True)
class EchoModel:
    """Chapter 10's decoder on echo text, for :func:`~attnlib.train.runs.train_runs`.

    Two blocks of D = 32 with 4 query heads of 8 and a feed-forward layer of 64, over the 26
    letters, float32. ``attention`` is ``"gqa"`` (``CausalSelfAttention(32, 4,
    num_kv_heads)``) or ``"mla"`` (``MultiHeadLatentAttention(32, 4, 8, latent_dim,
    rope_dim)``). ``fit`` trains with chapter 9's ``train_lm`` on fresh batches of 16 lines of
    ``length`` letters, a random word of ``period`` letters repeated (batch ``step`` drawn
    with seed ``step``), the loss on the predictable letters.

    Raises:
        ValueError: an unknown ``attention``, or a size < 1 (``rope_dim`` < 0).
        TypeError: a size that is not an int.
    """

    attention: str
    num_kv_heads: int = 2
    latent_dim: int = 24
    rope_dim: int = 8

    def __post_init__(self) -> None:
        check_choice("attention", self.attention, ("gqa", "mla"))
        for name in ("num_kv_heads", "latent_dim"):
            check_int(name, getattr(self, name), minimum=1)
        check_int("rope_dim", self.rope_dim, minimum=0)

    def mixer(self, dtype: torch.dtype = torch.float32) -> nn.Module:
        # one attention layer of this model
        if self.attention == "gqa":
            return CausalSelfAttention(32, 4, self.num_kv_heads, dtype=dtype)
        return MultiHeadLatentAttention(32, 4, 8, self.latent_dim, self.rope_dim, dtype=dtype)

    def build(self, dtype: torch.dtype = torch.float32) -> MixerLM:
        return MixerLM(26, [self.mixer(dtype), self.mixer(dtype)], d_ff=64, dtype=dtype)

    def fit(self, model: nn.Module, steps: int = 150, lr: float = 0.01, length: int = 48,
            period: int = 16) -> list[float]:
        check_instance("model", model, MixerLM, "a MixerLM")

        def batch(step: int) -> tuple[Tensor, Tensor]:
            tokens = lm_tasks.echo_text(16, length, period, seed=step)
            return tokens, lm_tasks.echo_targets(tokens, period)

        # train_lm only calls the model on tokens: a MixerLM will do
        return train_lm(cast(DecoderLM, model), batch, steps=steps, lr=lr)
