"""What the app asks the front door about a writer's own models: the cached checkpoints not imported yet,
an import into a fresh folder of the user models folder, and a picked folder taken as a bundle, imported
as a checkpoint, or refused with one clear message."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from engine.front_door import BundleError, CheckpointError, Engine
from tests.engine.checkpoints.conftest import add_to_cache


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Engine:
    """An engine whose user models folder and Hugging Face cache are both under tmp_path."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.delenv("HF_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    models = tmp_path / "models"
    return Engine([models], models_dir=models)


def test_cached_checkpoints_are_offered_until_imported(engine: Engine, gpt2_folder: Path, bart_folder: Path,
                                                       tmp_path: Path) -> None:
    add_to_cache(tmp_path / "hub", "acme/tiny-gpt2", gpt2_folder)
    add_to_cache(tmp_path / "hub", "tiny-bart", bart_folder)
    assert sorted(info.name for info in engine.importable_checkpoints()) == ["acme/tiny-gpt2", "tiny-bart"]
    bundle = engine.import_checkpoint("acme/tiny-gpt2")
    assert bundle == tmp_path / "models" / "tiny-gpt2"
    assert [info.name for info in engine.list_bundles()] == ["tiny-gpt2"]
    assert [info.name for info in engine.importable_checkpoints()] == ["tiny-bart"]  # the bundle names its snapshot
    assert engine.import_checkpoint("acme/tiny-gpt2") == tmp_path / "models" / "tiny-gpt2-2"  # asked again: no clash


def test_a_picked_folder_is_a_bundle_a_checkpoint_or_refused(engine: Engine, gpt2_folder: Path,
                                                              tmp_path: Path) -> None:
    bundle = engine.open_model_folder(gpt2_folder)  # a checkpoint: imported into the user models folder
    assert bundle == tmp_path / "models" / gpt2_folder.name and (bundle / "model.safetensors").is_file()
    elsewhere = tmp_path / "elsewhere"
    bundle.rename(elsewhere)
    assert engine.open_model_folder(elsewhere) == elsewhere  # a bundle: taken as it is
    assert [info.path for info in engine.list_bundles([elsewhere, elsewhere])] == [elsewhere]
    junk = tmp_path / "junk"
    junk.mkdir()
    with pytest.raises(CheckpointError, match="holds no model"):
        engine.open_model_folder(junk)
    (junk / "config.json").write_text(json.dumps({"architectures": ["T5ForConditionalGeneration"]}))
    with pytest.raises(CheckpointError, match="T5ForConditionalGeneration is not supported"):
        engine.open_model_folder(junk)
    (elsewhere / "model.safetensors").unlink()
    with pytest.raises(BundleError, match=r"is missing model\.safetensors"):
        engine.open_model_folder(elsewhere)
    assert not (tmp_path / "models" / "junk").exists()
    with pytest.raises(CheckpointError, match=r"holds no model: .* has none; pick one of the model folders in it "
                                              r"\(elsewhere, junk\)"):
        engine.open_model_folder(tmp_path)  # a folder of models, not a model


@pytest.mark.parametrize("make", ["fifo", "folder"])
def test_a_picked_folder_whose_config_is_not_a_file_says_so(engine: Engine, tmp_path: Path, make: str) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    config = folder / "config.json"
    if make == "fifo":
        os.mkfifo(config)
    else:
        config.mkdir()
    with pytest.raises(CheckpointError) as refused:
        engine.open_model_folder(folder)
    assert str(refused.value) == f"{config} " + ("is a device, FIFO or socket, not a regular file" if make == "fifo"
                                                 else "is a folder, not a file")
