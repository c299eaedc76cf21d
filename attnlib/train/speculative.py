r"""Speculative decoding {Leviathan et al. 2023; Chen, Borgeaud et al. 2023}: a draft proposes, the model checks.

Generating n tokens greedily takes n sequential forward passes of the model. A cheaper draft
model can propose k tokens :math:`\tilde x_{t+1}, \dots, \tilde x_{t+k}`; one forward pass of
the model over the prefix and the k proposals gives its own choice at each of the k + 1
positions at once,

.. math::

    x^*_{t+i} = \arg\max_x p(x \mid x_{\le t}, \tilde x_{t+1}, \dots, \tilde x_{t+i-1}),
    \qquad i = 1, \dots, k + 1,

and the proposals are accepted as long as they agree with it: the first disagreement is
replaced by the model's choice, and if all k agree the model's (k + 1)-th choice comes free.
Every token written is the model's own greedy choice, so the output is that of greedy
decoding with the model alone; only the number of its sequential passes changes. (The papers
also give a sampling version that keeps the model's distribution; this is the greedy case.)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attnlib._checks import check_device, check_instance, check_int, check_token_ids, shape_str
from attnlib.models.decoder_lm import DecoderLM, generate

__all__ = ["SpeculativeResult", "speculative_decode"]


@dataclass(frozen=True)
class SpeculativeResult:
    """Tokens and counts of :func:`speculative_decode`.

    Shape:
        - tokens: (1, L0 + steps)
    """

    tokens: Tensor
    proposed: int
    accepted: int
    model_passes: int

    @property
    def acceptance_rate(self) -> float:
        """Accepted draft tokens / proposed draft tokens."""
        return self.accepted / self.proposed if self.proposed else 0.0


@torch.no_grad()
def speculative_decode(
    model: DecoderLM, draft: DecoderLM, prompt: Tensor, steps: int, k: int = 4
) -> SpeculativeResult:
    """Greedy speculative decoding of one sequence: ``steps`` new tokens, ``k`` proposed at a time.

    Each round the draft writes k tokens greedily (:func:`attnlib.models.decoder_lm.generate`), and
    the model reads the sequence with them once and keeps the agreeing prefix plus its own next
    token. The tokens equal ``generate(model, prompt, steps)``.

    Shape:
        - prompt: (1, L0)

    Raises:
        ValueError: if ``prompt`` is not (1, L0), ``steps`` < 0 or ``k`` < 1, or the two models'
            vocabularies differ.
    """
    prompt = _check_speculative_args(model, draft, prompt, steps, k)
    model.eval()
    draft.eval()
    tokens = prompt
    target = prompt.shape[1] + steps
    proposed = accepted = passes = 0
    while tokens.shape[1] < target:
        t, n = tokens.shape[1], min(k, target - tokens.shape[1])
        proposal = generate(draft, tokens, n)[:, t:]  # (1, n)
        seen = torch.cat((tokens, proposal), dim=1)  # (1, t + n)
        # the model's next token after each of the last n + 1 positions
        choices = model(seen).argmax(-1)[:, t - 1:]  # (1, n + 1)
        passes += 1
        # 1 while every proposal so far agrees with the model, then 0
        agree = (choices[0, :n] == proposal[0]).long().cumprod(0)  # (n,)
        m = int(agree.sum())
        proposed += n
        accepted += m
        # the agreeing proposals, then the model's own token: (1, m + 1)
        new = torch.cat((proposal[:, :m], choices[:, m:m + 1]), dim=1)
        tokens = torch.cat((tokens, new), dim=1)[:, :target]
    return SpeculativeResult(tokens, proposed, accepted, passes)


def _check_speculative_args(
    model: DecoderLM, draft: DecoderLM, prompt: Tensor, steps: int, k: int
) -> Tensor:
    """The argument checks of :func:`speculative_decode`; returns the prompt."""
    check_instance("model", model, DecoderLM, "a DecoderLM")
    check_instance("draft", draft, DecoderLM, "a DecoderLM")
    prompt = check_token_ids("prompt", prompt, model.config.vocab_size, 2, "(1, L0)",
                             model.embedding.weight.device)
    if prompt.shape[0] != 1 or prompt.shape[1] == 0:
        raise ValueError(f"prompt must be one sequence of at least one token, shape (1, L0), "
                         f"got {shape_str(prompt.shape)}")
    check_int("steps", steps, minimum=0)
    check_int("k", k, minimum=1)
    if draft.config.vocab_size != model.config.vocab_size:
        raise ValueError(f"draft and model must share a vocabulary, got vocab_size "
                         f"{draft.config.vocab_size} and {model.config.vocab_size}")
    check_device("prompt", prompt, draft.embedding.weight.device, "the draft")
    longest = min(model.config.max_len, draft.config.max_len)
    if prompt.shape[1] + steps > longest:
        raise ValueError(f"steps = {steps} new tokens after a prompt of {prompt.shape[1]} would "
                         f"pass max_len = {longest} (of the model or the draft)")
    return prompt
