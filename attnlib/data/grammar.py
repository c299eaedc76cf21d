"""The grammar: sentence trees, and their realisation as Chinese, English and an alignment.

A sentence is a tree of the dataclasses below. :func:`realize` writes it out in Chinese and
in every correct English word order, and links each English word to the Chinese words it
translates. The rules, one per phenomenon:

* **Clause.** Chinese puts time, companion and place before the verb; English puts them after
  the object, and the time word either first or last (both are references):

  .. code-block:: text

      Chinese:  [time] subject [都] [就] [不|没] [会] [和 companion 一起] [在 place] verb [了] object
      English:  [time] subject [will] [all] [do|does|did] [not] verb object [with companion]
                [in|at place] [time]

* **Tense** is marked in Chinese by 了 (past), 没 (negated past), 会 (future) and agrees with
  the time word; English inflects the verb ("loves", "loved", "will love", "did not love").
* **Relative clauses** come *before* the noun in Chinese, with 的, and *after* it in English:
  [喜欢 音乐 的] 学生 → "the student [who likes music]" (the gap is the subject), [我 认识 的]
  老师 → "the teacher [that i know]" (the gap is the object). They nest: the noun inside a
  relative clause can carry its own, so the words of one English phrase end up far apart in
  Chinese (centre embedding).
* **Possessives**: 我 的 书 → "my book", 老师 的 书 → "the teacher 's book", and nested,
  我 的 朋友 的 书 → "my friend 's book".
* **Coordination and subordination**: A 和 B → "A and B"; 因为 C1 ， 所以 C2 → "because C1 ,
  C2" or "C2 because C1"; 虽然 C1 ， 但是 C2 → "although C1 , C2" or "C1 , but C2"; 如果 C1 ，
  C2 (with 就 after C2's subject) → "if C1 , C2" or "C2 if C1"; C1 ， 而且 C2 → "C1 , and C2".

English has a choice where it really has one: the time word's place, the clause order of a
subordinate clause, and the synonyms of ``attnlib.data.lexicon``. :func:`realize` returns
one of them as the target and all of them as references. Relative clauses are in the present
tense and say "who" after a person whose gap is the subject, "that" otherwise.

Every English word is linked to the Chinese words it comes from: auxiliaries to their markers
("will" to 会, "did" and "not" to 没), the past form also to 了, "who"/"that" and "'s" to 的,
"my" to 我 and 的, a connective to both Chinese connective words.
"""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Final, Literal, get_args

from attnlib._checks import check_instance
from attnlib.data.lexicon import (
    PEOPLE,
    PLACES,
    PRONOUNS,
    THINGS,
    TIMES,
    VERBS,
    Tense,
)

__all__ = [
    "CONNECTIVES",
    "FUNCTION_WORDS",
    "MAX_REFERENCES",
    "NOTE_EXAMPLE",
    "Clause",
    "Connective",
    "NounPhrase",
    "Pair",
    "RelativeClause",
    "Sentence",
    "classes_of",
    "realize",
    "reference_count",
    "references",
    "source_length",
]

Connective = Literal["because", "although", "if", "and"]
CONNECTIVES: Final[tuple[Connective, ...]] = get_args(Connective)

FUNCTION_WORDS: Final[frozenset[str]] = frozenset(
    {"的", "和", "一起", "在", "了", "不", "没", "会", "都", "就", "因为", "所以", "虽然", "但是",
     "如果", "而且", "，"})
"""The grammar's own Chinese words: markers, connectives and the comma."""

MAX_REFERENCES: Final = 32
"""The most English references a sampled sentence has (:func:`attnlib.data.generate_pairs`
leaves out larger trees, so that BLEU against every reference stays cheap)."""

@dataclass(frozen=True)
class NounPhrase:
    """A noun phrase: a pronoun, a person or a thing, with at most one modifier.

    ``possessor`` (a pronoun or a person, itself possibly possessed) or ``relative`` (a
    relative clause); ``conjunct``: a second noun phrase joined with 和 "and".
    """

    head: str
    possessor: NounPhrase | None = None
    relative: RelativeClause | None = None
    conjunct: NounPhrase | None = None

    @property
    def is_pronoun(self) -> bool:
        return self.head in PRONOUNS

    @property
    def third_singular(self) -> bool:
        return PRONOUNS[self.head].third_singular if self.is_pronoun else True


