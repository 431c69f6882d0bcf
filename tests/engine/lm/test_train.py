"""Training: loss goes down, resume is exact, schedule maths, HF GPT-2 loading, bundle export."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from engine.bundles.bundle import load_bundle
from engine.cli import main as cli_main
from engine.config import ConfigError, ModelConfig, TrainConfig
from engine.lm.train import Trainer
from engine.lm.train import main as train_main
from engine.training.loop import learning_rate
from tests.conftest import STORIES, tiny_config


def small_run(out: Path, steps: int, **overrides: object) -> TrainConfig:
    settings: dict[str, object] = {
        "train_files": [str(STORIES)], "out_dir": str(out), "valid_fraction": 0.2, "batch_size": 4,
        "max_steps": steps, "lr": 3e-3, "min_lr": 3e-4, "warmup_steps": 2, "eval_every": 1000,
        "save_every": 1000, "eval_batches": 2, "seed": 5,
    }
    settings.update(overrides)
    return TrainConfig(**settings)  # type: ignore[arg-type]


def model_config() -> ModelConfig:
    return tiny_config(320, dropout=0.1)


def test_loss_decreases_on_fixture_text(tmp_path: Path) -> None:
    trainer = Trainer(model_config(), small_run(tmp_path, 40), show_progress=False)
    before = trainer.evaluate()
    summary = trainer.run()
    assert summary["valid_loss"] < before - 0.5
    log = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert log[-1]["train_loss"] < log[0]["train_loss"] - 1.0
    assert (tmp_path / "loss_curve.png").stat().st_size > 1000
    bundle = load_bundle(tmp_path / "bundle")
    assert "perplexity" in bundle.card and "tiny_stories.txt" in bundle.card


def test_resume_is_exact(tmp_path: Path) -> None:
    straight = Trainer(model_config(), small_run(tmp_path / "a", 8, save_every=4), show_progress=False)
    straight.run()
    first_half = Trainer(model_config(), small_run(tmp_path / "b", 8, save_every=4), show_progress=False)
    first_half.run(chunk_steps=4)  # as if the run had been killed after its step-4 checkpoint
    assert not (tmp_path / "b" / "bundle").exists()
    with (tmp_path / "b" / "metrics.jsonl").open("a") as log:  # steps done after the checkpoint, then killed
        log.write('{"step": 5, "train_loss": 99.0}\n{"step": 6, "train_loss": 99.0}\n')
    resumed = Trainer(model_config(), small_run(tmp_path / "b", 8, save_every=4), show_progress=False)
    resumed.run(resume=True)
    a = load_file(str(tmp_path / "a" / "checkpoint" / "model.safetensors"))
    b = load_file(str(tmp_path / "b" / "checkpoint" / "model.safetensors"))
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    logs = [[json.loads(line) for line in (tmp_path / d / "metrics.jsonl").read_text().splitlines()] for d in "ab"]
    assert [r["step"] for r in logs[1]] == list(range(1, 9))  # redone steps are logged once
    assert [r["train_loss"] for r in logs[0]] == [r["train_loss"] for r in logs[1]]


def test_learning_rate_schedule() -> None:
    config = TrainConfig(max_steps=110, warmup_steps=10, lr=1.0, min_lr=0.1)
    assert learning_rate(0, config) == pytest.approx(0.1)
    assert learning_rate(9, config) == pytest.approx(1.0)
    assert learning_rate(60, config) == pytest.approx(0.1 + 0.5 * 0.9)  # cosine midpoint
    assert learning_rate(110, config) == pytest.approx(0.1)


def test_batch_must_divide_over_accumulation(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="divide evenly"):
        Trainer(model_config(), small_run(tmp_path, 2, batch_size=5, grad_accum=2), show_progress=False)


def test_gradient_accumulation_matches_full_batch(tmp_path: Path) -> None:
    cfg = tiny_config(320)  # no dropout: accumulation must then be exact up to float32 error
    # (bf16 products round differently for a half batch's shapes; float32's do not, beyond 1e-5)
    full = Trainer(cfg, small_run(tmp_path / "full", 3, precision="float32"), show_progress=False)
    full.run()
    accum = Trainer(cfg, small_run(tmp_path / "acc", 3, grad_accum=2, precision="float32"), show_progress=False)
    accum.run()
    a = full.model.state_dict()
    b = accum.model.state_dict()
    assert all(torch.allclose(a[k], b[k], atol=1e-5) for k in a)


def test_cli_trains_from_flags(tmp_path: Path) -> None:
    code = train_main([
        "--train-files", str(STORIES), "--out-dir", str(tmp_path), "--vocab-size", "300", "--n-layer", "1",
        "--n-embd", "16", "--n-head", "2", "--block-size", "16", "--max-steps", "2", "--batch-size", "2",
        "--warmup-steps", "1", "--no-progress",
    ])
    assert code == 0
    bundle = load_bundle(tmp_path / "bundle")
    assert bundle.model.config.n_embd == 16
    assert "variorum train --train-files" in bundle.card


def test_missing_data_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no training data"):
        Trainer(model_config(), small_run(tmp_path, 1, train_files=[]), show_progress=False)


def test_a_length_pool_is_refused_for_blocks_of_one_length(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="length_pool is for PermGen"):
        Trainer(model_config(), small_run(tmp_path, 1, length_pool=8), show_progress=False)


def test_validation_perplexity_is_exp_loss(tmp_path: Path) -> None:
    trainer = Trainer(model_config(), small_run(tmp_path, 2), show_progress=False)
    summary = trainer.run()
    assert summary["valid_ppl"] == pytest.approx(math.exp(summary["valid_loss"]))


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--train-files", "/nonexistent/corpus.txt"], "corpus file /nonexistent/corpus.txt does not exist"),
        (["--train-files", str(STORIES), "--config", "BAD_JSON"], "is not valid JSON"),
        (["--train-files", str(STORIES), "--max-steps", "0"], "max_steps"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{bad")
    argv = ["train", "--out-dir", str(tmp_path / "run"), *[str(bad_json) if a == "BAD_JSON" else a for a in extra]]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("variorum train: error:") and message in err and "Traceback" not in err
    assert not (tmp_path / "run" / "bundle").exists()
