"""How many CPU threads torch decodes with: the count a quick measurement finds fastest, not the core count.

torch starts one intra-op thread per core. On a machine that other programs keep busy those threads
spin waiting for cores they do not get, and every small product of a decoding step waits for the
slowest of them: a batch of 4 variants decoded at 2 tokens/s with 2 threads on two busy cores and
several times faster with one (docs/decoding_speed.md, "Threads on a busy machine"). Which count is
fastest depends on the model (how large its products are), on the batch, and on the load at the time.

So `ThreadChoice` times a short decode of the model (`rows` variants, a few cached steps, the head's
distribution included) under each candidate count (1, half the cores, all of them) a few times each, and
keeps the fastest for that model and batch size. A choice is re-measured when the machine's load (the
processes running now) has moved by `LOAD_CHANGE` or more since it was made (a program started or
stopped beside us), at most once per `RECHECK_SECONDS`, so the answer follows the machine; the decode that
finds its choice stale still uses it and measures again when it is done, so no writer waits for the
measurement before the first word (only a model's first decode of a batch size measures first).
`VARIORUM_THREADS=N` fixes the count and measures nothing. `decode_threads` runs a decode under the
chosen count and restores torch's own afterwards. The measurement costs a few short decodes, once per
model, batch size and change of load. Results can differ from one count to another in a float's last
bits; a seeded variant is the same text unless a draw falls that close to a boundary.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from engine.decoding.backbone_runner import BackboneRunner
from engine.decoding.step import LanguageModelRows
from engine.model import EOS_ID, LanguageModel
from engine.torch_modes import eval_mode

LOAD_CHANGE = 1.0  # processes running (about one busy core) more or fewer than at the measurement: stale
RECHECK_SECONDS = 10.0  # at most one measurement per model and batch in this time (the load flickers)
TIMED_RUNS = 3  # timed runs per candidate (after one warm-up); the median counts
POSITIONS = 4  # context tokens per row of the measured decode
STEPS = 4  # cached decoding steps measured after it
THREADS_VARIABLE = "VARIORUM_THREADS"


def candidate_counts(cores: int) -> list[int]:
    """The thread counts worth timing on `cores` cores: 1, half of them and all of them."""
    return sorted({1, max(1, cores // 2), max(1, cores)})


def machine_load() -> float:
    """How busy the machine is now: the processes running or ready to run (Linux's /proc/loadavg, which
    moves at once, where the one-minute average takes a minute to follow a program that starts), else the
    one-minute load average, else 0 (Windows reports neither)."""
    try:
        running = Path("/proc/loadavg").read_text().split()[3].split("/")[0]
        return float(running)
    except (OSError, IndexError, ValueError):
        pass
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


@dataclass
class Measured:
    """What a measurement chose, and the machine's load and the clock's seconds when it was made."""

    choice: int
    load: float
    at: float

    def stale(self, load: float, now: float) -> bool:
        """Whether to measure again: the load moved by LOAD_CHANGE and RECHECK_SECONDS have passed."""
        return abs(load - self.load) >= LOAD_CHANGE and now - self.at >= RECHECK_SECONDS


def median_seconds(step: Callable[[], object], clock: Callable[[], float]) -> float:
    """The median time of TIMED_RUNS runs of `step`, after one warm-up run."""
    step()
    runs = []
    for _ in range(TIMED_RUNS):
        start = clock()
        step()
        runs.append(clock() - start)
    return statistics.median(runs)


class ThreadChoice:
    """The fastest measured thread count per (model, rows), re-measured when the load moves (module docstring)."""

    def __init__(self, cores: int | None = None, load: Callable[[], float] = machine_load,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.candidates = candidate_counts(cores or os.cpu_count() or 1)
        self.load, self.clock = load, clock
        self._chosen: dict[tuple[int, int], Measured] = {}
        self._due: set[tuple[int, int]] = set()  # stale choices to measure again after the decode using them
        self._lock = threading.Lock()  # the app decodes on a worker thread while the UI may ask

    def threads(self, model: LanguageModel, rows: int) -> int:
        """The thread count to decode `rows` variants of `model` with: measured now when new; a stale choice is
        still used, and marked to be measured again by `refresh` once this decode is done (measuring before
        it delayed a writer's first word by seconds)."""
        fixed = os.environ.get(THREADS_VARIABLE, "")
        if fixed.isdigit() and int(fixed) > 0:
            return int(fixed)
        if len(self.candidates) == 1:
            return self.candidates[0]
        key = (id(model), rows)
        with self._lock:
            load, now = self.load(), self.clock()
            known = self._chosen.get(key)
            if known is None:
                known = self._measure(model, rows)
            elif known.stale(load, now):
                self._due.add(key)
            return known.choice

    def refresh(self, model: LanguageModel, rows: int) -> None:
        """Measure again the choice for `model` and `rows` if the decode that used it found it stale."""
        with self._lock:
            if (id(model), rows) in self._due:
                self._measure(model, rows)

    def _measure(self, model: LanguageModel, rows: int) -> Measured:
        key = (id(model), rows)
        load, now = self.load(), self.clock()
        self._chosen[key] = known = Measured(self.fastest(lambda: decode_steps(model, rows)), load, now)
        self._due.discard(key)
        return known

    def fastest(self, step: Callable[[], object]) -> int:
        """The candidate count under which `step` runs fastest (median of TIMED_RUNS, after a warm-up)."""
        before = torch.get_num_threads()
        timings: dict[int, float] = {}
        try:
            for count in self.candidates:
                torch.set_num_threads(count)
                timings[count] = median_seconds(step, self.clock)
        finally:
            torch.set_num_threads(before)
        return min(timings, key=lambda count: (timings[count], count))


def decode_steps(model: LanguageModel, rows: int, runner: BackboneRunner[Any] | None = None) -> None:
    """A short decode as a stream runs it: `rows` rows of a POSITIONS-token context, then STEPS cached steps
    (the backbone's step, on `runner` when given, and the head's distribution)."""
    device = next(model.parameters()).device
    with eval_mode(model), torch.inference_mode():
        batch = LanguageModelRows(model, [[EOS_ID] * POSITIONS] * rows, STEPS, runner)
        for _ in range(STEPS):
            batch.log_probs()
            batch.advance(torch.full((rows,), EOS_ID, dtype=torch.long, device=device))


CHOICE = ThreadChoice()  # one per process: the measurements are the machine's, shared by every stream


@contextmanager
def decode_threads(model: LanguageModel, rows: int, choice: ThreadChoice | None = None) -> Iterator[int]:
    """Run a CPU decode of `rows` variants of `model` under the measured thread count (yields it); torch's own
    count comes back afterwards. On a GPU nothing changes (its threads only launch kernels)."""
    if next(model.parameters()).device.type != "cpu":
        yield torch.get_num_threads()
        return
    before = torch.get_num_threads()
    chooser = choice or CHOICE
    count = chooser.threads(model, rows)
    torch.set_num_threads(count)
    try:
        yield count
    finally:
        torch.set_num_threads(before)
    chooser.refresh(model, rows)  # a stale choice is measured after the decode, not before it
