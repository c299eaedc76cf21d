"""Data: a toy Chinese → English translation corpus, vocabularies, batching, synthetic tasks.

The source note translates 我爱机器学习 into "i love machine learning". This package grows that
one example into a corpus of long sentences whose English word order differs from the Chinese
one across long distances, so that a translation model needs attention, and which runs offline
on a CPU. One idea a module:

* ``attnlib.data.lexicon``: the words, their English forms and classes;
* ``attnlib.data.grammar``: sentence trees and their realisation (Chinese, every English
  reference, the word alignment);
* ``attnlib.data.corpus``: sampling at a difficulty, the held-out-combination splits;
* ``attnlib.data.vocab``: vocabularies and the special tokens;
* ``attnlib.data.batching``: padding and (length-bucketed) teacher-forcing batches;
* ``attnlib.data.tasks``: copying, reversal, key-value retrieval and an object among image
  regions.

Every name is importable from :mod:`attnlib.data` itself.
"""

from attnlib.data.batching import Batch, TokenPair, batches, pad_batch
from attnlib.data.corpus import (
    DEFAULT_N_PAIRS,
    DIFFICULTIES,
    Corpus,
    Difficulty,
    Splits,
    generate_pairs,
    make_corpus,
    sample_sentence,
    split,
)
from attnlib.data.grammar import (
    CONNECTIVES,
    FUNCTION_WORDS,
    MAX_REFERENCES,
    NOTE_EXAMPLE,
    Clause,
    Connective,
    NounPhrase,
    Pair,
    RelativeClause,
    Sentence,
    classes_of,
    iter_subtrees,
    realize,
    reference_count,
    references,
    source_length,
)
from attnlib.data.lexicon import (
    CLASSES,
    PEOPLE,
    PLACES,
    PRONOUNS,
    TENSES,
    THINGS,
    TIMES,
    VERBS,
    Place,
    Pronoun,
    Tense,
    Thing,
    TimeWord,
    Verb,
    VerbForms,
    lexicon_words,
)
from attnlib.data.tasks import (
    RegionTask,
    RetrievalTask,
    copy_task,
    key_retrieval_task,
    object_region_task,
    reverse_task,
)
from attnlib.data.vocab import (
    BOS,
    BOS_ID,
    EOS,
    EOS_ID,
    PAD,
    PAD_ID,
    SPECIALS,
    UNK,
    UNK_ID,
    Vocab,
)

__all__ = [
    "BOS", "BOS_ID", "CLASSES", "CONNECTIVES", "DEFAULT_N_PAIRS", "DIFFICULTIES", "EOS",
    "EOS_ID",
    "FUNCTION_WORDS",
    "MAX_REFERENCES", "NOTE_EXAMPLE", "PAD", "PAD_ID", "PEOPLE", "PLACES",
    "PRONOUNS", "SPECIALS", "TENSES", "THINGS", "TIMES", "UNK", "UNK_ID", "VERBS", "Batch",
    "Clause", "Connective", "Corpus", "Difficulty", "NounPhrase", "Pair", "Place", "Pronoun",
    "RegionTask", "RelativeClause", "RetrievalTask", "Sentence", "Splits", "Tense", "Thing", "TimeWord",
    "TokenPair", "Verb", "VerbForms", "Vocab", "batches", "classes_of", "copy_task",
    "generate_pairs", "iter_subtrees", "key_retrieval_task", "lexicon_words", "make_corpus", "object_region_task",
    "pad_batch", "realize", "reference_count", "references", "reverse_task", "sample_sentence", "source_length", "split",
]
