"""Normalised and display text: the one word-tokenized form some data sets are written in, and back.

The ROCStories (Plan-and-Write) and AGENDA data are lowercased and word-tokenized ("he did n't
go , so he stayed ."). Other story sets and a writer's text are normalised the same way
(`normalize`: lowercase + a small PTB-like tokenizer) so a model trained on them always sees one
form, and such text is turned back into ordinary prose for display (`detokenize`: joins
punctuation and clitics, capitalises sentence starts and the pronoun "i"). The language model's
Plan-and-Write reader, the real-words lists and PermGen's data and decoding all use these.

Abbreviations keep their periods, as the Penn Treebank tokenizer and the Plan-and-Write files do ("mr.",
"u.s."): runs of single letters with periods ("U.S.", "e.g.", "a.m.") and the short words of `ABBREVIATIONS`.
A word after one is not taken for a sentence start, so "U.S. sales" does not come back as "U. S. Sales".
"""

from __future__ import annotations

import re
from collections.abc import Sequence

WORD = re.compile(r"[^\W\d_]+")  # a word: a maximal run of letters (engine/metrics/invented.py)
_CLITICS = re.compile(r"(?i)\b(\w+)(n't)\b|(\w)('s|'re|'ll|'ve|'m|'d)\b")
_PUNCT = re.compile(r"([.,!?;:()\"]|--)")
_SPACE_BEFORE = re.compile(r"\s+([.,!?;:%)\]}]|n't|'s|'re|'ll|'ve|'m|'d)(?=\s|$)")
_SPACE_AFTER = re.compile(r"([(\[{$])\s+")
_SENTENCE_START = re.compile(r"(^|(\S*[.!?])\s+)([a-z])")  # group 2: the token that ends the sentence
# Titles and company words that are written with a period and almost never end a sentence ("etc." often does).
ABBREVIATIONS = ("mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "co", "corp", "inc", "ltd", "vs", "mt", "ft",
                 "gov", "sen", "rep", "gen", "col", "capt", "lt", "sgt", "fig", "al")
_ABBREVIATION = re.compile(r"(?i)\b(?:(?:[a-z]\.){2,}|(?:" + "|".join(ABBREVIATIONS) + r")\.)(?![\w.])")


def is_abbreviation(token: str) -> bool:
    """Whether `token` is an abbreviation whose period belongs to it ("U.S.", "mr.", "e.g.")."""
    return _ABBREVIATION.fullmatch(token) is not None


def normalize(text: str, lowercase: bool = True) -> str:
    """Lowercase (optionally) and split punctuation and clitics off words, PTB style."""
    text = text.replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')
    text = _CLITICS.sub(lambda m: f"{m.group(1)} {m.group(2)}" if m.group(1) else f"{m.group(3)} {m.group(4)}", text)
    text = " ".join(_split_punctuation(text).split())
    return text.lower() if lowercase else text


def _split_punctuation(text: str) -> str:
    """`text` with spaces around its punctuation, abbreviations kept whole."""
    pieces, done = [], 0
    for match in _ABBREVIATION.finditer(text):
        pieces += [_PUNCT.sub(r" \1 ", text[done:match.start()]), f" {match.group()} "]
        done = match.end()
    return "".join([*pieces, _PUNCT.sub(r" \1 ", text[done:])])


def join_tokens(text: str) -> str:
    """Tokenized text with punctuation and clitics joined back and the pronoun "i" capitalised
    ("i did n't go ." → "I didn't go."), sentence starts left as they are."""
    text = " ".join(text.replace("``", '"').replace("''", '"').split())
    text = _SPACE_BEFORE.sub(r"\1", text)
    text = _SPACE_AFTER.sub(r"\1", text)
    return re.sub(r"\bi\b", "I", text)


def detokenize(text: str) -> str:
    """Tokenized lowercase text → display prose ("he did n't go ." → "He didn't go."); a word after an
    abbreviation is not capitalised ("mr. smith")."""
    return _SENTENCE_START.sub(_capitalised_start, join_tokens(text))


def _capitalised_start(match: re.Match[str]) -> str:
    ending_token = match.group(2)
    if ending_token is not None and is_abbreviation(ending_token):
        return match.group(0)
    return match.group(1) + match.group(3).upper()


def display_paragraph(sentences: Sequence[str]) -> str:
    """Sentences (already in display order) → one paragraph of prose."""
    return " ".join(detokenize(s) for s in sentences if s.strip())
