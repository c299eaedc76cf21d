"""Data: a toy Chinese → English translation task, vocabularies, batching, and sanity tasks.

The source note translates 我爱机器学习 into "i love machine learning". This module grows that one
example into a small translation task that runs offline on a CPU in seconds, and on which attention
visibly matters: the English word order differs from the Chinese one in ways a model can only get
right by looking back at the right source word.

The grammar
-----------
Every sentence is generated from a *frame*: a subject, a verb, an object and some optional parts.
Chinese puts the optional parts *before* the verb; English puts them *after* the object:

.. code-block:: text

    Chinese:  [time] subject [都] [不|没] [和 companion 一起] [在 place] verb [了] object
    English:  subject [will] [all] [do|does|did] [not] verb object [with companion] [in|at place] [time]

so 我 在 北京 学习 机器学习 becomes "i study machine learning in beijing", and 昨天 我 吃 了 苹果
becomes "i ate apples yesterday". The rules, one per phenomenon:

* **Place** ``在 P`` precedes the verb in Chinese; "in P" / "at P" follows the object in English.
* **Companion** ``和 C 一起`` precedes the verb in Chinese; "with C" follows the object in English.
* **Time** words come first in Chinese and last in English. The time word fixes the tense:
  昨天 "yesterday" and 上周 "last week" are past, 每天 "every day" is present, 明天 "tomorrow" is
  future ("will"), and 今天 "today" is present or past. Without a time word the sentence is present
  or past.
* **Past** is marked in Chinese by 了 after the verb (or by 没 in a negated sentence), and in English
  by the past form: loved, studied, ate, taught, ...
* **Negation**: 不 negates the present ("do not" / "does not") and the future ("will not");
  没 negates the past ("did not"). The English verb after the auxiliary is the bare form.
* **Agreement**: a third-person singular subject (他, 她, 老师, 学生) takes the -s form in the
  affirmative present ("he loves") and "does not" in the negative present.
* **都** "all" may follow a plural subject (我们, 他们) in an affirmative sentence: 我们 都 爱 音乐
  → "we all love music"; in the future "all" follows "will": "we will all ...".

The lexicon is small and closed: 8 subjects, 10 verbs, 15 objects, 6 places, 2 companions and
5 time words. Each verb lists the objects it takes (one eats apples, not mathematics). English is
lowercase, whitespace-tokenised and has no punctuation; Chinese is word-segmented, one word a token.
机器学习 is one word, so the note's example has three source tokens and four target tokens
(the note, which counts 4 × 512 embeddings, splits it into 机器 学习): source and target lengths
differ, as they do in cross-attention (L != S).

Every Chinese sentence has exactly one English translation: the frame can be read back from the
Chinese (each optional part has its own marker word, and 了 / 没 / the time word fix the tense), and
the English is a function of the frame. A perfect model can therefore reach exact match.

Each :class:`Pair` keeps its derivation: the :class:`Frame` it was realised from and an *alignment*,
the links (source index, target index) saying which Chinese word each English word translates.
Every English word is linked: auxiliaries to what triggers them ("will" to 明天, "does" and "not"
to 不, "did" and "not" to 没), the past form also to 了, "with" to both 和 and 一起. The book draws
this alignment next to a model's attention weights.

Splits that test generalisation
-------------------------------
:func:`split` holds out whole (subject, verb, object) triples: every sentence of a held-out triple,
whatever its place, time or negation, goes to validation or test, none to training. A test sentence
is therefore a *new combination of known words*, and every word (every inflection too) still
occurs in training. The note's example triple (我, 爱, 机器学习) is held out for test, so
translating 我 爱 机器学习 is generalisation, not recall.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, Literal, Protocol, get_args

import torch
from torch import Tensor

from attnlib._checks import shape_str

__all__ = [
    "BOS",
    "BOS_ID",
    "COMPANIONS",
    "DEFAULT_N_PAIRS",
    "EOS",
    "EOS_ID",
    "NOTE_EXAMPLE",
    "OBJECTS",
    "PAD",
    "PAD_ID",
    "PLACES",
    "SPECIALS",
    "SUBJECTS",
    "TIMES",
    "UNK",
    "UNK_ID",
    "VERBS",
    "Batch",
    "Corpus",
    "Frame",
    "Pair",
    "Place",
    "Splits",
    "Subject",
    "Tense",
    "TimeWord",
    "TokenPair",
    "Verb",
    "Vocab",
    "batches",
    "copy_task",
    "generate_pairs",
    "iter_frames",
    "make_corpus",
    "pad_batch",
    "realize",
    "reverse_task",
    "split",
]

Tense = Literal["present", "past", "future"]
TENSES: Final[tuple[Tense, ...]] = get_args(Tense)

# ---------------------------------------------------------------------------------------------
# The lexicon
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Subject:
    """A subject: its English words, and whether it is third-person singular or plural."""

    en: tuple[str, ...]
    third_singular: bool
    plural: bool


@dataclass(frozen=True)
class Verb:
    """A verb: its English bare, third-person singular and past forms, and the objects it takes."""

    base: tuple[str, ...]
    third: tuple[str, ...]
    past: tuple[str, ...]
    objects: tuple[str, ...]


@dataclass(frozen=True)
class Place:
    """A place: the English preposition that 在 becomes, and the English noun phrase."""

    preposition: str
    en: tuple[str, ...]


@dataclass(frozen=True)
class TimeWord:
    """A time word: its English words and the tenses it allows."""

    en: tuple[str, ...]
    tenses: tuple[Tense, ...]


SUBJECTS: Final[Mapping[str, Subject]] = MappingProxyType({
    "我": Subject(("i",), third_singular=False, plural=False),
    "你": Subject(("you",), third_singular=False, plural=False),
    "他": Subject(("he",), third_singular=True, plural=False),
    "她": Subject(("she",), third_singular=True, plural=False),
    "我们": Subject(("we",), third_singular=False, plural=True),
    "他们": Subject(("they",), third_singular=False, plural=True),
    "老师": Subject(("the", "teacher"), third_singular=True, plural=False),
    "学生": Subject(("the", "student"), third_singular=True, plural=False),
})

OBJECTS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType({
    "机器学习": ("machine", "learning"),
    "数学": ("math",),
    "音乐": ("music",),
    "历史": ("history",),
    "英语": ("english",),
    "苹果": ("apples",),
    "米饭": ("rice",),
    "面条": ("noodles",),
    "咖啡": ("coffee",),
    "茶": ("tea",),
    "牛奶": ("milk",),
    "书": ("books",),
    "信": ("letters",),
    "故事": ("stories",),
    "代码": ("code",),
})

_SUBJECTS_OF_STUDY = ("机器学习", "数学", "音乐", "历史", "英语")
_FOOD = ("苹果", "米饭", "面条")
_DRINKS = ("咖啡", "茶", "牛奶")
_TEXTS = ("书", "信", "故事", "代码")

VERBS: Final[Mapping[str, Verb]] = MappingProxyType({
    "爱": Verb(("love",), ("loves",), ("loved",), _SUBJECTS_OF_STUDY + _FOOD + _DRINKS),
    "喜欢": Verb(("like",), ("likes",), ("liked",),
                 _SUBJECTS_OF_STUDY + _FOOD + _DRINKS + _TEXTS),
    "学习": Verb(("study",), ("studies",), ("studied",), _SUBJECTS_OF_STUDY),
    "教": Verb(("teach",), ("teaches",), ("taught",), _SUBJECTS_OF_STUDY),
    "吃": Verb(("eat",), ("eats",), ("ate",), _FOOD),
    "喝": Verb(("drink",), ("drinks",), ("drank",), _DRINKS),
    "买": Verb(("buy",), ("buys",), ("bought",), (*_FOOD, *_DRINKS, "书")),
    "读": Verb(("read",), ("reads",), ("read",), _TEXTS),
    "写": Verb(("write",), ("writes",), ("wrote",), _TEXTS),
    "听": Verb(("listen", "to"), ("listens", "to"), ("listened", "to"), ("音乐", "故事")),
})

PLACES: Final[Mapping[str, Place]] = MappingProxyType({
    "北京": Place("in", ("beijing",)),
    "上海": Place("in", ("shanghai",)),
    "学校": Place("at", ("school",)),
    "家里": Place("at", ("home",)),
    "图书馆": Place("in", ("the", "library")),
    "公园": Place("in", ("the", "park")),
})

COMPANIONS: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType({
    "朋友": ("friends",),
    "同学": ("classmates",),
})

TIMES: Final[Mapping[str, TimeWord]] = MappingProxyType({
    "昨天": TimeWord(("yesterday",), ("past",)),
    "上周": TimeWord(("last", "week"), ("past",)),
    "今天": TimeWord(("today",), ("present", "past")),
    "每天": TimeWord(("every", "day"), ("present",)),
    "明天": TimeWord(("tomorrow",), ("future",)),
})

# The grammatical words: markers in Chinese, auxiliaries in English.
_ZAI, _HE, _YIQI, _LE, _BU, _MEI, _DOU = "在", "和", "一起", "了", "不", "没", "都"

# ---------------------------------------------------------------------------------------------
# Frames and pairs
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Frame:
    """The meaning of one sentence: who does what to what, where, when, with whom.

    Words are the Chinese lemmas (keys of :data:`SUBJECTS`, :data:`VERBS`, ...). ``dou`` is the
    都 "all" after a plural subject. :func:`realize` checks that a frame is grammatical.
    """

    subject: str
    verb: str
    object: str
    place: str | None = None
    time: str | None = None
    companion: str | None = None
    negated: bool = False
    tense: Tense = "present"
    dou: bool = False

    @property
    def triple(self) -> tuple[str, str, str]:
        """The triple (subject, verb, object), the unit that :func:`split` holds out."""
        return (self.subject, self.verb, self.object)


@dataclass(frozen=True)
class Pair:
    """A Chinese sentence, its English translation, and how one was derived from the other.

    ``alignment`` holds (source index, target index) links, sorted: which Chinese token each
    English token translates. Every token on both sides has at least one link.
    """

    src: tuple[str, ...]
    tgt: tuple[str, ...]
    frame: Frame
    alignment: tuple[tuple[int, int], ...]

    @property
    def src_text(self) -> str:
        """The Chinese sentence, tokens joined by spaces."""
        return " ".join(self.src)

    @property
    def tgt_text(self) -> str:
        """The English sentence, tokens joined by spaces."""
        return " ".join(self.tgt)


NOTE_EXAMPLE: Final[Frame] = Frame(subject="我", verb="爱", object="机器学习")
"""The source note's example, 我 爱 机器学习 → "i love machine learning"."""