@dataclass(frozen=True)
class RelativeClause:
    """A relative clause in the present tense: exactly one of ``subject`` and ``object`` is set.

    With ``object`` the gap is the subject ([喜欢 音乐 的] 学生, "the student who likes
    music"); with ``subject`` the gap is the object ([我 认识 的] 老师, "the teacher that i
    know").
    """

    verb: str
    subject: NounPhrase | None = None
    object: NounPhrase | None = None
    negated: bool = False


@dataclass(frozen=True)
class Clause:
    """One clause: who does what to what, where, when, with whom; tense and negation."""

    subject: NounPhrase
    verb: str
    object: NounPhrase
    place: str | None = None
    time: str | None = None
    companion: NounPhrase | None = None
    negated: bool = False
    tense: Tense = "present"
    dou: bool = False

    @property
    def triple(self) -> tuple[str, str, str]:
        """The subject's head, the verb and the object's head (the unit the splits hold out)."""
        return (self.subject.head, self.verb, self.object.head)


@dataclass(frozen=True)
class Sentence:
    """A sentence: one clause, or two joined by a connective (因为/虽然/如果/而且)."""

    first: Clause
    connective: Connective | None = None
    second: Clause | None = None

    @property
    def triple(self) -> tuple[str, str, str]:
        """The triple of the first clause (the unit :func:`attnlib.data.split` holds out)."""
        return self.first.triple


@dataclass(frozen=True)
class Pair:
    """A Chinese sentence, its English translation, every correct translation, the derivation.

    ``tgt`` is one of ``references`` (the training target). ``alignment`` holds the sorted
    (source index, target index) links of ``tgt``: which Chinese token each English token
    translates; every token on both sides has at least one link.
    """

    src: tuple[str, ...]
    tgt: tuple[str, ...]
    tree: Sentence
    alignment: tuple[tuple[int, int], ...]

    @functools.cached_property
    def references(self) -> tuple[tuple[str, ...], ...]:
        """Every correct English translation, the default order first (computed when asked)."""
        return references(self.tree)

    @property
    def triple(self) -> tuple[str, str, str]:
        return self.tree.triple

    @property
    def src_text(self) -> str:
        """The Chinese sentence, tokens joined by spaces."""
        return " ".join(self.src)

    @property
    def tgt_text(self) -> str:
        """The English sentence, tokens joined by spaces."""
        return " ".join(self.tgt)


NOTE_EXAMPLE: Final[Sentence] = Sentence(Clause(NounPhrase("我"), "爱", NounPhrase("机器学习")))
"""The source note's example, 我 爱 机器学习 → "i love machine learning"."""

# ---------------------------------------------------------------------------------------------
# Checking a tree
# ---------------------------------------------------------------------------------------------


def classes_of(head: str) -> tuple[str, ...]:
    """The object classes of a noun: ("person",) for pronouns and people, else its classes."""
    if head in PRONOUNS or head in PEOPLE:
        return ("person",)
    if head in THINGS:
        return THINGS[head].classes
    raise ValueError(f"head must be a pronoun, a person or a thing of the lexicon, got {head!r}")


def _check_np(np: NounPhrase, where: str, role: str) -> None:
    if np.head not in PRONOUNS and np.head not in PEOPLE and np.head not in THINGS:
        raise ValueError(f"{where}.head must be a pronoun, a person or a thing of the lexicon, "
                         f"got {np.head!r}")
    if role in ("subject", "companion", "possessor") and classes_of(np.head) != ("person",):
        raise ValueError(f"{where}.head must be a person or a pronoun (a {role}), got "
                         f"{np.head!r}")
    if np.is_pronoun and (np.possessor is not None or np.relative is not None):
        raise ValueError(f"{where}: a pronoun ({np.head!r}) takes no possessor or relative clause")
    if np.possessor is not None and np.relative is not None:
        raise ValueError(f"{where}: a noun phrase takes a possessor or a relative clause, not both")
    if np.conjunct is not None and role != "object":
        raise ValueError(f"{where}.conjunct: only a clause's object may be coordinated (和), "
                         f"got one in a {role}")
    if np.possessor is not None:
        if np.possessor.relative is not None or np.possessor.conjunct is not None:
            raise ValueError(f"{where}.possessor must be a pronoun or a person with at most a "
                             f"possessor of its own")
        _check_np(np.possessor, f"{where}.possessor", "possessor")
    if np.relative is not None:
        _check_relative(np.relative, np.head, f"{where}.relative")
    if np.conjunct is not None:
        for part, name in ((np, where), (np.conjunct, f"{where}.conjunct")):
            if part.relative is not None or (part is not np and part.conjunct is not None):
                raise ValueError(f"{name}: a coordinated noun phrase takes no relative clause "
                                 f"and no further conjunct")
        _check_np(np.conjunct, f"{where}.conjunct", "conjunct")


