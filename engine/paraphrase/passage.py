"""Split a writer's passage into sentences and put rewritten sentences back in its layout.

`split_passage` returns character spans [start, end) of the sentences; everything between them
(spaces, line breaks, paragraph breaks) is kept verbatim by `reassemble`, so a paraphrased passage
keeps its layout. A sentence ends after . ! ? (or a run of them, plus closing quotes/brackets)
followed by whitespace, except after a title-like abbreviation ("Dr.", "e.g.") or a single-letter
initial ("J. K."), or after an ambiguous one ("p.m.", "etc.") unless the next word is capitalised;
a blank line always ends one; the passage end ends the last. Decimals ("3.5")
and dotted names ("engine.py") never split, since no whitespace follows their dot.

`paraphrase_spans` is how both paraphrasers (a paraphrase bundle's, engine/permgen/paraphrase.py, and
rewording, engine/rewording/stream.py) take a passage: each sentence costs a parse and a model pass
(tens of milliseconds on a laptop CPU, several times that on a busy one), so a passage over
`MAX_PASSAGE_WORDS` words, `MAX_PASSAGE_SENTENCES` sentences or `MAX_PASSAGE_CHARS` characters is
refused with a message saying so, before any of that work starts (docs/paraphrase.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

TITLES = frozenset({  # never end a sentence (they always precede a word that belongs to it)
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "vs", "e.g", "i.e", "cf", "al", "fig", "figs",
    "eq", "eqs", "no", "nos", "vol", "pp", "approx", "sec", "ch", "resp",
})
AMBIGUOUS = frozenset({  # end a sentence only when the next word is capitalised
    "a.m", "p.m", "etc", "inc", "ltd", "co", "corp", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec", "ed", "eds", "u.s", "u.k",
})
MAX_PASSAGE_WORDS = 2000
MAX_PASSAGE_SENTENCES = 200
MAX_PASSAGE_CHARS = 20_000
_END = re.compile(r"[.!?]+[\"'”’)\]]*(?=\s|$)")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")
_WORD_BEFORE = re.compile(r"([\w.]+)\.$")


def _is_abbreviation(text: str, dot: int) -> bool:
    """True when the '.' at `dot` closes an abbreviation or an initial, not a sentence."""
    match = _WORD_BEFORE.search(text[: dot + 1])
    if match is None:
        return False
    word = match.group(1).lower()
    if word in TITLES or (len(word) == 1 and word.isalpha()):
        return True
    following = text[dot + 1 :].lstrip()
    return word in AMBIGUOUS and not (following[:1].isupper())


def _block_sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentence spans inside text[start:end] (a block without blank lines)."""
    spans: list[tuple[int, int]] = []
    begin = start
    for match in _END.finditer(text, start, end):
        last = match.group(0).rstrip("\"'”’)]")
        if last == "." and _is_abbreviation(text, match.start()):
            continue
        spans.append((begin, match.end()))
        begin = match.end()
    spans.append((begin, end))
    return [_strip(text, a, b) for a, b in spans if text[a:b].strip()]


def _strip(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def split_passage(text: str) -> list[tuple[int, int]]:
    """Character spans [start, end) of the passage's sentences, in order, without surrounding space."""
    spans: list[tuple[int, int]] = []
    begin = 0
    for match in _BLANK_LINE.finditer(text):
        spans += _block_sentences(text, begin, match.start())
        begin = match.end()
    return spans + _block_sentences(text, begin, len(text))


def reassemble(text: str, spans: Sequence[tuple[int, int]], sentences: Sequence[str]) -> str:
    """`text` with span i replaced by sentences[i]; everything outside the spans is kept."""
    if len(spans) != len(sentences):
        raise ValueError(f"{len(sentences)} sentences for {len(spans)} spans")
    pieces, cursor = [], 0
    for (start, end), sentence in zip(spans, sentences, strict=True):
        pieces += [text[cursor:start], sentence]
        cursor = end
    return "".join([*pieces, text[cursor:]])


def separators(text: str, spans: Sequence[tuple[int, int]]) -> list[str]:
    """The text before each span (from the previous span's end), for streaming a reassembled passage."""
    ends = [0, *(end for _, end in spans[:-1])]
    return [text[previous:start] for previous, (start, _) in zip(ends, spans, strict=True)]


class PassageTooLongError(ValueError):
    """A passage to paraphrase is over the limits; the message says by how much and what to do."""


def paraphrase_spans(passage: str) -> list[tuple[int, int]]:
    """The sentence spans of a passage to paraphrase, or a `ValueError`: it is empty, or over the limits
    (checked on the raw text first, so that a huge selection is not even split)."""
    words = len(passage.split())
    if words > MAX_PASSAGE_WORDS or len(passage) > MAX_PASSAGE_CHARS:
        raise PassageTooLongError(_too_long(f"{words:,} words and {len(passage):,} characters"))
    spans = split_passage(passage)
    if not spans:
        raise ValueError("the passage to paraphrase is empty")
    if len(spans) > MAX_PASSAGE_SENTENCES:
        raise PassageTooLongError(_too_long(f"{len(spans):,} sentences"))
    return spans


def _too_long(size: str) -> str:
    return (f"the passage to paraphrase has {size}; Paraphrase takes at most {MAX_PASSAGE_WORDS:,} words "
            f"({MAX_PASSAGE_CHARS:,} characters, {MAX_PASSAGE_SENTENCES} sentences) at a time: select a part of it")
