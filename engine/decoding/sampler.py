"""One vectorised draw per row, reproducible per row from (seed, step, stage).

Every row of a batch gets its own uniform number u = hash(seed, step, stage) ∈ (0, 1) from a
counter-based hash (no generator state), and draws its id by inverting its own CDF: the first
id whose cumulative probability reaches u. All rows are drawn in one call on the scores' device,
and a row's draw depends only on its seed, the step and its scores — never on the batch it
shares, on the device, or on how many draws came before. Stage 0 is the group stage of
two-stage sampling, stage 1 the token stage, so the two draws of one step are independent.

Greedy decoding is the argmax (ties → lowest id). Ids of probability 0 (scores −inf) are never
drawn: u > 0, so the chosen id's cumulative mass is strictly above its predecessor's.
"""

from __future__ import annotations

from typing import TypeVar

import torch

MASK32 = 0xFFFFFFFF
STAGE_GROUP = 0
STAGE_TOKEN = 1

Ints = TypeVar("Ints", int, torch.Tensor)  # one Python int or an int64 tensor: the hash reads the same on both


def _mix32(x: Ints) -> Ints:
    """A 32-bit integer hash (lowbias32) of values in [0, 2³²); products wrap, only the low 32 bits count."""
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & MASK32
    x = x ^ (x >> 15)
    x = (x * 0x846CA68B) & MASK32
    return x ^ (x >> 16)


def uniform_bits(seeds: Ints, counter: int) -> Ints:
    """53 random bits of each non-negative seed (int, or int64 tensor [N]) at one counter."""
    low, high = seeds & MASK32, (seeds >> 32) & MASK32
    a = _mix32(low ^ _mix32(high ^ _mix32(counter)))
    b = _mix32(a ^ 0x5BD1E995)
    return (a << 21) | (b >> 11)


def row_uniforms(seeds: torch.Tensor, step: int, stage: int) -> torch.Tensor:
    """u ∈ (0, 1) float64 [N] for seeds [N] (int64, non-negative) at one (step, stage).

    On the CPU the hash runs on Python ints: a few dozen tensor ops on N ≈ 5 values cost ~0.2 ms
    a step, the same integer maths on ints ~10 µs (docs/decoding_speed.md); both give the same bits."""
    counter = (step * 2 + stage) & MASK32
    if seeds.device.type == "cpu":  # Python floats are IEEE doubles: the same (bits + 0.5) / 2⁵³
        return torch.tensor([(uniform_bits(seed, counter) + 0.5) / 2.0**53 for seed in seeds.tolist()],
                            dtype=torch.float64)
    return (uniform_bits(seeds, counter).double() + 0.5) / 2.0**53


def draw_rows(scores: torch.Tensor, seeds: torch.Tensor, step: int, stage: int, greedy: bool) -> torch.Tensor:
    """One id per row of log-domain scores [N, K] → [N]; see the module docstring."""
    if greedy:
        return scores.argmax(dim=-1)
    cdf = torch.softmax(scores.double(), dim=-1).cumsum(dim=-1)  # [N, K]
    targets = row_uniforms(seeds, step, stage)[:, None] * cdf[:, -1:]  # [N, 1]
    picks = torch.searchsorted(cdf, targets)[:, 0]
    return picks.clamp(max=scores.shape[-1] - 1)
