"""Frequency classes for the F² head: MefMax (F² paper §3.3, Algorithm 1, Eq. 5–6) and ablations.

Tokens are sorted by their training-set count (descending; ties keep the lower id first, so the
order is deterministic) and classes are contiguous ranges of that order, numbered from the most
frequent (class 0) to the rarest (class K−1).

MefMax, as Algorithm 1: for every candidate K = 1..⌊1/p_max⌋ place a boundary after the token
where the cumulative relative frequency first reaches k/K (k = 1..K, one boundary per token at
most), score the boundaries by Eq. 5 — U(C) + (1/|C|)·Σ_i U(V_i) with U the efficiency
(normalized entropy, Eq. 6) — and keep the best K. Choices where the paper is silent:

- counts are compared as exact integers (`cum·K ≥ k·total`), so the last boundary always lands
  on the last counted token; the authors' float loop computes the last class off by one;
- the efficiency of a one-element distribution (0/0 in Eq. 6) is taken as 1: a single outcome
  is as uniform as it can be;
- a candidate replaces the best only if it scores more than 1e-9 higher, so float noise cannot
  break exact ties (e.g. all counts equal): the smallest K among tied candidates wins, like the
  strict `<` of Algorithm 1;
- tokens never seen in training (count 0: pad, unused sentence marks, unseen bytes) carry no
  frequency mass, so MefMax runs over the counted tokens and the zero-count tokens are appended
  to the rarest class (they are rarer than every counted token). Special tokens that do occur
  (eos: one per document) are classed by their count like any other token.

Ablations of §4.4.1 with a given K: `fixed-eq-token` (equal numbers of tokens per class over the
whole frequency-sorted vocabulary) and `fixed-eq-freq` (the equal-mass boundaries of Algorithm 1
for that one K). Cost: O(|V| log |V|) for the sort, then O(|V|) per candidate K.

Also here: `mass_group_per_token`, the frequency groups of the F² paper's §4.3 report (frequent =
top 40% of training mass, very rare = bottom 10%; the paper does not give the middle cut, we use
medium 40–70% and rare 70–90%), and `group_shares` to compare generated and reference text.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from engine.config import F2_CLASS_METHODS, ConfigError, ModelConfig

TIE_TOLERANCE = 1e-9  # a candidate K must beat the best Eq. 5 score by more than this
FREQUENCY_GROUPS = ("frequent", "medium", "rare", "very rare")
GROUP_CUTS = (0.4, 0.7, 0.9)  # cumulative training mass where each group ends (§4.3 / Fig. 2)


def efficiency(counts: np.ndarray) -> float:
    """Eq. 6: entropy of the distribution ∝ `counts` divided by log(len); 1 for a single entry."""
    counts = np.asarray(counts, dtype=np.float64)
    if counts.size == 1:
        return 1.0
    p = counts / counts.sum()
    p = p[p > 0]
    return float(-(p * np.log(p)).sum() / math.log(counts.size))


def equal_mass_boundaries(sorted_counts: np.ndarray, k: int) -> np.ndarray:
    """Algorithm 1 lines 5–12 for one K: class ends (exclusive) over counts sorted descending.

    Boundary k is placed after the first token whose cumulative count reaches k/K of the total;
    a token closes at most one class, so a boundary that would repeat moves one token on. When
    K exceeds what the counts allow (only reachable by `fixed-eq-freq`), ends are kept so that
    every class still gets at least one token.
    """
    n = len(sorted_counts)
    if not 1 <= k <= n:
        raise ConfigError(f"number of classes must be in [1, {n}] (the counted tokens), got {k}")
    cum_k = np.cumsum(sorted_counts, dtype=np.int64) * k  # [n], exact: cum·K ≥ k·total ⇔ cum ≥ k/K
    total = int(sorted_counts.sum())
    first = np.searchsorted(cum_k, np.arange(1, k + 1, dtype=np.int64) * total, side="left") + 1
    ends = np.empty(k, dtype=np.int64)
    previous = 0
    for index in range(k):
        previous = min(max(int(first[index]), previous + 1), n - (k - 1 - index))
        ends[index] = previous
    return ends


def equal_token_boundaries(n: int, k: int) -> np.ndarray:
    """`fixed-eq-token`: K classes of ⌈n/K⌉ or ⌊n/K⌋ consecutive tokens (larger ones first)."""
    if not 1 <= k <= n:
        raise ConfigError(f"number of classes must be in [1, {n}] (the vocabulary), got {k}")
    sizes = np.full(k, n // k, dtype=np.int64)
    sizes[: n % k] += 1
    return np.cumsum(sizes)


def mean_efficiency_score(sorted_counts: np.ndarray, ends: np.ndarray) -> float:
    """Eq. 5 for classes ending at `ends`: U(class masses) + mean over classes of U(within class).

    O(K) after O(n) prefix sums: a class with counts c and total S has entropy log S − Σc·log c / S.
    """
    counts = sorted_counts.astype(np.float64)
    cum = np.concatenate([[0.0], np.cumsum(counts)])  # [n + 1]
    cum_clogc = np.concatenate([[0.0], np.cumsum(counts * np.log(np.maximum(counts, 1.0)))])
    starts = np.concatenate([[0], ends[:-1]])
    mass = cum[ends] - cum[starts]  # [K]
    sizes = ends - starts
    entropy = np.log(mass) - (cum_clogc[ends] - cum_clogc[starts]) / mass
    within = np.where(sizes > 1, entropy / np.log(np.maximum(sizes, 2)), 1.0)
    return efficiency(mass) + float(within.mean())


def mefmax(sorted_counts: np.ndarray) -> tuple[np.ndarray, float]:
    """Algorithm 1 over positive counts sorted descending → (class ends, best Eq. 5 score)."""
    total = int(sorted_counts.sum())
    max_classes = total // int(sorted_counts[0])  # ⌊1/p_max⌋
    best_ends, best_score = equal_mass_boundaries(sorted_counts, 1), -math.inf
    for k in range(1, max_classes + 1):
        ends = equal_mass_boundaries(sorted_counts, k)
        score = mean_efficiency_score(sorted_counts, ends)
        if score > best_score + TIE_TOLERANCE:
            best_ends, best_score = ends, score
    return best_ends, best_score


@dataclass(frozen=True)
class FrequencyClasses:
    """A partition of the vocabulary into frequency classes (contiguous in frequency order)."""

    method: str
    order: np.ndarray  # [V] token ids, most frequent first
    ends: np.ndarray  # [K] exclusive end of each class in `order`; ends[-1] == V
    mass: np.ndarray  # [K] share of the training tokens falling in each class
    score: float | None = None  # Eq. 5 score of the boundaries, when computed

    @property
    def num_classes(self) -> int:
        return len(self.ends)

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(np.concatenate([[0], self.ends]))

    def token_class(self) -> np.ndarray:
        """Class of every token id → [V]."""
        classes = np.empty(len(self.order), dtype=np.int64)
        classes[self.order] = np.repeat(np.arange(self.num_classes), self.sizes)
        return classes

    def head_state(self) -> dict[str, torch.Tensor]:
        """The F² head's persistent buffers (saved with the weights, so loading is exact)."""
        return {
            "freq_order": torch.from_numpy(self.order.astype(np.int64)),
            "class_ends": torch.from_numpy(self.ends.astype(np.int64)),
            "class_mass": torch.from_numpy(self.mass.astype(np.float32)),
        }


