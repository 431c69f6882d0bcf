"""Which of a paraphrase model's rewrites reach the writer: those that keep the meaning; rewordings fill the rest.

A paraphrase model on the pretrained base rewrites far more than rewording does, but it often changes what a
sentence says (docs/permgen-decoder-only.md, "Paraphrase on the base, measured"), and a rewrite that changes the
meaning costs a writer more than one that changes nothing. So each of its N alternatives of a sentence is kept
only when it differs from the sentence and keeps at least `min_content_kept` of its content words (the measure
`variorum eval` reports, engine/metrics/paraphrase.py `content_words_kept`, on normalised words). An
alternative that says the same as one kept before it counts as a repeat. The alternatives not kept are replaced,
in order, by the sentence's rewordings (engine/rewording/search.py: first-sense synonyms and changes of order and
construction, which keep the meaning by construction) that no kept alternative already says; where none is
left, a repeat that keeps the meaning stays, and otherwise the writer's own sentence (`kept_source`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.data.text import normalize
from engine.metrics.paraphrase import content_words_kept
from engine.rewording.search import Rewording, ScoredText

CONTENT_KEPT_FLOOR = 0.85  # the share of content words a paraphrase keeps in the product's target


@dataclass(frozen=True)
class MeaningFloor:
    """What a paraphrase must keep of its sentence (`min_content_kept`, in [0, 1]) and, optionally, the
    `rewording` that stands in for an alternative that does not (see the module docstring)."""

    min_content_kept: float = CONTENT_KEPT_FLOOR
    rewording: Rewording | None = None
    lowercase: bool = True  # how the model's words are normalised for the comparison

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_content_kept <= 1.0:
            raise ValueError(f"min_content_kept must be in [0, 1], got {self.min_content_kept}")

    def keeps(self, source: str, rewrite: str) -> bool:
        """Whether `rewrite` differs from `source` and keeps enough of its content words."""
        words, source_words = normalize(rewrite, self.lowercase), normalize(source, self.lowercase)
        return bool(words) and words != source_words and content_words_kept(
            [words], [source_words]) >= self.min_content_kept

    def choose(self, source: str, drafts: Sequence[ScoredText], seed: int) -> list[ScoredText | None]:
        """Variant i's rewrite of `source` from the model's draft i (None: the writer's sentence stays);
        `seed` draws the rewordings (engine/rewording/search.py)."""
        said: set[str] = set()
        chosen: list[ScoredText | None] = []
        repeats: dict[int, ScoredText] = {}  # variant → its draft that keeps the meaning but repeats another
        for i, draft in enumerate(drafts):
            words = normalize(draft.text, self.lowercase)
            if self.keeps(source, draft.text) and words not in said:
                said.add(words)
                chosen.append(draft)
                continue
            if self.keeps(source, draft.text):
                repeats[i] = draft
            chosen.append(None)
        if self.rewording is not None and None in chosen:
            spare = iter([r for r in self.rewording.rewrites(source, len(drafts), seed)
                          if normalize(r.text, self.lowercase) not in said])
            chosen = [pick if pick is not None else next(spare, None) for pick in chosen]
        return [pick if pick is not None else repeats.get(i) for i, pick in enumerate(chosen)]
