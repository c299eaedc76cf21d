"""Translating sentences with a trained model, greedily and in batches, keeping its attention.

:func:`translate` works with any greedy decoder that has the signature of
:func:`attnlib.models.seq2seq.greedy_decode` (:func:`attnlib.train.decoding.greedy_decode` for a
Transformer).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from torch import Tensor, nn

from attnlib._checks import check_instance, check_int, check_sentences
from attnlib.data import BOS_ID, EOS, EOS_ID, Vocab, pad_batch

__all__ = ["GreedyDecoder", "Translation", "translate"]


class GreedyDecoder(Protocol):
    """The signature of :func:`attnlib.models.seq2seq.greedy_decode`."""

    def __call__(
        self, model: Any, src: Tensor, src_lengths: Tensor, max_len: int, bos_id: int,
        eos_id: int,
    ) -> tuple[Tensor, Tensor]: ...


@dataclass(frozen=True)
class Translation:
    """One translated sentence and the attention weights that produced it.

    ``tokens`` are the words of the translation (what BLEU and exact match compare);
    ``output`` is every token the decoder produced, one per row of ``weights``: the words, then
    ``<eos>`` if the model stopped (and any special token it produced on the way).

    Shape:
        weights: (len(output), len(src)), one column per source word. For a model with several
        attention layers or heads, whatever (L, S) map its decoder returns.
    """

    src: tuple[str, ...]
    tokens: tuple[str, ...]
    output: tuple[str, ...]
    weights: Tensor

    @property
    def finished(self) -> bool:
        """Whether the decoder produced ``<eos>`` (rather than stopping at ``max_len``)."""
        return len(self.output) > 0 and self.output[-1] == EOS

    @property
    def text(self) -> str:
        return " ".join(self.tokens)


def _tokens_of(sentence: str | Sequence[str], i: int) -> tuple[str, ...]:
    tokens = tuple(sentence.split()) if isinstance(sentence, str) else tuple(sentence)
    if len(tokens) == 0:
        raise ValueError(f"sentences[{i}] is empty: every sentence needs at least one token")
    return tokens


def translate(
    model: nn.Module,
    sentences: Sequence[str | Sequence[str]],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    *,
    max_len: int | None = None,
    batch_size: int = 256,
    decode: GreedyDecoder | None = None,
) -> list[Translation]:
    """Translate source sentences greedily, in batches, keeping the attention weights.

    A sentence is a string of space-separated tokens (``"我 爱 机器学习"``) or a sequence of
    tokens. Tokens the source vocabulary does not hold become ``<unk>``. Decoding stops at
    ``<eos>`` or after ``max_len`` tokens (default: twice the longest source in the batch,
    plus 5).

    Args:
        decode: the greedy decoder, by default :func:`attnlib.models.seq2seq.greedy_decode`.

    Raises:
        ValueError: if ``sentences`` is empty or one sentence is empty; the errors of ``decode``
            for a sentence the model refuses (e.g. one longer than its ``max_src_len``).
    """
    if decode is None:
        from attnlib.models.seq2seq import greedy_decode

        decode = greedy_decode
    check_int("batch_size", batch_size, minimum=1)
    if max_len is not None:
        check_int("max_len", max_len, minimum=1)
    check_sentences("sentences", sentences)
    check_instance("src_vocab", src_vocab, Vocab, "a Vocab")
    check_instance("tgt_vocab", tgt_vocab, Vocab, "a Vocab")
    if not callable(decode):
        raise TypeError(f"decode must be a decoding function, got {type(decode).__name__}")
    if len(sentences) == 0:
        raise ValueError("sentences is empty: translate needs at least one sentence")
    sources = [_tokens_of(s, i) for i, s in enumerate(sentences)]
    results: list[Translation] = []
    for start in range(0, len(sources), batch_size):
        chunk = sources[start : start + batch_size]
        src, src_lengths = pad_batch([src_vocab.encode(s) for s in chunk])  # (B, S)
        limit = max_len if max_len is not None else 2 * int(src_lengths.max()) + 5
        out, weights = decode(model, src, src_lengths, limit, BOS_ID, EOS_ID)  # (B, L), (B, L, S)
        for b, source in enumerate(chunk):
            ids = out[b].tolist()
            n_rows = ids.index(EOS_ID) + 1 if EOS_ID in ids else len(ids)
            results.append(Translation(
                src=source,
                tokens=tuple(tgt_vocab.decode(ids[:n_rows])),
                output=tuple(tgt_vocab.decode(ids[:n_rows], strip_special=False)),
                weights=weights[b, :n_rows, : len(source)].clone(),  # (len(output), len(src))
            ))
    return results
