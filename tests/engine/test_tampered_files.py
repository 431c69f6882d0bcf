"""Tampered or damaged pickles and checkpoint files are refused with one clear error, never run, never a traceback."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest
import torch
from transformers import GPT2Model

from engine.backbones.hf_checkpoint import load_hf_pretrained
from engine.config import ConfigError
from engine.model import LanguageModel
from engine.training.checkpoint import OPTIMIZER_FILE, STATE_FILE, CheckpointError, load_checkpoint, save_checkpoint


class _RunsCode:
    """A pickle that would create `marker` if unpickled without `weights_only`."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, ...]]:
        return os.system, (f"touch {self.marker}",)


@pytest.fixture
def checkpoint(tmp_path: Path, tiny_model: LanguageModel) -> tuple[Path, LanguageModel, torch.optim.Optimizer]:
    optimizer = torch.optim.AdamW(tiny_model.parameters())
    save_checkpoint(tmp_path / "checkpoint", tiny_model, optimizer, 3, {})
    return tmp_path / "checkpoint", tiny_model, optimizer


@pytest.mark.parametrize(("damage", "message"), [
    (lambda p: (p / OPTIMIZER_FILE).write_bytes(pickle.dumps(_RunsCode(p / "ran"))), "more than tensors"),
    (lambda p: (p / OPTIMIZER_FILE).write_bytes((p / OPTIMIZER_FILE).read_bytes()[:100]), "is damaged"),
    (lambda p: torch.save({"optimizer": 1}, p / OPTIMIZER_FILE), "does not hold an optimizer"),
    (lambda p: (p / STATE_FILE).write_text("[" * 100_000 + "]" * 100_000), "nested too deeply"),
    (lambda p: (p / STATE_FILE).write_text(json.dumps({"step": "3"})), "does not hold a step"),
], ids=["code-pickle", "truncated", "foreign-dict", "deep-state", "state-without-step"])
def test_a_damaged_checkpoint_is_one_error(checkpoint: tuple[Path, LanguageModel, torch.optim.Optimizer],
                                           damage: object, message: str) -> None:
    directory, model, optimizer = checkpoint
    damage(directory)  # type: ignore[operator]
    with pytest.raises(CheckpointError, match=message):
        load_checkpoint(directory, model, optimizer)
    assert not (directory / "ran").exists()


def test_a_tampered_hugging_face_checkpoint_is_one_error(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2", "vocab_size": 300, "n_layer": 1,
                                                      "n_head": 1, "n_embd": 16, "n_positions": 16}))
    (tmp_path / "pytorch_model.bin").write_bytes(pickle.dumps(_RunsCode(tmp_path / "ran")))
    with pytest.raises(ConfigError, match="holds more than tensors and plain data"):
        load_hf_pretrained(GPT2Model, tmp_path, "GPT-2")
    assert not (tmp_path / "ran").exists()
