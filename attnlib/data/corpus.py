"""The corpus: sentences sampled from the grammar at a chosen difficulty, and its splits.

:func:`sample_sentence` draws a random tree; the :class:`Difficulty` settings say how deep and
how often it grows. A verb's object is one of the classes the verb takes, then a member of the
class; things are weighted so that each comes up about as often as the others, whatever the
size of its class and however many verbs take it. :func:`generate_pairs` samples distinct pairs and spreads them evenly over
the source lengths, so long sentences are as frequent as short ones. :func:`split` holds out
whole (subject, verb, object) triples of the first clause, so every test sentence is a new
combination of known words. :func:`make_corpus` does all three and builds the vocabularies.

Difficulty levels (:data:`DIFFICULTIES`):

* 0: one clause, bare nouns and pronouns, with time, place, companion, negation and tense
  (3 to about 13 Chinese tokens);
* 1: and possessives, relative clauses (not nested) and coordinated objects (up to about 25);
* 2: and two clauses joined by 因为/虽然/如果/而且, relative clauses nested twice (3 to 45);
* 3: nested three times (up to 60).
"""

from __future__ import annotations

import functools
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from attnlib._checks import check_instance, check_int, check_probability, check_real
from attnlib.data.grammar import (
    CONNECTIVES,
    MAX_REFERENCES,
    NOTE_EXAMPLE,
    Clause,
    Connective,
    NounPhrase,
    Pair,
    RelativeClause,
    Sentence,
    _realize,
    classes_of,
    realize,
    reference_count,
    source_length,
)
from attnlib.data.lexicon import PEOPLE, PLACES, PRONOUNS, THINGS, TIMES, VERBS, Tense
from attnlib.data.vocab import Vocab

__all__ = [
    "DEFAULT_N_PAIRS",
    "DIFFICULTIES",
    "Corpus",
    "Difficulty",
    "Splits",
    "generate_pairs",
    "make_corpus",
    "sample_sentence",
    "split",
]


@dataclass(frozen=True)
class Difficulty:
    """How large the sampled trees grow.

    Args:
        depth: how deep noun-phrase modifiers nest (0: none; 1: a relative clause or possessor
            whose own nouns are bare; 2: theirs may have one too; ...).
        p_modifier: the probability that a noun gets a modifier, at the top level; it halves
            with each level of nesting.
        p_two_clauses: the probability of a sentence of two clauses with a connective.
        max_src_len: the longest Chinese sentence kept.
    """

    depth: int
    p_modifier: float
    p_two_clauses: float
    max_src_len: int

    def __post_init__(self) -> None:
        check_int("depth", self.depth, minimum=0)
        for name in ("p_modifier", "p_two_clauses"):
            p = check_real(name, getattr(self, name), minimum=0.0)
            if p > 1.0:
                raise ValueError(f"{name} must be a probability in [0, 1], got {p}")
        check_int("max_src_len", self.max_src_len, minimum=1)


DIFFICULTIES: Final = MappingProxyType({
    0: Difficulty(depth=0, p_modifier=0.0, p_two_clauses=0.0, max_src_len=11),
    1: Difficulty(depth=1, p_modifier=0.5, p_two_clauses=0.0, max_src_len=20),
    2: Difficulty(depth=2, p_modifier=0.6, p_two_clauses=0.5, max_src_len=45),
    3: Difficulty(depth=3, p_modifier=0.7, p_two_clauses=0.6, max_src_len=60),
})

DEFAULT_N_PAIRS: Final = 12_000
"""The default corpus size."""

_MAX_PAIRS: Final = 100_000
_P_TIME, _P_PAST, _P_FUTURE, _P_NEGATED, _P_PLACE, _P_COMPANION, _P_DOU = (
    0.45, 0.3, 0.2, 0.25, 0.35, 0.2, 0.5)
_P_PRONOUN, _P_CONJUNCT = 0.4, 0.15
_PRONOUN_WORDS, _PEOPLE_WORDS = tuple(PRONOUNS), tuple(PEOPLE)
_VERB_WORDS, _TIME_WORDS, _PLACE_WORDS = tuple(VERBS), tuple(TIMES), tuple(PLACES)
_BY_CLASS: Final = MappingProxyType({
    cls: tuple(zh for zh in (*PEOPLE, *THINGS) if cls in classes_of(zh))
    for cls in {c for thing in THINGS.values() for c in thing.classes} | {"person"}
})
_VERBS_BY_CLASS: Final = MappingProxyType({
    cls: tuple(v for v, verb in VERBS.items() if cls in verb.objects) for cls in _BY_CLASS
})


