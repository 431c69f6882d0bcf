"""Training refuses what would lose work or write garbage: --resume without a checkpoint, non-finite
learning rates and losses (no NaN checkpoint or bundle is written), a deeply nested JSONL line."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.cli import main as cli_main
from engine.config import TrainConfig
from engine.data.corpus import CorpusError, read_jsonl
from engine.lm.train import Trainer
from engine.training.loop import TrainingDivergedError
from tests.conftest import STORIES, tiny_config

TINY = ["--train-files", str(STORIES), "--vocab-size", "300", "--n-layer", "1", "--n-embd", "16", "--n-head", "2",
        "--block-size", "16", "--batch-size", "2", "--warmup-steps", "1", "--no-progress"]


def _train(out: Path, *extra: str) -> int:
    return cli_main(["train", *TINY, "--out-dir", str(out), *extra])


def test_resume_without_a_checkpoint_is_an_error_unless_allowed(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert _train(tmp_path, "--max-steps", "1", "--resume") == 2
    err = capsys.readouterr().err
    assert "no checkpoint in" in err and "--allow-fresh-start" in err and "Traceback" not in err
    assert not (tmp_path / "bundle").exists()
    assert _train(tmp_path, "--max-steps", "1", "--resume", "--allow-fresh-start") == 0
    assert (tmp_path / "bundle" / "model.safetensors").is_file()


def test_infinite_learning_rate_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _train(tmp_path, "--max-steps", "2", "--lr", "inf", "--min-lr", "0") == 2
    assert "lr must be a finite number" in capsys.readouterr().err
    assert not (tmp_path / "bundle").exists()


@pytest.mark.parametrize(("save_every", "message"), [(1, "weight tensor"), (1000, "the loss is nan")])
def test_divergence_stops_training_without_saving_nan_weights(tmp_path: Path, save_every: int, message: str) -> None:
    config = TrainConfig(train_files=[str(STORIES)], out_dir=str(tmp_path), batch_size=2, max_steps=4,
                         warmup_steps=1, save_every=save_every)
    trainer = Trainer(tiny_config(320), config, show_progress=False)
    update = trainer.optimizer.step

    def breaking_update() -> None:  # an update that overflows, as a too-high lr or a bad batch does
        update()
        with torch.no_grad():
            next(trainer.model.parameters()).fill_(float("nan"))

    trainer.optimizer.step = breaking_update  # type: ignore[method-assign,assignment]
    with pytest.raises(TrainingDivergedError, match=message):
        trainer.run()
    assert not (tmp_path / "bundle").exists() and not (tmp_path / "checkpoint").exists()


def test_deeply_nested_jsonl_line_is_a_corpus_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    path.write_text('"a story"\n' + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(CorpusError, match=r"deep.jsonl:2: JSON nested too deeply"):
        read_jsonl(path)


def test_learning_rate_above_the_limit_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _train(tmp_path, "--max-steps", "2", "--lr", "1e38", "--min-lr", "0") == 2
    assert "lr must be <= 10" in capsys.readouterr().err
