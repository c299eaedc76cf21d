r"""Sequence to sequence with additive (Bahdanau) attention, and the fixed-context baseline.

The encoder reads the source in both directions; its state at source position j is
:math:`\mathbf h_j = [\overrightarrow{\mathbf h}_j; \overleftarrow{\mathbf h}_j]`. At every target
step the decoder asks which source positions matter now: its previous state is the **query**,
the encoder states are the **keys** and also the **values**, and the additive score of
:class:`attnlib.blocks.scoring.AdditiveScore` weighs them {Bahdanau et al. 2015}:

.. math::

    e_{tj} = \mathbf w_v^\top \tanh(\mathbf W_q \mathbf s_{t-1} + \mathbf W_k \mathbf h_j + \mathbf b),

    \alpha_{tj} = \operatorname{softmax}_j(e_{tj}),

    \mathbf c_t = \sum_j \alpha_{tj} \mathbf h_j .

The context :math:`\mathbf c_t` is fed into the decoder GRU with the previous target word and
into the output layer, as in the paper. The projected keys :math:`\mathbf W_k \mathbf h_j` do not
depend on t and are computed once per sentence (:class:`Memory`).

With ``use_attention=False`` the same model uses one fixed context :math:`\mathbf c` for every
step: the encoder's final state :math:`[\overrightarrow{\mathbf h}_{n}; \overleftarrow{\mathbf
h}_1]` (``fixed_context="final"``, the RNN encoder-decoder of Cho et al. 2014 that Bahdanau et al.
compare against, n the sentence's length), or the mean of the encoder states (``"mean"``,
attention with uniform weights). Its decoder GRU then reads inputs that do not depend on its
state, so teacher forcing runs it over the whole target in one call.

Sources are packed (:func:`torch.nn.utils.rnn.pack_padded_sequence`), so a sentence gets the
same encoding alone as in a batch with longer sentences, and the padding mask made by
:func:`attnlib.blocks.masking.lengths_to_mask` gives padded source positions a weight of exactly zero.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from attnlib._checks import (
    check_device,
    check_flag,
    check_input,
    check_instance,
    check_int,
    check_tensor,
    check_token_ids,
    shape_str,
)
from attnlib.blocks.masking import lengths_to_mask, masked_softmax
from attnlib.blocks.scoring import AdditiveScore

__all__ = [
    "AttentionDecoder",
    "Encoder",
    "Memory",
    "Seq2Seq",
    "Seq2SeqConfig",
    "check_source",
    "greedy_decode",
]


@dataclass(frozen=True)
class Seq2SeqConfig:
    """Sizes of a :class:`Seq2Seq` model.

    Args:
        src_vocab_size: number of source token ids (``len(src_vocab)``).
        tgt_vocab_size: number of target token ids (``len(tgt_vocab)``).
        embed_dim: size of the source and target word embeddings.
        hidden_size: d_h, the size of each encoder direction and of the decoder state. The
            encoder states (keys and values) have size 2 d_h.
        attention_size: d_a, the hidden size of the additive score.
        use_attention: additive attention (True), or one fixed context for every step (False).
        fixed_context: the fixed context without attention: ``"final"``, the encoder's final
            state (the RNN encoder-decoder), or ``"mean"``, the mean encoder state.
        max_src_len: the longest source the model accepts; longer ones raise ``ValueError``.
        pad_id: the id of ``<pad>`` in both vocabularies.
    """

    src_vocab_size: int
    tgt_vocab_size: int
    embed_dim: int = 32
    hidden_size: int = 64
    attention_size: int = 64
    use_attention: bool = True
    fixed_context: Literal["final", "mean"] = "final"
    max_src_len: int = 64
    pad_id: int = 0

    def __post_init__(self) -> None:
        for name in ("src_vocab_size", "tgt_vocab_size"):
            check_int(name, getattr(self, name), minimum=2)
        for name in ("embed_dim", "hidden_size", "attention_size", "max_src_len"):
            check_int(name, getattr(self, name), minimum=1)
        check_int("pad_id", self.pad_id, minimum=0)
        vocab = min(self.src_vocab_size, self.tgt_vocab_size)
        if self.pad_id >= vocab:
            raise ValueError(f"pad_id must be an id of both vocabularies, < {vocab}, got "
                             f"pad_id = {self.pad_id} (src_vocab_size = {self.src_vocab_size}, "
                             f"tgt_vocab_size = {self.tgt_vocab_size})")
        check_flag("use_attention", self.use_attention)
        if self.fixed_context not in ("final", "mean"):
            raise ValueError(f"fixed_context must be 'final' or 'mean', got {self.fixed_context!r}")


def check_source(
    src: Tensor, src_lengths: Tensor, vocab_size: int, max_src_len: int | None = None,
    device: torch.device | None = None,
) -> None:
    """Check a padded batch of source ids and its lengths (on a model's ``device``, if given).

    Shape:
        - src: (B, S), integer ids in [0, ``vocab_size``)
        - src_lengths: (B,), integers in [1, S]

    Raises:
        TypeError: if ``src`` or ``src_lengths`` is not an integer tensor, or a size not an int.
        ValueError: if a shape is wrong, the batch or a sentence is empty, a length exceeds S or
            ``max_src_len``, an id is outside the vocabulary, or a tensor is on another device.
    """
    check_int("vocab_size", vocab_size, minimum=1)
    if max_src_len is not None:
        check_int("max_src_len", max_src_len, minimum=1)
    check_tensor("src", src)
    check_tensor("src_lengths", src_lengths)
    for name, value in (("src", src), ("src_lengths", src_lengths)):
        if value.is_floating_point() or value.is_complex() or value.dtype == torch.bool:
            raise TypeError(f"{name} must hold integer ids, got dtype {value.dtype}")
        check_device(name, value, src.device if device is None else device,
                     "src" if device is None else "the model")
    if src.ndim != 2:
        raise ValueError(f"src must have 2 dimensions (B, S), got shape {shape_str(src.shape)}")
    if src_lengths.shape != (src.shape[0],):
        raise ValueError(
            f"src_lengths must have shape (B,) = ({src.shape[0]},) for src of shape "
            f"{shape_str(src.shape)}, got shape {shape_str(src_lengths.shape)}"
        )
    if src.shape[0] == 0 or src.shape[1] == 0:
        raise ValueError(f"src is empty: got shape {shape_str(src.shape)}, need B >= 1 and S >= 1")
    if bool((src_lengths < 1).any()):
        i = int((src_lengths < 1).nonzero()[0, 0])
        raise ValueError(
            f"src_lengths[{i}] = {int(src_lengths[i])}: sentence {i} is empty, every source "
            f"sentence needs at least one token"
        )
    longest = int(src_lengths.max())
    if longest > src.shape[1]:
        raise ValueError(
            f"src_lengths has a length {longest} greater than S = {src.shape[1]} of src of shape "
            f"{shape_str(src.shape)}"
        )
    if max_src_len is not None and longest > max_src_len:
        raise ValueError(
            f"src holds a sentence of length {longest}, longer than the model's max_src_len = "
            f"{max_src_len} (src of shape {shape_str(src.shape)})"
        )
    if bool(((src < 0) | (src >= vocab_size)).any()):
        bad = int(src[(src < 0) | (src >= vocab_size)][0])
        raise ValueError(f"src holds id {bad}, outside the source vocabulary [0, {vocab_size})")


class Encoder(nn.Module):
    r"""Bidirectional GRU encoder over packed sequences.

    .. math::

        \overrightarrow{\mathbf h}_j = \mathrm{GRU}_\rightarrow(\mathbf x_j,
            \overrightarrow{\mathbf h}_{j-1}),

        \overleftarrow{\mathbf h}_j = \mathrm{GRU}_\leftarrow(\mathbf x_j,
            \overleftarrow{\mathbf h}_{j+1}),

        \mathbf h_j = [\overrightarrow{\mathbf h}_j; \overleftarrow{\mathbf h}_j]

    Each sentence is read over its own length n only: the backward GRU starts at the sentence's
    last word, not at the padding after it. The final state is
    :math:`[\overrightarrow{\mathbf h}_{n}; \overleftarrow{\mathbf h}_1]`, both directions
    after reading the whole sentence.

    Shape:
        - src: (B, S) ids; src_lengths: (B,)
        - states: (B, S, 2 d_h), zero at padded positions
        - final: (B, 2 d_h)
    """

    def __init__(self, vocab_size: int, embed_dim: int, hidden_size: int,
                 pad_id: int = 0):
        super().__init__()
        _check_sizes(vocab_size, pad_id, embed_dim=embed_dim,
                     hidden_size=hidden_size)
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)
        self.rnn = nn.GRU(embed_dim, hidden_size, batch_first=True,
                          bidirectional=True)

    def forward(
        self, src: Tensor, src_lengths: Tensor
    ) -> tuple[Tensor, Tensor]:
        """The states (B, S, 2 d_h), zero at padding, and the final (B, 2 d_h)."""
        _check_encoder_input(self, src, src_lengths)
        x = self.embedding(src)  # (B, S, E)
        packed = pack_padded_sequence(x, src_lengths.cpu(), batch_first=True,
                                      enforce_sorted=False)
        # final: (2, B, d_h), forward then backward
        packed_states, final = self.rnn(packed)
        # (B, S, 2 d_h)
        states, _ = pad_packed_sequence(packed_states, batch_first=True,
                                        total_length=src.shape[1])
        # (B, S, 2 d_h), (B, 2 d_h)
        return states, torch.cat([final[0], final[1]], dim=-1)


@dataclass(frozen=True, eq=False)
class Memory:
    r"""What the encoder hands the decoder, computed once per batch of sentences.

    Shape:
        - states: (B, S, 2 d_h), the encoder states: the values (and the keys before projection)
        - mask: (B, S) bool, True at real words
        - keys: (B, S, d_a), the projected keys :math:`\mathbf W_k \mathbf h_j` (with attention)
        - context: (B, 2 d_h), the fixed context (without attention)
        - weights: (B, S), the weights that the fixed context stands for: uniform for the
          mean, zero for the final state, which is no weighted average of the states
    """

    states: Tensor
    mask: Tensor
    keys: Tensor | None = None
    context: Tensor | None = None
    weights: Tensor | None = None


class AttentionDecoder(nn.Module):
    r"""GRU decoder that attends to the encoder states with an additive score.

    One step, from the previous word :math:`y_{t-1}` and state :math:`\mathbf s_{t-1}`:

    .. math::

        \mathbf c_t = \sum_j \alpha_{tj} \mathbf h_j,

        \alpha_{tj} = \operatorname{softmax}_j \mathbf w_v^\top
            \tanh(\mathbf W_q \mathbf s_{t-1} + \mathbf W_k \mathbf h_j + \mathbf b),

        \mathbf s_t = \mathrm{GRU}([\mathrm{emb}(y_{t-1}); \mathbf c_t], \mathbf s_{t-1}),

        \mathrm{logits}_t = \mathbf W_o [\mathbf s_t; \mathbf c_t] + \mathbf b_o

    With ``use_attention=False``, :math:`\mathbf c_t = \mathbf c` is the fixed context of the
    :class:`Memory`, the same at every step.

    Args:
        vocab_size: V, the target vocabulary size.
        embed_dim: size of the target word embeddings.
        hidden_size: d_h, the decoder state size (the query size).
        key_size: the size of an encoder state (2 d_h for a bidirectional encoder).
        attention_size: d_a, the hidden size of the additive score.
        use_attention: attend (True) or use the fixed context (False).
        pad_id: the id of ``<pad>``.

    Shape:
        - y_prev: (B,) ids; state: (B, d_h)
        - logits: (B, V); new state: (B, d_h); weights: (B, S)
    """

    def __init__(
        self,
        vocab_size: int,
        embed_dim: int,
        hidden_size: int,
        key_size: int,
        attention_size: int,
        use_attention: bool = True,
        pad_id: int = 0,
    ):
        super().__init__()
        _check_sizes(vocab_size, pad_id, embed_dim=embed_dim, hidden_size=hidden_size,
                     key_size=key_size, attention_size=attention_size)
        check_flag("use_attention", use_attention)
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=pad_id)
        self.score: AdditiveScore | None = None
        if use_attention:
            self.score = AdditiveScore(hidden_size, key_size, attention_size, bias=True)
        self.rnn = nn.GRUCell(embed_dim + key_size, hidden_size)
        self.out_proj = nn.Linear(hidden_size + key_size, vocab_size)

    def attend(self, state: Tensor, memory: Memory) -> tuple[Tensor, Tensor]:
        """The context (B, 2 d_h) and weights (B, S) of one step.

        The query is the decoder's state (B, d_h).
        """
        _check_state_memory(self, state, memory)
        if self.score is None:
            assert memory.context is not None and memory.weights is not None
            return memory.context, memory.weights
        assert memory.keys is not None
        q = self.score.q_proj(state)  # (B, d_a): W_q s_{t-1} + b
        scores = torch.tanh(q[:, None, :] + memory.keys) @ self.score.w_v  # (B, S)
        weights = masked_softmax(scores, memory.mask)  # (B, S), zero at padding
        context = (weights[:, None, :] @ memory.states)[:, 0]  # (B, 2 d_h)
        return context, weights

    def step(
        self, y_prev: Tensor, state: Tensor, memory: Memory
    ) -> tuple[Tensor, Tensor, Tensor]:
        """One step: attend with the previous state, update it, predict a word."""
        _check_words("y_prev", y_prev, self, state, 1, "(B,)")
        context, weights = self.attend(state, memory)  # (B, 2 d_h), (B, S)
        # (B, E + 2 d_h)
        rnn_input = torch.cat([self.embedding(y_prev), context], dim=-1)
        state = self.rnn(rnn_input, state)  # (B, d_h)
        logits = self.out_proj(torch.cat([state, context], dim=-1))  # (B, V)
        return logits, state, weights

    def teacher_forced(
        self, tgt_in: Tensor, state: Tensor, memory: Memory
    ) -> tuple[Tensor, Tensor]:
        """:meth:`step` for t = 1, ..., L on the true previous words (teacher forcing).

        The same numbers as L calls of :meth:`step`, with the embeddings and the output layer
        applied to all steps at once, outside the loop. Returns logits (B, L, V) and weights
        (B, L, S).
        """
        _check_state_memory(self, state, memory)
        _check_words("tgt_in", tgt_in, self, state, 2, "(B, L)")
        embedded = self.embedding(tgt_in)  # (B, L, E)
        states, contexts, weights = [], [], []
        for t in range(tgt_in.shape[1]):
            context, step_weights = self.attend(state, memory)  # (B, 2 d_h), (B, S)
            state = self.rnn(torch.cat([embedded[:, t], context], dim=-1), state)  # (B, d_h)
            states.append(state)
            contexts.append(context)
            weights.append(step_weights)
        features = torch.cat([torch.stack(states, 1), torch.stack(contexts, 1)], dim=-1)
        return self.out_proj(features), torch.stack(weights, dim=1)  # (B, L, V), (B, L, S)

    def fixed_forward(self, tgt_in: Tensor, state: Tensor, memory: Memory) -> tuple[Tensor, Tensor]:
        """Every step at once, for a fixed context: the GRU's inputs do not depend on its state.

        The same numbers as calling :meth:`step` for t = 1, ..., L (teacher forcing), in one
        fused GRU call. Returns logits (B, L, V) and weights (B, L, S).
        """
        _check_state_memory(self, state, memory)
        _check_words("tgt_in", tgt_in, self, state, 2, "(B, L)")
        if self.score is not None:
            raise ValueError("fixed_forward is the decoder without attention "
                             "(use_attention=False); this one attends: use teacher_forced")
        assert memory.context is not None and memory.weights is not None
        L = tgt_in.shape[1]
        context = memory.context[:, None, :].expand(-1, L, -1)  # (B, L, 2 d_h)
        x = torch.cat([self.embedding(tgt_in), context], dim=-1)  # (B, L, E + 2 d_h)
        cell = self.rnn
        states, _ = torch.gru(x, state[None], (cell.weight_ih, cell.weight_hh, cell.bias_ih,
                                               cell.bias_hh), True, 1, 0.0, self.training, False,
                              True)  # (B, L, d_h)
        logits = self.out_proj(torch.cat([states, context], dim=-1))  # (B, L, V)
        return logits, memory.weights[:, None, :].expand(-1, L, -1)


class Seq2Seq(nn.Module):
    r"""Encoder-decoder with additive attention (or a fixed context), trained by teacher forcing.

    :meth:`forward` feeds the true previous word at every step (teacher forcing, the targets
    shifted right: ``tgt_in`` = ``<bos> y_1 ... y_n``) and returns the logits for
    ``y_1 ... y_n <eos>``. The first decoder state is
    :math:`\mathbf s_0 = \tanh(\mathbf W_s [\overrightarrow{\mathbf h}_{n}; \overleftarrow{\mathbf h}_1])`.
    Use :func:`greedy_decode` to translate.

    Args:
        config: the sizes, see :class:`Seq2SeqConfig`.

    Shape:
        - src: (B, S) ids; src_lengths: (B,); tgt_in: (B, L) ids
        - logits: (B, L, V); weights: (B, L, S), exactly zero where the source is padding

    Raises:
        TypeError, ValueError: from :func:`check_source` for a bad source, and ValueError if
            ``tgt_in`` is not (B, L) with L >= 1 or holds an id outside the target vocabulary.
    """

    def __init__(self, config: Seq2SeqConfig):
        super().__init__()
        if not isinstance(config, Seq2SeqConfig):
            raise TypeError(f"config must be a Seq2SeqConfig, got {type(config).__name__}")
        self.config = config
        c = config
        self.encoder = Encoder(c.src_vocab_size, c.embed_dim, c.hidden_size, c.pad_id)
        self.init_proj = nn.Linear(2 * c.hidden_size, c.hidden_size)
        self.decoder = AttentionDecoder(
            c.tgt_vocab_size, c.embed_dim, c.hidden_size, 2 * c.hidden_size, c.attention_size,
            use_attention=c.use_attention, pad_id=c.pad_id,
        )

    def encode(self, src: Tensor, src_lengths: Tensor) -> tuple[Memory, Tensor]:
        """Encode a padded batch: the decoder's :class:`Memory`, first state (B, d_h)."""
        c = self.config
        check_source(src, src_lengths, c.src_vocab_size, c.max_src_len,
                     _device(self))
        # (B, S, 2 d_h), (B, 2 d_h)
        states, final = self.encoder(src, src_lengths)
        # (B, S)
        mask = lengths_to_mask(src_lengths.to(states.device), src.shape[1])
        state = torch.tanh(self.init_proj(final))  # (B, d_h)
        score = self.decoder.score
        if score is not None:
            # keys: (B, S, d_a)
            return Memory(states, mask, keys=score.k_proj(states)), state
        if c.fixed_context == "final":
            zeros = torch.zeros_like(states[..., 0])  # (B, S)
            return Memory(states, mask, context=final, weights=zeros), state
        # (B, S), uniform
        weights = mask.to(states.dtype) / src_lengths.to(states)[:, None]
        return Memory(states, mask, context=(weights[:, None, :] @ states)[:, 0],
                      weights=weights), state

    def forward(self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor) -> tuple[Tensor, Tensor]:
        """Teacher-forced logits (B, L, V) and attention weights (B, L, S) for ``tgt_in``."""
        check_tensor("src", src)
        check_tensor("tgt_in", tgt_in)
        if tgt_in.is_floating_point() or tgt_in.is_complex() or tgt_in.dtype == torch.bool:
            raise TypeError(f"tgt_in must hold integer ids, got dtype {tgt_in.dtype}")
        check_device("tgt_in", tgt_in, self.init_proj.weight.device, "the model")
        if tgt_in.ndim != 2 or tgt_in.shape[0] != src.shape[0] or tgt_in.shape[1] == 0:
            raise ValueError(
                f"tgt_in must have shape (B, L) with B = {src.shape[0]} (the batch size of src) "
                f"and L >= 1, got shape {shape_str(tgt_in.shape)}"
            )
        outside = (tgt_in < 0) | (tgt_in >= self.config.tgt_vocab_size)
        if bool(outside.any()):
            raise ValueError(
                f"tgt_in holds an id outside the target vocabulary "
                f"[0, {self.config.tgt_vocab_size}): got id {int(tgt_in[outside][0])}"
            )
        memory, state = self.encode(src, src_lengths)
        if self.decoder.score is None:
            return self.decoder.fixed_forward(tgt_in, state, memory)
        return self.decoder.teacher_forced(tgt_in, state, memory)


@torch.no_grad()
def greedy_decode(
    model: Seq2Seq, src: Tensor, src_lengths: Tensor, max_len: int, bos_id: int, eos_id: int
) -> tuple[Tensor, Tensor]:
    r"""Translate a batch greedily: at each step feed back the most probable word.

    .. math::

        \hat y_t = \operatorname*{arg\,max}_y \, p(y \mid \hat y_{<t}, \mathbf x),

        \hat y_0 = \texttt{<bos>}

    A sentence is finished once it has produced ``eos_id``; after that its row holds the
    model's ``pad_id`` and all-zero weights. Decoding stops when every sentence is finished or
    after ``max_len`` steps, whichever comes first. The model is put in eval mode for the call
    and restored afterwards.

    Shape:
        - src: (B, S) ids; src_lengths: (B,)
        - tokens: (B, L) ids with L <= ``max_len``, ``eos_id`` included where produced
        - weights: (B, L, S), the attention weights of each produced word (zero after eos)

    Raises:
        TypeError, ValueError: if ``max_len`` is not an int >= 1, or the source is bad
            (see :func:`check_source`).
    """
    check_instance("model", model, Seq2Seq, "an attnlib Seq2Seq")
    check_int("max_len", max_len, minimum=1)
    for name, token in (("bos_id", bos_id), ("eos_id", eos_id)):
        check_int(name, token, minimum=0, maximum=model.config.tgt_vocab_size - 1)
    was_training = model.training
    model.eval()
    try:
        memory, state = model.encode(src, src_lengths)
        return _greedy_loop(model.decoder, memory, state, max_len, bos_id, eos_id,
                            model.config.pad_id)
    finally:
        model.train(was_training)


def _greedy_loop(
    decoder: AttentionDecoder, memory: Memory, state: Tensor, max_len: int,
    bos_id: int, eos_id: int, pad_id: int,
) -> tuple[Tensor, Tensor]:
    """The loop of :func:`greedy_decode`, from the encoded batch and first state."""
    B, device = state.shape[0], state.device
    y = torch.full((B,), bos_id, dtype=torch.long, device=device)  # (B,) <bos>
    finished = torch.zeros(B, dtype=torch.bool, device=device)  # (B,)
    tokens, weights = [], []
    for _ in range(max_len):
        # weights: (B, S)
        logits, state, step_weights = decoder.step(y, state, memory)
        # (B,) the most probable word
        y = logits.argmax(dim=-1).masked_fill(finished, pad_id)
        tokens.append(y)
        weights.append(step_weights.masked_fill(finished[:, None], 0.0))
        finished = finished | (y == eos_id)
        if bool(finished.all()):
            break
    # (B, L), (B, L, S)
    return torch.stack(tokens, dim=1), torch.stack(weights, dim=1)


# ---------------------------------------------------------------------------------------------
# Argument checks of the modules above
# ---------------------------------------------------------------------------------------------


def _device(module: nn.Module) -> torch.device:
    return next(module.parameters()).device


def _check_sizes(vocab_size: int, pad_id: int, **sizes: int) -> None:
    """A vocabulary of at least 2 ids with ``pad_id`` among them, and sizes >= 1."""
    check_int("vocab_size", vocab_size, minimum=2)
    check_int("pad_id", pad_id, minimum=0, maximum=vocab_size - 1)
    for name, size in sizes.items():
        check_int(name, size, minimum=1)


def _check_encoder_input(encoder: Encoder, src: Tensor, src_lengths: Tensor) -> None:
    """A padded batch of source ids for :class:`Encoder` (see :func:`check_source`)."""
    check_source(src, src_lengths, encoder.embedding.num_embeddings, device=_device(encoder))


def _check_state_memory(decoder: AttentionDecoder, state: Tensor, memory: Memory) -> None:
    """A decoder state (B, d_h) like the parameters, and a :class:`Memory` of B sentences
    with states (B, S, key_size), made for this decoder (keys with attention, a fixed context
    without)."""
    rnn = decoder.rnn
    state = check_input("state", state, rnn.weight_hh, 2, "(B, d_h)")
    if state.shape[1] != rnn.hidden_size:
        raise ValueError(f"state must have shape (B, d_h) with d_h = {rnn.hidden_size}, got "
                         f"{shape_str(state.shape)}")
    check_instance("memory", memory, Memory, "a Memory (from Seq2Seq.encode)")
    B, key_size = state.shape[0], decoder.out_proj.in_features - rnn.hidden_size
    states = check_input("memory.states", memory.states, rnn.weight_hh, 3, "(B, S, key_size)")
    if states.shape[0] != B or states.shape[2] != key_size:
        raise ValueError(f"memory.states must have shape (B, S, key_size) = ({B}, S, "
                         f"{key_size}) for state of shape {shape_str(state.shape)}, got "
                         f"{shape_str(states.shape)}")
    mask = check_tensor("memory.mask", memory.mask)
    if mask.dtype != torch.bool or mask.shape != states.shape[:2]:
        raise ValueError(f"memory.mask must be a bool (B, S) = {shape_str(states.shape[:2])} "
                         f"tensor, got {mask.dtype} of shape {shape_str(mask.shape)}")
    if decoder.score is not None:
        keys = memory.keys
        attention = decoder.score.k_proj.out_features
        if keys is None or tuple(keys.shape) != (*states.shape[:2], attention):
            raise ValueError(f"memory.keys must be the projected keys (B, S, d_a) = "
                             f"({B}, {states.shape[1]}, {attention}) of this decoder's score, "
                             f"got {None if keys is None else shape_str(keys.shape)}")
    elif memory.context is None or memory.weights is None:
        raise ValueError("memory has no fixed context: a decoder without attention reads "
                         "memory.context and memory.weights (Seq2Seq.encode makes them)")


def _check_words(name: str, ids: Tensor, decoder: AttentionDecoder, state: Tensor, ndim: int,
                 expected: str) -> None:
    """Target ids of the decoder's vocabulary, one row per sentence of ``state``."""
    check_tensor("state", state)
    vocab = decoder.embedding.num_embeddings
    t = check_token_ids(name, ids, vocab, ndim, expected, _device(decoder))
    if t.shape[0] != state.shape[0] or (ndim == 2 and t.shape[1] == 0):
        raise ValueError(f"{name} must have shape {expected} with B = {state.shape[0]} (the "
                         f"rows of state){' and L >= 1' if ndim == 2 else ''}, got "
                         f"{shape_str(t.shape)}")
