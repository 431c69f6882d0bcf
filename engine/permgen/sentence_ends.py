"""Where a prose model's sentence ends: at its first full stop, and never across a line break.

A PermGen model on a pretrained base (`text_form` "prose", engine/permgen/text.py) learns its new marks
⟨E-t⟩ from a few thousand paragraphs, while its base has long learnt to write on after a full stop. Left
alone it writes several sentences, or lines broken like a poem's, inside one pair of marks until the
per-sentence cap cuts the last one off, and that sentence is then missing from the order asked for
(docs/permgen-decoder-only.md). Every training target was split into sentences at . ! ? that do not end
an abbreviation (engine/permgen/readers.py `split_raw_sentences`), so a sentence the model was taught ends
at its first such mark and holds no line break. Decoding holds it to that:

- once the sentence's text ends with . ! or ? (then any closing quotes or brackets), and the word before
  the mark is no abbreviation ("Mr.", "U.S."), only ⟨E-t⟩ and the closing marks of quotes and brackets the
  sentence left open may follow (so the closing marks end too); a period right after a digit may also be
  followed by a digit, so "3.5" and "v2.1" stay whole;
- before that, ⟨E-t⟩ may not be written: a sentence ends as a sentence does, not after "She said:" or a comma
  (the per-sentence cap still closes one that never ends, so every decode ends);
- a token holding a line break is never written inside a sentence.

This is a choice the PermGen paper does not need (its targets and model share one word-level vocabulary
trained from scratch); it changes no probability the model gives, only which tokens may be drawn.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import torch

from engine.data.text import is_abbreviation
from engine.tokenizer import VariorumTokenizer

CLOSING_MARKS = "\"'”’)]"
# group 1: the last word with its sentence-final mark; group 2: that mark's preceding character
_ENDED = re.compile(r"(\S*?(\S?)[.!?]+)[" + re.escape(CLOSING_MARKS) + r"]*$")
_PAIRS = {"”": "“", "’": "‘", ")": "(", "]": "["}  # closing mark → its opening mark
_OPENING_APOSTROPHE = re.compile(r"(?<!\w)'(?=\w)")  # 'Hello — not don't
_CLOSING_APOSTROPHE = re.compile(r"(?<=\S)'(?!\w)")  # Hello,' and dogs'


class SentenceEnds:
    """Which tokens may follow a prose sentence's text: bool masks over the tokenizer's ids ([V])."""

    def __init__(self, tokenizer: VariorumTokenizer) -> None:
        self.tokenizer = tokenizer
        pieces = [p or b"" for p in tokenizer.piece_bytes()]  # a special token spells nothing
        self.line_breaks = torch.tensor([b"\n" in p or b"\r" in p for p in pieces])  # [V]
        # each piece spelling closing marks only, by what it closes
        self.closers = {i: Counter(text) for i, text in enumerate(map(_closing_marks, pieces)) if text}
        self.digits = torch.tensor([bool(p) and p[:1].isdigit() for p in pieces])  # [V]
        self._one_line: dict[tuple[int, str], torch.Tensor] = {}

    def restrict(self, allowed: torch.Tensor, sentences: Sequence[Sequence[int] | None],
                 end_ids: Sequence[int]) -> torch.Tensor:
        """`allowed` [rows, V] for rows writing `sentences` (their tokens so far; None: a row not inside a
        sentence, left as it is): neither line breaks nor `end_ids[row]` until the sentence has ended, then only
        `end_ids[row]` and closing marks (module docstring). A new tensor; `allowed` is not changed."""
        vocab = allowed.shape[1]
        restricted = allowed.clone()
        for row, tokens in enumerate(sentences):
            if tokens is None:
                continue
            after = self.after(self.tokenizer.decode(list(tokens)))
            if after is None:  # no end yet: go on, on this line
                restricted[row] &= self._on_one_line(vocab, allowed.device)
                restricted[row, end_ids[row]] = False
            else:
                restricted[row] &= self._fit(after, vocab, allowed.device)
                restricted[row, end_ids[row]] = bool(allowed[row, end_ids[row]])
        return restricted

    def after(self, text: str) -> torch.Tensor | None:
        """bool [V]: the tokens, besides the end mark, that may follow a sentence `text` that has ended; None
        while it has not."""
        ended = _ENDED.search(text)
        if ended is None or is_abbreviation(ended.group(1).lstrip("\"'“‘([")):
            return None
        after = self.digits.clone() if ended.group(2).isdigit() and text[-1] == "." else torch.zeros_like(self.digits)
        still_open = open_marks(text)
        after[[i for i, marks in self.closers.items() if marks <= still_open]] = True
        return after

    def _on_one_line(self, vocab: int, device: torch.device) -> torch.Tensor:
        """bool [vocab]: every token but a line break, built once per vocabulary size and device (every step asks)."""
        key = (vocab, str(device))
        if key not in self._one_line:
            self._one_line[key] = ~self._fit(self.line_breaks, vocab, device)
        return self._one_line[key]

    @staticmethod
    def _fit(mask: torch.Tensor, vocab: int, device: torch.device) -> torch.Tensor:
        """`mask` [pieces] as [vocab] on `device` (ids past the tokenizer's pieces, such as padding: False)."""
        fitted = torch.zeros(vocab, dtype=torch.bool)
        fitted[: min(vocab, len(mask))] = mask[:vocab]
        return fitted.to(device)


def open_marks(text: str) -> Counter[str]:
    """The closing marks `text` still needs: a straight double quote after an odd number of them, and each
    curly quote, bracket or quoting apostrophe as often as it was opened more than closed."""
    needed = Counter({'"': text.count('"') % 2, "'": len(_OPENING_APOSTROPHE.findall(text))
                      - len(_CLOSING_APOSTROPHE.findall(text))})
    needed.update({close: text.count(open_) - text.count(close) for close, open_ in _PAIRS.items()})
    return +needed  # only the positive counts


def _closing_marks(piece: bytes) -> str:
    """The piece's text when it is closing quotes or brackets only (whole characters, not part of one), else ""."""
    try:
        text = piece.decode()
    except UnicodeDecodeError:
        return ""
    return text if text and all(char in CLOSING_MARKS for char in text) else ""


@lru_cache(maxsize=4)
def sentence_ends(tokenizer: VariorumTokenizer) -> SentenceEnds:
    """The tokenizer's `SentenceEnds`, built once (it reads every piece of the vocabulary)."""
    return SentenceEnds(tokenizer)
