"""Part-of-speech tagging for POS-guided softmax and sampling (POSG).

Tag text with PTB tags (`load_tagger`: spaCy by default, Stanza offline), cache tagged corpora on
disk (`CachedTagger`), give each BPE piece its word's tag (`align_tokens`), group tags for people
(`coarse_group_of`, `tags_of_group`) and measure tagging accuracy on UD EWT (`read_conllu`,
`tagging_accuracy`; `python -m engine.pos.bench_tagger`). Backend libraries load lazily.

For the POSG head: `engine.pos.vocab` (V_ρ from the training split, `pos_vocab.json`),
`engine.pos.training` (tag a training corpus, V_ρ and the observed group id of every token) and
`engine.pos.diversity` (distinct n-POS and adjectives per sentence of generated text).
"""

from engine.pos.accuracy import AccuracyReport, tagging_accuracy
from engine.pos.align import align_tokens
from engine.pos.backends import BACKENDS, DEFAULT_BACKEND, load_tagger
from engine.pos.cache import CachedTagger, default_cache_dir
from engine.pos.conllu import GoldSentence, read_conllu
from engine.pos.spacy_backend import SpacyTagger
from engine.pos.stanza_backend import StanzaTagger
from engine.pos.tagger import TaggedWord, Tagger, TaggerUnavailableError
from engine.pos.tags import COARSE_GROUPS, FALLBACK_TAG, PTB_TAGS, coarse_group_of, tags_of_group

__all__ = [
    "BACKENDS",
    "COARSE_GROUPS",
    "DEFAULT_BACKEND",
    "FALLBACK_TAG",
    "PTB_TAGS",
    "AccuracyReport",
    "CachedTagger",
    "GoldSentence",
    "SpacyTagger",
    "StanzaTagger",
    "TaggedWord",
    "Tagger",
    "TaggerUnavailableError",
    "align_tokens",
    "coarse_group_of",
    "default_cache_dir",
    "load_tagger",
    "read_conllu",
    "tagging_accuracy",
    "tags_of_group",
]
