"""Torch or the bundle's ONNX export for a CPU decode: whichever a short measurement finds faster.

With `runtime auto` a bundle that has an ONNX export and passes its first step (engine/onnx/runtime.py)
could decode on either. Which is faster depends on the model (how large its products are), the batch and
the machine's load: ONNX Runtime's threads are fixed when its session opens, while torch's count is
measured and changed per decode (engine/decoding/cpu_threads.py), so on a machine other programs keep busy
the order can turn. `RunnerChoice` times the same short decode (`decode_steps`: a few cached steps and the
head's distribution) on torch, under its own measured thread count, and on the ONNX runner, and keeps the
faster per model, runner and batch size; a choice is measured again when the load has moved by `LOAD_CHANGE`
and `RECHECK_SECONDS` have passed — before the decode that finds it stale, where the thread count waits until
after it (a runner measurement is a few steps of each, the thread count's several). A runtime a writer names
(torch, onnx, onnx-int8) is used as named and measured against nothing.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from engine.decoding.backbone_runner import BackboneRunner
from engine.decoding.cpu_threads import (
    CHOICE,
    Measured,
    ThreadChoice,
    decode_steps,
    decode_threads,
    machine_load,
    median_seconds,
)
from engine.model import LanguageModel

ON_TORCH, ON_RUNNER = 0, 1  # what a measurement chose


class RunnerChoice:
    """The faster of torch and an ONNX runner per (model, runner, rows); see the module docstring."""

    def __init__(self, threads: ThreadChoice = CHOICE, load: Callable[[], float] = machine_load,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.thread_choice, self.load, self.clock = threads, load, clock
        # per model (forgotten with it: a later model may get its id), then per (runner, rows)
        self._chosen: weakref.WeakKeyDictionary[LanguageModel, dict[tuple[int, int], Measured]] = \
            weakref.WeakKeyDictionary()
        self._lock = threading.Lock()  # the app decodes on a worker thread

    def runner(self, model: LanguageModel, rows: int,
               onnx: BackboneRunner[Any]) -> BackboneRunner[Any] | None:
        """`onnx` when it decodes `rows` rows of `model` faster than torch does, else None (torch)."""
        key = (id(onnx), rows)
        with self._lock:
            load, now = self.load(), self.clock()
            chosen = self._chosen.setdefault(model, {})
            known = chosen.get(key)
            if known is None or known.stale(load, now):
                known = Measured(self.faster(model, rows, onnx), load, now)
                chosen[key] = known
        return onnx if known.choice == ON_RUNNER else None

    def faster(self, model: LanguageModel, rows: int, onnx: BackboneRunner[Any]) -> int:
        """ON_RUNNER or ON_TORCH: whichever decodes the measured steps in less time (torch on a tie)."""
        def on_torch() -> None:
            with decode_threads(model, rows, self.thread_choice):
                decode_steps(model, rows)

        torch_seconds = median_seconds(on_torch, self.clock)
        runner_seconds = median_seconds(lambda: decode_steps(model, rows, onnx), self.clock)
        return ON_RUNNER if runner_seconds < torch_seconds else ON_TORCH


RUNNERS = RunnerChoice()  # one per process, as the thread counts: the measurements are the machine's
