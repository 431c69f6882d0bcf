"""Choosing N variants among drafts: the most coherent ones that also differ from each other.

Greedy, one variant at a time (maximal marginal relevance): each step takes the draft with the highest

    value(i) = z(i) − diversity · max over chosen j of BLEU-4(i, j)

where z is the draft's coherence score standardised within the batch (so `diversity` means the same for every
scorer and prompt) and BLEU-4 of i against j (word tokens, smoothed, in [0, 1]) is how much i repeats a draft
already shown (or the text the drafts are to differ from, `unlike`). A draft that repeats a sentence
(engine/metrics/sentence_repeats.py) or writes nothing comes after every other draft, and a draft identical to
one already chosen after those.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.metrics.bleu import sentence_bleu
from engine.metrics.sentence_repeats import repeats_a_sentence

DEFAULT_DIVERSITY = 1.0


@dataclass(frozen=True)
class Draft:
    """One candidate text with its coherence score."""

    text: str
    score: float


def choose_drafts(drafts: Sequence[Draft], n: int, prompt: str = "", diversity: float = DEFAULT_DIVERSITY,
                  unlike: str = "") -> list[int]:
    """Indices of the `n` drafts to show, best first (see the module docstring). `unlike`: a text the drafts are to
    differ from as from one already shown (a paraphrase's sentence), so the first draft too is weighed against it."""
    if not 1 <= n <= len(drafts):
        raise ValueError(f"cannot choose {n} of {len(drafts)} drafts")
    if diversity < 0:
        raise ValueError(f"diversity must be ≥ 0, got {diversity}")
    scores = np.array([d.score for d in drafts], dtype=np.float64)
    spread = scores.std()
    z = (scores - scores.mean()) / spread if spread > 0 else np.zeros_like(scores)
    flawed = np.array([not d.text.strip() or repeats_a_sentence(d.text, prompt) for d in drafts])
    words = [d.text.lower().split() for d in drafts]
    unlike_words = unlike.lower().split()
    # max BLEU-4 against the chosen so far (and `unlike`)
    overlap = sentence_bleu(words, [[unlike_words] for _ in words]) if unlike_words else np.zeros(len(drafts))
    chosen: list[int] = []
    for _ in range(n):
        value = z - diversity * overlap - 1e6 * flawed
        value[chosen] = -np.inf
        for i in map(int, np.flatnonzero(np.isfinite(value))):
            if any(drafts[i].text == drafts[j].text for j in chosen):
                value[i] -= 1e9
        best = int(np.argmax(value))
        chosen.append(best)
        similar = sentence_bleu(words, [[words[best]] for _ in words]) if words[best] else np.zeros(len(drafts))
        overlap = np.maximum(overlap, similar)
    return chosen