def _thing_weights() -> MappingProxyType[str, tuple[float, ...]]:
    """For each class of things, the weight of each member when :func:`_noun` draws one.

    A verb draws one of the classes it takes, then a member of that class. Drawn uniformly, a
    thing in a small class, or in many classes, would come up several times as often as a thing
    in a large one (机器学习, one of 15 subjects of study, at 0.62 of the mean). So each thing
    is weighted by the inverse of how often the uniform draw reaches it, summed over every verb
    and every class of the verb that holds it: the rarest thing then comes up at 0.57 of the
    mean instead of 0.29, the most frequent at 1.9 times it instead of 2.6.
    """
    reach = dict.fromkeys(THINGS, 0.0)
    for verb in VERBS.values():
        for cls in verb.objects:
            if cls != "person":
                for thing in _BY_CLASS[cls]:
                    reach[thing] += 1 / len(verb.objects) / len(_BY_CLASS[cls])
    return MappingProxyType({cls: tuple(1 / reach[thing] for thing in members)
                             for cls, members in _BY_CLASS.items() if cls != "person"})


_THING_WEIGHTS: Final = _thing_weights()


def _noun(rng: random.Random, role: str, classes: Sequence[str], level: int,
          d: Difficulty) -> NounPhrase:
    """A random noun phrase of one of ``classes`` at nesting ``level``."""
    cls = classes[0] if len(classes) == 1 else rng.choice(classes)
    if cls == "person" and role != "rc-head" and rng.random() < _P_PRONOUN:
        return NounPhrase(rng.choice(_PRONOUN_WORDS))
    if cls == "person":
        head = rng.choice(_BY_CLASS[cls])
    else:  # things evened out by their weights (see _thing_weights)
        head = rng.choices(_BY_CLASS[cls], weights=_THING_WEIGHTS[cls])[0]
    if level >= d.depth or rng.random() >= d.p_modifier / 1.3**level:
        return NounPhrase(head)
    if head in PEOPLE and rng.random() < 0.3:  # a possessor: 我 的 朋友, 老师 的 朋友 的 书
        return NounPhrase(head, possessor=_owner(rng, level + 1, d))
    if head not in PEOPLE and rng.random() < 0.25:
        return NounPhrase(head, possessor=_owner(rng, level + 1, d))
    return NounPhrase(head, relative=_relative(rng, head, level + 1, d))


def _owner(rng: random.Random, level: int, d: Difficulty) -> NounPhrase:
    if rng.random() < 0.5:
        return NounPhrase(rng.choice(_PRONOUN_WORDS))
    head = rng.choice(_PEOPLE_WORDS)
    if level < d.depth and rng.random() < 0.3:
        return NounPhrase(head, possessor=_owner(rng, level + 1, d))
    return NounPhrase(head)


def _relative(rng: random.Random, head: str, level: int, d: Difficulty) -> RelativeClause:
    negated = rng.random() < 0.15
    if head in PEOPLE and rng.random() < 0.5:  # the head is the subject: [V O 的] N
        verb = rng.choice(_VERB_WORDS)
        obj = _noun(rng, "object", VERBS[verb].objects, level, d)
        return RelativeClause(verb, object=obj, negated=negated)
    verbs = sorted({v for cls in classes_of(head) for v in _VERBS_BY_CLASS[cls]})
    verb = rng.choice(verbs)  # the head is the object: [S V 的] N
    return RelativeClause(verb, subject=_noun(rng, "subject", ("person",), level, d),
                          negated=negated)


def _clause(rng: random.Random, d: Difficulty, k: float, tense: Tense | None = None,
            dou_allowed: bool = True) -> Clause:
    subject = _noun(rng, "subject", ("person",), 0, d)
    verb = rng.choice(_VERB_WORDS)
    obj = _noun(rng, "object", VERBS[verb].objects, 0, d)
    if d.depth > 0 and obj.relative is None and rng.random() < _P_CONJUNCT:
        other = _noun(rng, "object", VERBS[verb].objects, d.depth, d)
        if other.head != obj.head and not other.is_pronoun and not obj.is_pronoun:
            obj = NounPhrase(obj.head, obj.possessor, conjunct=other)
    time = rng.choice(_TIME_WORDS) if rng.random() < _P_TIME * 2 * k else None
    chosen: Tense
    if tense is None:
        r = rng.random()
        chosen = "past" if r < _P_PAST else "future" if r < _P_PAST + _P_FUTURE else "present"
        if time is not None and chosen not in TIMES[time].tenses:
            chosen = rng.choice(TIMES[time].tenses)
    else:
        chosen = tense
        if time is not None and tense not in TIMES[time].tenses:
            time = None
    place = rng.choice(_PLACE_WORDS) if rng.random() < _P_PLACE * 2 * k else None
    companion = _noun(rng, "companion", ("person",), d.depth, d) \
        if rng.random() < _P_COMPANION * 2 * k else None
    negated = rng.random() < _P_NEGATED
    plural = subject.is_pronoun and PRONOUNS[subject.head].plural
    dou = dou_allowed and plural and not negated and rng.random() < _P_DOU
    return Clause(subject, verb, obj, place, time, companion, negated, chosen, dou)


