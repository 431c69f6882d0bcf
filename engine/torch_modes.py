"""`eval_mode`: run a block with a module in eval mode, then give it back the mode it had.

Evaluation, scoring and decoding switch dropout off for their block only; a model being trained
must come out of them still training, and one that was already in eval mode must stay so.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def eval_mode(module: torch.nn.Module) -> Iterator[None]:
    """`module.eval()` for the block; its training flag is restored on exit, also on an exception."""
    was_training = module.training
    module.eval()
    try:
        yield
    finally:
        module.train(was_training)
