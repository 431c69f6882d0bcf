"""A bundle whose weights are stored as bfloat16 loads as float32, and its held-out NLL can be
re-measured from the stored bundle (`variorum perplexity` on a PermGen bundle)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from engine.config import TrainConfig
from engine.permgen.bundle import load_permgen_bundle
from engine.permgen.heldout import bundle_held_out
from engine.permgen.train import PermGenTrainer
from engine.perplexity import main as perplexity_main
from engine.tokenizer import VariorumTokenizer
from tests.engine.permgen.conftest import STORIES, tiny_permgen_config


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, pg_tokenizer: VariorumTokenizer) -> PermGenTrainer:
    tmp = tmp_path_factory.mktemp("stored")
    pg_tokenizer.save(tmp / "tok")
    train = TrainConfig(train_files=[str(STORIES)], out_dir=str(tmp / "run"), batch_size=2, max_steps=3,
                        eval_every=3, eval_batches=4, warmup_steps=1, lr=1e-3, device="cpu", valid_fraction=0.5)
    trainer = PermGenTrainer(tiny_permgen_config(1), train, tokenizer_dir=tmp / "tok")
    assert trainer.valid_data and trainer.train_data  # the fixture's hash split has both sides
    trainer.run()
    return trainer


def _to_bf16(bundle: Path) -> None:
    weights = bundle / "model.safetensors"
    save_file({k: v.to(torch.bfloat16) for k, v in load_file(str(weights)).items()}, str(weights))


def test_bf16_weights_load_as_float32_with_the_rounded_values(trained: PermGenTrainer, tmp_path: Path) -> None:
    bundle = tmp_path / "bf16"
    source = Path(trained.train_config.out_dir) / "bundle"
    bundle.mkdir()
    for f in source.iterdir():
        (bundle / f.name).write_bytes(f.read_bytes())
    _to_bf16(bundle)
    loaded = load_permgen_bundle(bundle)
    stored = load_file(str(bundle / "model.safetensors"))
    params = dict(loaded.model.named_parameters())
    assert all(p.dtype == torch.float32 for p in params.values())
    name = next(k for k in stored if k in params and stored[k].dim() == 2)
    assert torch.equal(params[name], stored[name].float())
    assert not torch.equal(params[name], trained.model.state_dict()[name].cpu())  # rounding really happened


def test_held_out_nll_of_the_stored_bundle_matches_training(
    trained: PermGenTrainer, capsys: pytest.CaptureFixture[str]
) -> None:
    bundle = load_permgen_bundle(Path(trained.train_config.out_dir) / "bundle")
    measured = bundle_held_out(bundle, [STORIES])
    assert measured["examples"] == len(trained.valid_data)
    assert measured["nll_natural"] == pytest.approx(trained.evaluate(True), abs=1e-4)
    assert measured["nll_random_order"] == pytest.approx(trained.evaluate(False), abs=1e-4)
    assert perplexity_main(["--bundle", str(bundle.path), "--files", str(STORIES)]) == 0
    assert json.loads(capsys.readouterr().out) == measured