def _check_frame(frame: Frame) -> None:
    """Raise ValueError naming the first part of ``frame`` that the grammar does not allow."""
    parts: tuple[tuple[str, str | None, Mapping[str, object], bool], ...] = (
        ("subject", frame.subject, SUBJECTS, False),
        ("verb", frame.verb, VERBS, False),
        ("object", frame.object, OBJECTS, False),
        ("place", frame.place, PLACES, True),
        ("time", frame.time, TIMES, True),
        ("companion", frame.companion, COMPANIONS, True),
    )
    for name, value, lexicon, optional in parts:
        if value is None and optional:
            continue
        if value not in lexicon:
            either = "None or " if optional else ""
            raise ValueError(
                f"frame.{name} must be {either}one of {', '.join(lexicon)}, got {value!r}"
            )
    if frame.object not in VERBS[frame.verb].objects:
        raise ValueError(
            f"frame.object must be an object of its verb: verb {frame.verb!r} takes the objects "
            f"{', '.join(VERBS[frame.verb].objects)}, got {frame.object!r}"
        )
    if frame.tense not in TENSES:
        raise ValueError(f"frame.tense must be one of {', '.join(TENSES)}, got {frame.tense!r}")
    allowed: tuple[Tense, ...] = (
        ("present", "past") if frame.time is None else TIMES[frame.time].tenses
    )
    if frame.tense not in allowed:
        when = "without a time word" if frame.time is None else f"with time word {frame.time!r}"
        raise ValueError(f"frame.tense: tense {frame.tense!r} is not allowed {when}; allowed: "
                         f"{', '.join(allowed)}")
    if frame.dou and (frame.negated or not SUBJECTS[frame.subject].plural):
        raise ValueError(
            f"都 (dou=True) needs a plural subject and an affirmative sentence, got subject "
            f"{frame.subject!r} and negated={frame.negated}"
        )


