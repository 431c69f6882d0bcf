"""Which folders are importable checkpoints, and the one message for each that is not."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine.checkpoints.inspect import CheckpointError, inspect_checkpoint


def _copy(folder: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(folder, tmp_path / folder.name))


def test_a_gpt2_and_a_bart_checkpoint_are_recognised(gpt2_folder: Path, bart_folder: Path) -> None:
    gpt2, bart = inspect_checkpoint(gpt2_folder), inspect_checkpoint(bart_folder)
    assert (gpt2.family, gpt2.architecture, gpt2.name) == ("gpt2", "GPT2LMHeadModel", "tiny-gpt2")
    assert [p.name for p in gpt2.tokenizer] == ["vocab.json", "merges.txt"]
    assert [p.name for p in gpt2.weights] == ["model.safetensors"]
    assert gpt2.vocab_size == gpt2.tokenizer_size == len(json.loads((gpt2_folder / "vocab.json").read_text()))
    assert (bart.family, [p.name for p in bart.tokenizer]) == ("bart", ["tokenizer.json"])
    assert "tiny-gpt2 (GPT2LMHeadModel, " in gpt2.summary


def test_an_unsupported_architecture_is_named(gpt2_folder: Path, tmp_path: Path) -> None:
    folder = _copy(gpt2_folder, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config["architectures"] = ["T5ForConditionalGeneration"]
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="T5ForConditionalGeneration is not supported; Variorum imports GPT-2"):
        inspect_checkpoint(folder)


@pytest.mark.parametrize(("remove", "message"), [
    ("config.json", r"config.json \(model config\) is missing"),
    ("model.safetensors", "no weights"),
    ("merges.txt", r"merges.txt \(the tokenizer's merges\) is missing"),
    ("vocab.json", r"vocab.json \(the tokenizer's vocabulary\) is missing"),
])
def test_a_missing_file_is_named(gpt2_folder: Path, tmp_path: Path, remove: str, message: str) -> None:
    folder = _copy(gpt2_folder, tmp_path)
    (folder / remove).unlink()
    with pytest.raises(CheckpointError, match=message):
        inspect_checkpoint(folder)


def test_weights_cut_short_are_caught_from_their_header(gpt2_folder: Path, tmp_path: Path) -> None:
    folder = _copy(gpt2_folder, tmp_path)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])
    with pytest.raises(CheckpointError, match="download cut short"):
        inspect_checkpoint(folder)
    weights.write_bytes(b"\x01")
    with pytest.raises(CheckpointError, match="too short to be a safetensors file"):
        inspect_checkpoint(folder)


def test_a_sharded_checkpoint_needs_every_shard(gpt2_folder: Path, tmp_path: Path) -> None:
    folder = _copy(gpt2_folder, tmp_path)
    (folder / "model.safetensors").rename(folder / "model-00001-of-00002.safetensors")
    index = {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(CheckpointError, match=r"model-00002-of-00002.safetensors \(a weights shard\) is missing"):
        inspect_checkpoint(folder)


def test_a_tokenizer_larger_than_the_weights_does_not_belong(gpt2_folder: Path, bart_folder: Path,
                                                             tmp_path: Path) -> None:
    folder = _copy(gpt2_folder, tmp_path)
    config = json.loads((folder / "config.json").read_text())
    config["vocab_size"] -= 1
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="they do not belong together"):
        inspect_checkpoint(folder)
    config["vocab_size"] += 64  # a table padded to a round size takes the tokenizer
    (folder / "config.json").write_text(json.dumps(config))
    info = inspect_checkpoint(folder)
    assert info.vocab_size == info.tokenizer_size + 63


def test_damaged_json_is_one_line(gpt2_folder: Path, tmp_path: Path) -> None:
    folder = _copy(gpt2_folder, tmp_path)
    (folder / "config.json").write_bytes(b"{\xff")
    with pytest.raises(CheckpointError, match=r"config\.json \(model config\) is not UTF-8 text"):
        inspect_checkpoint(folder)
