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
        source = list(source_ids)
        for start in range(len(source) - limit):
            self.followers[tuple(source[start:start + limit])].add(source[start + limit])

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
