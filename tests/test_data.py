"""Tests for attnlib.data: the toy Chinese → English grammar, splits, vocabularies and batching.

The grammar tests do not compare against stored strings. They re-derive each sentence with rules
written here independently of the library (English verb inflection by spelling rules, word order
by the book's two templates), and parse the Chinese back into a frame.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib.data import (
    BOS_ID,
    COMPANIONS,
    EOS_ID,
    NOTE_EXAMPLE,
    OBJECTS,
    PAD_ID,
    PLACES,
    SPECIALS,
    SUBJECTS,
    TIMES,
    UNK_ID,
    VERBS,
    Corpus,
    Frame,
    Pair,
    Tense,
    Vocab,
    batches,
    copy_task,
    generate_pairs,
    iter_frames,
    make_corpus,
    pad_batch,
    realize,
    reverse_task,
    split,
)

# ---------------------------------------------------------------------------------------------
# An independent rendering of the grammar
# ---------------------------------------------------------------------------------------------

IRREGULAR_PAST = {"teach": "taught", "eat": "ate", "drink": "drank", "buy": "bought",
                  "read": "read", "write": "wrote"}
THIRD_SINGULAR = {"他", "她", "老师", "学生"}
PLURAL = {"我们", "他们"}
PAST_TIMES, PRESENT_TIMES, FUTURE_TIMES = {"昨天", "上周"}, {"每天"}, {"明天"}


def third_person(word: str) -> str:
    """English -s form by spelling rule: teach → teaches, study → studies, buy → buys."""
    if word.endswith(("s", "sh", "ch", "x", "z", "o")):
        return word + "es"
    if word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "s"


def past_form(word: str) -> str:
    """English past by spelling rule, with a short list of irregular verbs."""
    if word in IRREGULAR_PAST:
        return IRREGULAR_PAST[word]
    if word.endswith("e"):
        return word + "d"
    if word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ied"
    return word + "ed"


def expected_english(f: Frame) -> list[str]:
    """subject [will] [all] [do|does|did] [not] verb object [with C] [prep P] [time]."""
    base = list(VERBS[f.verb].base)
    words = list(SUBJECTS[f.subject].en)
    if f.tense == "future":
        words += ["will"] + ["all"] * f.dou + ["not"] * f.negated
        verb = base
    elif f.negated:
        aux = "did" if f.tense == "past" else "does" if f.subject in THIRD_SINGULAR else "do"
        words += [aux, "not"]
        verb = base
    else:
        words += ["all"] * f.dou
        if f.tense == "past":
            verb = [past_form(base[0]), *base[1:]]
        elif f.subject in THIRD_SINGULAR:
            verb = [third_person(base[0]), *base[1:]]
        else:
            verb = base
    words += verb + list(OBJECTS[f.object])
    if f.companion is not None:
        words += ["with", *COMPANIONS[f.companion]]
    if f.place is not None:
        words += [PLACES[f.place].preposition, *PLACES[f.place].en]
    if f.time is not None:
        words += list(TIMES[f.time].en)
    return words


def expected_chinese(f: Frame) -> list[str]:
    """[time] subject [都] [不|没] [和 C 一起] [在 P] verb [了] object."""
    words = [f.time] if f.time is not None else []
    words.append(f.subject)
    words += ["都"] * f.dou
    if f.negated:
        words.append("没" if f.tense == "past" else "不")
    if f.companion is not None:
        words += ["和", f.companion, "一起"]
    if f.place is not None:
        words += ["在", f.place]
    words.append(f.verb)
    words += ["了"] * (f.tense == "past" and not f.negated)
    words.append(f.object)
    return words


def parse_chinese(src: Sequence[str]) -> Frame:
    """Read the frame back from a Chinese sentence: the grammar is unambiguous if this works."""
    rest = list(src)
    time = rest.pop(0) if rest[0] in TIMES else None
    subject = rest.pop(0)
    dou = rest[0] == "都"
    if dou:
        rest.pop(0)
    negated = rest[0] in ("不", "没")
    past = rest[0] == "没"
    if negated:
        rest.pop(0)
    companion = place = None
    if rest[0] == "和":
        assert rest[2] == "一起"
        companion = rest[1]
        del rest[:3]
    if rest[0] == "在":
        place = rest[1]
        del rest[:2]
    verb = rest.pop(0)
    if rest[0] == "了":
        past = True
        rest.pop(0)
    obj = rest.pop(0)
    assert rest == [], rest
    tense: Tense = "future" if time in FUTURE_TIMES else "past" if past else "present"
    return Frame(subject, verb, obj, place, time, companion, negated, tense, dou)


def linked(pair: Pair, src_index: int) -> list[str]:
    """The English tokens linked to one Chinese token, in order."""
    return [pair.tgt[j] for i, j in pair.alignment if i == src_index]


@st.composite
def frames(draw: st.DrawFn) -> Frame:
    subject = draw(st.sampled_from(sorted(SUBJECTS)))
    verb = draw(st.sampled_from(sorted(VERBS)))
    obj = draw(st.sampled_from(VERBS[verb].objects))
    time = draw(st.none() | st.sampled_from(sorted(TIMES)))
    tense = draw(st.sampled_from(("present", "past") if time is None else TIMES[time].tenses))
    negated = draw(st.booleans())
    dou = subject in PLURAL and not negated and draw(st.booleans())
    place = draw(st.none() | st.sampled_from(sorted(PLACES)))
    companion = draw(st.none() | st.sampled_from(sorted(COMPANIONS)))
    return Frame(subject, verb, obj, place, time, companion, negated, tense, dou)


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return make_corpus(seed=0)


@pytest.fixture(scope="module")
def pairs(corpus: Corpus) -> list[Pair]:
    return [*corpus.train, *corpus.valid, *corpus.test]


# ---------------------------------------------------------------------------------------------
# The grammar
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frame", "zh", "en"),
    [
        (NOTE_EXAMPLE, "我 爱 机器学习", "i love machine learning"),
        (Frame("我", "学习", "机器学习", place="北京"),
         "我 在 北京 学习 机器学习", "i study machine learning in beijing"),
        (Frame("我", "学习", "机器学习", time="昨天", tense="past"),
         "昨天 我 学习 了 机器学习", "i studied machine learning yesterday"),
        (Frame("他", "爱", "音乐"), "他 爱 音乐", "he loves music"),
        (Frame("他", "爱", "音乐", negated=True), "他 不 爱 音乐", "he does not love music"),
        (Frame("我们", "吃", "苹果", negated=True, tense="past"),
         "我们 没 吃 苹果", "we did not eat apples"),
        (Frame("她", "听", "音乐", time="明天", tense="future", negated=True),
         "明天 她 不 听 音乐", "she will not listen to music tomorrow"),
        (Frame("他们", "喝", "茶", time="每天", dou=True, companion="朋友", place="家里"),
         "每天 他们 都 和 朋友 一起 在 家里 喝 茶", "they all drink tea with friends at home every day"),
    ],
)
def test_known_sentences(frame: Frame, zh: str, en: str) -> None:
    pair = realize(frame)
    assert pair.src_text == zh
    assert pair.tgt_text == en


def test_lexicon_verb_forms_follow_english_spelling_rules() -> None:
    for zh, verb in VERBS.items():
        assert verb.third == (third_person(verb.base[0]), *verb.base[1:]), zh
        assert verb.past == (past_form(verb.base[0]), *verb.base[1:]), zh


def test_every_corpus_pair_follows_the_grammar(pairs: list[Pair]) -> None:
    for pair in pairs:
        assert list(pair.src) == expected_chinese(pair.frame), pair.src_text
        assert list(pair.tgt) == expected_english(pair.frame), pair.src_text
        assert parse_chinese(pair.src) == pair.frame, pair.src_text


@settings(max_examples=200, deadline=None)
@given(frames())
def test_any_frame_renders_and_parses_back(frame: Frame) -> None:
    pair = realize(frame)
    assert list(pair.tgt) == expected_english(frame)
    assert parse_chinese(pair.src) == frame


def test_chinese_determines_the_translation() -> None:
    # Exhaustive over a slice of the grammar: no two frames share a Chinese sentence.
    subset = [f for f in iter_frames() if f.subject in ("他", "我们") and f.verb in ("听", "教")]
    sources = [realize(f).src for f in subset]
    assert len(subset) > 1000
    assert len(set(sources)) == len(sources)


def test_reordering_place_companion_and_time(pairs: list[Pair]) -> None:
    seen = {"place": 0, "companion": 0, "time": 0}
    for pair in pairs:
        f = pair.frame
        verb_zh = pair.src.index(f.verb)
        obj_en = max(j for i, j in pair.alignment if pair.src[i] == f.object)
        if f.place is not None:
            seen["place"] += 1
            place_zh = pair.src.index(f.place)
            assert pair.src[place_zh - 1] == "在" and place_zh < verb_zh
            place_en = [j for i, j in pair.alignment if i in (place_zh - 1, place_zh)]
            assert min(place_en) > obj_en
            assert linked(pair, place_zh - 1) == [PLACES[f.place].preposition]
        if f.companion is not None:
            seen["companion"] += 1
            he = pair.src.index("和")
            assert pair.src[he + 2] == "一起" and he + 2 < verb_zh
            assert min(j for i, j in pair.alignment if he <= i <= he + 2) > obj_en
        if f.time is not None:
            seen["time"] += 1
            assert pair.src[0] == f.time
            n = len(TIMES[f.time].en)
            assert list(pair.tgt[-n:]) == list(TIMES[f.time].en)
            assert [j for i, j in pair.alignment if i == 0][-n:] == list(range(len(pair.tgt) - n,
                                                                            len(pair.tgt)))
    assert min(seen.values()) > 100, seen


def test_reordered_sentences_have_crossing_links() -> None:
    pair = realize(Frame("我", "学习", "机器学习", place="北京", time="昨天", tense="past"))
    crossing = [(a, b) for a in pair.alignment for b in pair.alignment
                if a[0] < b[0] and a[1] > b[1]]
    assert crossing
    assert not [(a, b) for a in realize(NOTE_EXAMPLE).alignment
                for b in realize(NOTE_EXAMPLE).alignment if a[0] < b[0] and a[1] > b[1]]


def test_agreement_negation_and_tense(pairs: list[Pair]) -> None:
    for pair in pairs:
        f = pair.frame
        third = f.subject in THIRD_SINGULAR
        verb_words = linked(pair, pair.src.index(f.verb))
        base = VERBS[f.verb].base[0]
        if f.tense == "future":
            assert "will" in linked(pair, 0)
            assert verb_words[0] == base
        elif f.negated:
            neg = pair.src.index("没" if f.tense == "past" else "不")
            aux = "did" if f.tense == "past" else "does" if third else "do"
            assert linked(pair, neg) == [aux, "not"]
            assert verb_words[0] == base
        elif f.tense == "past":
            assert verb_words[0] == past_form(base)
            assert linked(pair, pair.src.index("了")) == [past_form(base)]
        else:
            assert verb_words[0] == (third_person(base) if third else base)
        assert ("了" in pair.src) == (f.tense == "past" and not f.negated)
        assert ("没" in pair.src) == (f.tense == "past" and f.negated)
        if f.time in PAST_TIMES:
            assert f.tense == "past"
        if f.time in PRESENT_TIMES:
            assert f.tense == "present"


def test_alignment_links_every_token_to_its_gloss(pairs: list[Pair]) -> None:
    for pair in pairs:
        f = pair.frame
        assert {i for i, _ in pair.alignment} == set(range(len(pair.src)))
        assert {j for _, j in pair.alignment} == set(range(len(pair.tgt)))
        assert list(pair.alignment) == sorted(pair.alignment)
        assert linked(pair, pair.src.index(f.subject)) == list(SUBJECTS[f.subject].en)
        assert linked(pair, pair.src.index(f.object)) == list(OBJECTS[f.object])
        if f.place is not None:
            assert linked(pair, pair.src.index(f.place)) == list(PLACES[f.place].en)
        if f.companion is not None:
            assert linked(pair, pair.src.index(f.companion)) == list(COMPANIONS[f.companion])
        if f.dou:
            assert linked(pair, pair.src.index("都")) == ["all"]


def test_realize_rejects_ungrammatical_frames() -> None:
    with pytest.raises(ValueError, match="verb '吃' takes the objects"):
        realize(Frame("我", "吃", "数学"))
    with pytest.raises(ValueError, match="tense 'present' is not allowed with time word '昨天'"):
        realize(Frame("我", "吃", "苹果", time="昨天"))
    with pytest.raises(ValueError, match="tense 'future' is not allowed without a time word"):
        realize(Frame("我", "吃", "苹果", tense="future"))
    with pytest.raises(ValueError, match="plural subject"):
        realize(Frame("我", "吃", "苹果", dou=True))
    with pytest.raises(ValueError, match=r"frame.place must be None or one of"):
        realize(Frame("我", "吃", "苹果", place="火星"))


def test_lexicon_size() -> None:
    assert (len(SUBJECTS), len(VERBS), len(OBJECTS), len(PLACES), len(TIMES)) == (8, 10, 15, 6, 5)


# ---------------------------------------------------------------------------------------------
# The corpus and its splits
# ---------------------------------------------------------------------------------------------


def test_same_seed_same_corpus_different_seed_different() -> None:
    a, b, c = generate_pairs(500, seed=1), generate_pairs(500, seed=1), generate_pairs(500, seed=2)
    assert a == b
    assert a != c
    assert make_corpus(seed=3, n_pairs=800) == make_corpus(seed=3, n_pairs=800)


def test_generation_leaves_global_random_state_alone() -> None:
    py_state, torch_state = random.getstate(), torch.get_rng_state()
    make_corpus(seed=5, n_pairs=300)
    copy_task(4, seed=5)
    assert random.getstate() == py_state
    assert torch.equal(torch.get_rng_state(), torch_state)


def test_corpus_is_distinct_and_varied(pairs: list[Pair]) -> None:
    assert len(pairs) == 4000
    assert len({p.src for p in pairs}) == len(pairs)
    lengths = [len(p.src) for p in pairs]
    assert min(lengths) == 3 and max(lengths) >= 10


def test_note_example_is_in_test_only(corpus: Corpus) -> None:
    note = realize(NOTE_EXAMPLE)
    assert note.src == ("我", "爱", "机器学习")
    assert note.tgt == ("i", "love", "machine", "learning")
    assert [p.src for p in corpus.test].count(note.src) == 1
    assert note.src not in {p.src for p in (*corpus.train, *corpus.valid)}
    assert NOTE_EXAMPLE.triple in corpus.splits.test_triples


def test_splits_do_not_leak(corpus: Corpus, pairs: list[Pair]) -> None:
    s = corpus.splits
    train_src = {p.src for p in s.train}
    assert not train_src & {p.src for p in (*s.valid, *s.test)}
    assert not {p.src for p in s.valid} & {p.src for p in s.test}
    assert sorted(p.src for p in pairs) == sorted(p.src for p in (*s.train, *s.valid, *s.test))
    train_triples = {p.frame.triple for p in s.train}
    assert not train_triples & (s.valid_triples | s.test_triples)
    assert not s.valid_triples & s.test_triples
    assert {p.frame.triple for p in s.test} == s.test_triples
    assert {p.frame.triple for p in s.valid} == s.valid_triples
    # Held-out triples are new combinations of words that training has seen.
    for subject, verb, obj in s.valid_triples | s.test_triples:
        assert any(t[0] == subject for t in train_triples)
        assert any(t[1] == verb for t in train_triples)
        assert any(t[2] == obj for t in train_triples)
    for part in (s.valid, s.test):
        assert 0.08 < len(part) / len(pairs) < 0.13


def test_held_out_vocabulary_is_known_in_training(corpus: Corpus) -> None:
    train_src = {t for p in corpus.train for t in p.src}
    train_tgt = {t for p in corpus.train for t in p.tgt}
    assert set(corpus.src_vocab.itos[len(SPECIALS):]) == train_src
    assert set(corpus.tgt_vocab.itos[len(SPECIALS):]) == train_tgt
    for pair in (*corpus.valid, *corpus.test):
        assert UNK_ID not in corpus.src_vocab.encode(pair.src)
        assert UNK_ID not in corpus.tgt_vocab.encode(pair.tgt)


def test_split_is_deterministic_and_seeded(pairs: list[Pair]) -> None:
    assert split(pairs, seed=0) == split(pairs, seed=0)
    assert split(pairs, seed=0).test_triples != split(pairs, seed=1).test_triples


def test_split_holds_out_the_note_even_without_a_test_fraction(pairs: list[Pair]) -> None:
    s = split(pairs, seed=0, valid_frac=0.1, test_frac=0.0)
    assert s.test_triples == {NOTE_EXAMPLE.triple}
    assert realize(NOTE_EXAMPLE) in s.test


def test_split_keeps_every_word_of_a_held_out_triple_in_training() -> None:
    # Few triples, large held-out fractions: only the coverage rule keeps words in training.
    triples = [("我", "爱", "机器学习"), ("我", "爱", "音乐"), ("他", "爱", "音乐"),
               ("他", "吃", "苹果"), ("我", "吃", "苹果"), ("她", "听", "音乐"), ("我", "听", "故事"),
               ("他", "听", "故事"), ("她", "爱", "机器学习")]
    pairs = [realize(f) for f in iter_frames() if f.triple in triples and f.place is None]
    for seed in range(5):
        s = split(pairs, seed=seed, valid_frac=0.3, test_frac=0.4)
        known = {t for p in s.train for t in (*p.src, *p.tgt)}
        for pair in (*s.valid, *s.test):
            assert set(pair.src) | set(pair.tgt) <= known, (seed, pair.src_text)
        assert s.valid and s.test
    # A small random corpus: held-out splits shrink rather than lose words from training.
    for seed in range(10):
        pairs = generate_pairs(60, seed=seed)
        s = split(pairs, seed=seed, valid_frac=0.2, test_frac=0.2)
        known = {t for p in s.train for t in (*p.src, *p.tgt)}
        assert all(set(p.src) | set(p.tgt) <= known for p in (*s.valid, *s.test))
        assert s.test


def test_split_errors() -> None:
    with pytest.raises(ValueError, match="test_frac must be in"):
        split(generate_pairs(100), test_frac=1.5)
    with pytest.raises(ValueError, match="valid_frac \\+ test_frac must be < 1"):
        split(generate_pairs(100), valid_frac=0.5, test_frac=0.5)
    with pytest.raises(ValueError, match="pairs is empty"):
        split([])


# ---------------------------------------------------------------------------------------------
# Vocabularies
# ---------------------------------------------------------------------------------------------


def test_vocab_specials_order_and_unknowns() -> None:
    vocab = Vocab.build([["b", "a"], ["c", "a"]])
    assert vocab.itos == ("<pad>", "<bos>", "<eos>", "<unk>", "a", "b", "c")
    assert (PAD_ID, BOS_ID, EOS_ID, UNK_ID) == (0, 1, 2, 3)
    assert len(vocab) == 7
    assert vocab["a"] == 4 and vocab["zzz"] == UNK_ID
    assert "a" in vocab and "zzz" not in vocab
    assert vocab.encode(["c", "zzz", "a"]) == [6, UNK_ID, 4]
    assert vocab.decode([BOS_ID, 6, UNK_ID, 4, EOS_ID, 5, PAD_ID]) == ["c", "<unk>", "a"]
    assert vocab.decode(torch.tensor([6, 4, PAD_ID])) == ["c", "a"]
    assert vocab.decode([BOS_ID, 4, EOS_ID], strip_special=False) == ["<bos>", "a", "<eos>"]


def test_vocab_errors() -> None:
    with pytest.raises(ValueError, match="special tokens"):
        Vocab.build([["a", "<eos>"]])
    with pytest.raises(ValueError, match="id 9 is outside the vocabulary"):
        Vocab.build([["a"]]).decode([9])
    with pytest.raises(ValueError, match="itos must start with"):
        Vocab(("a", "b"))


# ---------------------------------------------------------------------------------------------
# Batching
# ---------------------------------------------------------------------------------------------


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.integers(1, 50), min_size=1, max_size=8), min_size=1, max_size=6))
def test_pad_batch(sequences: list[list[int]]) -> None:
    padded, lengths = pad_batch(sequences, pad_id=0)
    assert padded.dtype == lengths.dtype == torch.long
    assert padded.shape == (len(sequences), max(map(len, sequences)))
    assert lengths.tolist() == [len(s) for s in sequences]
    for row, seq in zip(padded.tolist(), sequences, strict=True):
        assert row[: len(seq)] == seq
        assert set(row[len(seq):]) <= {0}


def test_pad_batch_errors() -> None:
    with pytest.raises(ValueError, match="sequences is empty"):
        pad_batch([])
    with pytest.raises(ValueError, match=r"sequences\[1\] is empty"):
        pad_batch([[1], []])


def test_batches_shapes_shift_and_padding(corpus: Corpus) -> None:
    src_vocab, tgt_vocab = corpus.src_vocab, corpus.tgt_vocab
    data = corpus.train[:70]
    got = list(batches(data, src_vocab, tgt_vocab, batch_size=32))
    assert [b.src.shape[0] for b in got] == [32, 32, 6]
    rows = [p for b in got for p in b.pairs]
    assert rows == list(data)
    for b in got:
        assert b.tgt_in.shape == b.tgt_out.shape
        assert b.src.shape[1] == int(b.src_lengths.max())
        assert b.tgt_in.shape[1] == int(b.tgt_lengths.max())
        for row, pair in enumerate(b.pairs):
            n_src, n_tgt = len(pair.src), len(pair.tgt) + 1
            assert b.src_lengths[row] == n_src and b.tgt_lengths[row] == n_tgt
            assert src_vocab.decode(b.src[row]) == list(pair.src)
            assert b.tgt_in[row, 0] == BOS_ID
            assert b.tgt_out[row, n_tgt - 1] == EOS_ID
            assert tgt_vocab.decode(b.tgt_out[row]) == list(pair.tgt)
            assert torch.equal(b.tgt_in[row, 1:n_tgt], b.tgt_out[row, : n_tgt - 1])
            assert bool((b.src[row, n_src:] == PAD_ID).all())
            assert bool((b.tgt_in[row, n_tgt:] == PAD_ID).all())
            assert bool((b.tgt_out[row, n_tgt:] == PAD_ID).all())


def test_batches_shuffle_is_seeded(corpus: Corpus) -> None:
    def order(seed: int) -> list[tuple[str, ...]]:
        got = batches(corpus.train[:200], corpus.src_vocab, corpus.tgt_vocab, 16, True, seed)
        return [tuple(p.src) for b in got for p in b.pairs]

    assert order(0) == order(0)
    assert order(0) != order(1)
    assert sorted(order(0)) == sorted(p.src for p in corpus.train[:200])


def test_batches_map_unknown_words_to_unk(corpus: Corpus) -> None:
    pair = realize(NOTE_EXAMPLE)
    vocab = Vocab.build([["我", "爱"]])
    b = next(batches([pair], vocab, corpus.tgt_vocab, 1))
    assert b.src[0].tolist() == [vocab["我"], vocab["爱"], UNK_ID]


@dataclass(frozen=True)
class RawPair:
    src: tuple[str, ...]
    tgt: tuple[str, ...]


def test_batches_errors(corpus: Corpus) -> None:
    v_src, v_tgt = corpus.src_vocab, corpus.tgt_vocab
    ok = RawPair(("我", "爱", "音乐"), ("i", "love", "music"))
    with pytest.raises(ValueError, match="pairs is empty"):
        next(batches([], v_src, v_tgt, 4))
    with pytest.raises(ValueError, match="batch_size must be >= 1, got 0"):
        next(batches([ok], v_src, v_tgt, 0))
    with pytest.raises(ValueError, match=r"pairs\[1\].src is an empty sentence"):
        next(batches([ok, RawPair((), ("i",))], v_src, v_tgt, 4))
    with pytest.raises(ValueError, match=r"pairs\[0\].tgt is an empty sentence"):
        next(batches([RawPair(("我",), ())], v_src, v_tgt, 4))
    with pytest.raises(ValueError, match=r"pairs\[0\].src has length 3, longer than max_len=2"):
        next(batches([ok], v_src, v_tgt, 4, max_len=2))
    with pytest.raises(ValueError, match=r"tgt has length 3 \+ 1 for <bos>/<eos>, longer than "
                                         r"max_len=3"):
        next(batches([ok], v_src, v_tgt, 4, max_len=3))
    assert next(batches([ok], v_src, v_tgt, 4, max_len=4)).tgt_in.shape == (1, 4)


# ---------------------------------------------------------------------------------------------
# Sanity tasks
# ---------------------------------------------------------------------------------------------


def test_copy_task() -> None:
    src, tgt = copy_task(64, length=10, num_symbols=10, seed=0)
    assert src.shape == tgt.shape == (64, 10) and src.dtype == torch.long
    assert torch.equal(src, tgt)
    assert int(src.min()) == 1 and int(src.max()) == 10
    assert torch.equal(copy_task(64, seed=0)[0], src)
    assert not torch.equal(copy_task(64, seed=1)[0], src)


def test_reverse_task() -> None:
    src, tgt = reverse_task(32, length=7, num_symbols=5, seed=3)
    assert src.shape == tgt.shape == (32, 7)
    for row in range(32):
        assert tgt[row].tolist() == src[row].tolist()[::-1]
    assert 1 <= int(src.min()) and int(src.max()) <= 5
    assert torch.equal(reverse_task(32, length=7, num_symbols=5, seed=3)[1], tgt)


def test_sanity_task_errors() -> None:
    with pytest.raises(ValueError, match="length must be >= 1, got 0"):
        copy_task(4, length=0)
    with pytest.raises(ValueError, match="num_symbols must be >= 1, got 0"):
        reverse_task(4, num_symbols=0)
