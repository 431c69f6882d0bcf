"""Token counter memory: forgetting after exactly K steps, rare group, gates, static mode, DDP sums."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from engine.config import ConfigError
from engine.objectives.token_memory import IGNORE_INDEX, TokenCounterMemory, count_targets


def one_hot_counts(token: int, times: int, vocab: int = 6) -> torch.Tensor:
    counts = torch.zeros(vocab, dtype=torch.long)
    counts[token] = times
    return counts


def test_forgets_exactly_after_k_steps() -> None:
    memory = TokenCounterMemory(6, window=3, alpha=0.5)
    memory.push(one_hot_counts(2, 5))
    memory.push(torch.zeros(6, dtype=torch.long))
    memory.push(torch.zeros(6, dtype=torch.long))
    assert int(memory.appearances[2]) == 5  # still inside the last K = 3 steps
    memory.push(one_hot_counts(4, 1))
    assert int(memory.appearances[2]) == 0  # the 4th push evicts step 1
    assert memory.appearances.tolist() == [0, 0, 0, 0, 1, 0]


def test_count_targets_skips_ignored_and_checks_range() -> None:
    counts = count_targets(torch.tensor([[1, 1, IGNORE_INDEX], [3, 1, 0]]), 5)
    assert counts.tolist() == [1, 3, 0, 1, 0]
    with pytest.raises(ValueError, match="target ids"):
        count_targets(torch.tensor([5]), 5)


def test_rare_group_and_gates_by_hand() -> None:
    memory = TokenCounterMemory(4, window=2, alpha=1.0)
    memory.push(torch.tensor([4, 1, 0, 1]))
    memory.push(torch.tensor([4, 0, 0, 2]))
    # a = [8, 1, 0, 3], K = 2 → a/K = [4, .5, 0, 1.5]; rare iff < 1: tokens 1, 2; ā_r = (1 + 0) / 2
    rare, g1, g2 = memory.gates()
    assert rare.tolist() == [False, True, True, False]
    assert g1.tolist() == [1.0, 0.5, 0.0, 1.0]
    assert g2.tolist() == [1.0, 1.0, 0.0, 1.0]  # min(1 / 0.5, 1) = 1, 0 / 0.5 = 0


def test_denominator_is_steps_held_until_the_window_fills() -> None:
    memory = TokenCounterMemory(2, window=4, alpha=0.6)
    memory.push(torch.tensor([1, 0]))
    assert memory.rates().tolist() == [1.0, 0.0]  # a / min(1, 4)
    for _ in range(3):
        memory.push(torch.tensor([0, 1]))
    assert memory.rates().tolist() == [0.25, 0.75]  # a / 4 once full
    assert memory.rare().tolist() == [True, False]


def test_mean_rare_zero_gives_zero_g2() -> None:
    memory = TokenCounterMemory(3, window=1, alpha=0.5)
    memory.push(torch.tensor([5, 0, 0]))
    rare, _, g2 = memory.gates()
    assert rare.tolist() == [False, True, True]
    assert g2.tolist() == [1.0, 0.0, 0.0]


def test_static_mode_freezes_the_group_not_the_counts() -> None:
    memory = TokenCounterMemory(2, window=2, alpha=0.5, static_after=2)
    memory.push(torch.tensor([1, 0]))
    memory.push(torch.tensor([1, 0]))  # freeze here: token 1 rare
    for _ in range(2):
        memory.push(torch.tensor([0, 3]))
    assert memory.frozen and memory.rare().tolist() == [False, True]
    _, g1, _ = memory.gates()
    assert g1.tolist() == [1.0, 1.0]  # token 1: frozen rare, a/K = 3 now, gate clipped at 1
    dynamic = TokenCounterMemory(2, window=2, alpha=0.5)
    for counts in ([1, 0], [1, 0], [0, 3], [0, 3]):
        dynamic.push(torch.tensor(counts))
    assert dynamic.rare().tolist() == [True, False]


def test_bad_settings_are_named() -> None:
    with pytest.raises(ConfigError, match="window"):
        TokenCounterMemory(4, window=0)
    with pytest.raises(ConfigError, match="alpha"):
        TokenCounterMemory(4, window=2, alpha=0.0)
    with pytest.raises(ValueError, match="shape"):
        TokenCounterMemory(4, window=2).push(torch.zeros(3, dtype=torch.long))


def _rank_worker(rank: int, port: int, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        memory = TokenCounterMemory(3, window=2, alpha=0.5)
        memory.push(torch.tensor([1, 0, 0]) if rank == 0 else torch.tensor([0, 2, 0]))
        Path(out, f"rank{rank}.json").write_text(json.dumps(memory.appearances.tolist()))
    finally:
        dist.destroy_process_group()


def test_counts_are_summed_over_ranks(tmp_path: Path) -> None:
    """Two gloo processes push different counts; both memories hold the global sum."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    mp.spawn(_rank_worker, args=(port, str(tmp_path)), nprocs=2, join=True)
    for rank in (0, 1):
        assert json.loads((tmp_path / f"rank{rank}.json").read_text()) == [1, 2, 0]
