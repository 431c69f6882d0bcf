"""The decoding thread count is measured per model and batch (never the core count alone), re-measured when the
machine's load moves, fixed by VARIORUM_THREADS; the generation benchmark times quiet and busy (`--busy N`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from engine.benchmarks import generation
from engine.decoding import DecodeConfig, VariantStream, cpu_threads
from engine.decoding.cpu_threads import ThreadChoice, candidate_counts, decode_threads
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
    monkeypatch.setattr(choice, "fastest", lambda step: measured.append(1) or (2 if machine.busy < 2 else 1))
    assert choice.threads(tiny_model, 4) == 2 and choice.threads(tiny_model, 4) == 2 and len(measured) == 1
    assert choice.threads(tiny_model, 1) == 2 and len(measured) == 2  # another batch size: measured apart
    machine.busy = 3.0  # two programs started beside us
    assert choice.threads(tiny_model, 4) == 2 and len(measured) == 2  # not again within RECHECK_SECONDS
    choice.refresh(tiny_model, 4)
    assert len(measured) == 2  # nothing was due
    machine.now += cpu_threads.RECHECK_SECONDS
    assert choice.threads(tiny_model, 4) == 2 and len(measured) == 2  # stale: used once more, not measured first
    choice.refresh(tiny_model, 4)  # after that decode
    assert len(measured) == 3 and choice.threads(tiny_model, 4) == 1
    choice.refresh(tiny_model, 4)
    assert len(measured) == 3  # measured once per staleness


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
    with decode_threads(tiny_model, 3, choice) as count:
        assert count == 1 == torch.get_num_threads()
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


def test_a_stale_count_is_measured_after_the_decode(tiny_model: LanguageModel, monkeypatch: pytest.MonkeyPatch) -> None:
    choice = ThreadChoice(cores=2)
    monkeypatch.setattr(choice, "fastest", lambda step: 1)
    events: list[str] = []
    monkeypatch.setattr(choice, "refresh", lambda model, rows: events.append(f"refresh {rows}"))
    with decode_threads(tiny_model, 3, choice):
        events.append("decode")
    assert events == ["decode", "refresh 3"]
