"""Exported graphs keep no second copy of the bundle's weights: they refer to model.safetensors (as
stored, or transposed behind a Transpose node), and the runtime fills them in when it loads them."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from engine.bundles.bundle import WEIGHTS_FILE
from engine.lm.loaded import choose_lm_runtime
from engine.onnx.export_format import file_sha256
from engine.onnx.session import OnnxUnavailable, open_graphs
from engine.onnx.shared_weights import load_graph
from tests.engine.onnx.test_parity import onnx_runner

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


def referring(path: Path) -> list[str]:
    """Names of the graph's weights that refer to the bundle's weights file."""
    model = onnx.load(str(path), load_external_data=False)
    return [w.name for w in model.graph.initializer if w.data_location == onnx.TensorProto.EXTERNAL]


def test_a_language_model_graph_refers_to_the_bundle_weights(make_exported: Callable[[str], Path]) -> None:
    path = make_exported("softmax")
    graph = path / "onnx" / "decoder.onnx"
    assert "backbone.transformer.wte.weight" in referring(graph)
    assert graph.stat().st_size < (path / WEIGHTS_FILE).stat().st_size / 4  # structure, biases and norms only
    filled = load_graph(graph, (path / WEIGHTS_FILE).read_bytes())
    assert all(w.data_location == onnx.TensorProto.DEFAULT for w in filled.graph.initializer)


def _rewrite_record(path: Path, **changes: object) -> None:
    record_path = path / "onnx" / "export.json"
    record = json.loads(record_path.read_text())
    record.update(changes)
    record["graphs"]["decoder"]["sha256"] = file_sha256(path / "onnx" / "decoder.onnx")
    record_path.write_text(json.dumps(record))


def test_an_export_whose_graphs_hold_their_weights_still_runs(
    make_exported: Callable[[str], Path], tmp_path: Path
) -> None:
    """Format 1 exports (before graphs referred to the bundle's file) hold every weight themselves."""
    path = tmp_path / "old"
    shutil.copytree(make_exported("softmax"), path)
    graph = path / "onnx" / "decoder.onnx"
    onnx.save(load_graph(graph, (path / WEIGHTS_FILE).read_bytes()), str(graph))
    _rewrite_record(path, format=1)
    assert referring(path / "onnx" / "decoder.onnx") == []
    ids = torch.randint(0, 100, (2, 5), generator=torch.Generator().manual_seed(0))
    old, new = onnx_runner(path), onnx_runner(make_exported("softmax"))
    with torch.inference_mode():
        assert torch.equal(old.decode(ids, old.new_cache(2)), new.decode(ids, new.new_cache(2)))


def test_a_reference_outside_the_weights_file_is_refused(
    make_exported: Callable[[str], Path], tmp_path: Path
) -> None:
    path = tmp_path / "bad"
    shutil.copytree(make_exported("softmax"), path)
    model = onnx.load(str(path / "onnx" / "decoder.onnx"), load_external_data=False)
    weight = next(w for w in model.graph.initializer if w.data_location == onnx.TensorProto.EXTERNAL)
    next(e for e in weight.external_data if e.key == "offset").value = str(10**9)
    onnx.save(model, str(path / "onnx" / "decoder.onnx"))
    _rewrite_record(path)  # a consistent record: only the reference is wrong
    with pytest.raises(OnnxUnavailable, match=r"lies past the end of model\.safetensors"):
        open_graphs(path, "lm", torch.device("cpu"))
    config = json.loads((path / "config.json").read_text())["model"]
    choice = choose_lm_runtime(path, config["block_size"], config["n_embd"], "onnx", torch.device("cpu"))
    assert choice.runner is None and "lies past the end" in choice.note
