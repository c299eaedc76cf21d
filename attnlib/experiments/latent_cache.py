r"""The cache per token of multi-head latent attention in published models, beside MHA and GQA.

Per token and layer, multi-head attention caches :math:`2 H E` numbers, grouped-query
attention :math:`2 H_{kv} E`, MLA :math:`d_c + R` (the latent and the shared RoPE key;
DeepSeek-V2, Table 1). :data:`PUBLISHED_MLA` lists the sizes of DeepSeek's models with the
place each number comes from.
"""

from __future__ import annotations

from dataclasses import dataclass

from attnlib._checks import check_instance, check_int

__all__ = ["PUBLISHED_MLA", "LatentShape"]


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
