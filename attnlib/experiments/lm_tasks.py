r"""Text for the book's language models: words that repeat, so the past predicts the future.

:func:`echo_text` writes lines of lowercase letters: a random word of ``period`` letters, then
the same word again and again,

.. code-block:: text

    qhzkwmbdafpe qhzkwmbdafpe qhzkwmbdafpe qhz...

(shown with spaces; there are none in the tokens). The first ``period`` letters are random and
no model can predict them: their best loss is :math:`\ln 26 \approx 3.26`. Every later letter
is the letter ``period`` positions back,

.. math::

    x_t = x_{t - P} \quad (t \ge P),

so a model that can look P positions back predicts it exactly. P is the dependency's length:
a model that cannot see that far (a sliding window shorter than P, say) is left guessing.
Nothing is read from disk; a private generator makes the text.
"""

from __future__ import annotations

import torch
from torch import Tensor

from attnlib._checks import check_int, check_ndim, check_tensor, check_token_ids

__all__ = ["ALPHABET", "IGNORE_INDEX", "echo_targets", "echo_text", "to_text", "varied_echo"]

ALPHABET = "abcdefghijklmnopqrstuvwxyz"
"""The 26 letters of the vocabulary; token id i is the letter ``ALPHABET[i]``."""

IGNORE_INDEX = -100
"""The target of a letter no model can predict, ``F.cross_entropy``'s default ignore index."""


def echo_text(n: int, length: int, period: int, seed: int = 0) -> Tensor:
    """``n`` lines of ``length`` letters, each a random ``period``-letter word repeated.

    Letters are drawn uniformly with a private ``torch.Generator`` seeded with ``seed``.

    Shape:
        - output: (n, length), long, ids in [0, 26)

    Raises:
        TypeError: if an argument is not an int.
        ValueError: if ``n``, ``length`` or ``period`` < 1.
    """
    check_int("n", n, minimum=1)
    check_int("length", length, minimum=1)
    check_int("period", period, minimum=1)
    generator = torch.Generator().manual_seed(check_int("seed", seed, minimum=0))
    words = torch.randint(0, len(ALPHABET), (n, period), generator=generator)  # (n, P)
    repeats = -(-length // period)  # ceil
    return words.repeat(1, repeats)[:, :length]  # (n, length)


def echo_targets(tokens: Tensor, period: int) -> Tensor:
    r"""The next-token targets of echo text: letter t + 1, or :data:`IGNORE_INDEX` if random.

    Position t predicts :math:`x_{t+1}`; it is predictable when :math:`t + 1 \ge P`. The last
    position has no next letter.

    Shape:
        - tokens: (B, L); output: (B, L), long

    Raises:
        ValueError: if ``tokens`` is not 2-D or ``period`` < 1.
    """
    tokens = check_token_ids("tokens", tokens, len(ALPHABET))
    check_int("period", period, minimum=1)
    targets = torch.full_like(tokens, IGNORE_INDEX)  # (B, L)
    targets[:, :-1] = tokens[:, 1:]
    targets[:, : period - 1] = IGNORE_INDEX
    return targets


def to_text(tokens: Tensor) -> list[str]:
    """Token ids as lines of letters.

    Shape:
        - tokens: (B, L) or (L,)

    Raises:
        ValueError: if ``tokens`` holds an id outside [0, 26) or is not 1-D or 2-D.
    """
    tokens = check_tensor("tokens", tokens)
    check_ndim("tokens", tokens, (1, 2), "(B, L) or (L,)")
    if tokens.is_floating_point() or tokens.is_complex() or tokens.dtype == torch.bool:
        raise TypeError(f"tokens must hold integer letter ids, got dtype {tokens.dtype}")
    rows = tokens[None] if tokens.ndim == 1 else tokens
    if bool(((rows < 0) | (rows >= len(ALPHABET))).any()):
        raise ValueError(f"tokens must be letter ids in [0, {len(ALPHABET)}), got "
                         f"{int(rows[(rows < 0) | (rows >= len(ALPHABET))][0])}")
    return ["".join(ALPHABET[int(t)] for t in row) for row in rows]


def varied_echo(
    n: int, length: int, min_period: int, max_period: int, vocab_size: int = 64, seed: int = 0,
) -> tuple[Tensor, Tensor]:
    r"""Echo text whose period changes from line to line, and its next-token targets.

    Each line is a word of P distinct tokens, P drawn uniformly from
    [``min_period``, ``max_period``], repeated to ``length`` tokens. No fixed offset predicts
    it: a model must find where the current token occurred before and copy the token that
    followed it there (an induction head). Position t is predictable from t = P on, when the
    word has begun again; the targets before are :data:`IGNORE_INDEX`, as is the last one.

    Shape:
        - tokens, targets: (n, length), long; token ids in [0, vocab_size)

    Raises:
        TypeError: if an argument is not an int.
        ValueError: if ``n`` or ``length`` < 1, ``min_period`` < 1, ``max_period`` <
            ``min_period``, ``vocab_size`` < ``max_period`` (a word's tokens are distinct), or
            ``seed`` < 0.
    """
    check_int("n", n, minimum=1)
    check_int("seed", seed, minimum=0)
    check_int("length", length, minimum=1)
    check_int("min_period", min_period, minimum=1)
    check_int("max_period", max_period, minimum=min_period)
    check_int("vocab_size", vocab_size, minimum=max_period)
    generator = torch.Generator().manual_seed(seed)
    periods = torch.randint(min_period, max_period + 1, (n, 1), generator=generator)  # (n, 1)
    # each row a random order of the vocabulary: its first P tokens are the word
    words = torch.rand(n, vocab_size, generator=generator).argsort(dim=1)  # (n, V)
    t = torch.arange(length)[None, :]  # (1, length)
    tokens = words.gather(1, t % periods)  # (n, length): token t is word[t mod P]
    targets = torch.full_like(tokens, IGNORE_INDEX)
    targets[:, :-1] = tokens[:, 1:]
    targets[t.expand(n, -1) < periods] = IGNORE_INDEX  # the first P: no earlier occurrence
    return tokens, targets
