"""Repetition metrics: Rep (continuations that end in a repetition loop) and seq-rep-n.

- `ends_in_repetition` / `rep`: Holtzman et al. 2019's definition (their `repetition.py`, used by
  F² and POSG as "Rep"): read the text backwards; for each phrase length n = 1..90 count how
  many times the last n tokens repeat back to back; take the n with the most repeats (the
  shortest on ties); the text is a loop if that phrase repeats at least twice and is at least
  3 tokens long, or repeats more than 50 times. `rep` is the share of texts in a loop, in [0, 1]
  (papers print it ×100). A trailing eos is the caller's to strip (generations here exclude it).
- `seq_rep_n`: Welleck et al. 2020: per text 1 − distinct n-grams / n-gram tokens, averaged
  over texts with at least one n-gram (0.0 if none).
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.metrics.diversity import distinct_n_per_text
from engine.metrics.ngrams import Text

MAX_PHRASE = 90


def _repeats_at_end(reverse: list[object], n: int) -> int:
    count = 1
    while reverse[n * count : n * (count + 1)] == reverse[:n] and len(reverse[n * count : n * (count + 1)]) == n:
        count += 1
    return count


def ends_in_repetition(text: Text, max_phrase: int = MAX_PHRASE) -> bool:
    reverse = list(reversed(list(text)))
    if not reverse:
        return False
    # a phrase of length n can only repeat if reverse[n] == reverse[0]; skip the rest (repeats = 1)
    repeats = [
        _repeats_at_end(reverse, n) if n < len(reverse) and reverse[n] == reverse[0] else 1
        for n in range(1, max_phrase + 1)
    ]
    best = max(range(max_phrase), key=lambda i: repeats[i])  # first (shortest) phrase on ties
    return repeats[best] > 1 and (best + 1 >= 3 or repeats[best] > 50)


def rep(texts: Sequence[Text]) -> float:
    if not texts:
        raise ValueError("Rep needs at least one text")
    return sum(ends_in_repetition(t) for t in texts) / len(texts)


def seq_rep_n(texts: Sequence[Text], n: int = 4) -> float:
    if not any(len(t) >= n for t in texts):
        return 0.0
    return 1.0 - distinct_n_per_text(texts, n)
