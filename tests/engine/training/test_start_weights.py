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


def test_a_partial_fine_tune_is_written_on_its_start_bundle_and_finds_it_beside_itself(
    tiny_bundle: Path, tmp_path: Path
) -> None:
    import json
    import shutil

    from safetensors.torch import load_file

    from engine.bundles.bundle import BundleError, load_bundle
    from engine.lm.train import main

    start = Path(shutil.copytree(tiny_bundle, tmp_path / "start"))
    assert main(["--init-from", str(start), "--train-files", str(STORIES), "--out-dir", str(tmp_path / "run"),
                 "--max-steps", "2", "--batch-size", "2", "--warmup-steps", "1", "--lr", "1e-2", "--no-compile",
                 "--no-progress", "--trainable", "last-1"]) == 0
    tuned = tmp_path / "run" / "bundle"
    base = json.loads((tuned / "config.json").read_text())["base"]
    assert base["name"] == "start" and base["bundle"] == str(start.resolve())
    stored = set(load_file(str(tuned / "model.safetensors")))
    layers = load_bundle(start).model.config.n_layer
    assert stored and all(f".h.{layers - 1}." in n or "ln_f" in n for n in stored)  # only what trained
    weights = load_bundle(tuned).model.state_dict()
    shipped = tmp_path / "shipped"  # moved together, as into resources/models: found beside it
    shipped.mkdir()
    start.rename(shipped / "start")
    moved = Path(shutil.copytree(tuned, shipped / "tuned"))
    assert all(torch.equal(v, weights[k]) for k, v in load_bundle(moved).model.state_dict().items())
    shutil.rmtree(shipped / "start")
    with pytest.raises(BundleError, match="is built on the bundle start, and neither a folder of that name"):
        load_bundle(moved)


def test_untying_a_tied_start_begins_the_output_table_at_its_embedding(tiny_bundle: Path, tmp_path: Path) -> None:
    from engine.bundles.bundle import load_bundle
    from engine.objectives.agg import AggObjective
    from engine.objectives.token_memory import TokenCounterMemory

    train = TrainConfig(train_files=[str(STORIES)], out_dir=str(tmp_path / "run"), max_steps=1, device="cpu",
                        init_from=str(tiny_bundle), seed=99, trainable="last-1")
    trainer = Trainer(tiny_config(320, tie_embeddings=False), train, show_progress=False)
    start = load_bundle(tiny_bundle).model
    model = trainer.model
    table, embedding = model.head.proj.weight, model.backbone.token_embedding.weight
    assert table is not embedding and torch.equal(table, start.backbone.token_embedding.weight)
    ids = torch.tensor([[1, 5, 9, 4]])
    with torch.no_grad():  # the start's own distribution
        ours, theirs = (m.head.log_probs(m.hidden_states(ids)[0]) for m in (model, start))
        assert torch.allclose(ours, theirs, atol=1e-5)
    assert table.requires_grad and not embedding.requires_grad
    AggObjective(TokenCounterMemory(320, window=4)).check_model(model)  # the output side trains: AGG is not refused