def _check_object(verb: str, obj: NounPhrase, where: str) -> None:
    takes = VERBS[verb].objects
    for part in (obj, obj.conjunct):
        if part is not None and not set(classes_of(part.head)) & set(takes):
            raise ValueError(f"{where} must be an object of verb {verb!r} (a {', '.join(takes)}), "
                             f"got {part.head!r}")


def _check_relative(rc: RelativeClause, head: str, where: str) -> None:
    if rc.verb not in VERBS:
        raise ValueError(f"{where}.verb must be a verb of the lexicon, got {rc.verb!r}")
    if (rc.subject is None) == (rc.object is None):
        raise ValueError(f"{where}: exactly one of subject and object must be set (the other is "
                         f"the gap), got {'both' if rc.subject is not None else 'neither'}")
    if rc.object is not None:  # the head is the subject
        if classes_of(head) != ("person",):
            raise ValueError(f"{where}: the head {head!r} fills the subject gap and must be a "
                             f"person")
        _check_np(rc.object, f"{where}.object", "object")
        if rc.object.conjunct is not None:
            raise ValueError(f"{where}.object.conjunct: no coordination inside a relative clause")
        _check_object(rc.verb, rc.object, f"{where}.object")
    else:
        assert rc.subject is not None
        _check_np(rc.subject, f"{where}.subject", "subject")
        _check_object(rc.verb, NounPhrase(head), f"the head {head!r} (the object gap) of {where}")


def _check_clause(c: Clause, where: str) -> None:
    _check_np(c.subject, f"{where}.subject", "subject")
    if c.verb not in VERBS:
        raise ValueError(f"{where}.verb must be a verb of the lexicon, got {c.verb!r}")
    _check_np(c.object, f"{where}.object", "object")
    _check_object(c.verb, c.object, f"{where}.object")
    if c.companion is not None:
        _check_np(c.companion, f"{where}.companion", "companion")
    if c.place is not None and c.place not in PLACES:
        raise ValueError(f"{where}.place must be None or one of {', '.join(PLACES)}, "
                         f"got {c.place!r}")
    if c.time is not None and c.time not in TIMES:
        raise ValueError(f"{where}.time must be None or one of {', '.join(TIMES)}, "
                         f"got {c.time!r}")
    if c.tense not in ("present", "past", "future"):
        raise ValueError(f"{where}.tense must be present, past or future, got {c.tense!r}")
    if c.time is not None and c.tense not in TIMES[c.time].tenses:
        raise ValueError(f"{where}.tense: tense {c.tense!r} is not allowed with time word "
                         f"{c.time!r}; allowed: {', '.join(TIMES[c.time].tenses)}")
    plural = c.subject.is_pronoun and PRONOUNS[c.subject.head].plural
    if c.dou and (c.negated or not plural):
        raise ValueError(f"{where}.dou: 都 needs a plural pronoun subject and an affirmative "
                         f"clause, got subject {c.subject.head!r} and negated={c.negated}")


def _check_sentence(s: Sentence) -> None:
    _check_clause(s.first, "sentence.first")
    if (s.connective is None) != (s.second is None):
        raise ValueError("sentence.connective and sentence.second must both be set or both be "
                         f"None, got connective={s.connective!r} and second="
                         f"{'a clause' if s.second is not None else None}")
    if s.second is None:
        return
    if s.connective not in CONNECTIVES:
        raise ValueError(f"sentence.connective must be one of {', '.join(CONNECTIVES)}, "
                         f"got {s.connective!r}")
    _check_clause(s.second, "sentence.second")
    if s.connective == "if":
        if s.first.tense != "present" or s.second.tense != "future" or s.second.dou:
            raise ValueError("sentence: with 如果 (if) the first clause must be present and the "
                             f"second future without 都, got {s.first.tense} and "
                             f"{s.second.tense}, dou={s.second.dou}")


# ---------------------------------------------------------------------------------------------
# Realisation
# ---------------------------------------------------------------------------------------------


class _Zh:
    """One Chinese token; English tokens link to these objects, positions come at the end."""

    __slots__ = ("word",)

    def __init__(self, word: str) -> None:
        self.word = word


