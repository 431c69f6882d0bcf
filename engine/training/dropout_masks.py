"""Dropout masks cut from 64-bit random integers, for a training step compiled on the CPU.

A compiled CPU step with inductor's `fallback_random` runs dropout as torch's eager kernel: one
Bernoulli draw per element, a copy and an unfused multiply.
PermGen's BART masks ~50M values a step (attention, activation and residual dropout), so that was over
a quarter of its step (docs/cpu-training-speed.md). Here one int64 from torch's generator (`random_()`:
63 random bits) gives four independent 15-bit uniform values, so the generator runs once
per four mask elements, and comparing and scaling fuse into the kernel that uses the mask. The masks
still come from torch's generator, so `torch.manual_seed` fixes them as it fixes torch's own dropout.

Element i is kept when its 15-bit value u (uniform on 0 … 32767) satisfies u ≥ round(p · 32768), so
P(keep) = 1 − round(p · 32768) / 32768: within 2^-16 of 1 − p (p = 0.1: 0.899994 instead of 0.9).
Kept values are scaled by 1 / (1 − p) like torch's dropout, so autograd's `native_dropout_backward`
(grad · mask / (1 − p)) is the exact derivative of this forward.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

# `random_()` on int64 draws uniformly on 0 … 2^63 − 1: 63 random bits, cut into four 15-bit values
SLICE_BITS = 15
SLICES_PER_WORD = 4
SLICE_VALUES = 1 << SLICE_BITS


def keep_threshold(p: float) -> int:
    """The smallest kept 15-bit value: P(u ≥ it) is 1 − p to within 2^-16."""
    return round(p * SLICE_VALUES)


def uniform_15bit(count: int, device: torch.device) -> torch.Tensor:
    """`count` independent uniform integers on 0 … 32767 (int64), four per 64-bit random draw."""
    empty = torch.empty(((count + SLICES_PER_WORD - 1) // SLICES_PER_WORD,), dtype=torch.int64, device=device)
    # the functional form of `random_()`: a decomposition must not write in place
    words: torch.Tensor = torch.ops.aten.random.default(empty)  # (words,) uniform on 0 … 2^63 − 1
    shifts = torch.arange(0, SLICES_PER_WORD * SLICE_BITS, SLICE_BITS, device=device)  # (4,): bits 0 … 59
    slices = (words.unsqueeze(-1) >> shifts) & (SLICE_VALUES - 1)  # (words, 4)
    return slices.reshape(-1)[:count]


def native_dropout(input: torch.Tensor, p: float, train: bool | None) -> tuple[torch.Tensor, torch.Tensor]:
    """`aten.native_dropout` with the masks above: (input · mask / (1 − p), mask), mask boolean."""
    if not train or p == 0:
        return input.clone(), torch.ones_like(input, dtype=torch.bool)
    if p == 1:
        return torch.zeros_like(input), torch.zeros_like(input, dtype=torch.bool)
    keep = (uniform_15bit(input.numel(), input.device) >= keep_threshold(p)).view(input.shape)
    return input * keep * (1.0 / (1.0 - p)), keep


def cpu_decompositions() -> dict[Any, Callable[..., Any]]:
    """Inductor's decomposition table with `native_dropout` replaced by the one above."""
    from torch._inductor.decomposition import select_decomp_table

    table = dict(select_decomp_table())
    table[torch.ops.aten.native_dropout.default] = native_dropout
    return table
