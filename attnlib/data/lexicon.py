"""The lexicon of the toy Chinese → English grammar: every word, its English forms, its class.

Chinese is word-segmented (one word a token); English is lowercase and whitespace-tokenised.
Words are grouped by what the grammar does with them:

* :data:`PRONOUNS`: 我 你 他 她 我们 他们, with English subject, object and possessive forms;
* :data:`PEOPLE`: nouns for persons ("the teacher"); they can be subjects, objects,
  companions, possessors, and the head of a relative clause whose gap is the subject;
* :data:`THINGS`: nouns for things, each in one or more *classes* (food, texts, ...); a count
  noun takes "the", a mass noun ("music", "machine learning") none;
* :data:`VERBS`: transitive verbs, each with its English forms and the classes of object it
  takes (one eats food, reads texts, meets people);
* :data:`PLACES` (在 P → "in/at P"), :data:`TIMES` (time words and the tenses they allow).

Where English has two words for one Chinese word (修 "fix" / "repair", 电影 "movie" / "film"),
the entry lists both, the first being the default; the corpus keeps every choice as a reference.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal, get_args

__all__ = [
    "CLASSES",
    "PEOPLE",
    "PLACES",
    "PRONOUNS",
    "TENSES",
    "THINGS",
    "TIMES",
    "VERBS",
    "Place",
    "Pronoun",
    "Tense",
    "Thing",
    "TimeWord",
    "Verb",
    "VerbForms",
    "lexicon_words",
]

Tense = Literal["present", "past", "future"]
TENSES: Final[tuple[Tense, ...]] = get_args(Tense)


@dataclass(frozen=True)
class Pronoun:
    """A personal pronoun: English subject, object and possessive forms; agreement."""

    subject: str
    object: str
    possessive: str
    third_singular: bool
    plural: bool


@dataclass(frozen=True)
class Thing:
    """A noun for a thing: its English words (synonyms first-default), count or mass, classes."""

    en: tuple[tuple[str, ...], ...]
    count: bool
    classes: tuple[str, ...]


@dataclass(frozen=True)
class VerbForms:
    """One English verb: bare, third-person singular and past forms (each a word sequence)."""

    base: tuple[str, ...]
    third: tuple[str, ...]
    past: tuple[str, ...]


@dataclass(frozen=True)
class Verb:
    """A transitive verb: its English synonyms (the first is the default) and its object classes."""

    forms: tuple[VerbForms, ...]
    objects: tuple[str, ...]


@dataclass(frozen=True)
class Place:
    """A place: the English preposition(s) that 在 becomes, and the English noun phrase."""

    en: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class TimeWord:
    """A time word: its English words and the tenses it allows."""

    en: tuple[str, ...]
    tenses: tuple[Tense, ...]


def _v(base: str, third: str, past: str) -> VerbForms:
    return VerbForms(tuple(base.split()), tuple(third.split()), tuple(past.split()))


PRONOUNS: Final[Mapping[str, Pronoun]] = MappingProxyType({
    "我": Pronoun("i", "me", "my", third_singular=False, plural=False),
    "你": Pronoun("you", "you", "your", third_singular=False, plural=False),
    "他": Pronoun("he", "him", "his", third_singular=True, plural=False),
    "她": Pronoun("she", "her", "her", third_singular=True, plural=False),
    "我们": Pronoun("we", "us", "our", third_singular=False, plural=True),
    "他们": Pronoun("they", "them", "their", third_singular=False, plural=True),
})

PEOPLE: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType({
    zh: tuple(en.split()) for zh, en in {
        "老师": "teacher", "学生": "student", "医生": "doctor", "护士": "nurse",
        "孩子": "child", "朋友": "friend", "同学": "classmate", "妈妈": "mother",
        "爸爸": "father", "哥哥": "brother", "姐姐": "sister", "经理": "manager",
        "工程师": "engineer", "司机": "driver", "厨师": "cook", "作家": "writer",
        "画家": "painter", "农民": "farmer", "警察": "police officer", "邻居": "neighbour",
        "老板": "boss", "客人": "guest", "记者": "reporter", "律师": "lawyer",
        "科学家": "scientist", "歌手": "singer", "演员": "actor", "校长": "headmaster",
    }.items()
})


def _t(en: str, count: bool, *classes: str) -> Thing:
    return Thing(tuple(tuple(e.split()) for e in en.split("|")), count, classes)


THINGS: Final[Mapping[str, Thing]] = MappingProxyType({
    # subjects of study (mass nouns)
    "机器学习": _t("machine learning", False, "study"),
    "数学": _t("math|mathematics", False, "study"),
    "音乐": _t("music", False, "study", "heard"),
    "历史": _t("history", False, "study"),
    "英语": _t("english", False, "study"),
    "中文": _t("chinese", False, "study"),
    "物理": _t("physics", False, "study"),
    "化学": _t("chemistry", False, "study"),
    # food and drink
    "苹果": _t("apple", True, "food", "goods"),
    "蛋糕": _t("cake", True, "food", "goods", "made"),
    "面包": _t("bread", False, "food", "goods", "made"),
    "米饭": _t("rice", False, "food"),
    "面条": _t("noodles", False, "food", "made"),
    "鱼": _t("fish", True, "food", "goods"),
    "鸡蛋": _t("egg", True, "food", "goods"),
    "咖啡": _t("coffee", False, "drink", "goods", "made"),
    "茶": _t("tea", False, "drink", "goods", "made"),
    "牛奶": _t("milk", False, "drink", "goods"),
    "水": _t("water", False, "drink"),
    "果汁": _t("juice", False, "drink", "goods", "made"),
    # texts
    "书": _t("book", True, "text", "goods", "lent"),
    "信": _t("letter", True, "text", "written", "received"),
    "故事": _t("story", True, "text", "written", "heard"),
    "报纸": _t("newspaper", True, "text", "goods"),
    "杂志": _t("magazine", True, "text", "goods", "lent"),
    "小说": _t("novel", True, "text", "written", "goods", "lent"),
    "诗": _t("poem", True, "text", "written"),
    "文章": _t("article", True, "text", "written"),
    "报告": _t("report", True, "text", "written", "received"),
    "代码": _t("code", False, "text", "written"),
    "邮件": _t("email", True, "text", "written", "received"),
    # media
    "电影": _t("movie|film", True, "watched"),
    "歌": _t("song", True, "heard", "sung", "written"),
    "照片": _t("photo|picture", True, "received", "lost"),
    "比赛": _t("game|match", True, "watched"),
    # artefacts
    "车": _t("car", True, "goods", "machine", "lent"),
    "自行车": _t("bike|bicycle", True, "goods", "machine", "lent"),
    "电脑": _t("computer", True, "goods", "machine", "opened", "lent", "tool"),
    "手机": _t("phone", True, "goods", "machine", "tool"),
    "房子": _t("house", True, "goods", "cleaned"),
    "门": _t("door", True, "machine", "opened"),
    "窗户": _t("window", True, "machine", "opened", "cleaned"),
    "桌子": _t("table", True, "goods", "machine", "cleaned", "made"),
    "椅子": _t("chair", True, "goods", "machine", "made"),
    "包": _t("bag", True, "goods", "opened", "lent"),
    "钥匙": _t("key", True, "tool", "lost"),
    "帽子": _t("hat", True, "goods", "lost"),
    "地图": _t("map", True, "goods", "tool", "lost"),
    "票": _t("ticket", True, "goods", "lost", "received"),
    "礼物": _t("gift|present", True, "goods", "received", "made"),
    "花": _t("flower", True, "goods", "received"),
    "雨伞": _t("umbrella", True, "goods", "lost", "tool", "lent"),
})

CLASSES: Final[tuple[str, ...]] = (
    "person", *sorted({c for thing in THINGS.values() for c in thing.classes})
)
"""Object classes: "person" (:data:`PEOPLE` and pronouns) and the classes of :data:`THINGS`."""

VERBS: Final[Mapping[str, Verb]] = MappingProxyType({
    "爱": Verb((_v("love", "loves", "loved"),), ("person", "study", "food", "drink")),
    "喜欢": Verb((_v("like", "likes", "liked"),),
                 ("person", "study", "food", "drink", "text", "watched", "heard")),
    "学习": Verb((_v("study", "studies", "studied"),), ("study",)),
    "教": Verb((_v("teach", "teaches", "taught"),), ("study",)),
    "吃": Verb((_v("eat", "eats", "ate"),), ("food",)),
    "喝": Verb((_v("drink", "drinks", "drank"),), ("drink",)),
    "买": Verb((_v("buy", "buys", "bought"),), ("goods",)),
    "卖": Verb((_v("sell", "sells", "sold"),), ("goods",)),
    "读": Verb((_v("read", "reads", "read"),), ("text",)),
    "写": Verb((_v("write", "writes", "wrote"),), ("written",)),
    "听": Verb((_v("listen to", "listens to", "listened to"),), ("heard",)),
    "看": Verb((_v("watch", "watches", "watched"), _v("see", "sees", "saw")), ("watched",)),
    "唱": Verb((_v("sing", "sings", "sang"),), ("sung",)),
    "做": Verb((_v("make", "makes", "made"),), ("made",)),
    "修": Verb((_v("fix", "fixes", "fixed"), _v("repair", "repairs", "repaired")),
               ("machine",)),
    "打开": Verb((_v("open", "opens", "opened"),), ("opened",)),
    "打扫": Verb((_v("clean", "cleans", "cleaned"),), ("cleaned",)),
    "借": Verb((_v("borrow", "borrows", "borrowed"),), ("lent",)),
    "用": Verb((_v("use", "uses", "used"),), ("tool",)),
    "丢": Verb((_v("lose", "loses", "lost"),), ("lost",)),
    "收到": Verb((_v("receive", "receives", "received"), _v("get", "gets", "got")),
                 ("received",)),
    "找": Verb((_v("look for", "looks for", "looked for"),), ("person", "lost")),
    "认识": Verb((_v("know", "knows", "knew"),), ("person",)),
    "帮助": Verb((_v("help", "helps", "helped"),), ("person",)),
    "见": Verb((_v("meet", "meets", "met"),), ("person",)),
    "等": Verb((_v("wait for", "waits for", "waited for"),), ("person",)),
    "问": Verb((_v("ask", "asks", "asked"),), ("person",)),
    "相信": Verb((_v("believe", "believes", "believed"),), ("person",)),
    "想念": Verb((_v("miss", "misses", "missed"),), ("person",)),
    "照顾": Verb((_v("look after", "looks after", "looked after"),
                  _v("take care of", "takes care of", "took care of")), ("person",)),
})

PLACES: Final[Mapping[str, Place]] = MappingProxyType({
    zh: Place(tuple(tuple(e.split()) for e in en.split("|"))) for zh, en in {
        "北京": "in beijing", "上海": "in shanghai", "学校": "at school", "家里": "at home",
        "图书馆": "in the library", "公园": "in the park",
        "医院": "at the hospital|in the hospital", "商店": "at the shop",
        "办公室": "in the office", "饭馆": "at the restaurant", "咖啡馆": "at the cafe",
        "大学": "at the university", "车站": "at the station", "超市": "at the supermarket",
        "海边": "at the beach|by the sea",
    }.items()
})

TIMES: Final[Mapping[str, TimeWord]] = MappingProxyType({
    "昨天": TimeWord(("yesterday",), ("past",)),
    "上周": TimeWord(("last", "week"), ("past",)),
    "去年": TimeWord(("last", "year"), ("past",)),
    "今天": TimeWord(("today",), ("present", "past", "future")),
    "每天": TimeWord(("every", "day"), ("present",)),
    "明天": TimeWord(("tomorrow",), ("future",)),
    "下周": TimeWord(("next", "week"), ("future",)),
    "明年": TimeWord(("next", "year"), ("future",)),
})


def lexicon_words() -> frozenset[str]:
    """Every Chinese content word of the lexicon (the function words are the grammar's)."""
    return frozenset({*PRONOUNS, *PEOPLE, *THINGS, *VERBS, *PLACES, *TIMES})


def _check_lexicon() -> None:
    words = [*PRONOUNS, *PEOPLE, *THINGS, *VERBS, *PLACES, *TIMES]
    assert len(words) == len(set(words)), "a Chinese word occurs in two word classes"
    for zh, verb in VERBS.items():
        for cls in verb.objects:
            assert cls in CLASSES, f"verb {zh} takes an unknown class {cls}"


_check_lexicon()
