"""MefMax and its ablations on hand-made frequency tables, against values derived by hand."""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np
import pytest

from engine.config import ConfigError, ModelConfig
from engine.heads.frequency_classes import (
    build_frequency_classes,
    efficiency,
    fit_f2_config,
    group_shares,
    mass_group_per_token,
)


def entropy_efficiency(counts: list[int]) -> float:
    """Eq. 6 written out: −Σ p·log p / log |k|, with 1 for a single entry (our convention)."""
    if len(counts) == 1:
        return 1.0
    total = sum(counts)
    return -sum(c / total * math.log(c / total) for c in counts) / math.log(len(counts))


def reference_mefmax(counts: list[int]) -> tuple[int, list[int]]:
    """Algorithm 1 transcribed line by line, with exact fractions instead of floats."""
    total = sum(counts)
    freqs = [Fraction(c, total) for c in counts]
    best, out = -1.0, [len(counts)]
    for k in range(1, int(1 / freqs[0]) + 1):
        bounds, target, cum, idx = [], Fraction(1, k), Fraction(0), 0
        while target <= 1:
            cum += freqs[idx]
            idx += 1
            if cum >= target:
                target += Fraction(1, k)
                bounds.append(idx)
        classes = [counts[a:b] for a, b in zip([0, *bounds[:-1]], bounds, strict=True)]
        score = entropy_efficiency([sum(c) for c in classes]) + sum(map(entropy_efficiency, classes)) / k
        if score > best + 1e-9:
            best, out = score, bounds
    return len(out), out


def test_two_class_table_by_hand() -> None:
    # counts 4,2,1,1 (p = .5,.25,.125,.125); p_max = .5 so K ∈ {1, 2}.
    # K=1: U(C) = 1, U(V) = 1.75·ln2 / ln4 = 0.875 → 1.875.
    # K=2: boundary after token 1 (cum .5 ≥ 1/2), classes {4} and {2,1,1}: U(C) = 1,
    #      U = (1 + 1.5·ln2/ln3) / 2 = 0.97320 → 1.97320, the best.
    classes = build_frequency_classes([4, 2, 1, 1])
    assert classes.num_classes == 2
    assert classes.ends.tolist() == [1, 4]
    assert classes.score == pytest.approx(1 + (1 + 1.5 * math.log(2) / math.log(3)) / 2)
    assert classes.mass.tolist() == [0.5, 0.5]


def test_zipfian_table_by_hand() -> None:
    # counts ≈ 60/r: 60,30,20,15,12,10 (total 147), ⌊1/p_max⌋ = 2.
    # K=1: 1 + U(all) = 1.88279. K=2: first boundary where cum·2 ≥ 147 → after 30 (cum 90):
    # U(90,57) + (U(60,30) + U(20,15,12,10)) / 2 = 1.91018 → K = 2, ends [2, 6].
    counts = [60, 30, 20, 15, 12, 10]
    one = 1 + entropy_efficiency(counts)
    two = entropy_efficiency([90, 57]) + (entropy_efficiency([60, 30]) + entropy_efficiency([20, 15, 12, 10])) / 2
    assert one == pytest.approx(1.88279, abs=1e-5) and two == pytest.approx(1.91018, abs=1e-5)
    classes = build_frequency_classes(counts)
    assert (classes.num_classes, classes.ends.tolist()) == (2, [2, 6])
    assert classes.score == pytest.approx(two)


def test_larger_zipfian_tables_match_the_literal_algorithm() -> None:
    rng = np.random.default_rng(0)
    for size, scale in [(30, 120), (200, 1000), (500, 5000)]:
        counts = [max(1, int(scale / r)) for r in range(1, size + 1)]
        assert build_frequency_classes(counts).ends.tolist() == reference_mefmax(counts)[1]
    for _ in range(40):
        counts = sorted(rng.integers(1, 50, size=int(rng.integers(1, 40))).tolist(), reverse=True)
        classes = build_frequency_classes(counts)
        k, bounds = reference_mefmax(counts)
        assert (classes.num_classes, classes.ends.tolist()) == (k, bounds), counts


def test_edge_cases() -> None:
    single = build_frequency_classes([7])
    assert (single.num_classes, single.ends.tolist(), single.score) == (1, [1], 2.0)
    # all equal: every K dividing 4 scores exactly 2 (uniform classes of uniform tokens); ties keep K = 1
    assert build_frequency_classes([3, 3, 3, 3]).ends.tolist() == [4]
    # p_max > 0.5: ⌊1/p_max⌋ = 1, so one class whatever the rest looks like
    assert build_frequency_classes([6, 3, 1]).ends.tolist() == [3]
    assert build_frequency_classes([51, 1] + [1] * 48).num_classes == 1