def realize(frame: Frame) -> Pair:
    """Realise ``frame`` as a Chinese sentence, its English translation and their alignment.

    Chinese: ``[time] subject [都] [不|没] [和 companion 一起] [在 place] verb [了] object``.
    English: ``subject [will] [all] [do|does|did] [not] verb object [with companion] [prep place]
    [time]``. See the module docstring for the rules.

    Raises:
        ValueError: if the frame is not grammatical (unknown word, an object the verb does not
            take, a tense the time word does not allow, 都 with a singular subject or a negation).
    """
    _check_frame(frame)
    subject, verb = SUBJECTS[frame.subject], VERBS[frame.verb]

    # Chinese, each token tagged with its role so English tokens can point back at it.
    zh: list[tuple[str, str]] = []
    if frame.time is not None:
        zh.append((frame.time, "time"))
    zh.append((frame.subject, "subject"))
    if frame.dou:
        zh.append((_DOU, "dou"))
    if frame.negated:
        zh.append((_MEI if frame.tense == "past" else _BU, "neg"))
    if frame.companion is not None:
        zh += [(_HE, "he"), (frame.companion, "companion"), (_YIQI, "yiqi")]
    if frame.place is not None:
        zh += [(_ZAI, "zai"), (frame.place, "place")]
    zh.append((frame.verb, "verb"))
    if frame.tense == "past" and not frame.negated:
        zh.append((_LE, "le"))
    zh.append((frame.object, "object"))

    # English, each token tagged with the roles of the Chinese tokens it translates.
    en: list[tuple[str, tuple[str, ...]]] = [(w, ("subject",)) for w in subject.en]
    verb_roles: tuple[str, ...]
    if frame.tense == "future":
        en.append(("will", ("time",)))
        if frame.dou:
            en.append(("all", ("dou",)))
        if frame.negated:
            en.append(("not", ("neg",)))
        verb_words, verb_roles = verb.base, ("verb",)
    else:
        if frame.dou:
            en.append(("all", ("dou",)))
        if frame.negated:
            aux = "did" if frame.tense == "past" else "does" if subject.third_singular else "do"
            en += [(aux, ("neg",)), ("not", ("neg",))]
            verb_words, verb_roles = verb.base, ("verb",)
        elif frame.tense == "past":
            verb_words, verb_roles = verb.past, ("verb", "le")
        else:
            verb_words = verb.third if subject.third_singular else verb.base
            verb_roles = ("verb",)
    # Only the inflected first word carries the tense; "to" in "listened to" is the verb's alone.
    en += [(w, verb_roles if i == 0 else ("verb",)) for i, w in enumerate(verb_words)]
    en += [(w, ("object",)) for w in OBJECTS[frame.object]]
    if frame.companion is not None:
        en.append(("with", ("he", "yiqi")))
        en += [(w, ("companion",)) for w in COMPANIONS[frame.companion]]
    if frame.place is not None:
        place = PLACES[frame.place]
        en.append((place.preposition, ("zai",)))
        en += [(w, ("place",)) for w in place.en]
    if frame.time is not None:
        en += [(w, ("time",)) for w in TIMES[frame.time].en]

    position = {role: i for i, (_, role) in enumerate(zh)}
    alignment = sorted((position[role], j) for j, (_, roles) in enumerate(en) for role in roles)
    return Pair(
        src=tuple(token for token, _ in zh),
        tgt=tuple(token for token, _ in en),
        frame=frame,
        alignment=tuple(alignment),
    )


