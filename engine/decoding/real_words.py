"""Real words only: an allowed-token mask under which every word a decode writes is an allowed word.

A **word** is what the invented-word rate counts (engine/metrics/invented.py): a maximal run of
letters, case-folded; digits, punctuation, apostrophes, hyphens and whitespace separate words. So
with the mask on, the rate against the same allowed words is 0 by construction (apart from the
cases listed at the end).

Tokens are byte-level BPE pieces: a piece may end the current word, hold punctuation or space, and
start the next one. Each row keeps its **partial word** p (the case-folded letters since the last
separator). A piece splits into its leading letter run ℓ, the whole words inside it and its trailing
letter run τ. It is allowed iff

- it has no separator: p + ℓ is a prefix of an allowed word;
- it has one: p + ℓ is empty or an allowed word, its inner words are allowed, and τ is a prefix of
  an allowed word (empty included).

**Boundaries** (eos; in PermGen also the sentence and paragraph marks) end the word: allowed iff p is
empty or an allowed word, so eos stays reachable whenever the current word is complete and every
decode still ends. Other special tokens and pieces whose bytes are not valid UTF-8 alone (part of a
multibyte character) are never allowed: whole-character pieces spell every character the model can
write with the mask on (all 256 single bytes are pieces, so ASCII always can be).

**Closing.** A decode cut by a length cap (the LM's `max_new_tokens`, a PermGen sentence's cap)
would leave its last word open, so its last step takes a *closing* mask: the tokens after which the
word is complete (p + ℓ an allowed word, or a separator piece whose own words are whole), where
one exists; only when no single token can finish the word does the cut leave it open.

Masks [V] are cached per partial word. A new partial's mask needs one prefix test per *distinct
leading run* ℓ that could follow it: the runs are walked in sorted order and a failed run skips
every run extending it, so a mid-word partial costs a few dozen binary searches. Should a row have
no allowed token at all (a partial whose words need a piece that is never allowed), its mask falls
back to ending the word as it stands (boundaries and separator pieces), so a decode never hangs.

What stays outside the guarantee: a word cut by a length cap that no single token could finish, a
fallback row, and a decode stopped by the writer (Stop) mid-word.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from engine.data.text import WORD

TEXT, BOUNDARY, BLOCKED = 0, 1, 2  # a piece's kind
_LAST_CHAR = "\U0010ffff"  # sorts after every character: s + it bounds the strings starting with s


class AllowedWords:
    """A set of case-folded words with prefix tests (a sorted list and binary search)."""

    def __init__(self, words: Iterable[str]) -> None:
        self.members = frozenset(w.casefold() for w in words)
        self.sorted = sorted(self.members)

    def __len__(self) -> int:
        return len(self.members)

    def __contains__(self, word: object) -> bool:
        return word in self.members

    def is_prefix(self, start: str) -> bool:
        """True when some allowed word starts with `start` (every word starts with "")."""
        i = bisect.bisect_left(self.sorted, start)
        return i < len(self.sorted) and self.sorted[i].startswith(start)

    def union(self, words: Iterable[str]) -> AllowedWords:
        """These words and `words`; `self` when nothing is new."""
        new = {w.casefold() for w in words} - self.members
        return AllowedWords(self.members | new) if new else self


@dataclass(frozen=True)
class PieceSplit:
    """A piece's letters as words are split: leading run, whole inner words, trailing run."""

    lead: str
    inner: tuple[str, ...] = ()
    tail: str = ""
    separated: bool = False  # the piece holds a separator, so it ends the current word


def split_piece(text: str) -> PieceSplit:
    """Split decoded piece text the way engine/metrics/invented.py splits words (case-folded)."""
    runs = [(m.start(), m.end(), m.group().casefold()) for m in WORD.finditer(text)]
    if not runs:
        return PieceSplit("", separated=bool(text))
    if len(runs) == 1 and runs[0][0] == 0 and runs[0][1] == len(text):
        return PieceSplit(runs[0][2])
    lead = runs[0][2] if runs[0][0] == 0 else ""
    middle = runs[1:] if lead else runs
    tail = middle[-1][2] if middle and middle[-1][1] == len(text) else ""
    inner = tuple(r[2] for r in (middle[:-1] if tail else middle))
    return PieceSplit(lead, inner, tail, True)


class TokenPieces:
    """Every token's split, in arrays indexed by token id [V] (built once per tokenizer)."""

    def __init__(self, pieces: Sequence[bytes | None], boundary_ids: Iterable[int]) -> None:
        """`pieces`: each id's bytes, None for special tokens (`VariorumTokenizer.piece_bytes`)."""
        boundaries = set(boundary_ids)
        self.kinds = np.full(len(pieces), BLOCKED, dtype=np.int8)  # [V]
        self.splits: list[PieceSplit] = []
        for token_id, piece in enumerate(pieces):
            text = _whole_characters(piece)
            if token_id in boundaries:
                self.kinds[token_id] = BOUNDARY
            elif text is not None:
                self.kinds[token_id] = TEXT
            self.splits.append(split_piece(text or ""))
        self.leads = sorted({s.lead for s in self.splits})  # leads[0] == ""
        index = {lead: i for i, lead in enumerate(self.leads)}
        self.lead_ids = np.array([index[s.lead] for s in self.splits], dtype=np.int64)  # [V]
        self.separated = np.array([s.separated for s in self.splits], dtype=bool)  # [V]

    @property
    def vocab_size(self) -> int:
        return len(self.splits)


