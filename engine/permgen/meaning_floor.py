"""Which of a paraphrase model's rewrites reach the writer: those that keep the meaning; rewordings fill the rest.

A paraphrase model on the pretrained base rewrites far more than rewording does, but it often changes what a
sentence says (docs/permgen-decoder-only.md, "Paraphrase on the base, measured"), and a rewrite that changes the
meaning costs a writer more than one that changes nothing. So the model writes `drafts_per_variant` drafts of a
sentence for each of the N variants shown, and a draft is kept only when it differs from the sentence and keeps
at least `min_content_kept` of its content words (the measure `variorum eval` reports,
engine/metrics/paraphrase.py `content_words_kept`, on normalised words). A draft that says the same as one kept
before it counts as a repeat. It must also not say much that the sentence did not: at most `max_content_added`
of its content words (at least one word, a synonym) may be words the sentence lacks (`content_words_added`),
which keeps out the claims a model adds ("… to get their construction tools"), and it may not bring a name the
sentence lacks (a capitalised word past the first, other than "I"), which keeps out a rare name the model spells
wrong ("AblE-LadEn" for "Abbala"). The first N drafts kept are shown, in the order written; where fewer were
kept, the sentence's rewordings (engine/rewording/search.py: first-sense synonyms and changes of order and
construction, which keep the meaning by construction) that no kept draft already says fill in; where none is
left, a repeat that keeps the meaning, and otherwise the writer's own sentence (`kept_source`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from engine.data.text import WORD, normalize
from engine.metrics.paraphrase import content_words, content_words_kept
from engine.rewording.search import Rewording, ScoredText

CONTENT_KEPT_FLOOR = 0.85  # the share of content words a paraphrase keeps in the product's target
CONTENT_ADDED_CEILING = 0.15  # the same margin the other way: what a rewrite may say that its sentence did not
# The model writes this many drafts of a sentence for each variant shown. Two found more rewrites, but took 3 rewrites
# of a 25-word sentence past the 2-second target on 2 CPU cores (docs/permgen-decoder-only.md, "Decoding").
DRAFTS_PER_VARIANT = 1
REFUSALS = ("copy or empty", "new name", "content added", "content lost")  # `MeaningFloor.refusal`, checked in order


def new_names(source: str, rewrite: str) -> list[str]:
    """The capitalised words of `rewrite` past its first word, other than "I", that `source` lacks (case
    ignored): names the rewrite brings in or misspells."""
    known = {w.casefold() for w in WORD.findall(source)}
    return [w for w in WORD.findall(rewrite)[1:] if w[0].isupper() and w != "I" and w.casefold() not in known]


@dataclass(frozen=True)
class MeaningFloor:
    """What a paraphrase must keep of its sentence (`min_content_kept`, in [0, 1]), what it may add
    (`max_content_added`, in [0, 1]) and, optionally, the `rewording` that stands in for an alternative that
    does not keep to both (see the module docstring)."""

    min_content_kept: float = CONTENT_KEPT_FLOOR
    rewording: Rewording | None = None
    lowercase: bool = True  # how the model's words are normalised for the comparison
    max_content_added: float = CONTENT_ADDED_CEILING
    drafts_per_variant: int = DRAFTS_PER_VARIANT

    def __post_init__(self) -> None:
        for name in ("min_content_kept", "max_content_added"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if self.drafts_per_variant < 1:
            raise ValueError(f"drafts_per_variant must be at least 1, got {self.drafts_per_variant}")

    def keeps(self, source: str, rewrite: str) -> bool:
        """Whether `rewrite` differs from `source`, keeps enough of its content words, adds few and no name."""
        return self.refusal(source, rewrite) is None

    def refusal(self, source: str, rewrite: str) -> str | None:
        """Why `rewrite` may not stand for `source` (the first of `REFUSALS` that applies), or None."""
        words, source_words = normalize(rewrite, self.lowercase), normalize(source, self.lowercase)
        if not words or words == source_words:
            return "copy or empty"
        if new_names(source, rewrite):
            return "new name"
        said = content_words(words)
        added = said - set(source_words.lower().split())
        if len(added) > max(1, math.floor(self.max_content_added * len(said))):
            return "content added"
        if content_words_kept([words], [source_words]) < self.min_content_kept:
            return "content lost"
        return None

    def choose(self, source: str, drafts: Sequence[ScoredText], seed: int,
               n: int | None = None) -> list[ScoredText | None]:
        """The `n` (default: one per draft) rewrites of `source` shown, from the model's `drafts`: those kept, in
        order, then rewordings, then repeats (None: the writer's sentence stays); `seed` draws the rewordings
        (engine/rewording/search.py)."""
        n = len(drafts) if n is None else n
        said: set[str] = set()
        kept: list[ScoredText] = []
        repeats: list[ScoredText] = []  # drafts that keep the meaning but say what a kept one says
        for draft in drafts:
            if not self.keeps(source, draft.text):
                continue
            words = normalize(draft.text, self.lowercase)
            (repeats if words in said else kept).append(draft)
            said.add(words)
        chosen: list[ScoredText | None] = list(kept[:n])
        if self.rewording is not None and len(chosen) < n:
            chosen += [r for r in self.rewording.rewrites(source, n, seed)
                       if normalize(r.text, self.lowercase) not in said][: n - len(chosen)]
        chosen += repeats[: n - len(chosen)]
        return chosen + [None] * (n - len(chosen))