def iter_frames() -> Iterator[Frame]:
    """Every grammatical frame, in a fixed order (178,416 of them)."""
    times: list[tuple[str | None, Tense]] = [(None, "present"), (None, "past")]
    times += [(time, tense) for time, word in TIMES.items() for tense in word.tenses]
    for subject, entry in SUBJECTS.items():
        for verb, verb_entry in VERBS.items():
            for obj in verb_entry.objects:
                for (time, tense), place, companion, negated in itertools.product(
                    times, (None, *PLACES), (None, *COMPANIONS), (False, True)
                ):
                    can_dou = entry.plural and not negated
                    for dou in (False, True) if can_dou else (False,):
                        yield Frame(subject, verb, obj, place, time, companion, negated, tense,
                                    dou)


# Sampling probabilities of the optional parts: most sentences stay short, some grow long.
_P_TIME, _P_PAST, _P_NEGATED, _P_PLACE, _P_COMPANION, _P_DOU = 0.5, 0.35, 0.3, 0.4, 0.2, 0.5
_MAX_PAIRS: Final = 50_000

DEFAULT_N_PAIRS: Final = 4000
"""The default corpus size; a GRU with additive attention trains on it in well under a minute."""


def _sample_frame(rng: random.Random) -> Frame:
    subject = rng.choice(list(SUBJECTS))
    verb = rng.choice(list(VERBS))
    obj = rng.choice(VERBS[verb].objects)
    time = rng.choice(list(TIMES)) if rng.random() < _P_TIME else None
    tenses: tuple[Tense, ...] = ("present", "past") if time is None else TIMES[time].tenses
    if len(tenses) == 1:
        tense = tenses[0]
    else:
        tense = "past" if rng.random() < _P_PAST else "present"
    negated = rng.random() < _P_NEGATED
    place = rng.choice(list(PLACES)) if rng.random() < _P_PLACE else None
    companion = rng.choice(list(COMPANIONS)) if rng.random() < _P_COMPANION else None
    dou = SUBJECTS[subject].plural and not negated and rng.random() < _P_DOU
    return Frame(subject, verb, obj, place, time, companion, negated, tense, dou)


