"""Bundles with 16-bit weights export 16-bit graph weights (half the file) that compute what fp32 ones do."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from engine.bundles.bundle import WEIGHTS_FILE, load_bundle, save_bundle
from engine.tokenizer import VariorumTokenizer
from tests.engine.onnx.conftest import build_model
from tests.engine.onnx.test_parity import onnx_runner

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")


def weight_types(path: Path) -> set[int]:
    """The element types of an exported graph's weights."""
    from engine.onnx.shared_weights import load_graph

    graph = load_graph(path, (path.parent.parent / WEIGHTS_FILE).read_bytes())
    return {weight.data_type for weight in graph.graph.initializer}


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_16_bit_bundles_get_exact_16_bit_graph_weights(
    dtype: str, tmp_path: Path, tokenizer: VariorumTokenizer
) -> None:
    from engine.onnx.export import export_bundle

    path = tmp_path / dtype
    save_bundle(path, build_model("softmax", tokenizer), tokenizer, "# Tiny\n\nFor tests.\n", weights_dtype=dtype)
    export_bundle(path)
    halves = {"float16": onnx.TensorProto.FLOAT16, "bfloat16": onnx.TensorProto.BFLOAT16}
    types = weight_types(path / "onnx" / "decoder.onnx")
    assert types & set(halves.values()) == ({halves[dtype]} if dtype in halves else set())
    model, runner = load_bundle(path).model, onnx_runner(path)
    ids = torch.randint(0, model.config.vocab_size, (2, 7), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        expected_hidden = model.decode(ids, model.new_cache(2))
        assert float((runner.decode(ids, runner.new_cache(2)) - expected_hidden).abs().max()) < 1e-5


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_full_weights_restored_for_the_int8_quantizer(dtype: str, tmp_path: Path, tokenizer: VariorumTokenizer) -> None:
    """The quantizer only sees initializers: restoring the Cast weights gives back the fp32 graph's, and the
    int8 decoder of a 16-bit bundle then holds int8 products (not a copy of the fp32 graph)."""
    import numpy as np
    from onnx import numpy_helper

    from engine.onnx.export import export_bundle, restore_full_weights
    from engine.onnx.quantize import _quantize
    from engine.onnx.shared_weights import load_graph

    path = tmp_path / dtype
    save_bundle(path, build_model("softmax", tokenizer), tokenizer, "# Tiny\n\nFor tests.\n", weights_dtype=dtype)
    export_bundle(path)
    model = load_graph(path / "onnx" / "decoder.onnx", (path / WEIGHTS_FILE).read_bytes())
    assert restore_full_weights(model) > 0
    assert not any(node.op_type == "Cast" and node.input[0].endswith(".half") for node in model.graph.node)
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    torch_weights = load_bundle(path).model.backbone.transformer.h[0].attn.c_attn.weight.detach().numpy()
    assert any(w.shape == torch_weights.shape and np.array_equal(w, torch_weights) for w in weights.values())
    _quantize(path / "onnx" / "decoder.onnx", tmp_path / "int8.onnx", path)
    kinds = {node.op_type for node in onnx.load(str(tmp_path / "int8.onnx"), load_external_data=False).graph.node}
    assert "MatMulInteger" in kinds or "DynamicQuantizeMatMul" in kinds
