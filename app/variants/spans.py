"""The characters of a variant's text that one or more tokens produced (for colouring and hover)."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass
class TokenSpan:
    """Characters [start, end) of the variant's text produced by one or more tokens.

    Several tokens share a span when the first ones ended mid-character (byte-level BPE).
    """

    start: int
    end: int
    token_ids: list[int]
    log_prob: float  # sum of the tokens' marginal log-probs
    group: int  # the last token's sampled group

    @property
    def probability(self) -> float:
        return math.exp(self.log_prob)
