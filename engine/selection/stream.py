"""A stream that drafts K·N variants, then shows the N chosen (engine/selection/choose.py).

While drafting it yields every draft token as a `TokenEvent` with `draft=True` (a surface counts them for
progress and shows none of them); a stop request ends the drafting as it ends any stream, and the drafts
written so far are chosen from. Then it yields the tokens of the chosen drafts again, renumbered 0 … N − 1
with `draft=False`, so a surface that shows variants as they stream shows the chosen ones unchanged.
Each chosen variant keeps the seed it was drafted with and records `drafts` in its settings.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from engine.decoding import DecodeStream, TokenEvent, Variant
from engine.selection.choose import DEFAULT_DIVERSITY, Draft, choose_drafts

Scorer = Callable[[list[str]], list[float]]  # drafts' texts → coherence scores (higher: more sense)


@dataclass(frozen=True)
class ScorerChoice:
    """What scores a model's drafts (None: nothing, choose for differing only) and what a writer is told of it;
    engine/coherence/choice.py makes it."""

    score: Callable[[str, list[str]], list[float]] | None  # (prompt, drafts' texts) → scores
    note: str

    def scores(self, prompt: str, texts: list[str]) -> list[float]:
        """Each draft's coherence score after `prompt`; all equal without a scorer."""
        return self.score(prompt, texts) if self.score is not None else [0.0] * len(texts)


class SelectingStream(DecodeStream):
    """The N variants chosen among the drafts of `drafts` (see the module docstring)."""

    def __init__(self, drafts: DecodeStream, n: int, scorer: Scorer, prompt: str = "",
                 diversity: float = DEFAULT_DIVERSITY,
                 on_scoring: Callable[[], None] | None = None) -> None:
        self.drafts, self.n, self.scorer, self.prompt, self.diversity = drafts, n, scorer, prompt, diversity
        self.on_scoring = on_scoring  # told when drafting ends and scoring starts (a surface's progress line)
        self.variants: list[Variant] = []
        self.scores: list[float] = []  # each draft's coherence score, once scored

    def __iter__(self) -> Iterator[TokenEvent]:
        events: dict[int, list[TokenEvent]] = {}
        for event in self.drafts:
            events.setdefault(event.variant, []).append(event)
            yield dataclasses.replace(event, draft=True)
        if self.on_scoring is not None:
            self.on_scoring()
        written = self.drafts.variants
        self.scores = self.scorer([v.text for v in written])
        drafts = [Draft(v.text, s) for v, s in zip(written, self.scores, strict=True)]
        chosen = choose_drafts(drafts, min(self.n, len(drafts)), self.prompt, self.diversity)
        for shown, index in enumerate(chosen):
            variant = dataclasses.replace(written[index], index=shown)
            self.variants.append(variant)
            for event in events.get(index, []):
                yield dataclasses.replace(event, variant=shown)
