"""One variant as the app keeps it: text, token spans (for colouring and hover), seed and settings."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

from engine.api import TokenEvent, Variant


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


@dataclass
class VariantState:
    """A pane's content; filled token by token, then completed from the engine's Variant."""

    text: str = ""
    spans: list[TokenSpan] = field(default_factory=list)
    seed: int | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    log_prob: float = 0.0
    tokens: int = 0
    finish_reason: str = ""
    pinned: bool = False
    _pending: list[tuple[int, float]] = field(default_factory=list, repr=False)

    def add(self, event: TokenEvent) -> str:
        """Record one streamed token; return the text it adds (may be "")."""
        self.tokens += 1
        self.log_prob += event.log_prob
        self._pending.append((event.token_id, event.log_prob))
        if not event.text_delta:
            return ""
        start = len(self.text)
        self.text += event.text_delta
        ids = [t for t, _ in self._pending]
        self.spans.append(TokenSpan(start, len(self.text), ids, sum(lp for _, lp in self._pending), event.group))
        self._pending = []
        return event.text_delta

    def complete(self, variant: Variant) -> None:
        """Take the seed, settings, exact log-prob and finish reason from the engine's result."""
        self.seed = variant.seed
        self.settings = dict(variant.settings)
        self.log_prob = variant.log_prob
        self.tokens = len(variant.token_ids)
        self.finish_reason = variant.finish_reason
        if variant.text != self.text:  # should not happen; trust the engine's final text
            self.text = variant.text
            self.spans = [s for s in self.spans if s.end <= len(self.text)]

    def span_at(self, position: int) -> TokenSpan | None:
        """The span covering character `position` (binary search)."""
        lo, hi = 0, len(self.spans)
        while lo < hi:
            mid = (lo + hi) // 2
            if self.spans[mid].end <= position:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(self.spans) and self.spans[lo].start <= position:
            return self.spans[lo]
        return None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("_pending")
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VariantState:
        spans = [TokenSpan(**s) for s in data.get("spans", [])]
        fields = {k: v for k, v in data.items() if k in cls.__dataclass_fields__ and k not in ("spans", "_pending")}
        return cls(spans=spans, **fields)
