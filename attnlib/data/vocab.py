"""Vocabularies: a token ↔ id table with four special tokens."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final

import torch
from torch import Tensor

from attnlib._checks import check_flag, check_tokens, shape_str

__all__ = ["BOS", "BOS_ID", "EOS", "EOS_ID", "PAD", "PAD_ID", "SPECIALS", "UNK", "UNK_ID",
           "Vocab"]

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
PAD_ID, BOS_ID, EOS_ID, UNK_ID = 0, 1, 2, 3
SPECIALS: Final[tuple[str, ...]] = (PAD, BOS, EOS, UNK)


@dataclass(frozen=True)
class Vocab:
    """A token ↔ id table: the four specials (ids 0 to 3), then the tokens in sorted order.

    ``vocab[token]`` and :meth:`encode` map a token the table does not hold to ``<unk>``.
    Build one from training sentences with :meth:`build`.
    """

    itos: tuple[str, ...]
    _stoi: Mapping[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "itos", tuple(check_tokens("itos", self.itos)))
        if self.itos[: len(SPECIALS)] != SPECIALS:
            raise ValueError(f"itos must start with {SPECIALS}, got {self.itos[:len(SPECIALS)]}")
        stoi = {token: i for i, token in enumerate(self.itos)}
        if len(stoi) != len(self.itos):
            duplicates = sorted(t for t, n in Counter(self.itos).items() if n > 1)
            raise ValueError(f"itos must hold every token once, got duplicate tokens: "
                             f"{duplicates}")
        object.__setattr__(self, "_stoi", MappingProxyType(stoi))

    @classmethod
    def build(cls, sentences: Iterable[Sequence[str]]) -> Vocab:
        """The vocabulary of every token in ``sentences``: specials first, then sorted tokens.

        Raises:
            ValueError: if a sentence contains one of the special tokens.
        """
        if isinstance(sentences, str) or not isinstance(sentences, Iterable):
            raise TypeError(f"sentences must be an iterable of sentences (sequences of str "
                            f"tokens), got {type(sentences).__name__}")
        tokens: set[str] = set()
        for i, sentence in enumerate(sentences):
            tokens.update(check_tokens(f"sentences[{i}]", sentence))
        clash = sorted(tokens.intersection(SPECIALS))
        if clash:
            raise ValueError(f"sentences must not contain the special tokens, found {clash}")
        return cls((*SPECIALS, *sorted(tokens)))

    def __reduce__(self) -> tuple[type[Vocab], tuple[tuple[str, ...]]]:
        # pickled as its token list (the lookup table is rebuilt): worker processes need it
        return (Vocab, (self.itos,))

    def __len__(self) -> int:
        return len(self.itos)

    def __getitem__(self, token: str) -> int:
        return self._stoi.get(token, UNK_ID)

    def __contains__(self, token: object) -> bool:
        return token in self._stoi

    def encode(self, tokens: Iterable[str]) -> list[int]:
        """Map tokens to ids; a token not in the vocabulary becomes ``<unk>`` (id 3).

        Raises:
            TypeError: if ``tokens`` is a str (split it first) or holds a non-str.
        """
        return [self._stoi.get(token, UNK_ID) for token in check_tokens("tokens", tokens)]

    def decode(self, ids: Iterable[int] | Tensor, strip_special: bool = True) -> list[str]:
        """Map ids back to tokens.

        With ``strip_special``, ``<pad>`` and ``<bos>`` are dropped and decoding stops at the
        first ``<eos>``, which is what a model's greedy output needs. ``<unk>`` is kept: it stands
        for a word, and a BLEU score should count it as wrong rather than not see it.

        Raises:
            ValueError: if an id is outside [0, len(vocab)), or ``ids`` is a tensor that is not 1-D.
        """
        check_flag("strip_special", strip_special)
        if isinstance(ids, Tensor):
            if ids.ndim != 1:
                raise ValueError(f"ids must be 1-D (L,), got shape {shape_str(ids.shape)}")
            if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
                raise TypeError(f"ids must hold integer ids, got dtype {ids.dtype}")
            ids = [int(i) for i in ids.tolist()]
        if isinstance(ids, str) or not isinstance(ids, Iterable):
            raise TypeError(f"ids must be a 1-D tensor or a sequence of ints, got "
                            f"{type(ids).__name__}")
        tokens: list[str] = []
        for position, i in enumerate(ids):
            if isinstance(i, bool) or not isinstance(i, int):
                raise TypeError(f"ids[{position}] must be an int, got {type(i).__name__}")
            if not 0 <= i < len(self.itos):
                raise ValueError(f"ids[{position}]: id {i} is outside the vocabulary "
                                 f"[0, {len(self.itos)}) of this Vocab")
            if strip_special:
                if i == EOS_ID:
                    break
                if i in (PAD_ID, BOS_ID):
                    continue
            tokens.append(self.itos[i])
        return tokens
