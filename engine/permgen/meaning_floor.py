"""Which of a paraphrase model's rewrites reach the writer: those that keep the meaning; rewordings fill the rest.

A paraphrase model on the pretrained base rewrites far more than rewording does, but it often changes what a
sentence says (docs/permgen-decoder-only.md, "Paraphrase on the base, measured"), and a rewrite that changes the
meaning costs a writer more than one that changes nothing. So the model writes `drafts_per_variant` drafts of a
sentence for each of the N variants shown (the writer's "Drafts to choose from"), and a draft is kept only when it
differs from the sentence and keeps at least `min_content_kept` of its content words (the measure `variorum eval`
reports, engine/metrics/paraphrase.py `content_words_kept`, on normalised words). A draft that says the same as one
kept before it counts as a repeat, and one that changes only the sentence's case or punctuation ("… spring so the
farmers …" for "… spring, so the farmers …") as a copy: case and punctuation aside (`bare_words`). It must also not
say much that the sentence did not: at most `max_content_added` of its content words (at least one word, a synonym)
may be words the sentence lacks (`content_words_added`), which keeps out the claims a model adds ("… to get their
construction tools"); it may not bring a name the sentence lacks (a capitalised word past the first, other than
"I"), which keeps out a rare name the model spells wrong ("AblE-LadEn" for "Abbala"); and it may not drop one the
sentence has, nor a number ("Alessandro Sandro" for "Alessandro ("Sandro") Mazzola", which the share of content
words let through). Of the drafts kept, N are shown, chosen as the app chooses among drafts
(engine/selection/choose.py): by mean log-probability per token, less what a draft shares (BLEU-4) with the sentence
itself and with those chosen before it; so more drafts give more different rewrites, not only more of them. While
fewer than N different drafts are kept, the stream writes another round of drafts (`rounds` at most,
`different_kept`). Where fewer than N were kept after the last round, the sentence's rewordings
(engine/rewording/search.py: first-sense synonyms and changes of order and construction, which keep the meaning by
construction) that no kept draft already says fill in; where none is left, a repeat that keeps the meaning, and
otherwise the writer's own sentence (`kept_source`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from engine.data.text import WORD, normalize
from engine.metrics.paraphrase import content_words, content_words_kept
from engine.rewording.search import Rewording, ScoredText
from engine.selection.choose import Draft, choose_drafts

CONTENT_KEPT_FLOOR = 0.85  # the share of content words a paraphrase keeps in the product's target
CONTENT_ADDED_CEILING = 0.15  # the same margin the other way: what a rewrite may say that its sentence did not
# `MeaningFloor.refusal`, checked in order
REFUSALS = ("copy or empty", "new name", "name or number lost", "content added", "content lost")
# a number, its thousands' commas dropped when read: "13 January 888" and "January 13, 888" hold the same numbers,
# "5000" and "5,000" the same number
NUMBER = re.compile(r"\d+(?:,\d{3})*")
BARE_WORD = re.compile(r"\w+")


def bare_words(text: str) -> list[str]:
    """The words and numbers of `text`, case and punctuation dropped: a draft that changes only those is a copy."""
    return BARE_WORD.findall(text.casefold())


def names(text: str) -> list[str]:
    """The capitalised words of `text` past its first word, other than "I": its names, as far as case tells."""
    return [w for w in WORD.findall(text)[1:] if w[0].isupper() and w != "I"]


def new_names(source: str, rewrite: str) -> list[str]:
    """The names of `rewrite` that `source` lacks (case ignored): names the rewrite brings in or misspells."""
    known = {w.casefold() for w in WORD.findall(source)}
    return [w for w in names(rewrite) if w.casefold() not in known]


def lost_names(source: str, rewrite: str) -> list[str]:
    """The names and numbers of `source` that `rewrite` lacks (case ignored; a name may move to the front)."""
    kept = {w.casefold() for w in WORD.findall(rewrite)} | set(numbers(rewrite))
    return [w for w in [*names(source), *numbers(source)] if w.casefold() not in kept]


def numbers(text: str) -> list[str]:
    """The numbers of `text`, as digits alone."""
    return [number.replace(",", "") for number in NUMBER.findall(text)]


@dataclass(frozen=True)
class MeaningFloor:
    """What a paraphrase must keep of its sentence (`min_content_kept`, in [0, 1]), what it may add
    (`max_content_added`, in [0, 1]) and, optionally, the `rewording` that stands in for an alternative that
    does not keep to both (see the module docstring)."""

    min_content_kept: float = CONTENT_KEPT_FLOOR
    rewording: Rewording | None = None
    lowercase: bool = True  # how the model's words are normalised for the comparison
    max_content_added: float = CONTENT_ADDED_CEILING
    drafts_per_variant: int = 1  # the writer's "Drafts to choose from"
    rounds: int = 3  # rounds of drafts at most: another while fewer than N different drafts are kept

    def __post_init__(self) -> None:
        for name in ("min_content_kept", "max_content_added"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        for name in ("drafts_per_variant", "rounds"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")

    def keeps(self, source: str, rewrite: str) -> bool:
        """Whether `rewrite` differs from `source`, keeps its names and numbers and enough of its content words,
        and adds few words and no name."""
        return self.refusal(source, rewrite) is None

    def refusal(self, source: str, rewrite: str) -> str | None:
        """Why `rewrite` may not stand for `source` (the first of `REFUSALS` that applies), or None."""
        words, source_words = normalize(rewrite, self.lowercase), normalize(source, self.lowercase)
        if not words or bare_words(rewrite) == bare_words(source):
            return "copy or empty"
        if new_names(source, rewrite):
            return "new name"
        if lost_names(source, rewrite):
            return "name or number lost"
        said = content_words(words)
        added = said - set(source_words.lower().split())
        if len(added) > max(1, math.floor(self.max_content_added * len(said))):
            return "content added"
        if content_words_kept([words], [source_words]) < self.min_content_kept:
            return "content lost"
        return None

    def choose(self, source: str, drafts: Sequence[ScoredText], seed: int,
               n: int | None = None) -> list[ScoredText | None]:
        """The `n` (default: one per draft) rewrites of `source` shown, from the model's `drafts`: those kept,
        chosen likeliest and most different first, then rewordings, then repeats (None: the writer's sentence
        stays); `seed` draws the rewordings (engine/rewording/search.py)."""
        n = len(drafts) if n is None else n
        said, repeats = self._kept(source, drafts)
        chosen: list[ScoredText | None] = most_different(said, n, " ".join(bare_words(source)))
        if self.rewording is not None and len(chosen) < n:
            chosen += [r for r in self.rewording.rewrites(source, n, seed)
                       if " ".join(bare_words(r.text)) not in said][: n - len(chosen)]
        chosen += repeats[: n - len(chosen)]
        return chosen + [None] * (n - len(chosen))


    def different_kept(self, source: str, drafts: Sequence[ScoredText]) -> int:
        """How many of `drafts` the floor keeps that say different things: fewer than the writer's N, and the
        stream writes another round of drafts (engine/permgen/paraphrase.py)."""
        return len(self._kept(source, drafts)[0])

    def _kept(self, source: str, drafts: Sequence[ScoredText]) -> tuple[dict[str, ScoredText], list[ScoredText]]:
        """(bare words → the first kept draft that says them, the kept drafts that repeat one of those)."""
        said: dict[str, ScoredText] = {}
        repeats: list[ScoredText] = []
        for draft in drafts:
            if not self.keeps(source, draft.text):
                continue
            words = " ".join(bare_words(draft.text))
            if words in said:
                repeats.append(draft)
            else:
                said[words] = draft
        return said, repeats


def most_different(drafts: dict[str, ScoredText], n: int, source: str) -> list[ScoredText | None]:
    """At most `n` of `drafts` (bare words → draft, all different), as the app chooses among drafts: by mean
    log-probability per token, each next sharing least with those chosen and with `source` (its bare words), the
    sentence they rewrite (engine/selection/choose.py)."""
    if len(drafts) <= n:
        return list(drafts.values())
    texts = list(drafts)
    scored = [Draft(words, -drafts[words].nll / max(len(drafts[words].log_probs), 1)) for words in texts]
    return [drafts[texts[i]] for i in choose_drafts(scored, n, unlike=source)]
