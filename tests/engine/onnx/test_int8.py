"""int8: written with its held-out perplexity check, offered only within 2%, else fp32 ONNX with a note."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from engine.lm.loaded import choose_lm_runtime
from engine.onnx import quantize
from engine.onnx.export import export_bundle
from tests.conftest import STORIES

pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("offered", [True, False])
def test_int8_is_offered_only_when_perplexity_stays_within_the_bound(
    offered: bool, tiny_bundle: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "b"
    shutil.copytree(tiny_bundle, path)
    monkeypatch.setattr(quantize, "MAX_PERPLEXITY_RISE", 10.0 if offered else -1.0)  # any rise passes / fails
    record = export_bundle(path, [STORIES]).int8
    assert record["offered"] is offered and record["tokens"] > 0
    assert record["fp32_perplexity"] > 1 and record["int8_perplexity"] > 1
    assert json.loads((path / "onnx" / "export.json").read_text())["int8"] == record
    assert (path / "onnx" / quantize.INT8_FILE).is_file() is offered
    assert "int8 dynamic quantization: held-out perplexity" in (path / "card.md").read_text()
    choice = choose_lm_runtime(path, 32, 32, "onnx-int8", torch.device("cpu"))
    assert choice.runner is not None  # int8 or, when not offered, the fp32 ONNX decoder
    assert choice.name.endswith(" int8") is offered
    assert ("not offered" in choice.note) is not offered


def test_int8_perplexity_is_close_to_torch_s(tiny_bundle: Path, tmp_path: Path) -> None:
    """The check's fp32 number is the torch model's perplexity (same blocks), so the 2% compares like with like."""
    from engine.bundles.bundle import load_bundle
    from engine.data.blocks import make_blocks
    from engine.data.corpus import read_corpus, split_documents
    from engine.perplexity import block_perplexity

    path = tmp_path / "b"
    shutil.copytree(tiny_bundle, path)
    record = export_bundle(path, [STORIES]).int8
    bundle = load_bundle(path)
    held_out = split_documents(read_corpus([STORIES]), 0.2)[1]
    blocks = make_blocks(bundle.tokenizer.encode_batch(held_out), bundle.tokenizer.eos_id, 32)
    assert record["fp32_perplexity"] == pytest.approx(block_perplexity(bundle.model, blocks)[1], rel=1e-4)
