"""`eval_mode` switches a module to eval mode for a block and gives it back its own mode."""

from __future__ import annotations

import pytest
import torch

from engine.torch_modes import eval_mode


@pytest.mark.parametrize("training", [True, False])
def test_mode_is_restored_after_the_block_and_after_an_error(training: bool) -> None:
    module = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.5)).train(training)
    with eval_mode(module):
        assert not module.training and not module[1].training
    assert module.training is training and module[1].training is training
    with pytest.raises(RuntimeError, match="boom"), eval_mode(module):
        raise RuntimeError("boom")
    assert module.training is training
