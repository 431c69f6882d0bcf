"""Keyword extraction: a storyline (one keyword per sentence) and keywords from a title.

Plan-and-Write (Yao et al. 2019), whose ROCStories storylines we train on, extracted one word
per sentence with RAKE (Rose et al. 2010). We do the same for story sets that have no storyline:
RAKE candidate phrases are the runs of words between stopwords and punctuation; a word scores
degree(w) / frequency(w) over the paragraph's phrases, a phrase the sum of its words; each
sentence contributes the best-scoring word of its best phrase not already used (ties → the
earlier word). The app uses `title_keywords` when a writer gives a title but no keywords:
the title's content words, in order, without repeats.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from engine.data.stop_words import SPACY_ENGLISH_STOP_WORDS

_WORD = re.compile(r"[a-z][a-z'-]*")
STOPWORDS = SPACY_ENGLISH_STOP_WORDS | {"n't", "'s", "'m", "'re", "'ll", "'ve", "'d"}


def candidate_phrases(sentence: str) -> list[list[str]]:
    """Runs of content words of a (normalised, lowercase) sentence, split at stopwords/punctuation."""
    phrases: list[list[str]] = [[]]
    for token in sentence.lower().split():
        if _WORD.fullmatch(token) and token not in STOPWORDS and len(token) > 1:
            phrases[-1].append(token)
        elif phrases[-1]:
            phrases.append([])
    return [p for p in phrases if p]


def word_scores(phrases: Sequence[Sequence[str]]) -> dict[str, float]:
    """RAKE word score degree(w) / freq(w), degree = Σ over phrases holding w of the phrase length."""
    frequency: Counter[str] = Counter()
    degree: Counter[str] = Counter()
    for phrase in phrases:
        for word in phrase:
            frequency[word] += 1
            degree[word] += len(phrase)
    return {w: degree[w] / frequency[w] for w in frequency}


def storyline(sentences: Sequence[str]) -> list[str]:
    """One keyword per sentence (sentences with no content word contribute none)."""
    per_sentence = [candidate_phrases(s) for s in sentences]
    scores = word_scores([p for phrases in per_sentence for p in phrases])
    chosen: list[str] = []
    for phrases in per_sentence:
        ranked = sorted(phrases, key=lambda p: -sum(scores[w] for w in p))  # stable: ties keep text order
        for phrase in ranked:
            fresh = [w for w in phrase if w not in chosen]
            if fresh:
                chosen.append(max(fresh, key=lambda w: (scores[w], -phrase.index(w))))
                break
    return chosen


def title_keywords(title: str) -> list[str]:
    """Content words of a title, in order, without repeats."""
    words = [w for phrase in candidate_phrases(title) for w in phrase]
    return list(dict.fromkeys(words))
