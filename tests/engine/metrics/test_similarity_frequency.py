"""KLD, MS-Jaccard, frequency groups, shares, I(W), r_nt(L) on hand-derived values."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from engine.metrics.frequency import agg_group_per_token, group_shares, group_uniq, isotropy
from engine.metrics.similarity import KLD_FLOOR, ms_jaccard, ms_jaccard_orders, unigram_kld
from engine.metrics.termination import mean_by_step, non_termination_curve, non_termination_ratio


def test_kld_hand_values() -> None:
    assert unigram_kld([[1, 2]], [[2, 1]]) == 0.0
    expected = 0.5 * math.log(0.5 / 0.75) + 0.5 * math.log(0.5 / 0.25)
    assert unigram_kld([[1, 1, 2, 2]], [[1, 1, 1, 2]]) == pytest.approx(expected)
    # a reference token never generated is floored, not infinite
    assert unigram_kld([[1, 3]], [[1]]) == pytest.approx(0.5 * math.log(0.5) + 0.5 * math.log(0.5 / KLD_FLOOR))
    assert unigram_kld([[1, 2], [3]], [[4, 5]]) == unigram_kld([[3], [1, 2]], [[5, 4]])


def test_ms_jaccard_hand_values() -> None:
    assert ms_jaccard([[1, 2, 3]], [[1, 2, 3]]) == pytest.approx({1: 1.0, 2: 1.0, 3: 1.0})
    assert ms_jaccard([[1, 2, 3]], [[4, 5, 6]]) == {1: 0.0, 2: 0.0, 3: 0.0}
    # unigrams: ref {a:1, b:1}, gen {a:1, c:1} → 1/3; bigrams disjoint → 0
    assert ms_jaccard_orders([[1, 2]], [[1, 3]], 2) == pytest.approx([1 / 3, 0.0])
    # counts are per text: two references of [a] vs one generation [a] are the same multiset
    assert ms_jaccard_orders([[1], [1]], [[1]], 1) == [1.0]
    orders = ms_jaccard_orders([[1, 2, 1, 2]], [[1, 2, 2, 1]], 2)  # J1 = 1, J2: {12:2,21:1} vs {12,22,21} → 2/4
    assert orders == pytest.approx([1.0, 0.5])
    assert ms_jaccard([[1, 2, 1, 2]], [[1, 2, 2, 1]], 2)[2] == pytest.approx(math.sqrt(0.5))


def test_agg_group_per_token_shares_and_uniq() -> None:
    counts = np.array([50, 0, 10, 40, 30, 20, 5, 1, 2, 3])  # sorted ids: 0 3 4 | 5 2 6 9 8 | 7 1
    groups = agg_group_per_token(counts)
    assert groups.tolist() == [0, 2, 1, 0, 0, 1, 1, 2, 1, 1]
    shares = group_shares([[0, 0, 5], [7]], groups)
    assert shares == pytest.approx([0.5, 0.25, 0.25]) and sum(shares) == pytest.approx(1.0)
    assert group_uniq([[0, 0, 5], [7, 3]], groups) == [2, 1, 1]
    assert group_shares([[]], groups) == [0.0, 0.0, 0.0]


def test_isotropy_hand_values() -> None:
    symmetric = torch.tensor([[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0]])
    assert isotropy(symmetric) == pytest.approx(1.0)
    cone = torch.tensor([[3.0, 4.0]] * 5)  # |v| = 5: Z(v̂) = 5e^5 (or 5e^-5), Z(v̂⊥) = 5
    assert isotropy(cone) == pytest.approx(math.exp(-5.0), rel=1e-6)
    assert 0.0 < isotropy(torch.randn(50, 8, generator=torch.Generator().manual_seed(0))) <= 1.0


def test_non_termination_ratio() -> None:
    lengths = [3, None, 10, 1]
    assert non_termination_ratio(lengths, 2, cap=10) == 0.75  # 3, None and 10 exceed 2
    assert non_termination_ratio(lengths, 10, cap=10) == 0.25
    assert non_termination_curve(lengths, cap=3) == [0.75, 0.75, 0.5]
    with pytest.raises(ValueError, match="decoding cap"):
        non_termination_ratio(lengths, 11, cap=10)
    assert mean_by_step([[0.1, 0.3], [0.3]]) == pytest.approx([0.2, 0.3])
