"""Diversity across the shown variants: pairwise Self-BLEU and Distinct-2.

Definitions (DESIGN §4): Self-BLEU = mean over variants of BLEU(variant, all OTHER variants as
references), excluding the variant itself (Texygen's slow path includes it, a known bug); BLEU is
sacrebleu's sentence BLEU (default 13a tokenization, exp smoothing), 0–100, lower = more diverse.
Distinct-2 = distinct word bigrams / all word bigrams over the variants (lowercased, whitespace
words), 0–1, higher = more diverse.

TODO(issue 7): replace with engine.metrics' single definitions once that package lands.
"""

from __future__ import annotations

from collections.abc import Sequence

try:  # imported up front: a first import inside the UI thread would stall it for ~0.2 s
    from sacrebleu.metrics import BLEU
except ImportError:  # the optional `metrics` extra is not installed: Self-BLEU shows "–"
    BLEU = None


def self_bleu(texts: Sequence[str]) -> float | None:
    """Pairwise Self-BLEU (0–100) of ≥ 2 non-empty texts; None when it is undefined or sacrebleu is missing."""
    texts = [t for t in texts if t.strip()]
    if len(texts) < 2:
        return None
    if BLEU is None:
        return None
    bleu = BLEU(effective_order=True)
    scores = [
        bleu.sentence_score(text, [other for j, other in enumerate(texts) if j != i]).score
        for i, text in enumerate(texts)
    ]
    return sum(scores) / len(scores)


def distinct_n(texts: Sequence[str], n: int = 2) -> float | None:
    """Distinct-n over all texts; None when there are no n-grams."""
    total, seen = 0, set()
    for text in texts:
        words = text.lower().split()
        grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
        total += len(grams)
        seen.update(grams)
    return len(seen) / total if total else None


def readout(texts: Sequence[str]) -> str:
    """One line for the panel header."""
    sb, d2 = self_bleu(texts), distinct_n(texts, 2)
    parts = [
        "Self-BLEU –" if sb is None else f"Self-BLEU {sb:.1f}",
        "Distinct-2 –" if d2 is None else f"Distinct-2 {d2:.2f}",
    ]
    return " · ".join(parts)
