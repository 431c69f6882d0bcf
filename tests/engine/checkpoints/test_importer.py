"""A GPT-2 checkpoint from the cache becomes a bundle the engine loads and writes with, offline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.bundles.imported import import_checkpoint
from engine.checkpoints.inspect import CheckpointError
from engine.data.corpus import file_sha256
from engine.front_door import DecodeConfig, Engine, GenerationRequest
from tests.engine.checkpoints.conftest import add_to_cache


def test_a_cached_gpt2_becomes_a_bundle_that_writes(gpt2_folder: Path, tmp_path: Path) -> None:
    add_to_cache(tmp_path / "hub", "acme/tiny-gpt2", gpt2_folder)
    bundle = import_checkpoint("acme/tiny-gpt2", tmp_path / "models" / "tiny", {"HF_HUB_CACHE": str(tmp_path / "hub"),
                                                                                "HOME": "/nonexistent"})
    source = json.loads((bundle / "config.json").read_text())["provenance"]["imported_from"]
    assert source["name"] == "acme/tiny-gpt2" and source["architecture"] == "GPT2LMHeadModel"
    assert source["weights_sha256"] == {"model.safetensors": file_sha256(gpt2_folder / "model.safetensors")}
    assert "imported as it is" in (bundle / "card.md").read_text()
    model = Engine([bundle.parent]).load(bundle, device="cpu", runtime="torch")
    request = GenerationRequest(prompt="The cat", n=2, decode=DecodeConfig(seed=1, max_new_tokens=8))
    stream = model.stream(request)
    for _ in stream:
        pass
    assert len(stream.variants) == 2 and all(v.finish_reason for v in stream.variants)


def test_an_existing_folder_is_refused(gpt2_folder: Path, tmp_path: Path) -> None:
    (tmp_path / "taken").mkdir()
    with pytest.raises(CheckpointError, match="already exists"):
        import_checkpoint(str(gpt2_folder), tmp_path / "taken", {"HOME": "/nonexistent"})


def test_the_import_command_writes_the_bundle_and_lists_the_cache(
    gpt2_folder: Path, bart_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from engine.cli import main

    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    add_to_cache(tmp_path / "hub", "acme/tiny-gpt2", gpt2_folder)
    add_to_cache(tmp_path / "hub", "tiny-bart", bart_folder)
    assert main(["import", "acme/tiny-gpt2", "--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "b" / "model.safetensors").is_file() and "imported acme/tiny-gpt2" in capsys.readouterr().out
    assert main(["import", "--list"]) == 0
    listed = capsys.readouterr().out
    assert "acme/tiny-gpt2: importable, acme/tiny-gpt2 (GPT2LMHeadModel" in listed
    assert "tiny-bart: importable, tiny-bart (BartForConditionalGeneration" in listed
    main(["bundles"])
    bundles = capsys.readouterr().out
    assert "`variorum import NAME` makes a bundle" in bundles and "  acme/tiny-gpt2 (GPT2LMHeadModel" in bundles
    assert "  tiny-bart (BartForConditionalGeneration" in bundles
    assert main(["import", "no-such-model", "--out", str(tmp_path / "c")]) == 2
    assert "variorum import: error: no-such-model: no such folder, and not in the local" in capsys.readouterr().err


def test_an_imported_bundle_exports_to_onnx_and_writes_the_same_there(gpt2_folder: Path, tmp_path: Path) -> None:
    pytest.importorskip("onnxruntime")
    from engine.onnx.export import export_bundle

    bundle = import_checkpoint(str(gpt2_folder), tmp_path / "tiny", {"HOME": "/nonexistent"})
    export_bundle(bundle)
    request = GenerationRequest(prompt="The cat", n=2, decode=DecodeConfig(seed=3, max_new_tokens=6, real_words=False))
    texts = {}
    for runtime in ("torch", "onnx"):
        model = Engine([bundle.parent]).load(bundle, device="cpu", runtime=runtime)
        stream = model.stream(request)
        for _ in stream:
            pass
        texts[runtime] = [v.text for v in stream.variants]
    assert texts["onnx"] == texts["torch"]
