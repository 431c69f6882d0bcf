"""Token-frequency views: AGG's frequency groups, per-group shares, and isotropy I(W).

- `frequency_groups`: AGG §3 (DESIGN §3): sort the vocabulary by training count (descending,
  ties by id, so the grouping is deterministic) and label the first 30% "frequent", the next
  50% "medium", the last 20% "rare" → group index per token id [V] (0, 1, 2). The boundaries
  are ⌊0.3·V⌉ and ⌊0.8·V⌉ (rounded).
- `group_shares`: share of all tokens of a set of texts that fall in each group (sums to 1).
- `group_uniq`: number of distinct tokens of each group used by a set of texts.
- `isotropy`: AGG Eq. 3, I(W) = min_a Z(a) / max_a Z(a) with Z(a) = Σ_i exp(w_i·a) over the
  eigenvectors a of WᵀW (the right singular vectors of W). Computed in log space
  (logsumexp) so large embeddings do not overflow.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

GROUP_NAMES = ("frequent", "medium", "rare")
GROUP_FRACTIONS = (0.3, 0.5, 0.2)


def frequency_groups(counts: Sequence[int] | np.ndarray) -> np.ndarray:
    counts = np.asarray(counts)
    size = counts.shape[0]
    if size < len(GROUP_NAMES):
        raise ValueError(f"need at least {len(GROUP_NAMES)} vocabulary entries, got {size}")
    order = np.lexsort((np.arange(size), -counts))  # by count descending, then id
    bounds = np.round(np.cumsum(GROUP_FRACTIONS) * size).astype(int)
    groups = np.empty(size, dtype=np.int64)
    groups[order] = np.searchsorted(bounds, np.arange(size), side="right")
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


def isotropy(weight: torch.Tensor) -> float:
    """I(W) for an embedding matrix W [V, D]; 1 = perfectly isotropic."""
    w = weight.detach().double().cpu()
    _, _, vh = torch.linalg.svd(w, full_matrices=False)  # rows of vh: eigenvectors of WᵀW
    log_z = torch.logsumexp(w @ vh.T, dim=0)  # [D] log Z(a) per eigenvector
    return float(torch.exp(log_z.min() - log_z.max()))