_En = tuple[str, tuple[_Zh, ...]]  # an English token and the Chinese tokens it translates
_Variants = list[list[_En]]  # the alternative English word sequences of one constituent


class _Choose:
    """What to keep where English has a choice: every alternative, the first, or a random one."""

    def __init__(self, rng: random.Random | None = None, every: bool = False) -> None:
        self.rng, self.every = rng, every

    def __call__(self, alternatives: _Variants) -> _Variants:
        if self.every or len(alternatives) == 1:
            return alternatives
        if self.rng is None:
            return alternatives[:1]
        return [alternatives[self.rng.randrange(len(alternatives))]]


def _cat(*parts: _Variants) -> _Variants:
    """Every concatenation of one variant of each part, in order."""
    return [[token for variant in combo for token in variant] for combo in itertools.product(*parts)]


def _words(words: Sequence[str], *links: _Zh) -> _Variants:
    return [[(w, links) for w in words]]


def _np(np: NounPhrase, role: str, choose: _Choose) -> tuple[list[_Zh], _Variants]:
    """Chinese tokens and English variants of a noun phrase (``role`` picks the pronoun case)."""
    if np.conjunct is not None:
        first_zh, first_en = _np(NounPhrase(np.head, np.possessor), role, choose)
        second_zh, second_en = _np(np.conjunct, role, choose)
        he = _Zh("和")
        return [*first_zh, he, *second_zh], _cat(first_en, _words(["and"], he), second_en)
    head = _Zh(np.head)
    if np.is_pronoun:
        pronoun = PRONOUNS[np.head]
        word = pronoun.subject if role == "subject" else pronoun.object
        return [head], _words([word], head)
    if np.head in PEOPLE:
        noun: _Variants = _words(PEOPLE[np.head], head)
        count = True
    else:
        thing = THINGS[np.head]
        noun = choose([[(w, (head,)) for w in en] for en in thing.en])
        count = thing.count
    if np.possessor is not None:
        de = _Zh("的")
        owner = np.possessor
        if owner.is_pronoun:
            owner_zh = [_Zh(owner.head)]
            determiner = _words([PRONOUNS[owner.head].possessive], owner_zh[0], de)
        else:
            owner_zh, owner_en = _np(owner, "possessor", choose)
            determiner = _cat(owner_en, _words(["'s"], de))
        return [*owner_zh, de, head], _cat(determiner, noun)
    if np.relative is not None:
        rc_zh, rc_en = _relative(np.relative, np.head, choose)
        the = _words(["the"], head)
        return [*rc_zh, head], _cat(the, noun, rc_en)
    return [head], _cat(_words(["the"], head), noun) if count else noun


def _verb_phrase(verb: str, tense: Tense, negated: bool, third: bool, dou: _Zh | None,
                 marks: dict[str, _Zh], choose: _Choose) -> _Variants:
    """English auxiliaries and verb: "will all not", "does not", "loved", ... with their links."""
    variants: _Variants = []
    for forms in VERBS[verb].forms:
        v = marks["verb"]
        out: list[_En] = []
        first: tuple[_Zh, ...]
        all_: list[_En] = [("all", (dou,))] if dou is not None else []
        if tense == "future":
            out += [("will", (marks["hui"],)), *all_]
            if negated:
                out.append(("not", (marks["neg"],)))
            words, first = forms.base, (v,)
        elif negated:
            aux = "did" if tense == "past" else "does" if third else "do"
            out += [(aux, (marks["neg"],)), ("not", (marks["neg"],))]
            words, first = forms.base, (v,)
        elif tense == "past":
            out += all_
            words, first = forms.past, (v, marks["le"])
        else:
            out += all_
            words, first = (forms.third if third else forms.base), (v,)
        out += [(w, first if i == 0 else (v,)) for i, w in enumerate(words)]
        variants.append(out)
    return choose(variants)


