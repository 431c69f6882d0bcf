"""Runtime auto on a CPU: torch or the ONNX export, whichever a short measurement finds faster per model and
batch, measured again when the machine's load moves."""

from __future__ import annotations

from typing import Any

import pytest

from engine.decoding import cpu_threads, runtime_choice
from engine.decoding.cpu_threads import ThreadChoice
from engine.decoding.runtime_choice import ON_RUNNER, ON_TORCH, RunnerChoice
from engine.model import LanguageModel


class FakeMachine:
    """A clock that a decode advances by the cost of what ran it (torch, or the runner), and a load."""

    def __init__(self, torch_cost: float, runner_cost: float) -> None:
        self.costs = {None: torch_cost, "runner": runner_cost}
        self.now, self.busy, self.decodes = 0.0, 0.0, 0

    def decode(self, model: LanguageModel, rows: int, runner: Any = None) -> None:
        self.decodes += 1
        self.now += self.costs[runner]


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch, tiny_model: LanguageModel) -> FakeMachine:
    fake = FakeMachine(torch_cost=0.2, runner_cost=0.1)
    monkeypatch.setattr(runtime_choice, "decode_steps", fake.decode)
    return fake


def choice_on(machine: FakeMachine) -> RunnerChoice:
    threads = ThreadChoice(cores=2, load=lambda: machine.busy, clock=lambda: machine.now)
    threads.fastest = lambda step: 1  # type: ignore[method-assign]
    return RunnerChoice(threads, load=lambda: machine.busy, clock=lambda: machine.now)


def test_the_faster_of_torch_and_the_runner_is_chosen(machine: FakeMachine, tiny_model: LanguageModel) -> None:
    choice = choice_on(machine)
    assert choice.faster(tiny_model, 4, "runner") == ON_RUNNER  # type: ignore[arg-type]
    machine.costs["runner"] = 0.3
    assert choice.faster(tiny_model, 4, "runner") == ON_TORCH  # type: ignore[arg-type]
    machine.costs["runner"] = 0.2
    assert choice.faster(tiny_model, 4, "runner") == ON_TORCH  # a tie keeps torch
    # each side: a warm-up and TIMED_RUNS timed decodes
    assert machine.decodes == 3 * 2 * (1 + cpu_threads.TIMED_RUNS)


def test_a_choice_is_kept_per_batch_until_the_load_moves(machine: FakeMachine, tiny_model: LanguageModel) -> None:
    choice = choice_on(machine)
    runner: Any = "runner"
    assert choice.runner(tiny_model, 4, runner) == "runner"
    measured = machine.decodes
    machine.costs["runner"] = 0.5  # the runner became slower, but nothing says so yet
    assert choice.runner(tiny_model, 4, runner) == "runner" and machine.decodes == measured
    assert choice.runner(tiny_model, 1, runner) is None  # another batch size: measured apart, now torch
    machine.busy = 3.0  # programs started beside us
    assert choice.runner(tiny_model, 4, runner) == "runner"  # not again within RECHECK_SECONDS
    machine.now += cpu_threads.RECHECK_SECONDS
    assert choice.runner(tiny_model, 4, runner) is None
