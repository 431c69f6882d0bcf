"""Distinct-n, Uniq, Entropy-n, Rep and seq-rep-n on hand-computed toy inputs."""

from __future__ import annotations

import math

import pytest

from engine.metrics.diversity import distinct_n_corpus, distinct_n_per_text, entropy_n, uniq
from engine.metrics.repetition import ends_in_repetition, rep, seq_rep_n


def test_distinct_per_text_and_corpus() -> None:
    texts = [[1, 2, 1, 2], [1, 2, 3]]
    # per text: unigrams 2/4 and 3/3; bigrams 2/3 and 2/2
    assert distinct_n_per_text(texts, 1) == pytest.approx((0.5 + 1.0) / 2)
    assert distinct_n_per_text(texts, 2) == pytest.approx((2 / 3 + 1.0) / 2)
    # corpus: unigrams {1,2,3} / 7; bigrams {12, 21, 23} / 5
    assert distinct_n_corpus(texts, 1) == pytest.approx(3 / 7)
    assert distinct_n_corpus(texts, 2) == pytest.approx(3 / 5)
    assert distinct_n_corpus(texts[::-1], 2) == distinct_n_corpus(texts, 2)


def test_identical_single_empty_and_short_texts() -> None:
    assert distinct_n_corpus([[4, 5, 6]] * 3, 1) == pytest.approx(1 / 3)
    assert distinct_n_per_text([[4, 5, 6]] * 3, 1) == 1.0
    assert distinct_n_per_text([[], [7]], 2) == 0.0  # no text has a bigram: 0, not NaN
    assert distinct_n_per_text([[], [7], [7, 8]], 2) == 1.0  # short texts are skipped
    assert distinct_n_corpus([[]], 1) == 0.0
    assert uniq([[1, 2], [2, 3], []]) == 3


def test_entropy_of_uniform_and_single_ngram() -> None:
    assert entropy_n([[1, 2, 3, 4]], 1) == pytest.approx(math.log(4))
    assert entropy_n([[5, 5, 5]], 2) == 0.0
    assert entropy_n([[]], 4) == 0.0


def test_repetition_loop_detection_follows_holtzman() -> None:
    assert ends_in_repetition([9, 8, 1, 2, 3, 1, 2, 3])  # phrase of 3 twice at the end
    assert not ends_in_repetition([9, 8, 1, 2, 1, 2])  # phrase of 2 repeated only 2 times: too short
    assert not ends_in_repetition([7] * 50)  # a 1-token phrase needs more than 50 repeats
    assert ends_in_repetition([7] * 51)
    assert not ends_in_repetition([1, 2, 3, 4, 5, 6])
    assert not ends_in_repetition([])
    assert not ends_in_repetition([4])
    assert ends_in_repetition([5, 1, 2, 3, 4, 1, 2, 3, 4])


def test_rep_share_and_seq_rep() -> None:
    texts = [[1, 2, 3, 1, 2, 3], [1, 2, 3, 4]]
    assert rep(texts) == 0.5
    # seq-rep-1: text 1 has 3 distinct of 6 → 0.5; text 2: 0 → mean 0.25
    assert seq_rep_n(texts, 1) == pytest.approx(0.25)
    assert seq_rep_n([[1]], 4) == 0.0
    with pytest.raises(ValueError):
        rep([])
