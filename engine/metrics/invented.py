"""Invented-word rate: the share of generated words that never occur in the model's training text.

A **word** is a maximal run of letters (Unicode letters: regex `[^\\W\\d_]+`), case-folded; digits,
punctuation, apostrophes and whitespace separate words, so "Don't stop-2" has the words don, t, stop.
Both sides must be split the same way: a language model's decoded text against its raw training
documents, a PermGen model's normalised words against its normalised training text (lowercased and
PTB-tokenized alike). The rate is (generated word occurrences not in the training word set) /
(all generated word occurrences), in [0, 1]; 0 for texts with no words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

WORD = re.compile(r"[^\W\d_]+")


def words(text: str) -> list[str]:
    """The case-folded words of `text`, in order (see the module docstring)."""
    return [w.casefold() for w in WORD.findall(text)]


def word_set(texts: Iterable[str]) -> frozenset[str]:
    """Every word occurring in `texts`."""
    return frozenset(w for text in texts for w in words(text))


def invented_word_rate(generated: Sequence[str], vocabulary: frozenset[str]) -> float:
    """Share of the words of `generated` that are not in `vocabulary`."""
    found = [w for text in generated for w in words(text)]
    return sum(w not in vocabulary for w in found) / len(found) if found else 0.0