def generate_pairs(n_pairs: int = DEFAULT_N_PAIRS, seed: int = 0) -> list[Pair]:
    """Sample ``n_pairs`` distinct sentence pairs from the grammar.

    The first pair is always the note's example (:data:`NOTE_EXAMPLE`), 我 爱 机器学习 → "i love
    machine learning"; the rest are sampled with ``random.Random(seed)``, so the same seed gives
    the same corpus, and no global random state is read or changed. Optional parts are drawn
    independently (a time word half of the time, a place 40 %, a companion 20 %, negation 30 %),
    which gives Chinese sentences of 3 to 11 tokens, most of them 4 to 7.

    Raises:
        ValueError: if ``n_pairs`` is not an integer in [1, 50000].
    """
    _check_int("n_pairs", n_pairs, low=1, high=_MAX_PAIRS)
    rng = random.Random(seed)
    pairs = [realize(NOTE_EXAMPLE)]
    seen = {pairs[0].src}
    while len(pairs) < n_pairs:
        pair = realize(_sample_frame(rng))
        if pair.src not in seen:
            seen.add(pair.src)
            pairs.append(pair)
    return pairs


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

    The unit of splitting is the (subject, verb, object) triple. Triples are visited in an order
    shuffled by ``random.Random(seed)``, the note's triple (我, 爱, 机器学习) first; each goes to test
    until test holds ``test_frac`` of the pairs, then to validation until it holds ``valid_frac``,
    and the rest to training. The note's triple goes to test even when ``test_frac`` is 0
    (in corpora of fewer than about 200 pairs it may have to stay in training, by the rule below).

    A triple is held out only if every token of its sentences, Chinese and English, also occurs
    in a triple that stays in training. So every held-out sentence is a new combination of known
    words, down to inflections: holding out all the triples in which a third-person subject meets
    听 would take "listens" out of training, and is not done. A corpus too small to hold out
    ``valid_frac`` and ``test_frac`` of its pairs on these terms gets smaller held-out splits.
    Within a split, pairs keep their order in ``pairs``.

    Raises:
        ValueError: if a fraction is outside [0, 1) or they sum to 1 or more, or ``pairs`` is empty.
    """
    for name, frac in (("valid_frac", valid_frac), ("test_frac", test_frac)):
        if not 0.0 <= frac < 1.0:
            raise ValueError(f"{name} must be in [0, 1), got {frac}")
    if valid_frac + test_frac >= 1.0:
        raise ValueError(f"valid_frac + test_frac must be < 1, got {valid_frac} + {test_frac}")
    if len(pairs) == 0:
        raise ValueError("pairs is empty: split needs at least one pair")

    by_triple: dict[tuple[str, str, str], list[Pair]] = {}
    for pair in pairs:
        by_triple.setdefault(pair.frame.triple, []).append(pair)
    order = sorted(by_triple)
    random.Random(seed).shuffle(order)
    note = NOTE_EXAMPLE.triple
    if note in by_triple:
        order.remove(note)
        order.insert(0, note)

    # For each token, how many triples still in training have it; it must keep at least one.
    tokens = {
        triple: {t for p in group for t in (*p.src, *p.tgt)} for triple, group in by_triple.items()
    }
    in_train: Counter[str] = Counter(t for triple in order for t in tokens[triple])
    targets = {"test": round(test_frac * len(pairs)), "valid": round(valid_frac * len(pairs))}
    counts = {"test": 0, "valid": 0}
    held: dict[str, set[tuple[str, str, str]]] = {"test": set(), "valid": set()}
    for triple in order:
        if any(in_train[t] < 2 for t in tokens[triple]):
            continue
        for part in ("test", "valid"):
            if counts[part] < targets[part] or (part == "test" and triple == note):
                held[part].add(triple)
                counts[part] += len(by_triple[triple])
                in_train.subtract(tokens[triple])
                break

    held_out = held["test"] | held["valid"]
    return Splits(
        train=tuple(p for p in pairs if p.frame.triple not in held_out),
        valid=tuple(p for p in pairs if p.frame.triple in held["valid"]),
        test=tuple(p for p in pairs if p.frame.triple in held["test"]),
        valid_triples=frozenset(held["valid"]),
        test_triples=frozenset(held["test"]),
    )


# ---------------------------------------------------------------------------------------------
# Vocabularies
# ---------------------------------------------------------------------------------------------

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
        tokens: set[str] = set()
        for sentence in sentences:
            tokens.update(sentence)
        clash = sorted(tokens.intersection(SPECIALS))
        if clash:
            raise ValueError(f"sentences must not contain the special tokens, found {clash}")
        return cls((*SPECIALS, *sorted(tokens)))

    def __len__(self) -> int:
        return len(self.itos)

    def __getitem__(self, token: str) -> int:
        return self._stoi.get(token, UNK_ID)

    def __contains__(self, token: object) -> bool:
        return token in self._stoi

    def encode(self, tokens: Iterable[str]) -> list[int]:
        """Map tokens to ids; a token not in the vocabulary becomes ``<unk>`` (id 3)."""
        return [self._stoi.get(token, UNK_ID) for token in tokens]

    def decode(self, ids: Iterable[int] | Tensor, strip_special: bool = True) -> list[str]:
        """Map ids back to tokens.

        With ``strip_special``, ``<pad>`` and ``<bos>`` are dropped and decoding stops at the
        first ``<eos>``, which is what a model's greedy output needs. ``<unk>`` is kept: it stands
        for a word, and a BLEU score should count it as wrong rather than not see it.

        Raises:
            ValueError: if an id is outside [0, len(vocab)), or ``ids`` is a tensor that is not 1-D.
        """
        if isinstance(ids, Tensor):
            if ids.ndim != 1:
                raise ValueError(f"ids must be 1-D (L,), got shape {shape_str(ids.shape)}")
            ids = [int(i) for i in ids.tolist()]
        tokens: list[str] = []
        for position, i in enumerate(ids):
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
) -> Corpus:
    """Generate ``n_pairs`` pairs, split them, and build both vocabularies from training alone."""
    splits = split(generate_pairs(n_pairs, seed), seed, valid_frac, test_frac)
    return Corpus(
        splits=splits,
        src_vocab=Vocab.build(p.src for p in splits.train),
        tgt_vocab=Vocab.build(p.tgt for p in splits.train),
    )


# ---------------------------------------------------------------------------------------------
# Batching
# ---------------------------------------------------------------------------------------------


class TokenPair(Protocol):
    """Anything with a source and a target token sequence, such as a :class:`Pair`."""

    @property
    def src(self) -> Sequence[str]: ...

    @property
    def tgt(self) -> Sequence[str]: ...


def _check_int(name: str, value: int, low: int, high: int | None = None) -> None:
    """Raise ValueError unless ``value`` is an int (not a bool) in [low, high]."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < low or (high is not None and value > high):
        upper = "" if high is None else f" and <= {high}"
        raise ValueError(f"{name} must be >= {low}{upper}, got {value}")


