"""Tests for attnlib.data's grammar, corpus and splits: the long-sentence zh → en corpus.

Sentences are checked against translations written out by hand here, not against the library's
own output; corpus-wide properties (lengths, alignments, references, determinism, disjoint
splits) are checked on generated corpora.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest

from attnlib import data
from attnlib.data import (
    NOTE_EXAMPLE,
    Clause,
    Corpus,
    NounPhrase,
    Pair,
    RelativeClause,
    Sentence,
    generate_pairs,
    make_corpus,
    realize,
    split,
)

NP = NounPhrase


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return make_corpus(seed=0, n_pairs=6000)


@pytest.fixture(scope="module")
def pairs(corpus: Corpus) -> list[Pair]:
    return [*corpus.train, *corpus.valid, *corpus.test]


# ---------------------------------------------------------------------------------------------
# Sentences written out by hand
# ---------------------------------------------------------------------------------------------

KNOWN = [
    (NOTE_EXAMPLE, "我 爱 机器学习", ["i love machine learning"]),
    (Sentence(Clause(NP("老师"), "喝", NP("牛奶"), place="北京", time="昨天", negated=True,
                     tense="past")),
     "昨天 老师 没 在 北京 喝 牛奶",
     ["the teacher did not drink milk in beijing yesterday",
      "yesterday the teacher did not drink milk in beijing"]),
    (Sentence(Clause(NP("我们"), "买", NP("书"), companion=NP("朋友", possessor=NP("我")),
                     tense="future", dou=True)),
     "我们 都 会 和 我 的 朋友 一起 买 书",
     ["we will all buy the book with my friend"]),
    # a relative clause whose gap is the subject, and one whose gap is the object
    (Sentence(Clause(NP("学生", relative=RelativeClause("喜欢", object=NP("音乐"))), "读",
                     NP("小说", relative=RelativeClause("写", subject=NP("他"))), tense="past")),
     "喜欢 音乐 的 学生 读 了 他 写 的 小说",
     ["the student who likes music read the novel that he writes"]),
    # nested: the subject of the inner clause has its own relative clause (centre embedding)
    (Sentence(Clause(NP("我"), "认识", NP("老师", relative=RelativeClause(
        "帮助", subject=NP("孩子", relative=RelativeClause("想念", subject=NP("她"),
                                                           negated=True)))))),
     "我 认识 她 不 想念 的 孩子 帮助 的 老师",
     ["i know the teacher that the child that she does not miss helps"]),
    # possessives, nested, and a coordinated object
    (Sentence(Clause(NP("医生", possessor=NP("朋友", possessor=NP("你"))), "卖",
                     NP("车", conjunct=NP("自行车")))),
     "你 的 朋友 的 医生 卖 车 和 自行车",
     ["your friend 's doctor sells the car and the bike",
      "your friend 's doctor sells the car and the bicycle"]),
    (Sentence(Clause(NP("他"), "学习", NP("数学")), "because",
              Clause(NP("他们"), "喝", NP("茶"), negated=True)),
     "因为 他 学习 数学 ， 所以 他们 不 喝 茶",
     ["because he studies math , they do not drink tea",
      "because he studies mathematics , they do not drink tea",
      "they do not drink tea because he studies math",
      "they do not drink tea because he studies mathematics"]),
    (Sentence(Clause(NP("你"), "教", NP("英语")), "if",
              Clause(NP("我"), "照顾", NP("孩子"), tense="future")),
     "如果 你 教 英语 ， 我 就 会 照顾 孩子",
     ["if you teach english , i will look after the child",
      "if you teach english , i will take care of the child",
      "i will look after the child if you teach english",
      "i will take care of the child if you teach english"]),
    (Sentence(Clause(NP("她"), "写", NP("信"), tense="past"), "although",
              Clause(NP("经理"), "收到", NP("邮件"), negated=True, tense="past")),
     "虽然 她 写 了 信 ， 但是 经理 没 收到 邮件",
     ["although she wrote the letter , the manager did not receive the email",
      "although she wrote the letter , the manager did not get the email",
      "she wrote the letter , but the manager did not receive the email",
      "she wrote the letter , but the manager did not get the email"]),
    (Sentence(Clause(NP("他们"), "唱", NP("歌")), "and",
              Clause(NP("她"), "听", NP("音乐"), time="每天")),
     "他们 唱 歌 ， 而且 每天 她 听 音乐",
     ["they sing the song , and she listens to music every day",
      "they sing the song , and every day she listens to music"]),
]


@pytest.mark.parametrize("tree, zh, en", KNOWN, ids=[zh for _, zh, _ in KNOWN])
def test_known_sentences(tree: Sentence, zh: str, en: list[str]) -> None:
    pair = realize(tree)
    assert pair.src_text == zh
    assert sorted(" ".join(r) for r in pair.references) == sorted(en)
    assert pair.tgt == pair.references[0]
    assert data.source_length(tree) == len(pair.src)
    assert data.reference_count(tree) == len(en)


def test_every_choice_is_a_reference_and_alignments_fit_each_target() -> None:
    tree = KNOWN[-3][0]
    rng = random.Random(0)
    targets = {realize(tree, rng).tgt for _ in range(60)}
    assert targets == set(realize(tree).references)


def test_realize_rejects_ungrammatical_trees() -> None:
    bad = [
        (Sentence(Clause(NP("我"), "吃", NP("数学"))), "object of verb '吃'"),
        (Sentence(Clause(NP("书"), "爱", NP("音乐"))), "must be a person or a pronoun"),
        (Sentence(Clause(NP("它"), "爱", NP("音乐"))), "got '它'"),
        (Sentence(Clause(NP("我"), "爱", NP("音乐"), tense="future", time="昨天")), "allowed: past"),
        (Sentence(Clause(NP("我"), "爱", NP("音乐"), dou=True)), "都 needs a plural"),
        (Sentence(Clause(NP("我", relative=RelativeClause("爱", object=NP("茶"))), "爱",
                         NP("茶"))), "a pronoun"),
        (Sentence(Clause(NP("老师"), "爱", NP("书", relative=RelativeClause(
            "爱", object=NP("茶"))))), "must be a person"),
        (Sentence(Clause(NP("老师"), "爱", NP("茶", relative=RelativeClause("喝")))),
         "exactly one of subject and object"),
        (Sentence(Clause(NP("我"), "爱", NP("茶")), "if", Clause(NP("我"), "爱", NP("茶"))),
         "second future"),
        (Sentence(Clause(NP("我"), "爱", NP("茶")), "because"), "both be set"),
        (Sentence(Clause(NP("我", conjunct=NP("你")), "爱", NP("茶"))), "only a clause's object"),
    ]
    for tree, message in bad:
        with pytest.raises(ValueError, match=message):
            realize(tree)
    with pytest.raises(TypeError, match="sentence must be a Sentence"):
        realize(Clause(NP("我"), "爱", NP("茶")))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Corpus-wide properties
# ---------------------------------------------------------------------------------------------


def test_lengths_span_3_to_over_40_and_are_spread_evenly(pairs: list[Pair]) -> None:
    lengths = Counter(len(p.src) for p in pairs)
    assert min(lengths) == 3 and max(lengths) >= 40
    assert all(lengths[n] > 0 for n in range(3, 41))
    shares = [lengths[n] for n in range(3, 31)]
    assert max(shares) <= 1.5 * min(shares)  # as many long sentences as short ones
    assert all(len(p.src) <= 11 for p in generate_pairs(300, 0, difficulty=0))
    means = [sum(len(p.src) for p in generate_pairs(300, 0, difficulty=d)) / 300
             for d in (0, 1, 2)]
    assert means == sorted(means)


def test_things_come_up_about_equally_often_as_objects() -> None:
    """A verb draws one of its object classes, then a thing weighted by the inverse of how
    often the uniform draw reaches it. Drawn uniformly, the rarest thing would come up at 0.29
    of the mean rate and the most frequent at 2.6 times it; weighted, at 0.57 and 1.9."""
    from attnlib.data.corpus import _noun

    rng = random.Random(0)
    bare = data.Difficulty(depth=0, p_modifier=0.0, p_two_clauses=0.0, max_src_len=45)
    verbs = list(data.VERBS.values())
    counts = Counter(_noun(rng, "object", rng.choice(verbs).objects, 0, bare).head
                     for _ in range(80_000))
    things = [counts[thing] for thing in data.THINGS]
    mean = sum(things) / len(things)
    assert min(things) > 0.45 * mean and max(things) < 2.2 * mean


def test_lexicon_has_a_few_hundred_words(corpus: Corpus) -> None:
    assert len(data.lexicon_words()) >= 290
    assert len(corpus.tgt_vocab) >= 400


def test_alignment_links_every_token_and_glosses_content_words(pairs: list[Pair]) -> None:
    for pair in pairs:
        assert pair.alignment == tuple(sorted(set(pair.alignment)))
        assert {s for s, _ in pair.alignment} == set(range(len(pair.src)))
        assert {t for _, t in pair.alignment} == set(range(len(pair.tgt)))
        for s, t in pair.alignment:
            zh, en = pair.src[s], pair.tgt[t]
            if zh in data.PEOPLE and en != "the":
                assert en in data.PEOPLE[zh]
            if zh in data.THINGS and en != "the":
                assert any(en in words for words in data.THINGS[zh].en)
            if en in ("who", "that", "'s"):
                assert zh == "的"
            if en == "will":
                assert zh == "会"


def test_long_sentences_reorder_across_long_distances(pairs: list[Pair]) -> None:
    long_pairs = [p for p in pairs if len(p.src) >= 30]
    assert len(long_pairs) > 100
    jumps = []
    for pair in long_pairs:
        first = {}
        for s, t in pair.alignment:
            first.setdefault(t, s)
        order = [first[t] for t in range(len(pair.tgt))]
        jumps.append(max(abs(a - b) for a, b in itertools.pairwise(order)))
    assert sorted(jumps)[len(jumps) // 2] >= 10  # the median longest jump spans 10+ words


def test_references_hold_the_target_and_are_distinct(pairs: list[Pair]) -> None:
    multi = 0
    for pair in pairs:
        refs = pair.references
        assert pair.tgt in refs and len(set(refs)) == len(refs)
        assert len(refs) == data.reference_count(pair.tree) <= data.MAX_REFERENCES
        assert realize(pair.tree).tgt == refs[0]
        multi += len(refs) > 1
    assert multi > len(pairs) / 2
    targets = Counter(p.tgt == p.references[0] for p in pairs if len(p.references) > 1)
    assert targets[False] > targets[True] / 4  # training targets use the other orders too


def test_the_chinese_determines_the_references() -> None:
    rng = random.Random(1)
    seen: dict[tuple[str, ...], tuple[tuple[str, ...], ...]] = {}
    for _ in range(4000):
        pair = realize(data.sample_sentence(rng, 2))
        refs = tuple(sorted(pair.references))
        assert seen.setdefault(pair.src, refs) == refs, pair.src_text


def test_same_seed_same_corpus_and_global_random_state_untouched() -> None:
    state = random.getstate()
    a = generate_pairs(500, seed=3)
    assert random.getstate() == state
    assert generate_pairs(500, seed=3) == a
    assert generate_pairs(500, seed=4) != a
    assert len({p.src for p in a}) == 500
    assert a[0] == realize(NOTE_EXAMPLE)


# ---------------------------------------------------------------------------------------------
# Splits
# ---------------------------------------------------------------------------------------------


def test_splits_are_disjoint_by_triple_and_sentence(corpus: Corpus) -> None:
    s = corpus.splits
    assert len(corpus.train) + len(corpus.valid) + len(corpus.test) == 6000
    assert s.valid_triples.isdisjoint(s.test_triples)
    train_triples = {p.triple for p in corpus.train}
    assert train_triples.isdisjoint(s.test_triples | s.valid_triples)
    assert {p.triple for p in corpus.test} == s.test_triples
    assert {p.triple for p in corpus.valid} == s.valid_triples
    sources = [p.src for p in (*corpus.train, *corpus.valid, *corpus.test)]
    assert len(set(sources)) == len(sources)
    assert 500 <= len(corpus.test) <= 700 and 500 <= len(corpus.valid) <= 700


def test_note_example_is_in_test(corpus: Corpus) -> None:
    note = realize(NOTE_EXAMPLE)
    assert note in corpus.test
    assert NOTE_EXAMPLE.triple in corpus.splits.test_triples
    assert all(p.triple != NOTE_EXAMPLE.triple for p in corpus.train)


def test_held_out_words_all_occur_in_training(corpus: Corpus) -> None:
    for side, vocab in (("src", corpus.src_vocab), ("tgt", corpus.tgt_vocab)):
        for pair in (*corpus.valid, *corpus.test):
            sentences = [pair.src] if side == "src" else list(pair.references)
            assert all(w in vocab for sentence in sentences for w in sentence)


def test_held_out_test_covers_every_length_bin(corpus: Corpus) -> None:
    lengths = Counter(min(len(p.src) // 10, 3) for p in corpus.test)
    assert all(lengths[b] >= 60 for b in range(4)), lengths


def test_split_is_seeded_and_checks_its_arguments(pairs: list[Pair]) -> None:
    assert split(pairs, 1) == split(pairs, 1)
    assert split(pairs, 1).test != split(pairs, 2).test
    assert NOTE_EXAMPLE.triple in split(pairs, 5, test_frac=0.0).test_triples
    with pytest.raises(ValueError, match="valid_frac must be in"):
        split(pairs, valid_frac=1.5)
    with pytest.raises(ValueError, match="valid_frac \\+ test_frac must be < 1"):
        split(pairs, 0, 0.5, 0.6)
    with pytest.raises(ValueError, match="pairs is empty"):
        split([])


def test_generate_pairs_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="n_pairs must be an integer >= 1"):
        generate_pairs(0)
    with pytest.raises(ValueError, match="difficulty must be"):
        generate_pairs(10, difficulty=7)
    with pytest.raises(ValueError, match="max_src_len must be an integer >= 3"):
        generate_pairs(10, max_src_len=2)
    assert all(len(p.src) <= 12 for p in generate_pairs(200, max_src_len=12))