def sample_sentence(rng: random.Random, difficulty: int | Difficulty = 2) -> Sentence:
    """A random grammatical sentence tree at ``difficulty`` (a level of :data:`DIFFICULTIES`)."""
    check_instance("rng", rng, random.Random, "a random.Random")
    d = _difficulty(difficulty)
    # One size knob per sentence spreads the lengths: small trees and large ones are both common.
    k = rng.random() ** 0.7
    d = Difficulty(d.depth, min(0.95, d.p_modifier * 2 * k), min(1.0, d.p_two_clauses * 2 * k),
                   d.max_src_len)
    if rng.random() >= d.p_two_clauses:
        return Sentence(_clause(rng, d, k))
    connective: Connective = rng.choice(CONNECTIVES)
    if connective == "if":
        return Sentence(_clause(rng, d, k, "present"), "if", _clause(rng, d, k, "future", False))
    return Sentence(_clause(rng, d, k), connective, _clause(rng, d, k))


def _difficulty(difficulty: int | Difficulty) -> Difficulty:
    if isinstance(difficulty, Difficulty):
        return difficulty
    if isinstance(difficulty, bool) or difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty must be a Difficulty or one of "
                         f"{', '.join(map(str, DIFFICULTIES))}, got {difficulty!r}")
    return DIFFICULTIES[difficulty]


def generate_pairs(
    n_pairs: int = DEFAULT_N_PAIRS,
    seed: int = 0,
    difficulty: int | Difficulty = 2,
    max_src_len: int | None = None,
) -> list[Pair]:
    """Sample ``n_pairs`` pairs with distinct Chinese sentences, spread evenly over lengths.

    The first pair is always the note's example (:data:`NOTE_EXAMPLE`), 我 爱 机器学习 → "i love
    machine learning"; the rest are sampled with ``random.Random(seed)``, so the same arguments
    give the same corpus, and no global random state is read or changed. Each source length from
    3 to ``max_src_len`` (default: the difficulty's) gets about the same number of pairs, as far
    as the grammar can fill it; each pair's target is one of its references, drawn at random.
    Trees with more than :data:`MAX_REFERENCES` references are left out.

    Raises:
        ValueError: if ``n_pairs`` is not an integer in [1, 100000], ``difficulty`` is unknown,
            or ``max_src_len`` < 3.
    """
    if isinstance(n_pairs, bool) or not isinstance(n_pairs, int) or \
            not 1 <= n_pairs <= _MAX_PAIRS:
        raise ValueError(f"n_pairs must be an integer >= 1 and <= {_MAX_PAIRS}, got {n_pairs!r}")
    check_int("seed", seed, minimum=0)
    d = _difficulty(difficulty)
    longest = d.max_src_len if max_src_len is None else max_src_len
    if isinstance(longest, bool) or not isinstance(longest, int) or longest < 3:
        raise ValueError(f"max_src_len must be an integer >= 3, got {max_src_len!r}")
    check_int("max_src_len", longest, minimum=3)  # and within int64
    return list(_generate(n_pairs, seed, d, longest))


