"""The Llama decoder step exported to ONNX (engine/onnx/llama_graphs.py): an imported tiny random Llama, tied or
untied, writes torch's text for the same seed under ONNX Runtime, its graph's hidden states and key/value cache
match `LlamaBackbone.decode` step by step, and its int8 decoder loads and writes."""

from __future__ import annotations

import collections
import shutil
from pathlib import Path

import pytest
import torch

from engine.bundles.bundle import load_bundle
from engine.bundles.imported import import_checkpoint
from engine.front_door import DecodeConfig, Engine, GenerationRequest
from engine.onnx import quantize
from engine.onnx.export import export_bundle
from tests.engine.checkpoints.conftest import write_llama
from tests.engine.onnx.test_parity import onnx_runner

pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module", params=["tied", "untied"])
def llama_bundle(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An imported tiny random Llama (4 query / 2 key-value heads) with its ONNX export."""
    root = tmp_path_factory.mktemp(f"llama-{request.param}")
    folder = write_llama(root / "checkpoint", tied=request.param == "tied")
    bundle = import_checkpoint(str(folder), root / "bundle", {"HOME": "/nonexistent"})
    export_bundle(bundle)
    return bundle


def _texts(bundle: Path, runtime: str, request: GenerationRequest) -> tuple[str, list[str]]:
    """(the runtime that ran, the variants' texts) of `request` on `bundle`."""
    model = Engine([bundle.parent]).load(bundle, device="cpu", runtime=runtime)
    stream = model.stream(request)
    for _ in stream:
        pass
    return model.runtime, [variant.text for variant in stream.variants]


def test_onnx_runtime_writes_torch_s_text_for_the_same_seed(llama_bundle: Path) -> None:
    request = GenerationRequest(prompt="The cat", n=3, decode=DecodeConfig(seed=3, max_new_tokens=24,
                                                                           real_words=False))
    torch_runtime, expected = _texts(llama_bundle, "torch", request)
    onnx_runtime, got = _texts(llama_bundle, "onnx", request)
    assert torch_runtime == "torch" and onnx_runtime.startswith("onnx"), onnx_runtime  # no fallback to torch
    assert got == expected and any(expected)


def test_the_graph_s_hidden_states_and_cache_match_the_backbone_s(llama_bundle: Path, device: torch.device) -> None:
    """A 5-token prompt for 2 rows, then 4 one-token steps: hidden states within 1e-4, and the cache holds the
    key/value heads (2, not the 4 query heads) with the rotated keys the backbone caches. On CUDA (the `device`
    fixture) through ONNX Runtime's CUDA provider."""
    runner = onnx_runner(llama_bundle, device)
    model = load_bundle(llama_bundle, device).model
    config = model.config
    ids = torch.randint(3, config.vocab_size, (2, 9), generator=torch.Generator().manual_seed(5)).to(device)
    ours, theirs = runner.new_cache(2), model.new_cache(2)
    spans = [(0, 5), *((t, t + 1) for t in range(5, 9))]
    with torch.inference_mode():
        for start, end in spans:
            expected = model.decode(ids[:, start:end], theirs)  # [N, W, D]
            torch.testing.assert_close(runner.decode(ids[:, start:end], ours), expected, atol=1e-4, rtol=0)
    assert ours.tensors[0].shape == (2, config.kv_heads, 9, config.n_embd // config.n_head) and config.kv_heads == 2
    for layer in range(config.n_layer):
        torch.testing.assert_close(ours.tensors[2 * layer], theirs.keys[layer, :, :, :9], atol=1e-4, rtol=0)
        torch.testing.assert_close(ours.tensors[2 * layer + 1], theirs.values[layer, :, :, :9], atol=1e-4, rtol=0)


def test_residual_norms_are_fused_and_heads_reshaped_without_shape_arithmetic(llama_bundle: Path) -> None:
    import onnx

    graph = onnx.load(str(llama_bundle / "onnx" / "decoder.onnx"), load_external_data=False).graph
    kinds = collections.Counter(node.op_type for node in graph.node)
    layers = sum(1 for tensor in graph.input if tensor.name.startswith("past_keys"))
    assert kinds["SkipSimplifiedLayerNormalization"] == 2 * layers
    assert kinds["Reshape"] == 3 * layers  # q/k/v split, query groups, merge: one constant-shape Reshape each
    assert kinds["Shape"] <= 5  # positions and the mask, once per step whatever the layer count


def test_the_int8_decoder_loads_and_writes(llama_bundle: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = Path(shutil.copytree(llama_bundle, tmp_path / "bundle"))
    texts = tmp_path / "held_out.txt"  # an imported bundle holds out 5%: enough documents that some are held out
    texts.write_text("".join(f"The cat sat on the mat {i} times. A dog ran home.\n" for i in range(200)))
    monkeypatch.setattr(quantize, "MAX_PERPLEXITY_RISE", 10.0)  # a random model's rise is no measure of int8
    record = export_bundle(bundle, [texts]).int8
    assert record["offered"] and record["tokens"] > 0
    assert record["fp32_perplexity"] > 1 and record["int8_perplexity"] > 1
    request = GenerationRequest(prompt="The cat", n=2, decode=DecodeConfig(seed=3, max_new_tokens=12,
                                                                           real_words=False))
    runtime, texts = _texts(bundle, "onnx-int8", request)
    assert runtime.endswith(" int8") and all(texts), runtime
