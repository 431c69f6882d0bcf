"""What generated text may hold: no control characters, and double quotation marks that pair up.

A model writes bytes, and byte-level BPE can spell any of them: a control byte (0x10), a carriage return,
a bidirectional override that reorders the text around it, a byte order mark, a noncharacter (U+FDD0,
which some encodings cannot save), or the U+FFFD a broken UTF-8 sequence decodes to. None of these is
prose, and once inserted they reach the writer's document and saved file, so every family drops them
from its decoded text where that text is made (`drop_control_characters`; tabs and line breaks stay).

A language model trained on quoted dialogue also closes a quotation twice ("…please.""), closes a curly
one with a straight mark ("“…dogs!""), or closes one that was never opened. `GeneratedText` cleans a
continuation as it streams, one delta at a time, by a rule that looks only at what came before, so that
the cleaned text is always exactly its cleaned deltas (the panes show what is inserted) and cleaning
the whole text at once gives the same:

- a double quotation mark right after a closing one is dropped (`""` → `"`);
- inside an open quotation, any double mark closes it, in the opening mark's style (“ … ” or " … ");
  an opening curly mark inside an open quotation is dropped (it would open a second one);
- outside a quotation, a closing curly mark (”) is dropped, any other mark opens one;
- a line break ends the paragraph, and with it any open quotation (a quotation that runs over
  paragraphs reopens at each, closing only at its last).

The state starts from the text before the continuation (the writer's last paragraph), so a continuation
that closes the writer's open quotation keeps its closing mark. A quotation the continuation opens and
leaves open is kept: the writer may go on with it. Single quotation marks are left alone, since the same
character is the apostrophe. docs/real-words.md ("Text a model may not write") has the rule for writers.
"""

from __future__ import annotations

import re
import sys

_CONTROL = [*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)]  # C0 and C1 but tab and line feed
_INVISIBLE = [0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x2028, 0x2029, 0xFEFF, 0xFFFD]
_NONCHARACTERS = [*range(0xFDD0, 0xFDF0), *(plane + end for plane in range(0, sys.maxunicode + 1, 0x10000)
                                           for end in (0xFFFE, 0xFFFF))]
_DROPPED: dict[int, None] = dict.fromkeys([*_CONTROL, *_INVISIBLE, *_NONCHARACTERS])

STRAIGHT, OPENING, CLOSING = '"', "\u201c", "\u201d"
_QUOTES = (STRAIGHT, OPENING, CLOSING)


_BETWEEN_WORDS = re.compile("(?<=\\w)[" + "".join(re.escape(chr(c)) for c in _DROPPED) + "]+(?=\\w)")


def drop_control_characters(text: str, keep_word_boundaries: bool = False) -> str:
    """`text` without control characters, bidirectional and other invisible controls, noncharacters and
    U+FFFD (see the module docstring); tabs and line breaks are kept. `keep_word_boundaries`: a run of them
    between two word characters becomes one space, for text whose real words were checked with those
    characters as word boundaries (a PermGen sentence), so that dropping one never joins two words into one
    that is not real."""
    if keep_word_boundaries:
        text = _BETWEEN_WORDS.sub(" ", text)
    return text.translate(_DROPPED)


class GeneratedText:
    """One continuation's text as it streams: `add(delta)` returns the delta cleaned (see the module docstring)."""

    def __init__(self, context: str = "") -> None:
        self.opener: str | None = None  # the mark that opened the quotation still open, if one is
        self.just_closed = False  # the last character kept was a closing mark
        self._quotes(drop_control_characters(context.rsplit("\n", 1)[-1]))

    def add(self, delta: str) -> str:
        """`delta` without control characters and with its double quotation marks paired up."""
        delta = drop_control_characters(delta)
        if not any(mark in delta for mark in _QUOTES):  # most tokens: only the paragraph and the last mark matter
            if "\n" in delta:
                self.opener = None
            self.just_closed = self.just_closed and not delta
            return delta
        return self._quotes(delta)

    def _quotes(self, text: str) -> str:
        kept: list[str] = []
        for char in text:
            if char in _QUOTES:
                kept.append(self._mark(char))
                continue
            if char == "\n":
                self.opener = None
            self.just_closed = False
            kept.append(char)
        return "".join(kept)

    def _mark(self, char: str) -> str:
        """What a double quotation mark becomes: itself, the closing mark in the opener's style, or '' (dropped,
        as if it were not there)."""
        if self.just_closed or (char == CLOSING and self.opener is None) or (char == OPENING and self.opener):
            return ""
        if self.opener is None:
            self.opener = char
            return char
        closing = CLOSING if self.opener == OPENING else STRAIGHT
        self.opener, self.just_closed = None, True
        return closing
