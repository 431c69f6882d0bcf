"""A BART checkpoint from the cache: imported, fine-tuned by `variorum train-permgen --init-from`, written with
by torch and ONNX Runtime alike, and stored as what changed on top of the checkpoint."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from engine.bundles.bundle import save_bundle
from engine.front_door import DecodeConfig, Engine, GenerationRequest
from engine.permgen.bundle import load_permgen_bundle
from engine.training.start_weights import start_base
from tests.engine.checkpoints.conftest import add_to_cache
from tests.engine.permgen.conftest import STORIES


def _texts(bundle: Path, runtime: str) -> list[str]:
    model = Engine([bundle.parent]).load(bundle, device="cpu", runtime=runtime)
    request = GenerationRequest(task="story", title="The cat", n=2,
                                decode=DecodeConfig(seed=3, max_new_tokens=6, real_words=False))
    stream = model.stream(request)
    for _ in stream:
        pass
    assert len(stream.variants) == 2 and all(v.finish_reason for v in stream.variants)
    return [v.text for v in stream.variants]


@pytest.fixture(scope="module")
def imported(bart_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from engine.cli import main

    root = tmp_path_factory.mktemp("bart")
    add_to_cache(root / "hub", "acme/tiny-bart", bart_folder)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_CACHE", str(root / "hub"))
        assert main(["import", "acme/tiny-bart", "--out", str(root / "tiny-bart")]) == 0
    return root / "tiny-bart"


def test_the_import_is_a_story_bundle_that_stores_no_weights(imported: Path) -> None:
    config = json.loads((imported / "config.json").read_text())
    assert config["kind"] == "permgen" and config["base"]["name"] == "acme/tiny-bart"
    assert config["permgen"]["task"] == "story" and config["permgen"]["positions"] == "absolute"
    assert load_file(str(imported / "model.safetensors")) == {}
    assert "variorum train-permgen --init-from" in (imported / "card.md").read_text()
    _texts(imported, "torch")


def test_the_import_itself_writes_the_same_with_onnx(imported: Path, tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    from engine.onnx.export import export_bundle

    copy = Path(shutil.copytree(imported, tmp_path / "tiny-bart"))  # the copy reads the same checkpoint
    export_bundle(copy)
    assert _texts(copy, "onnx") == _texts(copy, "torch")


def test_a_fine_tune_of_the_import_writes_the_same_with_torch_and_onnx(imported: Path, tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    from engine.cli import main
    from engine.onnx.export import export_bundle

    run = tmp_path / "run"
    assert main(["train-permgen", "--init-from", str(imported), "--task", "story", "--train-files", str(STORIES),
                 "--out-dir", str(run), "--max-steps", "3", "--batch-size", "2", "--eval-every", "3",
                 "--eval-batches", "1", "--warmup-steps", "1", "--lr", "1e-3", "--device", "cpu",
                 "--max-sentence-len", "12", "--no-progress"]) == 0
    tuned = run / "bundle"
    config = json.loads((tuned / "config.json").read_text())
    assert config["base"]["name"] == "acme/tiny-bart"  # written on the checkpoint, as its start bundle was
    assert config["permgen"]["positions"] == "hierarchical" and config["model"]["n_embd"] == 8  # sizes of the start
    assert not config["permgen"]["lowercase"] and config["permgen"]["max_sentence_len"] == 12  # the flag wins
    export_bundle(tuned)
    torch_texts = _texts(tuned, "torch")
    assert _texts(tuned, "onnx") == torch_texts
    assert _texts(tuned, "torch") == torch_texts  # reloaded: base checkpoint + stored tensors, the same model


def test_a_bundle_on_the_import_stores_only_the_tensors_that_changed(imported: Path, tmp_path: Path) -> None:
    start = load_permgen_bundle(imported)
    model = start.model
    with torch.no_grad():
        model.backbone.decoder.layers[0].fc1.weight.add_(0.5)  # one tensor changed, as a partial fine-tune would
    on_base = start_base(str(imported), "permgen", {})
    assert on_base is not None
    save_bundle(tmp_path / "partial", model, start.tokenizer, "# partial\n", {}, on_base=on_base)
    assert list(load_file(str(tmp_path / "partial" / "model.safetensors"))) == [
        "backbone.decoder.layers.0.fc1.weight"]
    reloaded = load_permgen_bundle(tmp_path / "partial").model.state_dict()
    assert all(torch.equal(reloaded[k], v) for k, v in model.state_dict().items())


def test_a_checkpoint_gone_by_the_end_of_a_fine_tune_leaves_a_whole_bundle(
    bart_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    from engine.bundles.imported import import_checkpoint
    from engine.permgen.train import PermGenTrainer, build_parser, run_configs

    checkpoint = Path(shutil.copytree(bart_folder, tmp_path / "checkpoint"))
    bundle = import_checkpoint(str(checkpoint), tmp_path / "imported", {"HOME": "/nonexistent"})
    args = build_parser().parse_args(["--init-from", str(bundle), "--train-files", str(STORIES), "--out-dir",
                                      str(tmp_path / "run"), "--max-sentence-len", "12", "--device", "cpu"])
    trainer = PermGenTrainer(*run_configs(args), show_progress=False)
    assert trainer.bundle_base() is not None
    shutil.rmtree(checkpoint)
    assert trainer.bundle_base() is None and "writing every weight into the bundle" in capsys.readouterr().err


@pytest.mark.parametrize("trainable", ["lora", "last-1"])
def test_a_partial_fine_tune_stores_the_new_positions_and_only_what_it_trained(imported: Path, tmp_path: Path,
                                                                              trainable: str) -> None:
    if trainable == "lora":
        pytest.importorskip("peft")
    from engine.cli import main
    from engine.permgen.start import POSITION_TABLES

    run = tmp_path / "run"
    assert main(["train-permgen", "--init-from", str(imported), "--task", "story", "--train-files", str(STORIES),
                 "--out-dir", str(run), "--max-steps", "3", "--batch-size", "2", "--eval-every", "3",
                 "--eval-batches", "1", "--warmup-steps", "1", "--lr", "1e-2", "--device", "cpu",
                 "--max-sentence-len", "12", "--no-progress", "--trainable", trainable, "--lora-rank", "2"]) == 0
    names = set(load_file(str(run / "bundle" / "model.safetensors")))
    assert any(n.startswith(POSITION_TABLES) for n in names)  # new in the run: trained in any setting
    others = {n for n in names if not n.startswith(POSITION_TABLES)}
    if trainable == "lora":
        assert others and all(n.startswith("low_rank.") for n in others)
    else:
        last = len(load_permgen_bundle(imported).model.backbone.decoder.layers) - 1
        assert others and all(f"decoder.layers.{last}." in n for n in others)
    assert _texts(run / "bundle", "torch")


def test_init_from_a_bart_checkpoint_folder_says_how_to_start_from_it(bart_folder: Path, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    from engine.cli import main

    assert main(["train-permgen", "--init-from", str(bart_folder), "--train-files", str(STORIES), "--out-dir",
                 str(tmp_path / "run"), "--no-progress"]) == 2
    assert f"is a pretrained checkpoint, not a Variorum bundle: start from it with --init-from-hf {bart_folder}" \
        in capsys.readouterr().err
