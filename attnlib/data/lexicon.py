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

About three hundred content words in all (:func:`lexicon_words`). A class is
a set of nouns that some verb takes, named after what the verb does to them where no common
name fits ("cooked" for 煮 cook, "moved" for 搬 move, "worn" for 穿 wear); every class is taken
by at least one verb (checked at import), so every noun can be an object.

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
        "叔叔": "uncle", "阿姨": "aunt", "爷爷": "grandfather", "奶奶": "grandmother",
        "儿子": "son", "女儿": "daughter", "丈夫": "husband", "妻子": "wife",
        "服务员": "waiter", "秘书": "secretary", "教授": "professor", "工人": "worker",
        "运动员": "athlete", "病人": "patient", "顾客": "customer", "游客": "tourist",
        "导演": "director", "程序员": "programmer", "教练": "coach", "同事": "colleague",
        "飞行员": "pilot", "法官": "judge",
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
    # more subjects of study
    "生物": _t("biology", False, "study"),
    "地理": _t("geography", False, "study"),
    "经济学": _t("economics", False, "study"),
    "哲学": _t("philosophy", False, "study"),
    "文学": _t("literature", False, "study"),
    "艺术": _t("art", False, "study"),
    "日语": _t("japanese", False, "study"),
    # more food and drink ("cooked": 煮 cook; "cut": 切 cut; "planted": 种 plant)
    "香蕉": _t("banana", True, "food", "goods"),
    "橙子": _t("orange", True, "food", "goods", "cut"),
    "西瓜": _t("watermelon", True, "food", "goods", "cut"),
    "饺子": _t("dumplings", False, "food", "made", "cooked"),
    "鸡肉": _t("chicken", False, "food", "goods", "cooked", "cut"),
    "牛肉": _t("beef", False, "food", "goods", "cooked", "cut"),
    "蔬菜": _t("vegetables", False, "food", "goods", "cooked", "washed", "planted"),
    "水果": _t("fruit", False, "food", "goods", "washed"),
    "汤": _t("soup", False, "food", "made", "cooked"),
    "巧克力": _t("chocolate", False, "food", "goods", "made"),
    "披萨": _t("pizza", True, "food", "made", "cut"),
    "豆腐": _t("tofu", False, "food", "goods", "cooked", "cut"),
    "土豆": _t("potato", True, "food", "goods", "cooked", "cut", "planted"),
    "西红柿": _t("tomato", True, "food", "goods", "cut", "washed", "planted"),
    "啤酒": _t("beer", False, "drink", "goods"),
    "葡萄酒": _t("wine", False, "drink", "goods"),
    "绿茶": _t("green tea", False, "drink", "goods"),
    "酸奶": _t("yogurt", False, "drink", "goods"),
    # more texts; things told (讲 tell); tasks (完成 finish)
    "日记": _t("diary", True, "text", "written"),
    "论文": _t("thesis", True, "text", "written", "task"),
    "词典": _t("dictionary", True, "text", "goods", "lent", "tool"),
    "课本": _t("textbook", True, "text", "goods", "lent", "lost"),
    "笔记": _t("notes", False, "text", "written", "lent"),
    "新闻": _t("news", False, "text", "heard"),
    "短信": _t("message", True, "text", "written", "received"),
    "明信片": _t("postcard", True, "text", "written", "received"),
    "笑话": _t("joke", True, "told", "heard", "written"),
    "秘密": _t("secret", True, "told"),
    "谎话": _t("lies", False, "told"),
    "童话": _t("fairy tale", True, "told", "text", "heard", "written"),
    "作业": _t("homework", False, "task"),
    "任务": _t("task", True, "task"),
    "项目": _t("project", True, "task"),
    "计划": _t("plan", True, "task", "written"),
    "实验": _t("experiment", True, "task"),
    # more media
    "电视剧": _t("tv series", True, "watched"),
    "节目": _t("show", True, "watched", "heard"),
    "演出": _t("performance", True, "watched"),
    "广播": _t("radio", True, "heard"),
    "国歌": _t("national anthem", True, "sung", "heard"),
    "民歌": _t("folk song", True, "sung", "heard", "written"),
    # clothes (穿 wear; 洗 wash)
    "衣服": _t("clothes", False, "goods", "worn", "washed", "lost"),
    "裤子": _t("trousers", False, "goods", "worn", "washed"),
    "裙子": _t("skirt", True, "goods", "worn", "washed"),
    "鞋": _t("shoes", False, "goods", "worn", "washed", "lost"),
    "衬衫": _t("shirt", True, "goods", "worn", "washed"),
    "外套": _t("coat|jacket", True, "goods", "worn", "washed", "lost"),
    # small things, kitchen things
    "手表": _t("watch", True, "goods", "lost", "machine"),
    "眼镜": _t("glasses", False, "goods", "lost"),
    "钱包": _t("wallet", True, "goods", "lost", "opened"),
    "笔": _t("pen", True, "goods", "tool", "lent", "lost"),
    "纸": _t("paper", False, "goods", "tool", "cut"),
    "杯子": _t("cup", True, "goods", "washed"),
    "碗": _t("bowl", True, "goods", "washed"),
    "盘子": _t("plate", True, "goods", "washed"),
    "筷子": _t("chopsticks", False, "goods", "tool", "washed"),
    "刀": _t("knife", True, "goods", "tool", "washed"),
    # furniture and machines ("moved": 搬 move)
    "沙发": _t("sofa", True, "goods", "moved", "cleaned"),
    "床": _t("bed", True, "goods", "moved"),
    "书架": _t("bookshelf", True, "goods", "moved", "made"),
    "箱子": _t("box", True, "goods", "moved", "opened", "made"),
    "冰箱": _t("fridge|refrigerator", True, "goods", "machine", "moved", "opened", "cleaned"),
    "洗衣机": _t("washing machine", True, "goods", "machine", "moved"),
    "相机": _t("camera", True, "goods", "machine", "tool", "lost", "lent"),
    "电视": _t("tv|television", True, "goods", "machine", "moved"),
    # instruments (弹 play) and sports (打 play)
    "钢琴": _t("piano", True, "goods", "instrument", "moved"),
    "吉他": _t("guitar", True, "goods", "instrument", "lent"),
    "小提琴": _t("violin", True, "goods", "instrument"),
    "篮球": _t("basketball", False, "sport", "watched"),
    "网球": _t("tennis", False, "sport", "watched"),
    "乒乓球": _t("table tennis|ping pong", False, "sport", "watched"),
    "羽毛球": _t("badminton", False, "sport", "watched"),
    # vehicles (坐 take)
    "公共汽车": _t("bus", True, "vehicle"),
    "出租车": _t("taxi", True, "vehicle"),
    "地铁": _t("subway|metro", True, "vehicle"),
    "火车": _t("train", True, "vehicle"),
    "飞机": _t("plane", True, "vehicle"),
    "船": _t("boat", True, "vehicle"),
    # animals (喂 feed; 画 draw) and nature
    "猫": _t("cat", True, "animal", "drawn", "lost"),
    "狗": _t("dog", True, "animal", "drawn", "lost"),
    "鸟": _t("bird", True, "animal", "drawn"),
    "马": _t("horse", True, "animal", "drawn"),
    "熊猫": _t("panda", True, "animal", "drawn"),
    "老虎": _t("tiger", True, "animal", "drawn"),
    "树": _t("tree", True, "drawn", "planted"),
    "山": _t("mountain", True, "drawn"),
    "草": _t("grass", False, "planted"),
    "月亮": _t("moon", True, "drawn"),
    # sights (参观 visit)
    "博物馆": _t("museum", True, "visited"),
    "动物园": _t("zoo", True, "visited"),
    "展览": _t("exhibition", True, "visited"),
    "长城": _t("great wall", True, "visited"),
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
    "讨论": Verb((_v("discuss", "discusses", "discussed"),), ("study", "task", "written")),
    "完成": Verb((_v("finish", "finishes", "finished"), _v("complete", "completes", "completed")),
                 ("task",)),
    "检查": Verb((_v("check", "checks", "checked"),), ("task", "machine")),
    "煮": Verb((_v("cook", "cooks", "cooked"),), ("cooked",)),
    "切": Verb((_v("cut", "cuts", "cut"),), ("cut",)),
    "尝": Verb((_v("taste", "tastes", "tasted"),), ("food", "drink")),
    "讲": Verb((_v("tell", "tells", "told"),), ("told",)),
    "关": Verb((_v("close", "closes", "closed"),), ("opened",)),
    "弹": Verb((_v("play", "plays", "played"),), ("instrument",)),
    "打": Verb((_v("play", "plays", "played"),), ("sport",)),
    "坐": Verb((_v("take", "takes", "took"),), ("vehicle",)),
    "喂": Verb((_v("feed", "feeds", "fed"),), ("animal",)),
    "画": Verb((_v("draw", "draws", "drew"),), ("drawn",)),
    "种": Verb((_v("plant", "plants", "planted"),), ("planted",)),
    "洗": Verb((_v("wash", "washes", "washed"),), ("washed",)),
    "穿": Verb((_v("wear", "wears", "wore"),), ("worn",)),
    "带": Verb((_v("bring", "brings", "brought"),), ("tool", "lent")),
    "还": Verb((_v("return", "returns", "returned"),), ("lent",)),
    "翻译": Verb((_v("translate", "translates", "translated"),), ("written",)),
    "搬": Verb((_v("move", "moves", "moved"),), ("moved",)),
    "忘记": Verb((_v("forget", "forgets", "forgot"),), ("person", "told", "lost")),
    "参观": Verb((_v("visit", "visits", "visited"),), ("visited",)),
    "邀请": Verb((_v("invite", "invites", "invited"),), ("person",)),
    "感谢": Verb((_v("thank", "thanks", "thanked"),), ("person",)),
    "保护": Verb((_v("protect", "protects", "protected"),), ("person", "animal")),
    "练习": Verb((_v("practise", "practises", "practised"),), ("instrument", "sport", "sung")),
})

