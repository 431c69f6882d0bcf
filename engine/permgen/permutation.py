"""π-SGD permutation sampling (paper §4.2, Definition 1): π'_i ~ Uniform(Z_T) per example per step.

Orders are drawn on the fly — never a pre-materialised handful (docs/architecture.md, "PermGen") — with a generator
seeded from (run seed, step), so step s draws the same orders when a run is resumed at s and
different orders at every other step. `torch.randperm` is a uniform draw over the T! orders.
The `--no-permute` baseline uses `identity=True`: always the natural order 1..T.
"""

from __future__ import annotations

import torch

STEP_STRIDE = 1_000_003  # a prime, so (seed, step) pairs map to distinct generator seeds in practice


class PermutationSampler:
    """Sentence orders (1-based) for the examples of one training step."""

    def __init__(self, seed: int, identity: bool = False) -> None:
        if seed < 0:
            raise ValueError(f"seed must be >= 0, got {seed}")
        self.seed = seed
        self.identity = identity

    def orders(self, step: int, sentence_counts: list[int]) -> list[list[int]]:
        """One order per example: a uniform random permutation of 1..T_i (identity for the baseline)."""
        if any(count < 1 for count in sentence_counts):
            raise ValueError(f"every example needs >= 1 sentence, got counts {sentence_counts}")
        if self.identity:
            return [list(range(1, count + 1)) for count in sentence_counts]
        generator = torch.Generator().manual_seed((self.seed * STEP_STRIDE + step) % (2**63))
        return [(torch.randperm(count, generator=generator) + 1).tolist() for count in sentence_counts]
