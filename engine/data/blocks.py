"""Token blocks for LM training and a step-indexed batch order that makes resume exact.

Documents are encoded, each preceded by eos (the separator, so generation can start from eos),
concatenated and cut into windows of block_size + 1 tokens (inputs and shifted targets).
The order of windows in epoch e is a permutation seeded by (seed, e); the batch of any step is
therefore a pure function of the step number, which is all a resumed run needs.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch


def make_blocks(encoded: Sequence[Sequence[int]], eos_id: int, block_size: int) -> torch.Tensor:
    """Concatenate [eos, doc...] streams and cut them into windows → [num_blocks, block_size + 1]."""
    stream = [token for doc in encoded for token in (eos_id, *doc)]
    stream.append(eos_id)
    width = block_size + 1
    if len(stream) < width:
        raise ValueError(f"corpus has {len(stream)} tokens, fewer than one block of {width}")
    count = (len(stream) - 1) // block_size
    data = torch.tensor(stream[: count * block_size + 1], dtype=torch.long)
    return data.unfold(0, width, block_size)  # windows overlap by one token


class BatchOrder:
    """Which block indices form the global batch of each optimizer step."""

    def __init__(self, num_blocks: int, batch_size: int, seed: int) -> None:
        if num_blocks < 1:
            raise ValueError("no training blocks")
        self.num_blocks = num_blocks
        self.batch_size = batch_size
        self.seed = seed
        self._epoch = -1
        self._perm = torch.empty(0, dtype=torch.long)

    def _permutation(self, epoch: int) -> torch.Tensor:
        if epoch != self._epoch:
            generator = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
            self._perm = torch.randperm(self.num_blocks, generator=generator)
            self._epoch = epoch
        return self._perm

    def global_batch(self, step: int) -> torch.Tensor:
        """Block ids [batch_size] of optimizer step `step` (0-based), wrapping across epochs."""
        start = step * self.batch_size
        ids = []
        for position in range(start, start + self.batch_size):
            epoch, offset = divmod(position, self.num_blocks)
            ids.append(int(self._permutation(epoch)[offset]))
        return torch.tensor(ids, dtype=torch.long)
