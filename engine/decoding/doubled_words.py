"""No doubled words: a word may not follow itself directly ("The dough dough bread took twenty minutes").

Small models now and then write a word twice in a row; a writer reads it as a slip. Under this
control (on where a writer starts) a row whose last token is a **whole word after a space**, a
piece made of one leading space and letters only (" dough", " It"), may not take next a piece that
writes the same word after a space, in any case (" dough", " Dough"). The word list is the
tokenizer's: `DoubledWords` groups its pieces by their case-folded word once per tokenizer.

**A draw, then a redraw where it doubled** (`RowStream`, engine/decoding/stream.py): every row draws as
without the ban; only a row that drew its last word again draws once more, from the same processed
distribution with that word's spellings masked out of the allowed tokens (as real words only masks,
engine/decoding/real_words.py: under a two-stage head, F² or POSG, the group stage is restricted too),
with its own uniform number (`REDRAW_STEP`). That is rejection sampling, so each row's token follows
exactly the distribution the mask alone would give, q(x) / (1 − q(banned)) off the banned spellings;
but a row that did not double keeps its draw, so a seed writes the same text with the ban as without it
up to the first doubling (masking at every step would move the inverse-CDF draws of all rows). Only one
word's spellings are cleared, so eos and every other word stay allowed and every decode still ends.

What it leaves alone: a word of several pieces written twice ("boss's boss's": only the last piece
is read), and a word repeated across punctuation ("… Kevin. Kevin went"), which is no slip. What it
forbids that a writer may mean: "had had", "that that"; turning it off allows them. A word after a
space that merely starts with the banned piece ("dough doughnut") is forbidden too; we accept that
rare loss for a ban that costs one table lookup per row and step. Beam search (PermGen) does not
read it: a beam keeps its likeliest sentences, where such slips are rare.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence

import torch

from engine.tokenizer import VariorumTokenizer

# The redraw's noise: the sampler's uniform number is hash(seed, step, stage), so a step this far past any real
# one gives the redraw a number of its own (no decode takes 2^28 steps: the longest caps are 4,096 tokens).
REDRAW_STEP = 1 << 28
_BY_TOKENIZER: weakref.WeakKeyDictionary[VariorumTokenizer, DoubledWords] = weakref.WeakKeyDictionary()


def spaced_word(piece: str) -> str:
    """The case-folded word of a piece that is one space and letters only; "" for any other piece."""
    word = piece[1:]
    return word.casefold() if piece.startswith(" ") and word.isalpha() else ""


class DoubledWords:
    """For each token that is a whole word after a space, the tokens that would write that word again."""

    def __init__(self, tokenizer: VariorumTokenizer) -> None:
        self.vocab_size = tokenizer.vocab_size
        by_word: dict[str, list[int]] = {}
        for token in range(self.vocab_size):
            word = spaced_word(tokenizer.decode([token]))
            if word:
                by_word.setdefault(word, []).append(token)
        # token → the ids of its word's spellings (itself included); tokens of no such word are absent
        self.repeats: dict[int, list[int]] = {token: ids for ids in by_word.values() for token in ids}
        word_of = torch.full((self.vocab_size,), -1, dtype=torch.long)  # [V] word index, −1: no such word
        for index, ids in enumerate(by_word.values()):
            word_of[ids] = index
        self.word_of = {torch.device("cpu"): word_of}  # per device, so a step compares on its own device

    @classmethod
    def of(cls, tokenizer: VariorumTokenizer) -> DoubledWords:
        """The table of `tokenizer`, built once while the tokenizer lives."""
        table = _BY_TOKENIZER.get(tokenizer)
        if table is None:
            table = _BY_TOKENIZER[tokenizer] = cls(tokenizer)
        return table

    def doubled(self, last_tokens: torch.Tensor, drawn: torch.Tensor) -> torch.Tensor:
        """bool [N]: does each row's drawn token [N] write its last word (last token [N]) again? Computed on
        the tokens' device, so a step reads back one flag (`any`), not the rows' tokens."""
        word_of = self.word_of.get(drawn.device)
        if word_of is None:
            word_of = self.word_of[drawn.device] = self.word_of[torch.device("cpu")].to(drawn.device)
        words = word_of[last_tokens]  # [N]
        return (words >= 0) & (words == word_of[drawn])

    def mask(self, allowed: torch.Tensor | None, last_tokens: Sequence[int],
             device: torch.device) -> torch.Tensor | None:
        """`allowed` bool [N, V] (None: all allowed) without, for each row, its last word's spellings; a new
        tensor, or `allowed` itself when no row's last token is such a word."""
        banned = [(row, self.repeats[token]) for row, token in enumerate(last_tokens) if token in self.repeats]
        if not banned:
            return allowed
        masked = (torch.ones(len(last_tokens), self.vocab_size, dtype=torch.bool, device=device) if allowed is None
                  else allowed.clone())
        for row, tokens in banned:
            masked[row, tokens] = False
        return masked