PLACES: Final[Mapping[str, Place]] = MappingProxyType({
    zh: Place(tuple(tuple(e.split()) for e in en.split("|"))) for zh, en in {
        "北京": "in beijing", "上海": "in shanghai", "学校": "at school", "家里": "at home",
        "图书馆": "in the library", "公园": "in the park",
        "医院": "at the hospital|in the hospital", "商店": "at the shop",
        "办公室": "in the office", "饭馆": "at the restaurant", "咖啡馆": "at the cafe",
        "大学": "at the university", "车站": "at the station", "超市": "at the supermarket",
        "海边": "at the beach|by the sea",
        "广州": "in guangzhou", "香港": "in hong kong", "南京": "in nanjing",
        "公司": "at the company", "银行": "at the bank", "机场": "at the airport",
        "酒店": "at the hotel|in the hotel", "教室": "in the classroom",
        "厨房": "in the kitchen", "花园": "in the garden", "农村": "in the countryside",
        "邮局": "at the post office", "电影院": "at the cinema",
        "实验室": "in the lab|in the laboratory", "体育馆": "at the stadium",
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
    "前天": TimeWord(("the", "day", "before", "yesterday"), ("past",)),
    "后天": TimeWord(("the", "day", "after", "tomorrow"), ("future",)),
    "每周": TimeWord(("every", "week"), ("present",)),
    "每年": TimeWord(("every", "year"), ("present",)),
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
    taken = {cls for verb in VERBS.values() for cls in verb.objects}
    for cls in CLASSES:
        assert cls in taken, f"no verb takes class {cls}"


_check_lexicon()
