"""The fused graph ops: their torch maths, and ONNX Runtime's fused nodes computing the same."""

from __future__ import annotations

import collections
import math
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from engine.onnx.export import OPSET
from engine.onnx.graph_ops import cached_self_attention, reshape_kept, skip_layer_norm, skip_rms_norm

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

HEADS, WIDTH = 2, 8


def reference_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, bias: torch.Tensor,
                        past_keys: torch.Tensor, past_values: torch.Tensor) -> torch.Tensor:
    """Attention written per query: query i of the step (absolute S + i) over keys 0 … S + i."""
    rows, steps, _ = q.shape
    split = [t.reshape(rows, -1, HEADS, WIDTH // HEADS).transpose(1, 2) for t in (q + bias[:WIDTH],
             k + bias[WIDTH:2 * WIDTH], v + bias[2 * WIDTH:])]
    keys, values = torch.cat([past_keys, split[1]], 2), torch.cat([past_values, split[2]], 2)
    out = torch.zeros(rows, HEADS, steps, WIDTH // HEADS)
    for i in range(steps):
        visible = past_keys.shape[2] + i + 1
        scores = torch.einsum("nhd,nhsd->nhs", split[0][:, :, i], keys[:, :, :visible]) / math.sqrt(WIDTH // HEADS)
        out[:, :, i] = torch.einsum("nhs,nhsd->nhd", scores.softmax(-1), values[:, :, :visible])
    return out.transpose(1, 2).reshape(rows, steps, WIDTH)


def test_cached_self_attention_is_causal_over_cache_and_step() -> None:
    torch.manual_seed(0)
    q, k, v = (torch.randn(3, 4, WIDTH) for _ in range(3))
    bias = torch.randn(3 * WIDTH)
    past_keys, past_values = torch.randn(3, HEADS, 5, WIDTH // HEADS), torch.randn(3, HEADS, 5, WIDTH // HEADS)
    out, keys, values = cached_self_attention(q, k, v, bias, past_keys, past_values, HEADS)
    torch.testing.assert_close(out, reference_attention(q, k, v, bias, past_keys, past_values))
    assert keys.shape == values.shape == (3, HEADS, 9, WIDTH // HEADS)
    torch.testing.assert_close(keys[:, :, :5], past_keys)
    torch.testing.assert_close(values[:, :, 5:], (v + bias[2 * WIDTH:]).reshape(3, 4, HEADS, -1).transpose(1, 2))


def test_skip_layer_norm_returns_the_normed_sum_and_the_sum() -> None:
    torch.manual_seed(0)
    norm = nn.LayerNorm(WIDTH, eps=1e-5)
    nn.init.normal_(norm.weight)
    nn.init.normal_(norm.bias)
    x, skip, bias = torch.randn(2, 3, WIDTH), torch.randn(2, 3, WIDTH), torch.randn(WIDTH)
    normed, total = skip_layer_norm(x, bias, skip, norm)
    torch.testing.assert_close(total, x + bias + skip)
    torch.testing.assert_close(normed, norm(x + bias + skip))


class _RMSOps(nn.Module):
    """The Llama step's ops, to trace: (x, skip) → (the normed sum split into heads [N, T, H, d], the sum)."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(WIDTH))

    def forward(self, x: torch.Tensor, skip: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        normed, total = skip_rms_norm(x, skip, self.weight, 1e-5)
        return reshape_kept(normed, (0, -1, HEADS, WIDTH // HEADS)), total


def test_skip_rms_norm_and_reshape_kept_compute_their_torch_maths_in_onnx_runtime(tmp_path: Path) -> None:
    torch.manual_seed(2)
    module = _RMSOps().eval()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, (torch.randn(1, 2, WIDTH), torch.randn(1, 2, WIDTH)), str(tmp_path / "rms.onnx"),
                          input_names=["x", "skip"], output_names=["heads", "total"], opset_version=OPSET,
                          dynamic_axes={"x": {0: "n", 1: "t"}, "skip": {0: "n", 1: "t"}}, dynamo=False)
    kinds = collections.Counter(node.op_type for node in onnx.load(str(tmp_path / "rms.onnx")).graph.node)
    assert kinds["SkipSimplifiedLayerNormalization"] == kinds["Reshape"] == 1 and kinds["Shape"] == 0
    session = ort.InferenceSession(str(tmp_path / "rms.onnx"), providers=["CPUExecutionProvider"])
    x, skip = torch.randn(3, 5, WIDTH), torch.randn(3, 5, WIDTH)
    heads, total = session.run(None, {"x": x.numpy(), "skip": skip.numpy()})
    expected = nn.functional.rms_norm(x + skip, (WIDTH,), module.weight, 1e-5)
    with torch.no_grad():
        torch.testing.assert_close(module(x, skip)[0], expected.reshape(3, 5, HEADS, -1))
    np.testing.assert_allclose(heads, expected.detach().reshape(3, 5, HEADS, -1).numpy(), atol=1e-5, rtol=1e-5)
    np.testing.assert_allclose(total, (x + skip).numpy())


class _Ops(nn.Module):
    """Both fused ops in one module, to trace: (q, k, v, past keys, past values, skip) → every output."""

    def __init__(self) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.randn(3 * WIDTH))
        self.norm = nn.LayerNorm(WIDTH)
        nn.init.normal_(self.norm.weight)
        self.out_bias = nn.Parameter(torch.randn(WIDTH))

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, past_keys: torch.Tensor,
                past_values: torch.Tensor, skip: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out, keys, values = cached_self_attention(q, k, v, self.bias, past_keys, past_values, HEADS)
        normed, total = skip_layer_norm(out, self.out_bias, skip, self.norm)
        return normed, total, keys, values


def _export(module: nn.Module, args: tuple[torch.Tensor, ...], path: Path) -> None:
    names = ["q", "k", "v", "past_keys", "past_values", "skip"]
    dynamic = {"q": {0: "n", 1: "t"}, "k": {0: "n", 1: "t"}, "v": {0: "n", 1: "t"}, "skip": {0: "n", 1: "t"},
               "past_keys": {0: "n", 2: "s"}, "past_values": {0: "n", 2: "s"}}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, str(path), input_names=names, output_names=["normed", "total", "k2", "v2"],
                          dynamic_axes=dynamic, opset_version=OPSET, dynamo=False)


@pytest.mark.parametrize("rows, steps, past", [(3, 1, 6), (2, 4, 3), (1, 5, 0)])
def test_onnx_runtime_fused_nodes_compute_the_torch_maths(tmp_path: Path, rows: int, steps: int, past: int) -> None:
    torch.manual_seed(1)
    module = _Ops().eval()
    _export(module, (torch.randn(1, 2, WIDTH),) * 3 + (torch.randn(1, HEADS, 2, WIDTH // HEADS),) * 2
            + (torch.randn(1, 2, WIDTH),), tmp_path / "ops.onnx")
    kinds = collections.Counter(node.op_type for node in onnx.load(str(tmp_path / "ops.onnx")).graph.node)
    assert kinds["MultiHeadAttention"] == kinds["SkipLayerNormalization"] == 1
    args = tuple(torch.randn(rows, steps, WIDTH) for _ in range(3)) + tuple(
        torch.randn(rows, HEADS, past, WIDTH // HEADS) for _ in range(2)) + (torch.randn(rows, steps, WIDTH),)
    session = ort.InferenceSession(str(tmp_path / "ops.onnx"), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    got = session.run(None, {name: arg.numpy() for name, arg in zip(names, args, strict=True)})
    with torch.no_grad():
        expected = module(*args)
    for ours, theirs in zip(got, expected, strict=True):
        np.testing.assert_allclose(ours, theirs.numpy(), atol=1e-5, rtol=1e-5)


def test_language_model_step_is_fused(make_exported: Callable[[str], Path]) -> None:
    """One attention node per layer and two residual norms per layer: the cache concatenations, head
    splits, masks and bias adds are inside them, not separate nodes run every step."""
    path = make_exported("softmax")
    graph = onnx.load(str(path / "onnx" / "decoder.onnx"), load_external_data=False).graph
    kinds = collections.Counter(node.op_type for node in graph.node)
    layers = sum(1 for tensor in graph.input if tensor.name.startswith("past_keys"))
    assert kinds["MultiHeadAttention"] == layers
    assert kinds["SkipLayerNormalization"] == 2 * layers
    assert kinds["Concat"] == 0 and kinds["Softmax"] == 0
