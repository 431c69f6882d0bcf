"""Diversity across the shown variants: pairwise Self-BLEU and Distinct-2, from engine.metrics.

Definitions, computed by engine.metrics (one implementation for the app and `variorum eval`):
- Self-BLEU = mean over variants of BLEU-4(variant, all OTHER variants as references) — never the
  variant itself (Texygen's slow path includes it, a known bug) — `engine.metrics.bleu.self_bleu`
  with the settings of sacrebleu's `sentence_score`: 13a tokenization (sacrebleu's tokenizer),
  exponential smoothing and effective order, 0–100, lower = more diverse. (`variorum eval`'s LM
  table uses the same function with Texygen's floor smoothing over BPE tokens.)
- Distinct-2 = distinct word bigrams / all word bigrams pooled over the variants (lowercased
  whitespace words): `engine.metrics.diversity.distinct_n_corpus`, 0–1, higher = more diverse.
- Near-identical pairs: MS-Jaccard-2 of two variants' lowercased words, punctuation dropped: the geometric
  mean of the unigram and bigram multiset Jaccard (Σ min count / Σ max count), 0–1, at or above
  `NEAR_IDENTICAL`. For two single texts this is `engine.metrics.similarity.ms_jaccard`, counted here
  with Counters because its numpy tables cost ~2 ms a pair, too slow for 28 pairs on the UI thread.
  It needs no optional package, so the flag shows even where Self-BLEU cannot.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from itertools import pairwise

from engine.metrics.bleu import self_bleu as _self_bleu
from engine.metrics.diversity import distinct_n_corpus

WORD = re.compile(r"\w+")  # punctuation is not a difference worth a word: "day." is "day"
NEAR_IDENTICAL = 0.8  # MS-Jaccard-2 of two variants at or above this flags them as nearly the same

_tokenize_13a: Callable[[str], str] | None
try:  # imported up front: a first import inside the UI thread would stall it for ~0.2 s
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    _tokenize_13a = Tokenizer13a()  # type: ignore[no-untyped-call]
except ImportError:  # the optional `metrics` extra is not installed: Self-BLEU shows "–"
    _tokenize_13a = None


def self_bleu(texts: Sequence[str]) -> float | None:
    """Pairwise Self-BLEU (0–100) of ≥ 2 non-empty texts; None when it is undefined or sacrebleu is missing."""
    texts = [t for t in texts if t.strip()]
    if len(texts) < 2 or _tokenize_13a is None:
        return None
    tokens = [_tokenize_13a(t).split() for t in texts]
    return 100 * _self_bleu(tokens, 4, smooth="exp", effective_order=True)


def distinct_n(texts: Sequence[str], n: int = 2) -> float | None:
    """Distinct-n over all texts; None when there are no n-grams."""
    words = [text.lower().split() for text in texts]
    if not any(len(w) >= n for w in words):
        return None
    return distinct_n_corpus(words, n)


def _grams(text: str) -> tuple[Counter[tuple[str, ...]], Counter[tuple[str, ...]]]:
    """Unigram and bigram counts of a text's lowercased words."""
    words = WORD.findall(text.lower())
    return Counter((word,) for word in words), Counter(pairwise(words))


def _ms_jaccard_2(a: tuple[Counter[tuple[str, ...]], ...], b: tuple[Counter[tuple[str, ...]], ...]) -> float:
    if not a[0] or not b[0]:
        return 0.0
    product = 1.0
    for first, second in zip(a, b, strict=True):
        union = sum((first | second).values())
        product *= sum((first & second).values()) / union if union else 0.0
    return float(product**0.5)


def similarity(a: str, b: str) -> float:
    """MS-Jaccard-2 of two texts' lowercased words (0 = nothing shared, 1 = the same words in the same pairs)."""
    return _ms_jaccard_2(_grams(a), _grams(b))


def near_identical(texts: Sequence[str], threshold: float = NEAR_IDENTICAL) -> list[list[int]]:
    """For each text, the indices of the other texts at least `threshold` similar to it."""
    grams = [_grams(text) for text in texts]
    twins: list[list[int]] = [[] for _ in texts]
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            if _ms_jaccard_2(grams[i], grams[j]) >= threshold:
                twins[i].append(j)
                twins[j].append(i)
    return twins


DIVERSITY_HELP = ("How different the shown variants are from each other. Shared wording: Self-BLEU, the "
                  "overlap of each variant with the others (0–100%, lower = more different). Fresh word pairs: "
                  "Distinct-2, the share of word pairs that occur once (higher = more varied).")


def readout(texts: Sequence[str]) -> str:
    """One line for the panel header, in plain words (the measures' names are in DIVERSITY_HELP)."""
    sb, d2 = self_bleu(texts), distinct_n(texts, 2)
    parts = [
        "Shared wording –" if sb is None else f"Shared wording {sb:.0f}%",
        "fresh word pairs –" if d2 is None else f"fresh word pairs {100 * d2:.0f}%",
    ]
    return " · ".join(parts)
