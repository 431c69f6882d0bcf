"""A last-N fine-tune of a Llama with its frozen blocks' output computed once trains exactly as without it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from engine.bundles.bundle import save_bundle
from engine.config import ConfigError, TrainConfig
from engine.lm.train import Trainer
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from engine.training.frozen_prefix import FrozenPrefix
from tests.conftest import STORIES, tiny_config

LLAMA = {"n_layer": 3, "n_head": 4, "n_kv_head": 2, "mlp_width": 48, "backbone": "llama"}


@pytest.fixture(scope="module")
def llama_bundle(tmp_path_factory: pytest.TempPathFactory, tokenizer: VariorumTokenizer) -> Path:
    torch.manual_seed(0)
    config = tiny_config(tokenizer.vocab_size, **LLAMA)
    path = tmp_path_factory.mktemp("bundles") / "tiny-llama"
    save_bundle(path, LanguageModel(config).eval(), tokenizer, "# Tiny Llama\n", {"train": {"valid_fraction": 0.2}})
    return path


def _train(bundle: Path, out: Path, cached: bool, steps: int = 3) -> Trainer:
    config = TrainConfig(train_files=[str(STORIES)], out_dir=str(out), max_steps=steps, device="cpu", batch_size=4,
                         init_from=str(bundle), trainable="last-1", cache_frozen_blocks=cached, compile=False,
                         seq_len=16, eval_every=10, save_every=10, lr=1e-2, warmup_steps=0)
    trainer = Trainer(tiny_config(320, head="f2", termination="nmst", **LLAMA), config, show_progress=False)
    trainer.run()
    return trainer


def test_cached_frozen_blocks_train_the_same_weights_as_the_full_forward(llama_bundle: Path, tmp_path: Path) -> None:
    plain = _train(llama_bundle, tmp_path / "plain", cached=False)
    cached = _train(llama_bundle, tmp_path / "cached", cached=True)
    theirs = plain.model.state_dict()
    for name, tensor in cached.model.state_dict().items():
        assert torch.allclose(tensor, theirs[name], atol=1e-5), name
    state = json.loads((tmp_path / "cached" / "frozen-prefix" / "state.json").read_text())
    assert state["first_block"] == 2 and state["rows_done"] == len(cached.train_blocks) + len(cached.valid_blocks)


def test_the_states_are_those_of_the_frozen_blocks_and_resume_where_they_stopped(llama_bundle: Path,
                                                                                 tmp_path: Path) -> None:
    from engine.bundles.bundle import load_bundle

    backbone = load_bundle(llama_bundle).model.backbone
    sequences = torch.randint(0, 300, (11, 16))
    partial = FrozenPrefix(backbone, 2, sequences, tmp_path)  # type: ignore[arg-type]
    partial.fill(show_progress=False)
    (tmp_path / "state.json").write_text(json.dumps({**json.loads((tmp_path / "state.json").read_text()),
                                                     "rows_done": 8}))  # as if stopped after one chunk
    resumed = FrozenPrefix(backbone, 2, sequences, tmp_path)  # type: ignore[arg-type]
    assert resumed.done == 8 and resumed.states(sequences[8:]) is None
    resumed.fill(show_progress=False)
    with torch.no_grad():
        expected = backbone.run_blocks(backbone.embed(sequences), 0, 2)  # type: ignore[operator]
    found = resumed.states(sequences[[3, 10, 3]])
    assert found is not None and torch.allclose(found, expected[[3, 10, 3]], atol=1e-6)
    assert resumed.states(torch.randint(0, 300, (1, 16))) is None  # an unknown sequence runs every block
    other = FrozenPrefix(backbone, 2, sequences.flip(0), tmp_path)  # type: ignore[arg-type]
    assert other.done == 0  # other text: the file starts again


def test_it_needs_a_last_n_fine_tune(llama_bundle: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cache_frozen_blocks needs trainable last-N"):
        TrainConfig(train_files=[str(STORIES)], out_dir=str(tmp_path), trainable="lora", cache_frozen_blocks=True)
