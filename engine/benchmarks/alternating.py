"""Side-by-side timing for the speed benchmarks: runs alternate, so a busy moment hits every contender."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

Timer = Callable[[int], tuple[float, int]]  # seed → (seconds, tokens written)


def alternating_runs(timers: Sequence[Timer], rounds: int) -> list[list[tuple[float, int]]]:
    """Each timer's (seconds, tokens) over `rounds` rounds that run every timer in turn (round r with seed r),
    after one warm-up run of each (seed 0)."""
    for timer in timers:
        timer(0)
    runs: list[list[tuple[float, int]]] = [[] for _ in timers]
    for seed in range(rounds):
        for timer, timed in zip(timers, runs, strict=True):
            timed.append(timer(seed))
    return runs


def alternating_medians(timers: Sequence[Timer], rounds: int) -> list[float]:
    """Median tokens/s of each timer over `rounds` alternating rounds (`alternating_runs`)."""
    return [statistics.median(tokens / seconds for seconds, tokens in timed)
            for timed in alternating_runs(timers, rounds)]
