"""The decoding thread count is measured per model and batch (never the core count alone), re-measured when the
machine's load moves, fixed by VARIORUM_THREADS; the generation benchmark times quiet and busy (`--busy N`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from engine.benchmarks import generation
from engine.decoding import DecodeConfig, VariantStream, cpu_threads
from engine.decoding.cpu_threads import StepThreads, ThreadChoice, TrialSteps, candidate_counts, decode_threads
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer


@pytest.fixture(autouse=True)
def torch_threads() -> Iterator[None]:
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


class FakeMachine:
    """A clock that a step advances by the cost of the current thread count, and a load the test sets."""

    def __init__(self, costs: dict[int, float]) -> None:
        self.costs, self.now, self.busy, self.steps = costs, 0.0, 0.0, 0

    def clock(self) -> float:
        return self.now

    def load(self) -> float:
        return self.busy

    def step(self) -> None:
        self.steps += 1
        self.now += self.costs[torch.get_num_threads()]


def test_the_candidates_are_one_thread_half_the_cores_and_all() -> None:
    assert candidate_counts(1) == [1] and candidate_counts(2) == [1, 2] and candidate_counts(8) == [1, 4, 8]


def test_the_fastest_count_is_chosen_and_torch_keeps_its_own() -> None:
    torch.set_num_threads(3)
    machine = FakeMachine({1: 0.5, 2: 0.2, 4: 0.9})  # two threads fastest: not the core count, not one
    choice = ThreadChoice(cores=4, load=machine.load, clock=machine.clock)
    assert choice.fastest(machine.step) == 2 and torch.get_num_threads() == 3


def test_a_choice_is_kept_until_the_load_moves(tiny_model: LanguageModel, monkeypatch: pytest.MonkeyPatch) -> None:
    machine = FakeMachine({1: 0.3, 2: 0.1})
    choice = ThreadChoice(cores=2, load=machine.load, clock=machine.clock)
    measured: list[int] = []
    monkeypatch.setattr(choice, "fastest", lambda step: measured.append(1) or 2)
    assert choice.threads(tiny_model, 4) == 2 and choice.threads(tiny_model, 4) == 2 and len(measured) == 1
    assert choice.threads(tiny_model, 1) == 2 and len(measured) == 2  # another batch size: measured apart
    machine.busy = 3.0  # two programs started beside us
    assert type(choice.plan(tiny_model, 4)) is StepThreads  # not again within RECHECK_SECONDS
    machine.now += cpu_threads.RECHECK_SECONDS
    plan = choice.plan(tiny_model, 4)  # stale: the decode measures on its own steps, nothing runs before it
    assert isinstance(plan, TrialSteps) and plan.count == 2 and len(measured) == 2


def test_a_stale_choice_is_measured_on_the_decodes_own_steps(tiny_model: LanguageModel) -> None:
    machine = FakeMachine({1: 0.1, 2: 0.3})  # the machine got busy: one thread is now the faster
    choice = ThreadChoice(cores=2, load=machine.load, clock=machine.clock)
    choice.fastest = lambda step: 2  # type: ignore[method-assign]  # chosen on a quiet machine
    assert choice.threads(tiny_model, 4) == 2
    machine.busy, machine.now = 3.0, cpu_threads.RECHECK_SECONDS
    plan = choice.plan(tiny_model, 4)
    torch.set_num_threads(plan.count)  # as decode_threads does
    counts = []
    for _ in range(1 + 2 * cpu_threads.TIMED_RUNS + 3):
        counts.append(torch.get_num_threads())
        with plan.timed():
            machine.step()
        machine.now += 5.0  # the reader's time between steps: not part of any step's timing
        plan.step_done()
    assert counts == [2] + [1, 2] * cpu_threads.TIMED_RUNS + [1, 1, 1]  # warm-up, the trial, then the fastest
    choice.fastest = lambda step: pytest.fail("measured apart from the decode")  # type: ignore[method-assign]
    assert type(choice.plan(tiny_model, 4)) is StepThreads and choice.threads(tiny_model, 4) == 1


def test_a_real_decode_settles_a_stale_choice_without_a_measurement(
    tiny_model: LanguageModel, tokenizer: VariorumTokenizer, monkeypatch: pytest.MonkeyPatch
) -> None:
    machine = FakeMachine({})
    choice = ThreadChoice(cores=2, load=machine.load)
    monkeypatch.setattr(choice, "fastest", lambda step: 2)
    monkeypatch.setattr(cpu_threads, "CHOICE", choice)
    choice.threads(tiny_model, 3)
    monkeypatch.setattr(choice, "fastest", lambda step: pytest.fail("measured apart from the decode"))
    machine.busy = 3.0
    choice._chosen[(id(tiny_model), 3)].at -= cpu_threads.RECHECK_SECONDS
    list(VariantStream(tiny_model, tokenizer, tokenizer.encode("Tom"), 3, DecodeConfig(seed=0, max_new_tokens=20)))
    assert choice._chosen[(id(tiny_model), 3)].load == 3.0  # measured at the new load, by the decode itself


def test_variorum_threads_fixes_the_count(tiny_model: LanguageModel, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cpu_threads.THREADS_VARIABLE, "1")
    choice = ThreadChoice(cores=8)
    monkeypatch.setattr(choice, "fastest", lambda step: pytest.fail("measured although the count is fixed"))
    assert choice.threads(tiny_model, 4) == 1


def test_a_decode_runs_under_the_measured_count(tiny_model: LanguageModel, tokenizer: VariorumTokenizer,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    torch.set_num_threads(2)
    choice = ThreadChoice(cores=2)
    monkeypatch.setattr(choice, "fastest", lambda step: 1)
    monkeypatch.setattr(cpu_threads, "CHOICE", choice)
    seen = [torch.get_num_threads() for _ in VariantStream(tiny_model, tokenizer, tokenizer.encode("Tom"), 3,
                                                           DecodeConfig(seed=0, max_new_tokens=4))]
    assert set(seen) == {1} and torch.get_num_threads() == 2
    with decode_threads(tiny_model, 3, choice) as plan:
        assert plan.count == 1 == torch.get_num_threads()
    assert torch.get_num_threads() == 2


def test_the_measurement_runs_the_model(tiny_model: LanguageModel) -> None:
    assert ThreadChoice(cores=2).threads(tiny_model, 2) in (1, 2)


def test_busy_processes_run_beside_the_block_and_stop_after() -> None:
    with generation.busy_cpu(2) as burners:
        assert len(burners) == 2 and all(burner.poll() is None for burner in burners)
    assert all(burner.poll() is not None for burner in burners)


def test_the_benchmark_times_quiet_then_busy(tiny_bundle: Path, capsys: pytest.CaptureFixture[str]) -> None:
    generation.main(["--bundle", str(tiny_bundle), "--shapes", "1x3", "--rounds", "1", "--busy", "1"])
    out = capsys.readouterr().out
    assert "quiet:" in out and "busy (1 CPU-burning processes beside it):" in out
    assert out.count("ours/HF") == 2 and out.count("1 × 3") == 2
