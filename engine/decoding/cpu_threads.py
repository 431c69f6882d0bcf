"""How many CPU threads torch decodes with: the count a quick measurement finds fastest, not the core count.

torch starts one intra-op thread per core. On a machine that other programs keep busy those threads
spin waiting for cores they do not get, and every small product of a decoding step waits for the
slowest of them: a batch of 4 variants decoded at 2 tokens/s with 2 threads on two busy cores and
several times faster with one (docs/decoding_speed.md, "Threads on a busy machine"). Which count is
fastest depends on the model (how large its products are), on the batch, and on the load at the time.

So `ThreadChoice` times a short decode of the model (`rows` variants, a few cached steps, the head's
distribution included) under each candidate count (1, half the cores, all of them) a few times each, and
keeps the fastest for that model and batch size (only a model's first decode of a batch size measures
first: a few short decodes). A choice is measured again when the machine's load (the processes running now)
has moved by `LOAD_CHANGE` or more since it was made (a program started or stopped beside us), at most once
per `RECHECK_SECONDS`, so the answer follows the machine. That re-measurement runs on the decode's own steps
(`TrialSteps`): after a warm-up step, the next steps take the candidate counts in turn, `TIMED_RUNS` each,
timed over the step's compute (the draw and the cached step, not the time the reader of the stream takes);
the fastest median becomes the choice for the rest of the decode and for later ones. So no writer waits for
a measurement, before the first word or after the last: measuring before the decode delayed a first word by
seconds, and measuring after it delayed "done" by as long (a few short decodes). A decode too short
to finish the trial leaves the choice stale, and the next decode tries again.
`VARIORUM_THREADS=N` fixes the count and measures nothing. `decode_threads` runs a decode under the
chosen count and restores torch's own afterwards. Results can differ from one count to another in a
float's last bits; a seeded variant is the same text unless a draw falls that close to a boundary.
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


class StepThreads:
    """The thread count a decode runs its steps under: one count throughout (a fresh or fixed choice). The decode
    loop calls `timed()` around each step's compute and `step_done()` after each step."""

    def __init__(self, count: int) -> None:
        self.count = count

    @contextmanager
    def timed(self) -> Iterator[None]:
        yield

    def step_done(self) -> None:
        """Called after every decoding step; the next step's count is set here."""


class TrialSteps(StepThreads):
    """A stale choice measured on the decode's own steps (module docstring): one warm-up step under `count`, then
    `candidates` in turn, TIMED_RUNS steps each; `settle(choice)` records the fastest, which the rest runs under."""

    def __init__(self, count: int, candidates: list[int], settle: Callable[[int], None],
                 clock: Callable[[], float]) -> None:
        super().__init__(count)
        self.schedule = [c for _ in range(TIMED_RUNS) for c in candidates]  # the counts of steps 2, 3, …
        self.timings: dict[int, list[float]] = {c: [] for c in candidates}
        self.settle, self.clock = settle, clock
        self.trying: int | None = None  # the count the current step runs under, while the trial lasts
        self.seconds = 0.0  # the current step's compute so far

    @contextmanager
    def timed(self) -> Iterator[None]:
        start = self.clock()
        try:
            yield
        finally:
            self.seconds += self.clock() - start

    def step_done(self) -> None:
        if self.trying is not None:
            self.timings[self.trying].append(self.seconds)
        self.seconds = 0.0
        if self.schedule:
            self.trying = self.schedule.pop(0)
            torch.set_num_threads(self.trying)
        elif self.trying is not None:
            self.trying = None
            self.count = min(self.timings, key=lambda c: (statistics.median(self.timings[c]), c))
            torch.set_num_threads(self.count)
            self.settle(self.count)


class ThreadChoice:
    """The fastest measured thread count per (model, rows), re-measured when the load moves (module docstring)."""

    def __init__(self, cores: int | None = None, load: Callable[[], float] = machine_load,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.candidates = candidate_counts(cores or os.cpu_count() or 1)
        self.load, self.clock = load, clock
        self._chosen: dict[tuple[int, int], Measured] = {}
        self._lock = threading.Lock()  # the app decodes on a worker thread while the UI may ask

    def threads(self, model: LanguageModel, rows: int) -> int:
        """The thread count a decode of `rows` variants of `model` starts with (see `plan`)."""
        return self.plan(model, rows).count

    def plan(self, model: LanguageModel, rows: int) -> StepThreads:
        """How a decode of `rows` variants of `model` runs its steps: under the known count, measured now when
        new; a stale choice is measured again on the decode's own steps (`TrialSteps`)."""
        fixed = os.environ.get(THREADS_VARIABLE, "")
        if fixed.isdigit() and int(fixed) > 0:
            return StepThreads(int(fixed))
        if len(self.candidates) == 1:
            return StepThreads(self.candidates[0])
        key = (id(model), rows)
        with self._lock:
            load, now = self.load(), self.clock()
            known = self._chosen.get(key)
            if known is None:
                known = self._chosen[key] = Measured(self.fastest(lambda: decode_steps(model, rows)), load, now)
            elif known.stale(load, now):
                return TrialSteps(known.choice, self.candidates, lambda choice: self._settle(key, choice), self.clock)
            return StepThreads(known.choice)

    def _settle(self, key: tuple[int, int], choice: int) -> None:
        with self._lock:
            self._chosen[key] = Measured(choice, self.load(), self.clock())

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
def decode_threads(model: LanguageModel, rows: int, choice: ThreadChoice | None = None) -> Iterator[StepThreads]:
    """Run a CPU decode of `rows` variants of `model` under the measured thread count (yields the steps' plan,
    which the decode loop drives); torch's own count comes back afterwards. On a GPU nothing changes (its
    threads only launch kernels)."""
    if next(model.parameters()).device.type != "cpu":
        yield StepThreads(torch.get_num_threads())
        return
    before = torch.get_num_threads()
    plan = (choice or CHOICE).plan(model, rows)
    torch.set_num_threads(plan.count)
    try:
        yield plan
    finally:
        torch.set_num_threads(before)