def _relative(rc: RelativeClause, head: str, choose: _Choose) -> tuple[list[_Zh], _Variants]:
    """Chinese ``[... 的]`` before the head, English "who/that ..." after it."""
    de = _Zh("的")
    neg = _Zh("不") if rc.negated else None
    verb = _Zh(rc.verb)
    marks = {"verb": verb, **({"neg": neg} if neg is not None else {})}
    if rc.object is not None:  # subject gap: [不] V O 的 N -> N who [does not] V O
        obj_zh, obj_en = _np(rc.object, "object", choose)
        zh = [*([neg] if neg else []), verb, *obj_zh, de]
        vp = _verb_phrase(rc.verb, "present", rc.negated, True, None, marks, choose)
        return zh, _cat(_words(["who"], de), vp, obj_en)
    assert rc.subject is not None  # object gap: S [不] V 的 N -> N that S [do not] V
    subj_zh, subj_en = _np(rc.subject, "subject", choose)
    zh = [*subj_zh, *([neg] if neg else []), verb, de]
    vp = _verb_phrase(rc.verb, "present", rc.negated, rc.subject.third_singular, None, marks,
                      choose)
    return zh, _cat(_words(["that"], de), subj_en, vp)


def _clause(c: Clause, choose: _Choose, jiu: _Zh | None = None) -> tuple[list[_Zh], _Variants]:
    """Chinese tokens and English variants of a clause (``jiu``: the 就 of a 如果 sentence)."""
    time = _Zh(c.time) if c.time is not None else None
    subj_zh, subj_en = _np(c.subject, "subject", choose)
    dou = _Zh("都") if c.dou else None
    marks: dict[str, _Zh] = {}
    if c.negated:
        marks["neg"] = _Zh("没" if c.tense == "past" else "不")
    if c.tense == "future":
        marks["hui"] = _Zh("会")
    if c.tense == "past" and not c.negated:
        marks["le"] = _Zh("了")
    verb = marks["verb"] = _Zh(c.verb)
    obj_zh, obj_en = _np(c.object, "object", choose)
    zh = [*([time] if time else []), *subj_zh, *([dou] if dou else []), *([jiu] if jiu else []),
          *([marks["neg"]] if "neg" in marks else []), *([marks["hui"]] if "hui" in marks else [])]
    tail: _Variants = [[]]
    if c.companion is not None:
        he, yiqi = _Zh("和"), _Zh("一起")
        comp_zh, comp_en = _np(c.companion, "companion", choose)
        zh += [he, *comp_zh, yiqi]
        tail = _cat(tail, _words(["with"], he, yiqi), comp_en)
    if c.place is not None:
        zai, place = _Zh("在"), _Zh(c.place)
        zh += [zai, place]
        tail = _cat(tail, choose([[(en[0], (zai,)), *[(w, (place,)) for w in en[1:]]]
                                  for en in PLACES[c.place].en]))
    zh += [verb, *([marks["le"]] if "le" in marks else []), *obj_zh]
    vp = _verb_phrase(c.verb, c.tense, c.negated, c.subject.third_singular, dou, marks, choose)
    body = _cat(subj_en, vp, obj_en, tail)
    if time is None:
        return zh, body
    when = _words(TIMES[c.time].en, time) if c.time is not None else [[]]
    return zh, choose(_cat(body, when) + _cat(when, body))


def _sentence(s: Sentence, choose: _Choose) -> tuple[list[_Zh], _Variants]:
    if s.second is None or s.connective is None:
        return _clause(s.first, choose)
    comma = _Zh("，")
    if s.connective == "and":
        first_zh, first_en = _clause(s.first, choose)
        erqie = _Zh("而且")
        second_zh, second_en = _clause(s.second, choose)
        return ([*first_zh, comma, erqie, *second_zh],
                _cat(first_en, _words([","], comma), _words(["and"], erqie), second_en))
    if s.connective == "if":
        ruguo, jiu = _Zh("如果"), _Zh("就")
        first_zh, first_en = _clause(s.first, choose)
        second_zh, second_en = _clause(s.second, choose, jiu=jiu)
        zh = [ruguo, *first_zh, comma, *second_zh]
        return zh, choose(
            _cat(_words(["if"], ruguo, jiu), first_en, _words([","], comma), second_en)
            + _cat(second_en, _words(["if"], ruguo, jiu, comma), first_en))
    first_word, second_word = ("因为", "所以") if s.connective == "because" else ("虽然", "但是")
    a, b = _Zh(first_word), _Zh(second_word)
    first_zh, first_en = _clause(s.first, choose)
    second_zh, second_en = _clause(s.second, choose)
    zh = [a, *first_zh, comma, b, *second_zh]
    if s.connective == "because":
        return zh, choose(
            _cat(_words(["because"], a, b), first_en, _words([","], comma), second_en)
            + _cat(second_en, _words(["because"], a, b, comma), first_en))
    return zh, choose(
        _cat(_words(["although"], a, b), first_en, _words([","], comma), second_en)
        + _cat(first_en, _words([","], comma), _words(["but"], b, a), second_en))


