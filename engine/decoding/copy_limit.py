"""Copy limit: a rewrite may not repeat more than k consecutive tokens of its source.

A small paraphrase model learns that copying its input is the safest answer (most training pairs
share most of their words), so sampled "paraphrases" come back as the source. Under a copy limit
k, the token that would complete a run of k + 1 source tokens is forbidden: with the k tokens the
row has just written equal to a k-token run of the source, every token that follows that run in the
source is masked out of the next draw (the no-repeat n-gram rule, applied against the source
instead of the row's own text). Single words and short phrases of the source stay free, so its
content words (names, numbers, terms) can be kept; long runs must be reworded.

Counted in the tokenizer's tokens (word pieces), not words: a long word of several pieces uses up
more of the run than a short one. Only word tokens take part: the caller passes each row's tokens
of the current sentence, without the sentence marks, so the end mark is never forbidden and every
decode still ends.

`SaidBefore` applies the rule to a text's own words (engine/permgen/decode.py: a prose story on a pretrained
base, sampled cool enough to keep to the sentence order asked for, says the same thing again): its finished
sentences are the source, and so is the sentence being written, so no run of k + 1 tokens is written twice.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import torch

from engine.decode_fields import MAX_COPY_LIMIT


class CopyLimit:
    """Which next tokens would extend a copied run of the source past `limit` tokens."""

    def __init__(self, source_ids: Sequence[int], limit: int) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_COPY_LIMIT:
            raise ValueError(f"copy limit must be an integer in [1, {MAX_COPY_LIMIT}], got {limit!r}")
        self.limit = limit
        # (k source tokens) → the tokens that follow that run somewhere in the source
        self.followers: dict[tuple[int, ...], set[int]] = defaultdict(set)
        self.add(source_ids)

    def add(self, tokens: Sequence[int]) -> None:
        """Limit copying from `tokens` too (a run does not span two added sequences)."""
        tokens = list(tokens)
        for start in range(len(tokens) - self.limit):
            self.followers[tuple(tokens[start:start + self.limit])].add(tokens[start + self.limit])

    def forbidden(self, written: Sequence[int]) -> set[int]:
        """The tokens a row that has written `written` (this sentence's word tokens) may not take next."""
        if len(written) < self.limit:
            return set()
        return self.followers.get(tuple(written[-self.limit:]), set())

    def mask(self, allowed: torch.Tensor, rows_written: Sequence[Sequence[int]]) -> torch.Tensor:
        """`allowed` bool [N, V] with each row's forbidden tokens cleared (a new tensor)."""
        masked = allowed.clone()
        for row, written in enumerate(rows_written):
            banned = self.forbidden(written)
            if banned:
                masked[row, sorted(banned)] = False
        return masked


class SaidBefore(CopyLimit):
    """A copy limit against one text's own sentences: those finished (`add`) and the one being written."""

    def __init__(self, limit: int) -> None:
        super().__init__([], limit)

    def forbidden(self, written: Sequence[int]) -> set[int]:
        banned = super().forbidden(written)
        tail = tuple(written[-self.limit:])
        return banned | {written[start + self.limit] for start in range(len(written) - self.limit)
                         if tuple(written[start:start + self.limit]) == tail}
