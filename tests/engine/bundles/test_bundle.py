"""Bundles: save → load gives identical logits; every broken bundle gets a specific error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from engine.bundles.bundle import BundleError, load_bundle, save_bundle
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from tests.conftest import tiny_config


@pytest.fixture
def bundle_copy(tiny_bundle: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(tiny_bundle, target)
    return target


def test_save_load_gives_identical_logits(tokenizer: VariorumTokenizer, tmp_path: Path) -> None:
    torch.manual_seed(3)
    model = LanguageModel(tiny_config(tokenizer.vocab_size)).eval()
    save_bundle(tmp_path / "b", model, tokenizer, "# card\n")
    loaded = load_bundle(tmp_path / "b")
    ids = torch.tensor([tokenizer.encode("The old clock in the hall stopped at midnight.")])
    assert torch.equal(model.next_log_probs(ids), loaded.model.next_log_probs(ids))
    assert loaded.model.head.proj.weight is loaded.model.backbone.token_embedding.weight  # still tied


def test_missing_file_is_named(bundle_copy: Path) -> None:
    (bundle_copy / "tokenizer.json").unlink()
    with pytest.raises(BundleError, match=r"missing tokenizer\.json"):
        load_bundle(bundle_copy)


def test_truncated_weights(bundle_copy: Path) -> None:
    weights = bundle_copy / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])
    with pytest.raises(BundleError, match="truncated or corrupt"):
        load_bundle(bundle_copy)


def test_other_format_version(bundle_copy: Path) -> None:
    config = json.loads((bundle_copy / "config.json").read_text())
    config["format_version"] = 99
    (bundle_copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(BundleError, match="format version 99"):
        load_bundle(bundle_copy)


def test_tokenizer_of_another_model(bundle_copy: Path) -> None:
    VariorumTokenizer.train(["a quite different corpus of words"] * 5, vocab_size=300).save(bundle_copy)
    with pytest.raises(BundleError, match="does not belong to this model"):
        load_bundle(bundle_copy)


def test_weights_of_another_shape(bundle_copy: Path) -> None:
    config = json.loads((bundle_copy / "config.json").read_text())
    config["model"]["n_embd"] = 64
    (bundle_copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(BundleError, match="shape"):
        load_bundle(bundle_copy)


def test_invalid_json_and_unknown_fields(bundle_copy: Path) -> None:
    path = bundle_copy / "config.json"
    config = json.loads(path.read_text())
    config["model"]["n_lyer"] = 2
    path.write_text(json.dumps(config))
    with pytest.raises(BundleError, match="n_lyer"):
        load_bundle(bundle_copy)
    path.write_text("{oops")
    with pytest.raises(BundleError, match="not valid JSON"):
        load_bundle(bundle_copy)


def test_not_a_directory(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="does not exist"):
        load_bundle(tmp_path / "nowhere")


def test_failed_save_leaves_previous_bundle(tiny_bundle: Path, tokenizer: VariorumTokenizer, tmp_path: Path) -> None:
    target = tmp_path / "kept"
    shutil.copytree(tiny_bundle, target)
    wrong = LanguageModel(tiny_config(tokenizer.vocab_size + 1))
    with pytest.raises(BundleError):
        save_bundle(target, wrong, tokenizer, "# card\n")
    load_bundle(target)  # untouched and still valid