def pad_batch(sequences: Sequence[Sequence[int]], pad_id: int = PAD_ID) -> tuple[Tensor, Tensor]:
    """Stack id sequences of different lengths into one padded tensor.

    Shape:
        Returns ``(padded, lengths)``: ``padded`` is (B, S) long, with ``pad_id`` after each
        sequence's end, S the longest length; ``lengths`` is (B,) long.

    Raises:
        ValueError: if ``sequences`` is empty or one of them is empty.
    """
    if len(sequences) == 0:
        raise ValueError("sequences is empty: pad_batch needs at least one sequence")
    for i, seq in enumerate(sequences):
        if len(seq) == 0:
            raise ValueError(f"sequences[{i}] is empty: every sequence needs at least one id")
    lengths = torch.tensor([len(seq) for seq in sequences], dtype=torch.long)  # (B,)
    padded = torch.full((len(sequences), int(lengths.max())), pad_id, dtype=torch.long)  # (B, S)
    for i, seq in enumerate(sequences):
        padded[i, : len(seq)] = torch.as_tensor(list(seq), dtype=torch.long)
    return padded, lengths


@dataclass(frozen=True, eq=False)
class Batch:
    """One batch for teacher-forced training of an encoder-decoder.

    Shape:
        src: (B, S) source ids, padded with ``<pad>``; src_lengths: (B,).
        tgt_in: (B, L) ``<bos> y_1 ... y_n``, the decoder's input (the targets shifted right).
        tgt_out: (B, L) ``y_1 ... y_n <eos>``, what the decoder must predict at each step.
        tgt_lengths: (B,) n + 1, the unpadded length of both ``tgt_in`` and ``tgt_out``.
        pairs: the B pairs the batch was made from, in row order (for decoding and BLEU).
    """

    src: Tensor
    src_lengths: Tensor
    tgt_in: Tensor
    tgt_out: Tensor
    tgt_lengths: Tensor
    pairs: tuple[TokenPair, ...]


