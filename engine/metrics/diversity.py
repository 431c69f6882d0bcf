"""Diversity within a set of texts: Distinct-n, Uniq, Entropy-n (no model needed).

- `distinct_n_per_text`: F² (§4.1.6, "distinct n-grams in each text"): for each text,
  distinct n-grams / n-gram tokens, averaged over the texts that have at least one n-gram
  (texts shorter than n are skipped; 0.0 when no text has an n-gram).
- `distinct_n_corpus`: Li et al. 2016 as PermGen uses it (§5.4): distinct n-grams over the
  whole set / n-gram tokens over the whole set.
- `uniq`: number of distinct tokens across all texts (Welleck et al. 2020, F², POSG).
- `entropy_n`: Zhang et al. 2018 (PermGen's Entropy-n): entropy, in nats, of the empirical
  n-gram distribution pooled over all texts.
Distinct n-POS (POSG Table 3) is `distinct_n_per_text` applied to POS-tag sequences (any
hashable tokens work); the eval protocol does not tag generations yet.
All are invariant to the order of the texts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.metrics.ngrams import NgramTable, Text, ngram_table, to_arrays


def distinct_per_text_from_table(table: NgramTable) -> float:
    has = table.totals > 0
    if not has.any():
        return 0.0
    return float((table.distinct_per_text()[has] / table.totals[has]).mean())


def distinct_corpus_from_table(table: NgramTable) -> float:
    total = int(table.totals.sum())
    return float(np.count_nonzero(table.corpus_counts())) / total if total else 0.0


def distinct_n_per_text(texts: Sequence[Text], n: int) -> float:
    return distinct_per_text_from_table(ngram_table(to_arrays(texts), n))


def distinct_n_corpus(texts: Sequence[Text], n: int) -> float:
    return distinct_corpus_from_table(ngram_table(to_arrays(texts), n))


def uniq(texts: Sequence[Text]) -> int:
    return len({token for text in texts for token in text})


def entropy_n(texts: Sequence[Text], n: int) -> float:
    counts = ngram_table(to_arrays(texts), n).corpus_counts()
    counts = counts[counts > 0]
    if counts.size == 0:
        return 0.0
    p = counts / counts.sum()
    return float(-(p * np.log(p)).sum())
