"""Token-frequency views: AGG's frequency groups, per-group shares and Uniq, and isotropy I(W).

One definition each: the groups and I(W) are those of `engine.diagnostics.embedding` (AGG
helper), re-exported here so every report uses the same boundaries and eigenvectors.
- `agg_group_per_token`: that module's frequent 30% / medium 50% / rare 20% of the vocabulary by
  training count (ties: lower id first; sizes floor(0.3·V), floor(0.8·V) − floor(0.3·V), rest),
  as a group index per token id [V] (0, 1, 2).
- `group_shares`: share of all tokens of a set of texts that fall in each group (sums to 1).
- `group_uniq`: number of distinct tokens of each group used by a set of texts.
- `isotropy`: AGG Eq. 3, I(W) = min_a Z(a) / max_a Z(a), Z(a) = Σ_i exp(w_i·a) over the
  eigenvectors a of WᵀW, in log space.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.diagnostics.embedding import GROUP_NAMES, agg_group_ids, isotropy

__all__ = ["GROUP_NAMES", "agg_group_per_token", "group_shares", "group_uniq", "isotropy"]


def agg_group_per_token(counts: Sequence[int] | np.ndarray) -> np.ndarray:
    """Group index (0 frequent, 1 medium, 2 rare) of every token id → [V]."""
    groups = np.empty(len(counts), dtype=np.int64)
    for index, ids in enumerate(agg_group_ids(np.asarray(counts)).values()):
        groups[ids.numpy()] = index
    return groups


def group_shares(texts: Sequence[Sequence[int]], groups: np.ndarray) -> list[float]:
    tokens = np.asarray([t for text in texts for t in text], dtype=np.int64)
    if tokens.size == 0:
        return [0.0] * len(GROUP_NAMES)
    hist = np.bincount(groups[tokens], minlength=len(GROUP_NAMES))
    return [float(x) for x in hist / tokens.size]


def group_uniq(texts: Sequence[Sequence[int]], groups: np.ndarray) -> list[int]:
    distinct = np.asarray(sorted({int(t) for text in texts for t in text}), dtype=np.int64)
    return [int(x) for x in np.bincount(groups[distinct], minlength=len(GROUP_NAMES))]
