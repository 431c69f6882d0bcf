"""Keep the paraphrase pairs that really rephrase: the rewrite keeps the source's content and changes its words.

The pairs we have are of two bad kinds for a writer's paraphraser (docs/model-recipes.md): near-copies
(most TurkCorpus simplifications change a word or two) teach a model to give its input back, and loose
pairs (much of ParaSCI) teach it to drop or invent content. A PermGen paraphrase config can keep only
the pairs between the two (`PermGenConfig.pair_min_content_kept`, `pair_max_similarity`):

- **content kept** (`content_kept`): the share of the source's distinct content words
  (engine/permgen/content_words.py, compared in lowercase) that the rewrite also has; 1.0 for a
  source without content words. A rewrite that loses the source's meaning scores low.
- **word similarity** (`word_similarity`): difflib's ratio 2·M / (|s| + |t|) over the two lowercased
  word sequences, M the words in their longest matching blocks. A copy scores 1.0; a rewrite that
  changes many words or their order scores lower.

A pair is kept when content kept ≥ the minimum and similarity ≤ the maximum; the defaults (0.0, 1.0)
keep every pair. With `pair_within_floor` a pair is also read only in the directions whose rewrite the
meaning floor would show a writer (`within_floor`, engine/permgen/meaning_floor.py: content words kept
≥ 85%, added ≤ 15%, no new name, not a copy; compared in lowercase), so that the model learns only the
kind of rewrite the floor lets through: a pair kept at 75% may drop a quarter of its sentence, a rewrite
the floor turns away. The pair must pass forward (held out, it is read forward only); its reverse is
trained on when it passes too. The filters act on all pairs before the
held-out split, so held-out numbers are measured on the same kind of pair that was trained on.
Matching word forms exactly undercounts kept content when the rewrite inflects a word differently
("moved" / "moves"); we accept that, as it only makes the filter stricter.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from engine.data.paragraphs import ParagraphExample
from engine.data.text import normalize
from engine.permgen.config import PermGenConfig
from engine.permgen.content_words import content_words
from engine.permgen.meaning_floor import MeaningFloor
from engine.permgen.paraphrase_readers import both_directions

_FLOOR = MeaningFloor(lowercase=True)  # the writer's floor, without its rewording fallback


def content_kept(source: str, rewrite: str) -> float:
    """Share of the distinct content words of `source` that `rewrite` also has (lowercase), in [0, 1]."""
    wanted = {word.lower() for word in content_words(source)}
    if not wanted:
        return 1.0
    return len(wanted & {word.lower() for word in content_words(rewrite)}) / len(wanted)


def word_similarity(source: str, rewrite: str) -> float:
    """difflib's matching ratio of the two lowercased word sequences, in [0, 1]; 1.0 for the same words."""
    words = [normalize(text, lowercase=True).split() for text in (source, rewrite)]
    return difflib.SequenceMatcher(None, words[0], words[1], autojunk=False).ratio()


def is_rephrasing(source: str, rewrite: str, min_content_kept: float, max_similarity: float) -> bool:
    """True when `rewrite` keeps at least `min_content_kept` of the content of `source` and its word
    similarity to it is at most `max_similarity`."""
    return content_kept(source, rewrite) >= min_content_kept and word_similarity(source, rewrite) <= max_similarity


def rephrasing_pairs(pairs: Sequence[ParagraphExample], min_content_kept: float,
                     max_similarity: float) -> list[ParagraphExample]:
    """The one-sentence pairs of `pairs` that rephrase (`is_rephrasing`); (0.0, 1.0) keeps them all."""
    return [pair for pair in pairs if len(pair.sentences) == 1
            and is_rephrasing(pair.title, pair.sentences[0], min_content_kept, max_similarity)]


def within_floor(pairs: Sequence[ParagraphExample]) -> list[ParagraphExample]:
    """The one-sentence pairs of `pairs` whose rewrite (read source → target) the meaning floor keeps."""
    return [pair for pair in pairs if len(pair.sentences) == 1 and _FLOOR.keeps(pair.title, pair.sentences[0])]


def selected_pairs(examples: Sequence[ParagraphExample], config: PermGenConfig) -> list[ParagraphExample]:
    """The examples a paraphrase model with `config` trains and is held out on, read forward; other tasks keep
    all."""
    if config.task != "paraphrase" or not config.filters_pairs:
        return list(examples)
    kept = rephrasing_pairs(examples, config.pair_min_content_kept, config.pair_max_similarity)
    return within_floor(kept) if config.pair_within_floor else kept


def training_directions(pairs: list[ParagraphExample], config: PermGenConfig) -> list[ParagraphExample]:
    """`pairs` (selected, forward) and their reverses, those the floor would not show dropped with
    `pair_within_floor`."""
    both = both_directions(pairs)
    return within_floor(both) if config.pair_within_floor else both