def batches(
    pairs: Sequence[TokenPair],
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    batch_size: int,
    shuffle: bool = False,
    seed: int = 0,
    max_len: int | None = None,
) -> Iterator[Batch]:
    """Yield padded :class:`Batch` es of ``batch_size`` pairs (the last one may be smaller).

    With ``shuffle``, the order is a permutation drawn from ``random.Random(seed)``: pass the
    epoch number as ``seed`` for a new, reproducible order every epoch. ``max_len`` bounds every
    tensor's sequence length: the source length and the target length + 1 (for ``<bos>`` /
    ``<eos>``). All pairs are checked before the first batch is yielded.

    Raises:
        ValueError: if ``pairs`` is empty, ``batch_size`` < 1, a source or target is empty, or a
            sentence is longer than ``max_len``.
    """
    _check_int("batch_size", batch_size, low=1)
    if max_len is not None:
        _check_int("max_len", max_len, low=2)
    if len(pairs) == 0:
        raise ValueError("pairs is empty: batches needs at least one pair")
    for i, pair in enumerate(pairs):
        for side, tokens, extra in (("src", pair.src, 0), ("tgt", pair.tgt, 1)):
            if len(tokens) == 0:
                raise ValueError(f"pairs[{i}].{side} is an empty sentence; every sentence "
                                 f"needs at least one token")
            if max_len is not None and len(tokens) + extra > max_len:
                plus = " + 1 for <bos>/<eos>" if extra else ""
                raise ValueError(
                    f"pairs[{i}].{side} has length {len(tokens)}{plus}, longer than "
                    f"max_len={max_len}: {' '.join(tokens)!r}"
                )
    order = list(range(len(pairs)))
    if shuffle:
        random.Random(seed).shuffle(order)
    for start in range(0, len(order), batch_size):
        chunk = tuple(pairs[i] for i in order[start : start + batch_size])
        src, src_lengths = pad_batch([src_vocab.encode(p.src) for p in chunk])  # (B, S)
        ys = [tgt_vocab.encode(p.tgt) for p in chunk]
        tgt_in, tgt_lengths = pad_batch([[BOS_ID, *y] for y in ys])  # (B, L)
        tgt_out, _ = pad_batch([[*y, EOS_ID] for y in ys])  # (B, L)
        yield Batch(src, src_lengths, tgt_in, tgt_out, tgt_lengths, chunk)


# ---------------------------------------------------------------------------------------------
# Sanity tasks
# ---------------------------------------------------------------------------------------------


def copy_task(
    n: int, length: int = 10, num_symbols: int = 10, seed: int = 0
) -> tuple[Tensor, Tensor]:
    """The copy task: random symbol sequences whose target is the sequence itself.

    Symbols are 1..``num_symbols``; 0 is left free for padding. Drawn from a private
    ``torch.Generator`` seeded with ``seed``, so the global random state is untouched.

    Shape:
        Returns ``(src, tgt)``, both (n, length) long, ``tgt == src``.

    Raises:
        ValueError: if ``n``, ``length`` or ``num_symbols`` is < 1.
    """
    src = _random_symbols(n, length, num_symbols, seed)
    return src, src.clone()


def reverse_task(
    n: int, length: int = 10, num_symbols: int = 10, seed: int = 0
) -> tuple[Tensor, Tensor]:
    """The reversal task: like :func:`copy_task`, but the target is the sequence reversed.

    Shape:
        Returns ``(src, tgt)``, both (n, length) long, ``tgt[i] == src[i].flip(0)``.

    Raises:
        ValueError: if ``n``, ``length`` or ``num_symbols`` is < 1.
    """
    src = _random_symbols(n, length, num_symbols, seed)
    return src, src.flip(1)  # (n, length)


def _random_symbols(n: int, length: int, num_symbols: int, seed: int) -> Tensor:
    for name, value in (("n", n), ("length", length), ("num_symbols", num_symbols)):
        _check_int(name, value, low=1)
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(1, num_symbols + 1, (n, length), generator=generator)  # (n, length)


# ---------------------------------------------------------------------------------------------
# Key-value retrieval: a task for comparing scoring functions (chapter 2)
# ---------------------------------------------------------------------------------------------

__all__ += ["RetrievalTask", "key_retrieval_task"]


