"""Fine-tune flags a start bundle cannot honour, refused in one line before anything is built: a LoRA rank past the
projections it adapts, a vocabulary size (the bundle brings its tokenizer)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.bundles.bundle import load_bundle
from engine.bundles.imported import import_checkpoint
from engine.config import ConfigError, TrainConfig
from engine.lm.train import main as train_main
from tests.conftest import STORIES
from tests.engine.checkpoints.conftest import write_gpt2


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lora-rank")
    return import_checkpoint(str(write_gpt2(root / "gpt2")), root / "imported", {"HOME": "/nonexistent"})


@pytest.mark.parametrize("rank", [9, 100_000, 99999999999999999999])
def test_a_rank_past_the_smallest_projection_is_refused_before_adapters_exist(imported: Path, rank: int) -> None:
    pytest.importorskip("peft")
    from engine.training.trainable import select_trainable

    model = load_bundle(imported).model  # GPT-2 of width 8: every projection has a side of 8
    with pytest.raises(ConfigError, match=f"lora_rank {rank:,} is larger than this model's projections allow "
                                          r"\(at most 8,"):
        select_trainable(model, TrainConfig(trainable="lora", lora_rank=rank))
    assert not any("lora" in name for name in model.state_dict())
    assert select_trainable(model, TrainConfig(trainable="lora", lora_rank=8)).lora_targets


def test_the_trainer_answers_a_huge_rank_in_one_line(imported: Path, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("peft")
    status = train_main(["--init-from", str(imported), "--trainable", "lora", "--lora-rank", "99999999999999999999",
                         "--train-files", str(STORIES), "--out-dir", str(tmp_path / "run"), "--max-steps", "1",
                         "--batch-size", "2", "--seq-len", "16", "--no-compile", "--no-progress"])
    error = [line for line in capsys.readouterr().err.splitlines() if line.strip() and "it/s]" not in line]
    assert status == 2 and len(error) == 1 and "lora_rank 99,999,999,999,999,999,999 is larger" in error[0], error
    assert not (tmp_path / "run").exists()


def test_a_vocabulary_size_with_a_start_bundle_is_refused(imported: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    status = train_main(["--init-from", str(imported), "--vocab-size", "500", "--train-files", str(STORIES),
                         "--out-dir", str(tmp_path / "run"), "--max-steps", "1", "--no-compile", "--no-progress"])
    error = [line for line in capsys.readouterr().err.splitlines() if line.strip() and "it/s]" not in line]
    assert status == 2 and len(error) == 1 and "--vocab-size cannot change a fine-tune's vocabulary" in error[0]
    assert not (tmp_path / "run").exists()
