"""The continuation metric suite of F² Table 1 / POSG Table 2, computed from token ids.

`continuation_metrics(generated, references)` returns every text metric of the table for a
set of generated continuations; with `references=None` it returns the "human" row (the
reference continuations scored on their own: no KLD / MS-Jaccard, which need both sets).
Token-level: texts are BPE id sequences with eos removed, so Uniq counts BPE tokens as F² does.
Percent-style metrics are returned as fractions in [0, 1].
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.metrics.bleu import self_bleu_from_stats, self_bleu_stats_from_tables
from engine.metrics.diversity import distinct_corpus_from_table, distinct_per_text_from_table, uniq
from engine.metrics.ngrams import ngram_tables, to_arrays
from engine.metrics.repetition import rep
from engine.metrics.similarity import ms_jaccard, unigram_kld

ORDERS = (1, 2, 3)


def continuation_metrics(
    generated: Sequence[Sequence[int]],
    references: Sequence[Sequence[int]] | None = None,
    self_bleu_cap: int | None = None,
    seed: int = 0,
) -> dict[str, float | None]:
    """Flat {metric name: value}; names are stable keys used by the reports."""
    if not generated:
        raise ValueError("no generated texts to score")
    result: dict[str, float | None] = {}
    if references is not None:
        result["kld"] = unigram_kld(references, generated)
        for n, value in ms_jaccard(references, generated, max(ORDERS)).items():
            result[f"ms_jaccard_{n}"] = value
    tables = ngram_tables(to_arrays(generated), 4)  # counted once, shared by the metrics below
    if len(generated) >= 2:
        stats = self_bleu_stats_from_tables(tables)
        for n, value in self_bleu_from_stats(stats, generated, self_bleu_cap, seed, "floor").items():
            result[f"self_bleu_{n}"] = value
    else:
        result.update({f"self_bleu_{n}": None for n in range(1, 5)})
    for n in ORDERS:
        result[f"distinct_{n}"] = distinct_per_text_from_table(tables[n])
        result[f"distinct_corpus_{n}"] = distinct_corpus_from_table(tables[n])
    result["rep"] = rep(generated)
    has_4grams = bool((tables[4].totals > 0).any())
    result["seq_rep_4"] = 1.0 - distinct_per_text_from_table(tables[4]) if has_4grams else 0.0
    result["uniq"] = uniq(generated)
    return result
