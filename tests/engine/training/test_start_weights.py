"""Fine-tuning from a bundle (`init_from`): the run starts from its weights and tokenizer, or says why not."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.config import ConfigError, TrainConfig
from engine.lm.train import Trainer
from tests.conftest import STORIES, tiny_config


def same_weights(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    theirs = b.state_dict()
    return all(torch.equal(t, theirs[name].to(t.dtype)) for name, t in a.state_dict().items())


def test_a_language_model_run_starts_from_the_bundle(tiny_bundle: Path, tmp_path: Path) -> None:
    from engine.bundles.bundle import load_bundle

    train = TrainConfig(train_files=[str(STORIES)], out_dir=str(tmp_path / "run"), max_steps=1, device="cpu",
                        init_from=str(tiny_bundle), seed=99)  # another seed: random weights would differ
    trainer = Trainer(tiny_config(320), train, show_progress=False)
    start = load_bundle(tiny_bundle)
    assert same_weights(trainer.model, start.model)
    assert trainer.tokenizer.encode("Once upon a time") == start.tokenizer.encode("Once upon a time")


def test_sizes_that_differ_and_two_tokenizers_are_refused(tiny_bundle: Path, tmp_path: Path) -> None:
    train = TrainConfig(train_files=[str(STORIES)], out_dir=str(tmp_path / "run"), device="cpu",
                        init_from=str(tiny_bundle))
    with pytest.raises(ConfigError, match=r"wte.weight|in the bundle but"):
        Trainer(tiny_config(320, n_embd=48), train, show_progress=False)
    with pytest.raises(ConfigError, match="leave out --tokenizer"):
        Trainer(tiny_config(320), train, tokenizer_dir=tiny_bundle, show_progress=False)
