"""A non-finite loss at a run's first step blames the weights it started from, not the learning rate."""

from __future__ import annotations

import pytest

from engine.training.loop import TrainingDivergedError, check_finite_loss


def test_the_first_step_does_not_advise_resuming_from_a_checkpoint() -> None:
    with pytest.raises(TrainingDivergedError, match="the first step of this run: the weights it started from") as first:
        check_finite_loss(1, float("nan"), first=True)
    assert "resume from the last checkpoint" not in str(first.value) and "--lr" not in str(first.value)
    with pytest.raises(TrainingDivergedError, match=r"lower --lr .* --resume from the last checkpoint"):
        check_finite_loss(7, float("inf"))
    check_finite_loss(1, 2.5, first=True)