def _whole_characters(piece: bytes | None) -> str | None:
    """The piece's text, or None for a special token or bytes that are not whole UTF-8 characters."""
    try:
        return None if piece is None else piece.decode("utf-8")
    except UnicodeDecodeError:
        return None


class WordSpeller:
    """Allowed-token masks [V] for partial words under one set of allowed words, cached per partial."""

    def __init__(self, pieces: TokenPieces, words: AllowedWords, device: torch.device) -> None:
        self.pieces, self.words, self.device = pieces, words, device
        # Pieces with a separator: do their inner words and trailing run fit, whatever came before? [V]
        inner = np.array([all(w in words for w in s.inner) for s in pieces.splits], dtype=bool)
        text = pieces.separated & inner & (pieces.kinds == TEXT)
        self.separated_fit = text & np.array([words.is_prefix(s.tail) for s in pieces.splits], dtype=bool)
        self.separated_closed = text & np.array([self.complete(s.tail) for s in pieces.splits], dtype=bool)
        self.cache: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}  # partial → (open mask, closing mask)

    def complete(self, partial: str) -> bool:
        """The current word may end here: nothing started, or an allowed word."""
        return not partial or partial in self.words

    def mask(self, partial: str, closing: bool = False) -> torch.Tensor:
        """bool [V]: the tokens allowed after `partial`, or with `closing` those that also leave the word
        complete (the open mask where none does; module docstring), on the speller's device."""
        cached = self.cache.get(partial)
        if cached is None:
            opened, closed = self._compute(partial)
            cached = self.cache[partial] = (torch.from_numpy(opened).to(self.device),
                                            torch.from_numpy(closed).to(self.device))
        return cached[1] if closing else cached[0]

    def after(self, partial: str, token: int) -> str:
        """The partial word once `token` follows `partial`."""
        kind = self.pieces.kinds[token]
        if kind == BOUNDARY:
            return ""
        if kind == BLOCKED:  # never allowed, so only a forced token (an ended row's padding): no text
            return partial
        split = self.pieces.splits[token]
        return split.tail if split.separated else partial + split.lead

    def partial_after(self, partial: str, tokens: Iterable[int]) -> str:
        for token in tokens:
            partial = self.after(partial, token)
        return partial

    def _compute(self, partial: str) -> tuple[np.ndarray, np.ndarray]:
        """(open mask, closing mask) [V] of `partial`."""
        pieces = self.pieces
        prefix, word = self._lead_tests(partial)  # [L] each
        word[0] = self.complete(partial)  # lead "": the piece ends `partial` itself
        ends = word[pieces.lead_ids]  # [V] partial + lead is complete
        text, boundary = pieces.kinds == TEXT, (pieces.kinds == BOUNDARY) & word[0]
        mask = np.where(pieces.separated, self.separated_fit & ends, prefix[pieces.lead_ids]) & text | boundary
        if not mask.any():  # no way on: end the word as it stands rather than never end
            mask = (pieces.kinds == BOUNDARY) | self.separated_fit
        closing = np.where(pieces.separated, self.separated_closed, True) & ends & text | boundary
        return mask, closing if closing.any() else mask

    def _lead_tests(self, partial: str) -> tuple[np.ndarray, np.ndarray]:
        """Per leading run ℓ: is partial + ℓ a prefix of an allowed word, and an allowed word? ([L] each)."""
        leads, words = self.pieces.leads, self.words.sorted
        prefix = np.zeros(len(leads), dtype=bool)
        word = np.zeros(len(leads), dtype=bool)
        prefix[0] = True  # the partial itself is always a prefix (it was allowed)
        i = 1
        while i < len(leads):
            start = partial + leads[i]
            j = bisect.bisect_left(words, start)
            if j < len(words) and words[j].startswith(start):
                prefix[i], word[i] = True, words[j] == start
                i += 1
            else:  # no word continues `start`: nor any longer run that extends this one
                i = bisect.bisect_left(leads, leads[i] + _LAST_CHAR, i + 1)
        return prefix, word


def trailing_partial(text: str) -> str:
    """The case-folded letters `text` ends with: the word a continuation of it would extend."""
    runs = list(WORD.finditer(text))
    return runs[-1].group().casefold() if runs and runs[-1].end() == len(text) else ""


class RealWordRows:
    """Each decoding row's partial word, following the rows; gives the allowed mask [N, V] of the next token."""

    def __init__(self, speller: WordSpeller, partials: Sequence[str]) -> None:
        self.speller = speller
        self.partials = list(partials)

    def allowed(self, restriction: torch.Tensor | None = None, closing: Sequence[bool] | None = None) -> torch.Tensor:
        """bool [N, V]: the real-word masks (closing masks for the rows `closing` marks: their next token is
        the last before a cap) AND `restriction` [N, V] (a decoder's own mask). A row left with no token
        (the two exclude each other) keeps `restriction` alone, so it can always go on."""
        last = closing if closing is not None else [False] * len(self.partials)
        masks = torch.stack([self.speller.mask(p, c) for p, c in zip(self.partials, last, strict=True)])
        if restriction is None:
            return masks
        both = masks & restriction
        return torch.where(both.any(dim=-1, keepdim=True), both, restriction)

    def advance(self, tokens: Sequence[int]) -> None:
        self.partials = [self.speller.after(p, t) for p, t in zip(self.partials, tokens, strict=True)]

    def select(self, rows: Sequence[int]) -> None:
        self.partials = [self.partials[r] for r in rows]
