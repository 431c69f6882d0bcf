"""Side-by-side timing for the speed benchmarks: runs alternate, so a busy moment hits every contender."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

Timer = Callable[[int], tuple[float, int]]  # seed → (seconds, tokens written)


def alternating_medians(timers: Sequence[Timer], rounds: int) -> list[float]:
    """Median tokens/s of each timer over `rounds` rounds that run every timer in turn (round r with
    seed r), after one warm-up run of each (seed 0)."""
    for timer in timers:
        timer(0)
    rates: list[list[float]] = [[] for _ in timers]
    for seed in range(rounds):
        for timer, rate in zip(timers, rates, strict=True):
            seconds, tokens = timer(seed)
            rate.append(tokens / seconds)
    return [statistics.median(rate) for rate in rates]
