"""One variant as the app keeps it: text, token spans (for colouring and hover), seed and settings."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from app.variants.spans import TokenSpan
from app.variants.story import ModelSentence, align, lay_out
from engine.front_door import TokenEvent, Variant

__all__ = ["TokenSpan", "VariantState"]


@dataclass
class VariantState:
    """A pane's content; filled token by token, then completed from the engine's Variant.

    A variant written sentence by sentence (its events name a sentence) keeps each sentence as the model
    wrote it and shows them in reading order as Insert will put them in (app/variants/story.py)."""

    text: str = ""
    spans: list[TokenSpan] = field(default_factory=list)
    seed: int | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    log_prob: float = 0.0
    tokens: int = 0
    finish_reason: str = ""
    pinned: bool = False
    order: list[int] = field(default_factory=list)  # sentence numbers in the order they were written
    _pending: list[tuple[int, float]] = field(default_factory=list, repr=False)
    _sentences: dict[int, ModelSentence] = field(default_factory=dict, repr=False)

    def add(self, event: TokenEvent) -> None:
        """Record one streamed token (its text may still be "": a mark, or half a character)."""
        self.tokens += 1
        self.log_prob += event.log_prob
        self._pending.append((event.token_id, event.log_prob))
        if event.sentence:
            self._add_to_sentence(event)
        elif event.text_delta:
            start = len(self.text)
            self.text += event.text_delta
            self.spans.append(self._take_pending(start, len(self.text), event.group))

    def _add_to_sentence(self, event: TokenEvent) -> None:
        if event.sentence not in self._sentences:
            self.order.append(event.sentence)
        sentence = self._sentences.setdefault(event.sentence, ModelSentence())
        if event.text_delta:
            start = len(sentence.text)
            sentence.text += event.text_delta
            sentence.spans.append(self._take_pending(start, len(sentence.text), event.group))
            self.text, self.spans = lay_out(self._sentences)

    def _take_pending(self, start: int, end: int, group: int) -> TokenSpan:
        ids = [t for t, _ in self._pending]
        span = TokenSpan(start, end, ids, sum(lp for _, lp in self._pending), group)
        self._pending = []
        return span

    def complete(self, variant: Variant) -> None:
        """Take the seed, settings, exact log-prob and finish reason from the engine's result."""
        self.seed = variant.seed
        self.settings = dict(variant.settings)
        self.log_prob = variant.log_prob
        self.tokens = len(variant.token_ids)
        self.finish_reason = variant.finish_reason
        if variant.text == self.text:
            return
        self.text = variant.text  # the engine's final text is what Insert puts in (e.g. trimmed to a sentence)
        if self._sentences:  # e.g. a paraphrase, laid out in its passage's own way
            self.spans = align([self._sentences[t] for t in sorted(self._sentences)], self.text)
        else:
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
        data.pop("_sentences")
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> VariantState:
        spans = [TokenSpan(**s) for s in data.get("spans", [])]
        fields = {k: v for k, v in data.items()
                  if k in cls.__dataclass_fields__ and k not in ("spans", "_pending", "_sentences")}
        return cls(spans=spans, **fields)