@dataclass(frozen=True, eq=False)
class RetrievalTask:
    r"""Queries, keys and values of :func:`key_retrieval_task`; query i refers to key i.

    The ideal attention puts all of query i's weight on key i, so the ideal output is
    ``value`` itself and the ideal weight matrix of every example is the identity.

    Shape:
        query: (n, S, Eq), the S queries of each example.
        key: (n, S, Ek), each key of norm :math:`\sqrt{E_k}`.
        value: (n, S, Ev).
        mapping: (Eq, Ek), the hidden linear map from a key to its query.
    """

    query: Tensor
    key: Tensor
    value: Tensor
    mapping: Tensor

    def accuracy(self, weights: Tensor) -> float:
        """The fraction of queries whose largest attention weight is on their own key.

        Shape:
            weights: (n, S, S), queries × keys, as returned by attention on this task.

        Raises:
            ValueError: if ``weights`` does not have shape (n, S, S).
        """
        n, S = self.key.shape[:2]
        if weights.shape != (n, S, S):
            raise ValueError(
                f"weights must have shape (n, S, S) = {shape_str((n, S, S))}, "
                f"got {shape_str(weights.shape)}"
            )
        right = torch.arange(S, device=weights.device)  # (S,)
        return float((weights.argmax(dim=-1) == right).double().mean())


def key_retrieval_task(
    n: int,
    num_keys: int = 8,
    key_size: int = 8,
    value_size: int = 4,
    mapping: Tensor | None = None,
    noise: float = 0.5,
    seed: int = 0,
) -> RetrievalTask:
    r"""A key-value store and queries that each ask for one of its keys in another form.

    Each of the ``n`` examples holds ``num_keys`` = S keys :math:`\mathbf k_j`, drawn uniformly
    from the sphere of radius :math:`\sqrt{E_k}` (so every key has the same length), and as many
    values :math:`\mathbf v_j \sim \mathcal N(0, \mathbf I)`, unrelated to the keys. Query i is
    key i seen through a hidden linear map :math:`\mathbf M` (``mapping``), plus noise:

    .. math::

        \mathbf q_i = \mathbf M \mathbf k_i + \sigma \boldsymbol\varepsilon_i, \qquad
        \boldsymbol\varepsilon_i \sim \mathcal N(0, \mathbf I_{E_q}).

    Attention solves the task if every query puts its largest weight on its own key; its
    output is then close to the value stored under that key. With :math:`\mathbf M = \mathbf I`
    (the default) a query resembles its key, and a dot product finds it; with any other map a
    score must learn :math:`\mathbf M`. A scoring function sees vectors only, never positions,
    so putting the right key at the query's own index only makes the ideal weight matrix the
    identity. Drawn in float64 from a private ``torch.Generator`` seeded with ``seed``; the
    global random state is untouched.

    Args:
        n: the number of examples.
        num_keys: S, the keys (and queries) per example.
        key_size: Ek.
        value_size: Ev.
        mapping: M, a floating-point (Eq, Ek) tensor; ``None`` is the identity (Eq = Ek).
        noise: the standard deviation :math:`\sigma` of the query noise, >= 0.
        seed: the seed of the generator.

    Shape:
        mapping: (Eq, Ek). Returns a :class:`RetrievalTask` with query (n, S, Eq),
        key (n, S, Ek), value (n, S, Ev) and mapping (Eq, Ek), all float64.

    Raises:
        TypeError: if a size is not an int, or ``mapping`` is not a floating-point tensor.
        ValueError: if a size is < 1, ``mapping`` is not (Eq, Ek) with Ek = ``key_size``, or
            ``noise`` is negative or not finite.
    """
    for name, size in (("n", n), ("num_keys", num_keys), ("key_size", key_size),
                       ("value_size", value_size)):
        _check_int(name, size, low=1)
    if mapping is None:
        mapping = torch.eye(key_size, dtype=torch.float64)
    if not isinstance(mapping, Tensor) or not mapping.is_floating_point():
        raise TypeError(f"mapping must be a floating-point tensor (Eq, Ek), got "
                        f"{mapping.dtype if isinstance(mapping, Tensor) else type(mapping).__name__}")
    if mapping.ndim != 2 or mapping.shape[1] != key_size:
        raise ValueError(f"mapping must have shape (Eq, Ek) with Ek = key_size = {key_size}, "
                         f"got {shape_str(mapping.shape)}")
    if not noise >= 0.0 or noise == float("inf"):
        raise ValueError(f"noise must be finite and >= 0, got {noise}")
    mapping = mapping.detach().to(torch.float64)
    generator = torch.Generator().manual_seed(seed)
    key = torch.randn(n, num_keys, key_size, generator=generator, dtype=torch.float64)
    key = key / key.norm(dim=-1, keepdim=True) * key_size**0.5  # (n, S, Ek)
    value = torch.randn(n, num_keys, value_size, generator=generator, dtype=torch.float64)
    eps = torch.randn(n, num_keys, mapping.shape[0], generator=generator, dtype=torch.float64)
    query = key @ mapping.T + noise * eps  # (n, S, Eq)
    return RetrievalTask(query=query, key=key, value=value, mapping=mapping.clone())