def sort_by_frequency(counts: Sequence[int] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Validated counts → (token ids most frequent first, counts in that order)."""
    array = np.asarray(counts)
    if array.ndim != 1 or array.size == 0 or not np.issubdtype(array.dtype, np.integer):
        raise ConfigError("token counts must be a non-empty 1-D array of integers")
    if (array < 0).any():
        raise ConfigError("token counts must be >= 0")
    if not array.any():
        raise ConfigError("all token counts are zero: F² classes need the tokenizer's training counts")
    order = np.argsort(-array, kind="stable")
    return order, array[order].astype(np.int64)


def build_frequency_classes(
    counts: Sequence[int] | np.ndarray, method: str = "mefmax", num_classes: int = 0
) -> FrequencyClasses:
    """Frequency classes over a vocabulary from its training counts (see the module docstring).

    `num_classes` is required (≥ 1) for the fixed-* ablations and must be 0 for MefMax.
    """
    if method not in F2_CLASS_METHODS:
        raise ConfigError(f"unknown frequency-class method {method!r}; available: {list(F2_CLASS_METHODS)}")
    if method == "mefmax" and num_classes:
        raise ConfigError("MefMax chooses the number of classes itself; pass num_classes=0")
    order, sorted_counts = sort_by_frequency(counts)
    positive = int((sorted_counts > 0).sum())
    score: float | None = None
    if method == "fixed-eq-token":
        ends = equal_token_boundaries(len(order), num_classes)
    else:
        counted = sorted_counts[:positive]
        if method == "mefmax":
            ends, score = mefmax(counted)
        else:
            ends = equal_mass_boundaries(counted, num_classes)
            score = mean_efficiency_score(counted, ends)
        ends[-1] = len(order)  # zero-count tokens join the rarest class
    cum = np.concatenate([[0], np.cumsum(sorted_counts)])
    mass = (cum[ends] - cum[np.concatenate([[0], ends[:-1]])]) / cum[-1]
    return FrequencyClasses(method, order, ends, mass, score)


def mass_group_per_token(counts: Sequence[int] | np.ndarray, cuts: Iterable[float] = GROUP_CUTS) -> np.ndarray:
    """Group of every token id → [V] (0 = frequent … 3 = very rare), by training mass before it.

    A token is in group g when the training mass of the tokens more frequent than it lies in
    [cut_{g−1}, cut_g); zero-count tokens are very rare.
    """
    order, sorted_counts = sort_by_frequency(counts)
    mass_before = (np.cumsum(sorted_counts) - sorted_counts) / sorted_counts.sum()
    groups = np.empty(len(order), dtype=np.int64)
    groups[order] = np.searchsorted(np.asarray(list(cuts)), mass_before, side="right")
    groups[np.asarray(counts) == 0] = len(FREQUENCY_GROUPS) - 1
    return groups


def group_shares(token_ids: Iterable[int], token_group: np.ndarray) -> dict[str, float]:
    """Share of `token_ids` in each frequency group (the §4.3 / Fig. 2 report)."""
    ids = np.fromiter(token_ids, dtype=np.int64)
    if ids.size == 0:
        raise ValueError("no tokens to report on")
    hist = np.bincount(token_group[ids], minlength=len(FREQUENCY_GROUPS))
    return {name: float(h) / ids.size for name, h in zip(FREQUENCY_GROUPS, hist, strict=True)}


def fit_f2_config(
    config: ModelConfig, counts: Sequence[int] | np.ndarray
) -> tuple[ModelConfig, dict[str, torch.Tensor]]:
    """Fit F² classes from training counts → (config with `f2_classes` = K, the head's class buffers).

    With MefMax, a config that already names K (e.g. from a bundle) must agree with the fit.
    """
    method = config.f2_class_method
    classes = build_frequency_classes(counts, method, 0 if method == "mefmax" else config.f2_classes)
    if method == "mefmax" and config.f2_classes not in (0, classes.num_classes):
        raise ConfigError(
            f"f2_classes={config.f2_classes}, but MefMax chooses {classes.num_classes} classes for these "
            "token counts; leave f2_classes at 0 for MefMax, or pick a fixed-* f2_class_method"
        )
    return dataclasses.replace(config, f2_classes=classes.num_classes), classes.head_state()
