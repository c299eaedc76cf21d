r"""Speculative decoding {Leviathan et al. 2023; Chen, Borgeaud et al. 2023}: a draft proposes, the model checks.

Generating n tokens greedily takes n sequential forward passes of the model. A cheaper draft
model can propose k tokens :math:`\tilde x_{t+1}, \dots, \tilde x_{t+k}`; one forward pass of
the model over the prefix and the k proposals gives its own choice at each of the k + 1
positions at once,

.. math::

    x^*_{t+i} = \arg\max_x p(x \mid x_{\le t}, \tilde x_{t+1}, \dots, \tilde x_{t+i-1}),

    i = 1, \dots, k + 1,

and the proposals are accepted as long as they agree with it: the first disagreement is
replaced by the model's choice, and if all k agree the model's (k + 1)-th choice comes free.
Every token written is the model's own greedy choice, so the output is that of greedy
decoding with the model alone; only the number of its sequential passes changes.

That is the greedy special case of the papers' method, **speculative sampling**
(:func:`speculative_sample`). The draft samples its proposals from its distribution q; the
model's pass gives its distribution p at each position, and proposal x is kept with probability
:math:`\min(1, p(x) / q(x))`; the first one refused is replaced by a draw from the normalised
residual :math:`\max(0, p - q)` (:func:`accept_or_resample`), and if all k are kept a token is
drawn from the model's (k + 1)-th distribution. Every token written is then distributed
exactly as the model's own sample. A proposal is kept with probability
:math:`\beta = \sum_x \min(p(x), q(x))`; if every position had the same :math:`\alpha = E[\beta]`
and the acceptances were independent, a pass would write on average
:math:`(1 - \alpha^{k+1}) / (1 - \alpha)` tokens (:func:`expected_tokens_per_pass`).

The model's check here is a forward pass without a cache over the whole sequence,
``model(seen)``: simple, and the same choices. A real implementation checks through the
key/value cache, one pass over the k + 1 new positions, and after a refusal truncates the
cache back to the last token kept, dropping the keys and values of the refused proposals.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from attnlib._checks import (
    check_device,
    check_floating,
    check_input,
    check_instance,
    check_int,
    check_ndim,
    check_positive,
    check_tensor,
    check_token_ids,
    shape_str,
)
from attnlib.models.decoder_lm import DecoderLM, LMCache, generate

__all__ = [
    "SpeculativeResult",
    "accept_or_resample",
    "expected_tokens_per_pass",
    "goodness_of_fit",
    "speculative_decode",
    "speculative_sample",
]


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
    betas: tuple[float, ...] = ()
    r"""The chance :math:`\beta = \sum_x \min(p(x), q(x))` of keeping each proposal checked
    (sampling only; empty for greedy decoding)."""

    @property
    def acceptance_rate(self) -> float:
        """Accepted draft tokens / proposed draft tokens.

        ``proposed`` counts every token the draft wrote, also those dropped without a check
        after an earlier refusal in the same round, so this is below the chance that a checked
        proposal is kept."""
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


def accept_or_resample(
    p: Tensor, q: Tensor, proposal: Tensor,
    generator: torch.Generator | None = None,
) -> tuple[Tensor, Tensor]:
    r"""Speculative sampling's rule, for N independent proposals at once.

    Proposal x (drawn from q) is kept if :math:`u\, q(x) < p(x)`, u uniform in [0, 1): with
    probability :math:`\min(1, p(x)/q(x))`. Otherwise the token is drawn from
    :math:`\max(0, p - q)`, normalised. The token returned is distributed as p.

    Shape:
        - p, q: (N, V) distributions (rows sum to 1); proposal: (N,) ids
        - output: tokens (N,) long, kept (N,) bool

    Raises:
        ValueError: if the shapes disagree or a proposal has q(x) = 0 (it cannot come from q).
        TypeError: if p or q is not floating.
    """
    p, q, proposal = _check_rule_args(p, q, proposal)
    x = proposal[:, None]  # (N, 1)
    p_x, q_x = p.gather(1, x)[:, 0], q.gather(1, x)[:, 0]  # (N,)
    u = torch.rand(p_x.shape, generator=generator, dtype=p.dtype)  # (N,)
    kept = u * q_x < p_x  # (N,): probability min(1, p(x) / q(x))
    residual = (p - q).clamp_min(0)  # (N, V)
    # (N, 1); 0 only where p = q, where the proposal is always kept
    mass = residual.sum(-1, keepdim=True)
    residual = torch.where(mass > 0, residual / mass.clamp_min(1e-300), p)
    redrawn = torch.multinomial(residual, 1, generator=generator)[:, 0]  # (N,)
    return torch.where(kept, proposal, redrawn), kept


def expected_tokens_per_pass(alpha: float, k: int) -> float:
    r""":math:`(1 - \alpha^{k+1}) / (1 - \alpha)` tokens per pass of the model (k + 1 at
    :math:`\alpha = 1`), for k proposals kept independently with probability :math:`\alpha`.

    Raises:
        ValueError: if ``alpha`` is outside [0, 1] or ``k`` < 1.
    """
    if isinstance(alpha, bool) or not isinstance(alpha, int | float) or not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be a probability in [0, 1], got {alpha!r}")
    check_int("k", k, minimum=1)
    if alpha == 1:
        return float(k + 1)
    return (1 - alpha ** (k + 1)) / (1 - alpha)


@torch.no_grad()
def speculative_sample(
    model: DecoderLM, draft: DecoderLM, prompt: Tensor, steps: int, k: int = 4, *,
    temperature: float = 1.0, generator: torch.Generator | None = None,
) -> SpeculativeResult:
    """Speculative sampling of one sequence: ``steps`` new tokens, ``k`` proposed at a time.

    Each round the draft samples k tokens from its distributions q (softmax of its logits over
    ``temperature``), the model reads the sequence with them once, giving p at each of the
    k + 1 positions, and :func:`accept_or_resample` keeps a prefix of the proposals and draws
    one token more. The tokens are distributed as ``model``'s own samples at ``temperature``.

    Shape:
        - prompt: (1, L0); tokens: (1, L0 + steps)

    Raises:
        ValueError: as :func:`speculative_decode`, or if ``temperature`` <= 0.
    """
    prompt = _check_speculative_args(model, draft, prompt, steps, k)
    check_positive("temperature", temperature)
    model.eval()
    draft.eval()
    tokens, target = prompt, prompt.shape[1] + steps
    proposed = accepted = passes = 0
    betas: list[float] = []
    while tokens.shape[1] < target:
        t, n = tokens.shape[1], min(k, target - tokens.shape[1])
        proposal, q = _draft_samples(draft, tokens, n, temperature, generator)  # (n,), (n, V)
        seen = torch.cat((tokens, proposal[None]), dim=1)  # (1, t + n)
        p = torch.softmax(model(seen)[0, t - 1:] / temperature, dim=-1)  # (n + 1, V)
        passes += 1
        new: list[Tensor] = []
        for i in range(n):  # keep proposals until one is refused
            token, kept = accept_or_resample(p[i:i + 1], q[i:i + 1], proposal[i:i + 1],
                                             generator)
            betas.append(float(torch.minimum(p[i], q[i]).sum()))
            new.append(token)
            if not bool(kept):
                break
        else:  # all n kept: one more token from the model's next distribution
            new.append(torch.multinomial(p[n:n + 1], 1, generator=generator)[0])
        proposed += n
        accepted += len(new) - 1 if len(new) <= n else n
        tokens = torch.cat((tokens, torch.cat(new)[None]), dim=1)[:, :target]
    return SpeculativeResult(tokens, proposed, accepted, passes, tuple(betas))


def _draft_samples(draft: DecoderLM, tokens: Tensor, n: int, temperature: float,
                   generator: torch.Generator | None) -> tuple[Tensor, Tensor]:
    """n tokens sampled from the draft (with its cache), and its distribution at each: (n,),
    (n, V)."""
    cache = LMCache()
    new, samples, dists = tokens, [], []
    for _ in range(n):
        q = torch.softmax(draft(new, cache)[0, -1] / temperature, dim=-1)  # (V,)
        new = torch.multinomial(q[None], 1, generator=generator)  # (1, 1)
        samples.append(new[0])
        dists.append(q)
    return torch.cat(samples), torch.stack(dists)


def _check_rule_args(p: object, q: object, proposal: object) -> tuple[Tensor, Tensor, Tensor]:
    """The argument checks of :func:`accept_or_resample`."""
    p = check_floating("p", p)
    check_ndim("p", p, 2, "(N, V)")
    q = check_input("q", q, p, 2, "(N, V)", other="p")
    if q.shape != p.shape:
        raise ValueError(f"q must have the shape of p, (N, V) = {shape_str(p.shape)}, got "
                         f"{shape_str(q.shape)}")
    if p.shape[1] == 0:
        raise ValueError(f"p and q must be distributions over V >= 1 tokens, got shape "
                         f"{shape_str(p.shape)}")
    proposal = check_token_ids("proposal", proposal, p.shape[1], 1, "(N,)", p.device)
    if proposal.shape[0] != p.shape[0]:
        raise ValueError(f"proposal must hold N = {p.shape[0]} token ids, got shape "
                         f"{shape_str(proposal.shape)}")
    if bool((q.gather(1, proposal[:, None].long()) <= 0).any()):
        raise ValueError("proposal must be drawn from q: a proposed token has q(x) = 0")
    return p, q, proposal.long()


def goodness_of_fit(counts: Tensor, probs: Tensor) -> tuple[float, int, float]:
    r"""Pearson's :math:`\chi^2` test of ``counts`` against the distribution ``probs``.

    :math:`\chi^2 = \sum_x (n_x - N p_x)^2 / (N p_x)` over the outcomes with :math:`p_x > 0`;
    under the hypothesis that the counts are N draws from p it follows a :math:`\chi^2`
    distribution with (outcomes - 1) degrees of freedom, once every :math:`N p_x` is about 5
    or more. The p-value is its upper tail, :math:`Q(\mathrm{dof}/2, \chi^2/2)`
    (``torch.special.gammaincc``). A count where :math:`p_x = 0` makes the p-value 0.

    Returns:
        The statistic, the degrees of freedom and the p-value.

    Raises:
        ValueError: if the shapes differ or are empty, a count is negative, ``probs`` does not
            sum to 1, or the two are on different devices.
        TypeError: if ``counts`` is not a tensor of real numbers (integer or floating, bool
            refused) or ``probs`` not a floating one.
    """
    counts, probs = check_tensor("counts", counts), check_floating("probs", probs)
    if counts.is_complex() or counts.dtype == torch.bool:
        raise TypeError(f"counts must hold integer or floating counts, got dtype {counts.dtype}")
    check_device("counts", counts, probs.device, "probs")
    if counts.shape != probs.shape or counts.ndim != 1 or counts.numel() == 0:
        raise ValueError(f"counts and probs must be 1-D of one shape, V >= 1 outcomes, got "
                         f"{shape_str(counts.shape)} and {shape_str(probs.shape)}")
    if bool((counts < 0).any()) or abs(float(probs.sum()) - 1) > 1e-6:
        raise ValueError(f"counts must be >= 0 and probs sum to 1, got the smallest count "
                         f"{float(counts.min())} and probs summing to {float(probs.sum())}")
    n, p = counts.double(), probs.double()
    possible = p > 0
    if bool((n[~possible] > 0).any()):
        return float("inf"), int(possible.sum()) - 1, 0.0
    expected = n.sum() * p[possible]
    statistic = float(((n[possible] - expected) ** 2 / expected).sum())
    dof = int(possible.sum()) - 1
    p_value = float(torch.special.gammaincc(torch.tensor(dof / 2, dtype=torch.float64),
                                            torch.tensor(statistic / 2, dtype=torch.float64)))
    return statistic, dof, p_value
