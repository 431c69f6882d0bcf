"""POS statistics of generated text: distinct n-POS (POSG Table 3) and adjectives per sentence (Table 9).

Both tag the *decoded text* with a tagger (the same one the POSG model was trained with), so they
also apply to models without POS groups, and they measure what a reader sees rather than the tags
the sampler drew.

- distinct n-POS: a text's n-POS are the contiguous n-grams of its word-tag sequence (POSG §5.2);
  the score is `engine.metrics.diversity.distinct_n_per_text` over those tag sequences (distinct
  n-POS / n-POS of each text, averaged over texts) — the Distinct-n definition of the continuation
  table it is reported next to, as `engine.metrics.diversity` prescribes (one definition each).
- adjectives per sentence: words tagged JJ / JJR / JJS ("adjectives", `engine.pos.tags`) divided
  by the number of sentences, pooled over all texts. A sentence ends at a word tagged "." (PTB's
  sentence-final punctuation: . ! ?); trailing words after the last one count as one more
  (unfinished) sentence; a text with no words has no sentences.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.metrics.diversity import distinct_n_per_text
from engine.pos.tagger import TaggedWord, Tagger
from engine.pos.tags import PTB_TAGS, tags_of_group

SENTENCE_END_TAG = "."


def tag_sequences(words: Sequence[Sequence[TaggedWord]]) -> list[list[int]]:
    """Word-tag ids of each text (PTB_TAGS order; unknown labels after them, in first-seen order)."""
    index = {tag: i for i, tag in enumerate(PTB_TAGS)}
    result = []
    for text_words in words:
        result.append([index.setdefault(w.tag_, len(index)) for w in text_words])
    return result


def distinct_n_pos(words: Sequence[Sequence[TaggedWord]], n: int) -> float:
    """Per-text distinct n-POS / n-POS, averaged over the texts (see the module docstring)."""
    return distinct_n_per_text(tag_sequences(words), n)


def count_sentences(text_words: Sequence[TaggedWord]) -> int:
    """Sentences of one tagged text: "."-tagged words, plus one for trailing words after the last."""
    ends = sum(w.tag_ == SENTENCE_END_TAG for w in text_words)
    trailing = bool(text_words) and text_words[-1].tag_ != SENTENCE_END_TAG
    return ends + int(trailing)


def adjectives_per_sentence(words: Sequence[Sequence[TaggedWord]]) -> float:
    """Adjective words / sentences, pooled over the texts (0.0 when there is no sentence)."""
    adjective_tags = set(tags_of_group("adjectives"))
    adjectives = sum(w.tag_ in adjective_tags for text_words in words for w in text_words)
    sentences = sum(count_sentences(text_words) for text_words in words)
    return adjectives / sentences if sentences else 0.0


def pos_statistics(texts: Sequence[str], tagger: Tagger, orders: Sequence[int] = (1, 2, 3)) -> dict[str, float]:
    """Tag `texts` and return {"distinct_pos_n": …, "adjectives_per_sentence": …}."""
    words = tagger.tag_texts(texts, progress=False)
    stats = {f"distinct_pos_{n}": distinct_n_pos(words, n) for n in orders}
    stats["adjectives_per_sentence"] = adjectives_per_sentence(words)
    return stats
