"""Step-indexed batch orders: every example once per epoch, reproducible from the step, and (pooled by
length) batches of similar lengths in random order."""

from __future__ import annotations

import random

import pytest

from engine.config import ConfigError, TrainConfig
from engine.data.blocks import BatchOrder, LengthBatchOrder


def _padding(batches: list[list[int]], lengths: list[int]) -> int:
    return sum(max(lengths[i] for i in batch) - lengths[i] for batch in batches for i in batch)


def test_a_length_pooled_epoch_holds_every_example_once_and_pads_less() -> None:
    rng = random.Random(0)
    lengths = [rng.randint(3, 60) for _ in range(640)]
    pooled = LengthBatchOrder(lengths, 16, seed=1, pool=8)
    plain = BatchOrder(len(lengths), 16, seed=1)
    epoch = [pooled.global_batch(step).tolist() for step in range(40)]
    assert sorted(i for batch in epoch for i in batch) == list(range(640))
    assert _padding(epoch, lengths) < _padding([plain.global_batch(s).tolist() for s in range(40)], lengths) / 3
    # batches come in random order, not shortest first
    maxima = [max(lengths[i] for i in batch) for batch in epoch]
    assert maxima != sorted(maxima)


def test_a_step_s_batch_is_the_same_after_a_restart_and_epochs_differ() -> None:
    lengths = [5, 9, 2, 7, 3, 8, 1, 4, 6, 10]
    first = LengthBatchOrder(lengths, 4, seed=3, pool=2)
    steps = [first.global_batch(s).tolist() for s in range(9)]
    again = LengthBatchOrder(lengths, 4, seed=3, pool=2)
    assert [again.global_batch(s).tolist() for s in (8, 0, 5)] == [steps[8], steps[0], steps[5]]
    # 10 examples, batches of 4: an epoch is 3 steps, its last batch wrapping to the epoch's start
    assert sorted({i for batch in steps[:3] for i in batch}) == list(range(10))
    assert steps[:3] != steps[3:6]


def test_bad_pools_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one batch"):
        LengthBatchOrder([1, 2], 1, seed=0, pool=0)
    with pytest.raises(ValueError, match="no training examples"):
        LengthBatchOrder([], 1, seed=0, pool=1)
    with pytest.raises(ConfigError, match="length_pool must be >= 0"):
        TrainConfig(length_pool=-1)
