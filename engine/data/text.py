"""Normalised and display text: the one word-tokenized form some data sets are written in, and back.

The ROCStories (Plan-and-Write) and AGENDA data are lowercased and word-tokenized ("he did n't
go , so he stayed ."). Other story sets and a writer's text are normalised the same way
(`normalize`: lowercase + a small PTB-like tokenizer) so a model trained on them always sees one
form, and such text is turned back into ordinary prose for display (`detokenize`: joins
punctuation and clitics, capitalises sentence starts and the pronoun "i"). The language model's
Plan-and-Write reader, the real-words lists and PermGen's data and decoding all use these.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

WORD = re.compile(r"[^\W\d_]+")  # a word: a maximal run of letters (engine/metrics/invented.py)
_CLITICS = re.compile(r"(?i)\b(\w+)(n't)\b|(\w)('s|'re|'ll|'ve|'m|'d)\b")
_PUNCT = re.compile(r"([.,!?;:()\"]|--)")
_SPACE_BEFORE = re.compile(r"\s+([.,!?;:%)\]}]|n't|'s|'re|'ll|'ve|'m|'d)(?=\s|$)")
_SPACE_AFTER = re.compile(r"([(\[{$])\s+")
_SENTENCE_START = re.compile(r"(^|[.!?]\s+)([a-z])")


def normalize(text: str, lowercase: bool = True) -> str:
    """Lowercase (optionally) and split punctuation and clitics off words, PTB style."""
    text = text.replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')
    text = _CLITICS.sub(lambda m: f"{m.group(1)} {m.group(2)}" if m.group(1) else f"{m.group(3)} {m.group(4)}", text)
    text = _PUNCT.sub(r" \1 ", text)
    text = " ".join(text.split())
    return text.lower() if lowercase else text


def join_tokens(text: str) -> str:
    """Tokenized text with punctuation and clitics joined back and the pronoun "i" capitalised
    ("i did n't go ." → "I didn't go."), sentence starts left as they are."""
    text = " ".join(text.replace("``", '"').replace("''", '"').split())
    text = _SPACE_BEFORE.sub(r"\1", text)
    text = _SPACE_AFTER.sub(r"\1", text)
    return re.sub(r"\bi\b", "I", text)


def detokenize(text: str) -> str:
    """Tokenized lowercase text → display prose ("he did n't go ." → "He didn't go.")."""
    return _SENTENCE_START.sub(lambda m: m.group(1) + m.group(2).upper(), join_tokens(text))


def display_paragraph(sentences: Sequence[str]) -> str:
    """Sentences (already in display order) → one paragraph of prose."""
    return " ".join(detokenize(s) for s in sentences if s.strip())