def test_zero_counts_join_the_rarest_class_and_ties_keep_id_order() -> None:
    # counted tokens 5,3,2 → K=2 ({5}, {3,2}: 1.9855 beats 1 + U(5,3,2) = 1.9372); zeros go last.
    classes = build_frequency_classes([5, 0, 3, 0, 2])
    assert classes.order.tolist() == [0, 2, 4, 1, 3]
    assert classes.ends.tolist() == [1, 5]
    assert classes.token_class().tolist() == [0, 1, 1, 1, 1]
    assert build_frequency_classes([2, 5, 2, 5]).order.tolist() == [1, 3, 0, 2]


def test_ablation_variants() -> None:
    eq_token = build_frequency_classes([9, 5, 4, 1, 0], "fixed-eq-token", 2)
    assert eq_token.ends.tolist() == [3, 5] and eq_token.score is None
    assert eq_token.mass.tolist() == pytest.approx([18 / 19, 1 / 19])
    # fixed-eq-freq with K = 3 on 4,2,1,1: boundaries where cum reaches 1/3, 2/3, 1 → [1, 2, 4]
    assert build_frequency_classes([4, 2, 1, 1], "fixed-eq-freq", 3).ends.tolist() == [1, 2, 4]
    # K = 4 > 1/p_max: a token closes at most one class, so every class still gets one token
    assert build_frequency_classes([4, 2, 1, 1], "fixed-eq-freq", 4).ends.tolist() == [1, 2, 3, 4]
    assert build_frequency_classes([4, 2, 1, 1], "fixed-eq-freq", 2).ends.tolist() == [1, 4]


@pytest.mark.parametrize(
    ("counts", "method", "k", "message"),
    [
        ([1, -2], "mefmax", 0, ">= 0"),
        ([0, 0], "mefmax", 0, "all token counts are zero"),
        ([1.5, 2.0], "mefmax", 0, "integers"),
        ([], "mefmax", 0, "non-empty"),
        ([3, 2], "mefmax", 2, "MefMax chooses"),
        ([3, 2], "fixed-eq-freq", 3, r"\[1, 2\]"),
        ([3, 2], "fixed-eq-token", 0, r"\[1, 2\]"),
        ([3, 2], "kmeans", 2, "unknown frequency-class method"),
    ],
)
def test_bad_input_is_refused(counts: list[float], method: str, k: int, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_frequency_classes(np.asarray(counts), method, k)


def test_efficiency_bounds() -> None:
    assert efficiency(np.array([2, 2, 2])) == pytest.approx(1.0)
    assert efficiency(np.array([1])) == 1.0
    assert 0 < efficiency(np.array([100, 1])) < 0.1


def test_fit_config_records_k_and_refuses_a_disagreeing_k() -> None:
    config = ModelConfig(vocab_size=6, n_layer=1, n_head=1, n_embd=4, head="f2")
    counts = [60, 30, 20, 15, 12, 10]
    fitted, state = fit_f2_config(config, counts)
    assert fitted.f2_classes == 2 and state["class_ends"].tolist() == [2, 6]
    assert fit_f2_config(fitted, counts)[0] == fitted  # a bundle's own K agrees
    with pytest.raises(ConfigError, match="MefMax chooses 2"):
        fit_f2_config(ModelConfig(vocab_size=6, n_layer=1, n_head=1, n_embd=4, head="f2", f2_classes=3), counts)
    with pytest.raises(ConfigError, match="f2_classes must be"):
        ModelConfig(head="f2", f2_class_method="fixed-eq-freq")
    with pytest.raises(ConfigError, match="f2_class_method"):
        ModelConfig(f2_class_method="equal")


def test_mefmax_on_a_50k_zipfian_vocabulary_is_fast() -> None:
    counts = (10**7 / np.arange(1, 50_001)).astype(np.int64)
    start = time.perf_counter()
    classes = build_frequency_classes(counts)
    assert time.perf_counter() - start < 1.0
    assert classes.sizes.sum() == 50_000 and (np.diff(classes.ends) > 0).all()


def test_mass_group_per_token() -> None:
    # mass before each token: 0, .5, .7, .85, .95 → frequent, medium, rare, rare, very rare; zero → very rare
    groups = mass_group_per_token([50, 20, 15, 10, 5, 0])
    assert groups.tolist() == [0, 1, 2, 2, 3, 3]
    shares = group_shares([0, 0, 1, 4, 5], groups)
    assert shares == {"frequent": 0.4, "medium": 0.2, "rare": 0.0, "very rare": 0.4}
    with pytest.raises(ValueError, match="no tokens"):
        group_shares([], groups)
