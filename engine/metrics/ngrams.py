"""Vectorised n-gram counting shared by every n-gram metric (BLEU, MS-Jaccard, Distinct, …).

Texts are sequences of hashable tokens (BPE ids for the continuation metrics, words for the
paraphrase and paragraph metrics). `to_arrays` maps them to int64 arrays; `ngram_table` turns a
list of arrays into one table of (text, n-gram id, count) rows, with n-gram ids shared by every
text of the call — so texts that are compared (hypotheses and references) must be counted in
the same call. Everything is numpy: 2,000 texts × 100 tokens take milliseconds per order.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

Text = Sequence[Hashable]


def to_arrays(texts: Sequence[Text]) -> list[np.ndarray]:
    """Token sequences → int64 arrays. Integer tokens keep their value; others get ids by first use."""
    if all(isinstance(t, (int, np.integer)) for text in texts for t in text):
        return [np.asarray(list(text), dtype=np.int64).reshape(-1) for text in texts]
    vocabulary: dict[Hashable, int] = {}
    return [
        np.asarray([vocabulary.setdefault(t, len(vocabulary)) for t in text], dtype=np.int64).reshape(-1)
        for text in texts
    ]


def _check_order(n: int) -> None:
    if n < 1:
        raise ValueError(f"n-gram order must be >= 1, got {n}")


@dataclass(frozen=True)
class NgramTable:
    """Distinct n-grams of each text with their counts; rows sorted by (text, gram).

    text, gram, count: [K] arrays (one row per distinct n-gram of a text); gram ids lie in
    [0, num_grams) but need not all be used.
    totals: [num_texts] number of n-gram tokens of each text, max(0, len − n + 1).
    """

    n: int
    text: np.ndarray
    gram: np.ndarray
    count: np.ndarray
    totals: np.ndarray
    num_grams: int

    @property
    def num_texts(self) -> int:
        return int(self.totals.shape[0])

    def corpus_counts(self, texts: np.ndarray | None = None) -> np.ndarray:
        """Count of every n-gram id summed over `texts` (default: all) → [num_grams]."""
        rows = np.ones_like(self.text, dtype=bool) if texts is None else np.isin(self.text, texts)
        return np.bincount(self.gram[rows], weights=self.count[rows], minlength=self.num_grams)

    def distinct_per_text(self) -> np.ndarray:
        """Number of distinct n-grams of each text → [num_texts]."""
        return np.bincount(self.text, minlength=self.num_texts)


def ngram_table(arrays: Sequence[np.ndarray], n: int) -> NgramTable:
    """Count the n-grams of every text; n-gram ids are shared across `arrays`."""
    return ngram_tables(arrays, n)[n]


def ngram_tables(arrays: Sequence[np.ndarray], max_n: int) -> dict[int, NgramTable]:
    """Tables for orders 1..max_n, each order's ids built from the previous order's.

    All texts are concatenated into one flat array; the window of order k starting at flat
    position p has id dense(id_{k−1}(p) · V + token(p + k − 1)), densified at each order so
    keys stay below (number of windows) · V and never overflow int64.
    """
    _check_order(max_n)
    lengths = np.array([len(a) for a in arrays], dtype=np.int64)
    flat = np.concatenate([*arrays, np.zeros(0, dtype=np.int64)]).astype(np.int64)  # [T]
    owner = np.repeat(np.arange(len(arrays), dtype=np.int64), lengths)  # [T]
    end = np.repeat(np.cumsum(lengths), lengths)  # [T] one past the owner's last position
    _, tokens = np.unique(flat, return_inverse=True)
    tokens = tokens.reshape(-1).astype(np.int64)
    vocab = int(tokens.max()) + 1 if tokens.size else 1
    window_ids = tokens.copy()  # id of the window starting at each position (valid where it fits)
    tables: dict[int, NgramTable] = {}
    for n in range(1, max_n + 1):
        if n > 1:
            shifted = np.r_[tokens[n - 1 :], np.zeros(min(n - 1, len(tokens)), dtype=np.int64)]
            window_ids = np.unique(window_ids * vocab + shifted, return_inverse=True)[1].reshape(-1)
        starts = np.flatnonzero(np.arange(len(flat)) + n <= end)  # windows inside their text
        tables[n] = _count(n, owner[starts], window_ids[starts], np.maximum(lengths - n + 1, 0))
    return tables


def _count(n: int, owner: np.ndarray, grams: np.ndarray, totals: np.ndarray) -> NgramTable:
    if grams.size == 0:
        empty = np.zeros(0, dtype=np.int64)
        return NgramTable(n, empty, empty, empty, totals, 0)
    num_grams = int(grams.max()) + 1  # ids may have gaps (windows across texts); arrays stay small
    keys, counts = np.unique(owner * num_grams + grams, return_counts=True)
    return NgramTable(n, keys // num_grams, keys % num_grams, counts.astype(np.int64), totals, num_grams)


def max_count_in_other_texts(table: NgramTable) -> np.ndarray:
    """For each row (text t, gram g): max count of g over every text except t → [K].

    One pass: per n-gram keep the largest count, a text holding it and the second largest
    count (ties count twice). A text's own count is therefore never its own reference.
    """
    if table.text.size == 0:
        return np.zeros(0, dtype=np.int64)
    top = int(table.count.max()) + 1
    order = np.argsort(table.gram * top + (top - table.count), kind="stable")  # by gram, count desc
    gram_sorted = table.gram[order]
    first = np.flatnonzero(np.r_[True, gram_sorted[1:] != gram_sorted[:-1]])  # first row of each gram
    grams = gram_sorted[first]
    best = np.zeros(table.num_grams, dtype=np.int64)
    best_owner = np.full(table.num_grams, -1, dtype=np.int64)
    second = np.zeros(table.num_grams, dtype=np.int64)
    best[grams] = table.count[order[first]]
    best_owner[grams] = table.text[order[first]]
    nxt = first + 1
    has_second = nxt < len(order)
    has_second[has_second] = gram_sorted[nxt[has_second]] == grams[has_second]
    second[grams[has_second]] = table.count[order[nxt[has_second]]]
    own = best_owner[table.gram] == table.text
    result: np.ndarray = np.where(own, second[table.gram], best[table.gram])
    return result
