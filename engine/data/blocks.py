"""Token blocks for LM training and a step-indexed batch order that makes resume exact.

Documents are encoded, each preceded by eos (the separator, so generation can start from eos),
concatenated and cut into windows of block_size + 1 tokens (inputs and shifted targets).
The order of windows in epoch e is a permutation seeded by (seed, e); the batch of any step is
therefore a pure function of the step number, which is all a resumed run needs.

`LengthBatchOrder` is the same contract for examples of varying length (PermGen): the epoch's
permutation is cut into pools of `pool` batches, each pool sorted by length and cut into batches,
and the epoch's batches are shuffled, so a batch holds examples of similar length (little padding)
drawn from a random pool and the batches still come in random order.
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


def epoch_generator(seed: int, epoch: int) -> torch.Generator:
    """The generator of a run's epoch `epoch`: its shuffles depend on (seed, epoch) only."""
    return torch.Generator().manual_seed(seed * 1_000_003 + epoch)


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
            self._perm = torch.randperm(self.num_blocks, generator=epoch_generator(self.seed, epoch))
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


class LengthBatchOrder:
    """Which examples form each step's batch, similar lengths together (see the module docstring)."""

    def __init__(self, lengths: Sequence[int], batch_size: int, seed: int, pool: int) -> None:
        if not lengths:
            raise ValueError("no training examples")
        if pool < 1:
            raise ValueError(f"a length pool holds at least one batch, got {pool}")
        self.lengths = torch.tensor(list(lengths), dtype=torch.long)
        self.batch_size, self.seed, self.pool = batch_size, seed, pool
        self.steps_per_epoch = -(-len(lengths) // batch_size)
        self._epoch = -1
        self._batches = torch.empty(0, batch_size, dtype=torch.long)

    def _epoch_batches(self, epoch: int) -> torch.Tensor:
        """[steps_per_epoch, batch_size] example ids of epoch `epoch` (its last batch wraps to its start)."""
        if epoch != self._epoch:
            generator = epoch_generator(self.seed, epoch)
            order = torch.randperm(len(self.lengths), generator=generator)
            order = torch.cat([order, order[: self.steps_per_epoch * self.batch_size - len(order)]])
            width = self.pool * self.batch_size
            pools = [chunk[torch.sort(self.lengths[chunk], stable=True).indices] for chunk in torch.split(order, width)]
            batches = torch.cat(pools).view(self.steps_per_epoch, self.batch_size)
            self._batches = batches[torch.randperm(self.steps_per_epoch, generator=generator)]
            self._epoch = epoch
        return self._batches

    def global_batch(self, step: int) -> torch.Tensor:
        """Example ids [batch_size] of optimizer step `step` (0-based)."""
        epoch, offset = divmod(step, self.steps_per_epoch)
        return self._epoch_batches(epoch)[offset].clone()
