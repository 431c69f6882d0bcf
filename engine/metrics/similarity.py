"""Closeness of generated texts to the human references: unigram KLD and MS-Jaccard.

- `unigram_kld`: KL(p_ref ‖ p_gen) = Σ_x p_ref(x) log(p_ref(x) / max(p_gen(x), 1e-10)), in nats,
  over the unigram (token) distributions of the two sets. Only tokens the references
  use contribute; p_gen is floored, not renormalised (so a generated set that never uses a
  reference token is penalised by log(p_ref / 1e-10), finite).
- `ms_jaccard`: Montahaei et al. 2019 (MS-Jaccard, as in their MultisetDistances code): for
  each order k the n-gram counts of each set are divided by the number of texts in that set
  (average counts per text, so sets of different sizes compare), J_k = Σ_g min / Σ_g max;
  MS-Jaccard-n is the geometric mean of J_1..J_n. J_k = 0 when neither set has a k-gram.
Both are invariant to the order of the texts within each set.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from engine.metrics.ngrams import Text, ngram_tables, to_arrays

KLD_FLOOR = 1e-10


def unigram_kld(references: Sequence[Text], generated: Sequence[Text]) -> float:
    ref = Counter(t for text in references for t in text)
    gen = Counter(t for text in generated for t in text)
    ref_total, gen_total = sum(ref.values()), sum(gen.values())
    if ref_total == 0:
        raise ValueError("KLD needs at least one reference token")
    total = 0.0
    for token, count in ref.items():
        p = count / ref_total
        q = max(gen[token] / gen_total if gen_total else 0.0, KLD_FLOOR)
        total += p * float(np.log(p / q))
    return total


def ms_jaccard_orders(references: Sequence[Text], generated: Sequence[Text], max_n: int = 3) -> list[float]:
    """[J_1, …, J_max_n], the per-order multiset Jaccard similarities."""
    if not references or not generated:
        raise ValueError("MS-Jaccard needs at least one reference and one generated text")
    arrays = to_arrays([*references, *generated])
    ref_ids = np.arange(len(references))
    gen_ids = np.arange(len(references), len(arrays))
    result = []
    for table in ngram_tables(arrays, max_n).values():
        ref = table.corpus_counts(ref_ids) / len(references)
        gen = table.corpus_counts(gen_ids) / len(generated)
        union = float(np.maximum(ref, gen).sum())
        result.append(float(np.minimum(ref, gen).sum()) / union if union > 0 else 0.0)
    return result


def ms_jaccard(references: Sequence[Text], generated: Sequence[Text], max_n: int = 3) -> dict[int, float]:
    """{n: MS-Jaccard-n} for n = 1..max_n (geometric means of the per-order similarities)."""
    orders = ms_jaccard_orders(references, generated, max_n)
    return {n: float(np.prod(orders[:n]) ** (1.0 / n)) for n in range(1, max_n + 1)}