def realize(sentence: Sentence, rng: random.Random | None = None) -> Pair:
    """Realise ``sentence`` in Chinese and English, with the word alignment.

    Where English has a choice (the time word first or last, the order of a subordinate
    clause, a synonym), the target takes the default (time word last, main clause first, first
    synonym), or, with ``rng``, a random alternative at each choice. ``Pair.references``
    holds every alternative.

    Raises:
        ValueError: if the tree is not grammatical (a word not in the lexicon or in the wrong
            class, an object its verb does not take, a tense its time word does not allow, 都
            with a singular subject, a modifier where none may stand).
    """
    check_instance("sentence", sentence, Sentence, "a Sentence")
    _check_sentence(sentence)
    return _realize(sentence, rng)


def _realize(sentence: Sentence, rng: random.Random | None) -> Pair:
    zh, (variant,) = _sentence(sentence, _Choose(rng))
    position = {id(token): i for i, token in enumerate(zh)}
    alignment = sorted({(position[id(z)], j) for j, (_, links) in enumerate(variant)
                        for z in links})
    return Pair(src=tuple(t.word for t in zh), tgt=tuple(w for w, _ in variant), tree=sentence,
                alignment=tuple(alignment))


def references(sentence: Sentence) -> tuple[tuple[str, ...], ...]:
    """Every correct English translation of ``sentence``, the default one first."""
    check_instance("sentence", sentence, Sentence, "a Sentence")
    _, variants = _sentence(sentence, _Choose(every=True))
    return tuple(dict.fromkeys(tuple(w for w, _ in v) for v in variants))


def reference_count(sentence: Sentence) -> int:
    """How many English references ``sentence`` has, counted on the tree (no realisation)."""
    check_instance("sentence", sentence, Sentence, "a Sentence")
    def np_count(np: NounPhrase) -> int:
        n = len(THINGS[np.head].en) if np.head in THINGS else 1
        for inner in (np.possessor, np.conjunct):
            n *= np_count(inner) if inner is not None else 1
        if np.relative is not None:
            rc = np.relative
            inner_np = rc.object if rc.object is not None else rc.subject
            assert inner_np is not None
            n *= np_count(inner_np) * len(VERBS[rc.verb].forms)
        return n

    def clause_count(c: Clause) -> int:
        n = np_count(c.subject) * np_count(c.object) * len(VERBS[c.verb].forms)
        n *= np_count(c.companion) if c.companion is not None else 1
        n *= len(PLACES[c.place].en) if c.place is not None else 1
        return n * (2 if c.time is not None else 1)

    n = clause_count(sentence.first)
    if sentence.second is not None:
        n *= clause_count(sentence.second) * (1 if sentence.connective == "and" else 2)
    return n


def source_length(sentence: Sentence) -> int:
    """The number of Chinese tokens of ``sentence``, counted on the tree (no realisation)."""
    check_instance("sentence", sentence, Sentence, "a Sentence")
    def np_len(np: NounPhrase) -> int:
        n = 1
        if np.conjunct is not None:
            n += 1 + np_len(np.conjunct)
        if np.possessor is not None:
            n += np_len(np.possessor) + 1
        if np.relative is not None:
            rc = np.relative
            inner = rc.object if rc.object is not None else rc.subject
            assert inner is not None
            n += np_len(inner) + rc.negated + 2
        return n

    def clause_len(c: Clause) -> int:
        return (np_len(c.subject) + 1 + np_len(c.object) + (c.time is not None) + c.dou
                + c.negated + (c.tense == "future") + (c.tense == "past" and not c.negated)
                + (2 + np_len(c.companion) if c.companion is not None else 0)
                + 2 * (c.place is not None))

    n = clause_len(sentence.first)
    if sentence.second is not None:
        n += clause_len(sentence.second) + (2 if sentence.connective == "and" else 3)
    return n


def iter_subtrees(np: NounPhrase) -> Iterator[NounPhrase]:
    """``np`` and every noun phrase inside it (possessors, relative clauses, conjuncts)."""
    check_instance("np", np, NounPhrase, "a NounPhrase")
    yield np
    for inner in (np.possessor, np.conjunct,
                  *((np.relative.subject, np.relative.object) if np.relative else ())):
        if inner is not None:
            yield from iter_subtrees(inner)
