"""Termination metrics (NMST §4): non-termination ratio r_nt(L) and mean p(eos) per step.

A generated sequence's length |y| is the step at which it produced eos (1-based, eos included)
or None when it produced none within the decoding cap. r_nt(L) = q(|y| > L), the share of
sequences with no eos among their first L tokens; it is only known for L ≤ the cap used.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def non_termination_ratio(lengths: Sequence[int | None], max_length: int, cap: int) -> float:
    """r_nt(L) for L = max_length, from sequences decoded with at most `cap` tokens."""
    if not lengths:
        raise ValueError("r_nt needs at least one sequence")
    if not 1 <= max_length <= cap:
        raise ValueError(f"r_nt(L) is only known for 1 <= L <= the decoding cap {cap}, got L={max_length}")
    return sum(1 for n in lengths if n is None or n > max_length) / len(lengths)


def non_termination_curve(lengths: Sequence[int | None], cap: int) -> list[float]:
    """[r_nt(1), …, r_nt(cap)]."""
    return [non_termination_ratio(lengths, length, cap) for length in range(1, cap + 1)]


def mean_by_step(values: Sequence[Sequence[float]]) -> list[float]:
    """Mean of the t-th value over the sequences that reached step t → [longest length]."""
    longest = max((len(v) for v in values), default=0)
    sums = np.zeros(longest)
    counts = np.zeros(longest)
    for row in values:
        sums[: len(row)] += np.asarray(row, dtype=np.float64)
        counts[: len(row)] += 1
    return [float(x) for x in sums / np.maximum(counts, 1)]
