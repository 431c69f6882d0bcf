"""Objectives inside the trainer: every name trains, AGG resume and accumulation are exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from engine.config import ConfigError, TrainConfig
from engine.lm.train import Trainer
from engine.objectives import OBJECTIVES, AggObjective
from tests.conftest import tiny_config
from tests.engine.lm.test_train import small_run


def weights(out: Path) -> dict[str, torch.Tensor]:
    return load_file(str(out / "checkpoint" / "model.safetensors"))


@pytest.mark.parametrize("name", sorted(OBJECTIVES))
def test_every_objective_trains(tmp_path: Path, name: str) -> None:
    extra = {"ul_prefix": 8, "ul_continuation": 8, "ul_seq_rate": 1.0} if "seq" in name else {}
    trainer = Trainer(tiny_config(320), small_run(tmp_path, 2, objective=name, **extra), show_progress=False)
    trainer.run()
    log = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert len(log) == 2 and all(torch.isfinite(torch.tensor(r["train_loss"])) for r in log)
    provenance = json.loads((tmp_path / "bundle" / "config.json").read_text())["provenance"]
    assert provenance["train"]["objective"] == name


def test_unknown_objective_is_named(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown objective 'agq'"):
        Trainer(tiny_config(320), small_run(tmp_path, 1, objective="agq"), show_progress=False)


def test_agg_memory_window_defaults_to_an_epoch(tmp_path: Path) -> None:
    trainer = Trainer(tiny_config(320), small_run(tmp_path, 3, objective="agg"), show_progress=False)
    assert isinstance(trainer.objective, AggObjective)
    blocks = len(trainer.train_blocks)
    assert trainer.objective.memory.window == -(-blocks // 4)
    trainer.run()
    assert trainer.objective.memory.steps == 3


def agg_run(out: Path, steps: int, **overrides: object) -> TrainConfig:
    return small_run(out, steps, objective="agg", agg_alpha=0.2, agg_window=2, **overrides)


def test_agg_resume_is_exact(tmp_path: Path) -> None:
    cfg = tiny_config(320)
    Trainer(cfg, agg_run(tmp_path / "a", 6, save_every=3), show_progress=False).run()
    Trainer(cfg, agg_run(tmp_path / "b", 6, save_every=3), show_progress=False).run(chunk_steps=3)
    resumed = Trainer(cfg, agg_run(tmp_path / "b", 6, save_every=3), show_progress=False)
    resumed.run(resume=True)
    a, b = weights(tmp_path / "a"), weights(tmp_path / "b")
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_agg_accumulation_matches_full_batch(tmp_path: Path) -> None:
    cfg = tiny_config(320)  # float32: bf16 products round differently per micro-batch shape
    Trainer(cfg, agg_run(tmp_path / "full", 3, precision="float32"), show_progress=False).run()
    Trainer(cfg, agg_run(tmp_path / "acc", 3, grad_accum=2, precision="float32"), show_progress=False).run()
    full, acc = weights(tmp_path / "full"), weights(tmp_path / "acc")
    for key in full:
        torch.testing.assert_close(full[key], acc[key], atol=2e-5, rtol=0)
