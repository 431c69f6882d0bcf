"""Give every BPE piece the PTB tag of a tagged word, from character offsets.

Rules, for a piece with character span `[start, end)` in the original text:

1. It overlaps one or more words: the tag of the word it overlaps by the most characters. Ties go
   to the leftmost word (the word the piece starts in), e.g. a piece "ab" over words "a" and "b".
2. It is non-empty but overlaps no word — in practice a piece of whitespace only, such as "\\n\\n"
   or the extra " " of a double space (byte-level BPE glues a single leading space to the next word
   already): the tag of the next word, or of the previous word when no word follows.
3. Otherwise — an empty span (`start == end`, e.g. a special token with offsets (0, 0)) or a text
   with no words at all (an empty or blank line) — `FALLBACK_TAG` ("_SP", spaCy's whitespace tag).

Offsets are character offsets into the same string the words were tagged on, as HF `tokenizers`
gives them (also for byte-level BPE: the several byte pieces of one emoji each carry that emoji's
character span, so each of them gets the emoji's word tag). One sweep with two pointers does the
work in O(pieces + words); pieces whose start goes backwards (out of order) re-seek by bisection.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from engine.pos.tagger import TaggedWord
from engine.pos.tags import FALLBACK_TAG


def align_tokens(text: str, words: Sequence[TaggedWord], offsets: Sequence[tuple[int, int]]) -> list[str]:
    """One PTB tag per piece of `offsets` (see the module docstring for the rules).

    `words` must be sorted, non-overlapping spans within `text` (as every `Tagger` returns them);
    raises ValueError if they are not or if a piece's span lies outside `text`.
    """
    _check_words(text, words)
    ends = [word.end for word in words]
    tags: list[str] = []
    cursor = 0
    previous_start = 0
    for start, end in offsets:
        if not 0 <= start <= end <= len(text):
            raise ValueError(f"piece span ({start}, {end}) is outside the text (length {len(text)})")
        if start == end:
            tags.append(FALLBACK_TAG)
            continue
        if start < previous_start:
            cursor = bisect_right(ends, start)
        previous_start = start
        while cursor < len(words) and words[cursor].end <= start:
            cursor += 1
        tags.append(_tag_for_span(words, cursor, start, end))
    return tags


def _tag_for_span(words: Sequence[TaggedWord], first: int, start: int, end: int) -> str:
    """Tag for `[start, end)` given `first`, the first word that ends after `start`."""
    best_tag, best_overlap = "", 0
    index = first
    while index < len(words) and words[index].start < end:
        overlap = min(end, words[index].end) - max(start, words[index].start)
        if overlap > best_overlap:
            best_tag, best_overlap = words[index].tag_, overlap
        index += 1
    if best_overlap:
        return best_tag
    if first < len(words):
        return words[first].tag_
    return words[-1].tag_ if words else FALLBACK_TAG


def _check_words(text: str, words: Sequence[TaggedWord]) -> None:
    """Raise ValueError unless `words` are non-empty, sorted, non-overlapping spans inside `text`."""
    previous_end = 0
    for word in words:
        if not previous_end <= word.start < word.end <= len(text):
            raise ValueError(
                f"word {word.text!r} at ({word.start}, {word.end}) is empty, out of order, overlaps the "
                f"previous word (ending at {previous_end}) or lies outside the text (length {len(text)})"
            )
        previous_end = word.end