@functools.lru_cache(maxsize=8)
def _generate(n_pairs: int, seed: int, d: Difficulty, longest: int) -> tuple[Pair, ...]:
    rng = random.Random(seed)
    pairs = [realize(NOTE_EXAMPLE)]
    seen = {pairs[0].src}
    counts: Counter[int] = Counter({3: 1})
    quota = -(-n_pairs // (longest - 2))  # an even share of each length 3..longest
    attempts = 0
    while len(pairs) < n_pairs:
        attempts += 1
        if attempts % n_pairs == 0:  # the longest lengths are rare: let the others take more
            quota += -(-quota // 10)
        tree = sample_sentence(rng, d)
        n = source_length(tree)
        if n > longest or counts[n] >= quota or reference_count(tree) > MAX_REFERENCES:
            continue
        pair = _realize(tree, rng)  # sampled trees are grammatical by construction
        if pair.src in seen:
            continue
        seen.add(pair.src)
        counts[n] += 1
        pairs.append(pair)
    return tuple(pairs)


# ---------------------------------------------------------------------------------------------
# Splits
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Splits:
    """Training, validation and test pairs, and the (subject, verb, object) triples held out."""

    train: tuple[Pair, ...]
    valid: tuple[Pair, ...]
    test: tuple[Pair, ...]
    valid_triples: frozenset[tuple[str, str, str]]
    test_triples: frozenset[tuple[str, str, str]]


def split(
    pairs: Sequence[Pair],
    seed: int = 0,
    valid_frac: float = 0.1,
    test_frac: float = 0.1,
) -> Splits:
    """Split ``pairs`` so that validation and test hold combinations never seen in training.

    The unit of splitting is the (subject, verb, object) triple of the first clause
    (``Pair.triple``). Triples are visited in an order shuffled by ``random.Random(seed)``,
    the note's triple (我, 爱, 机器学习) first; each goes to test until test holds ``test_frac`` of
    the pairs, then to validation until it holds ``valid_frac``, and the rest to training. The
    note's triple goes to test even when ``test_frac`` is 0.

    A triple is held out only if every token of its sentences, Chinese and English (all
    references), also occurs in a sentence that stays in training. So every held-out sentence
    is a new combination of known words. Within a split, pairs keep their order in ``pairs``.

    Raises:
        ValueError: if a fraction is outside [0, 1) or they sum to 1 or more, or ``pairs`` is empty.
    """
    for name, frac in (("valid_frac", valid_frac), ("test_frac", test_frac)):
        check_probability(name, frac)
    check_int("seed", seed, minimum=0)
    if isinstance(pairs, str) or not isinstance(pairs, Sequence):
        raise TypeError(f"pairs must be a sequence of Pair, got {type(pairs).__name__}")
    if valid_frac + test_frac >= 1.0:
        raise ValueError(f"valid_frac + test_frac must be < 1, got {valid_frac} + {test_frac}")
    if len(pairs) == 0:
        raise ValueError("pairs is empty: split needs at least one pair")

    by_triple: dict[tuple[str, str, str], list[Pair]] = {}
    for pair in pairs:
        by_triple.setdefault(pair.triple, []).append(pair)
    order = sorted(by_triple)
    random.Random(seed).shuffle(order)
    note = NOTE_EXAMPLE.triple
    if note in by_triple:
        order.remove(note)
        order.insert(0, note)

    # For each token, how many pairs still in training have it; it must keep at least one.
    tokens = {
        triple: Counter(t for p in group
                        for t in {*p.src, *(w for ref in (p.tgt, *p.references) for w in ref)})
        for triple, group in by_triple.items()
    }
    in_train: Counter[str] = Counter()
    for counter in tokens.values():
        in_train.update(counter)
    targets = {"test": round(test_frac * len(pairs)), "valid": round(valid_frac * len(pairs))}
    counts = {"test": 0, "valid": 0}
    held: dict[str, set[tuple[str, str, str]]] = {"test": set(), "valid": set()}
    for triple in order:
        if all(counts[part] >= targets[part] for part in counts) and triple != note:
            break
        if any(in_train[t] <= n for t, n in tokens[triple].items()):
            continue
        for part in ("test", "valid"):
            if counts[part] < targets[part] or (part == "test" and triple == note):
                held[part].add(triple)
                counts[part] += len(by_triple[triple])
                in_train.subtract(tokens[triple])
                break

    held_out = held["test"] | held["valid"]
    return Splits(
        train=tuple(p for p in pairs if p.triple not in held_out),
        valid=tuple(p for p in pairs if p.triple in held["valid"]),
        test=tuple(p for p in pairs if p.triple in held["test"]),
        valid_triples=frozenset(held["valid"]),
        test_triples=frozenset(held["test"]),
    )


@dataclass(frozen=True)
class Corpus:
    """A split corpus and the vocabularies built from its training pairs."""

    splits: Splits
    src_vocab: Vocab
    tgt_vocab: Vocab

    @property
    def train(self) -> tuple[Pair, ...]:
        return self.splits.train

    @property
    def valid(self) -> tuple[Pair, ...]:
        return self.splits.valid

    @property
    def test(self) -> tuple[Pair, ...]:
        return self.splits.test


def make_corpus(
    seed: int = 0,
    n_pairs: int = DEFAULT_N_PAIRS,
    valid_frac: float = 0.1,
    test_frac: float = 0.1,
    difficulty: int | Difficulty = 2,
    max_src_len: int | None = None,
) -> Corpus:
    """Generate ``n_pairs`` pairs, split them, and build both vocabularies from training alone.

    The English vocabulary holds every word of every reference of the training pairs.

    See :func:`generate_pairs` for ``difficulty`` and ``max_src_len``, :func:`split` for the
    fractions.
    """
    splits = split(generate_pairs(n_pairs, seed, difficulty, max_src_len), seed, valid_frac,
                   test_frac)
    return Corpus(
        splits=splits,
        src_vocab=Vocab.build(p.src for p in splits.train),
        tgt_vocab=Vocab.build(ref for p in splits.train for ref in p.references),
    )
