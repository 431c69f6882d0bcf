"""The continuation suite: order invariance, single / empty / one-token generations, human row."""

from __future__ import annotations

import math
import random

import pytest

from engine.metrics.bleu import self_bleu_orders
from engine.metrics.diversity import distinct_n_per_text
from engine.metrics.repetition import seq_rep_n
from engine.metrics.suite import continuation_metrics


def texts(seed: int, count: int = 30) -> list[list[int]]:
    rng = random.Random(seed)
    return [[rng.randrange(12) for _ in range(rng.randrange(1, 15))] for _ in range(count)]


def test_suite_equals_the_single_metric_functions_and_ignores_order() -> None:
    generated, references = texts(1), texts(2)
    result = continuation_metrics(generated, references)
    assert result["self_bleu_3"] == pytest.approx(self_bleu_orders(generated)[3])
    assert result["distinct_2"] == pytest.approx(distinct_n_per_text(generated, 2))
    assert result["seq_rep_4"] == pytest.approx(seq_rep_n(generated, 4))
    shuffled = continuation_metrics(generated[::-1], random.Random(0).sample(references, len(references)))
    assert shuffled == pytest.approx(result)


def test_identical_generations() -> None:
    result = continuation_metrics([[1, 2, 3, 4, 5]] * 4, [[1, 2, 3, 4, 5]] * 2)
    assert result["self_bleu_4"] == pytest.approx(1.0) and result["ms_jaccard_3"] == pytest.approx(1.0)
    assert result["kld"] == 0.0 and result["uniq"] == 5 and result["distinct_corpus_1"] == pytest.approx(0.25)


def test_single_empty_and_one_token_generations_have_no_nan() -> None:
    single = continuation_metrics([[4, 5, 6]], [[4, 5]])
    assert single["self_bleu_4"] is None
    for generated in ([[], []], [[7], [8], []], [[3]]):
        result = continuation_metrics(generated, [[1, 2, 3]])
        assert all(v is None or math.isfinite(v) for v in result.values()), result
    with pytest.raises(ValueError, match="no generated"):
        continuation_metrics([], [[1]])


def test_human_row_has_no_reference_metrics() -> None:
    result = continuation_metrics(texts(3))
    assert "kld" not in result and "ms_jaccard_1" not in result and result["self_bleu_1"] is not None
