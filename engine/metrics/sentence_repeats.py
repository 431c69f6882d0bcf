"""Repeated sentences: a variant that says the same sentence twice, or copies one of its prompt's sentences.

Small and pretrained models alike fall into writing one sentence four or five times; `repeats_a_sentence`
finds it on plain text. Sentences are split after `.`, `!` or `?` (closing quotes and brackets kept with
them) and compared lowercased, with punctuation and spacing ignored; sentences of fewer than `MIN_WORDS`
words ("Yes." "He did.") may recur in good prose and are not counted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

MIN_WORDS = 3
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+")
_NOT_WORD = re.compile(r"[^\w\s]+")


def sentence_keys(text: str) -> list[str]:
    """Each sentence of `text` with at least MIN_WORDS words, normalised for comparison."""
    keys = []
    for sentence in _SENTENCE_END.split(text):
        words = _NOT_WORD.sub(" ", sentence.lower()).split()
        if len(words) >= MIN_WORDS:
            keys.append(" ".join(words))
    return keys


def repeats_a_sentence(text: str, prompt: str = "") -> bool:
    """Whether `text` holds one sentence twice, or one of `prompt`'s sentences."""
    keys = sentence_keys(text)
    return len(set(keys)) < len(keys) or bool(set(keys) & set(sentence_keys(prompt)))


def repeated_sentence_share(texts: Sequence[str], prompts: Sequence[str] | None = None) -> float:
    """Share of `texts` that repeat a sentence (of their own, or of the matching prompt when given)."""
    if not texts:
        raise ValueError("the repeated-sentence share needs at least one text")
    given = prompts if prompts is not None else [""] * len(texts)
    return sum(repeats_a_sentence(t, p) for t, p in zip(texts, given, strict=True)) / len(texts)
