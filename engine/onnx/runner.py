"""The ONNX Runtime backbone runner: `new_cache(n)` and `decode(ids, cache) -> hidden [N, W, D]`.

It is the decoding core's backbone runner seam (the torch one is `LanguageModel`), so the one
decoder — sampler, processors, heads, streaming — runs unchanged over ONNX Runtime.

Tensors cross into ONNX Runtime without copies: numpy views of them on the CPU, IO binding of
device memory on CUDA (`run_graph`). The cache is one keys and one values tensor per layer,
[N, H, S, d] with H the key/value heads (the export record's `heads`: n_head for GPT-2, n_kv_head for a
Llama); the graph returns them grown by the step's positions.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from engine.onnx.export_format import cache_names
from engine.onnx.session import OpenGraphs

_ELEMENT = {torch.float32: np.float32, torch.int64: np.int64}


class OnnxKVCache:
    """Per-layer keys / values [N, H, S, d] (2L tensors: keys 0, values 0, keys 1, …); S = `length`.

    Same interface as `KVCache` for the decoder: `length` (settable to a shorter length, 0 to
    re-encode a window), `capacity` and `select_rows`."""

    def __init__(self, tensors: list[torch.Tensor], capacity: int) -> None:
        self.tensors = tensors
        self.capacity = capacity

    @property
    def length(self) -> int:
        return int(self.tensors[0].shape[2])

    @length.setter
    def length(self, value: int) -> None:
        if not 0 <= value <= self.length:
            raise ValueError(f"the cache holds {self.length} positions; cannot set its length to {value}")
        if value < self.length:
            self.tensors = [t[:, :, :value].contiguous() for t in self.tensors]

    def select_rows(self, rows: torch.Tensor) -> None:
        """Keep rows `rows` [M] (repeats allowed), in that order."""
        self.tensors = [t.index_select(0, rows) for t in self.tensors]


def run_graph(session: Any, inputs: dict[str, torch.Tensor], outputs: dict[str, list[int]],
              device: torch.device) -> list[torch.Tensor]:
    """Run `session` on `inputs` → its `outputs` (name → shape), as tensors on `device`.

    On the CPU the inputs go in as numpy views of the tensors and the outputs come back as ONNX
    Runtime's own arrays, wrapped: no copies, and fewer Python calls a step than binding each of a
    step's 2L + 2 tensors (measurably so for a 4-layer model). Elsewhere (CUDA) they cross by IO
    binding into preallocated device tensors, which ONNX Runtime reads and writes in place."""
    if device.type == "cpu":
        feeds = {name: tensor.contiguous().numpy() for name, tensor in inputs.items()}
        return [torch.from_numpy(array) for array in session.run(list(outputs), feeds)]
    return run_bound(session, inputs, outputs, device)


def run_bound(session: Any, inputs: dict[str, torch.Tensor], outputs: dict[str, list[int]],
              device: torch.device) -> list[torch.Tensor]:
    """`run_graph` by IO binding: ONNX Runtime reads the inputs' memory and writes outputs preallocated
    on `device` in place (any device; the CPU path of `run_graph` does without binding)."""
    binding = session.io_binding()
    kept = {name: tensor.contiguous() for name, tensor in inputs.items()}  # alive until the run ends
    results = [torch.empty(shape, device=device) for shape in outputs.values()]
    for name, tensor in kept.items():
        binding.bind_input(name, device.type, device.index or 0, _ELEMENT[tensor.dtype], list(tensor.shape),
                           tensor.data_ptr())
    for name, tensor in zip(outputs, results, strict=True):
        binding.bind_output(name, device.type, device.index or 0, np.float32, list(tensor.shape), tensor.data_ptr())
    session.run_with_iobinding(binding)
    return results


def grow_step(session: Any, inputs: dict[str, torch.Tensor], cache: OnnxKVCache, width: int) -> torch.Tensor:
    """Run a decoder step graph on `inputs` (ids [N, T] as `input_ids`, and whatever else the graph takes)
    plus the cache as `past_*` → hidden [N, T, width]; the cache becomes the graph's `present_*` (T longer)."""
    rows, length = inputs["input_ids"].shape
    keys = cache.tensors[0]  # [N, H, S, d]
    layers, grown = len(cache.tensors) // 2, [rows, keys.shape[1], cache.length + length, keys.shape[3]]
    hidden, *presents = run_graph(
        session, {**inputs, **dict(zip(cache_names("past", layers), cache.tensors, strict=True))},
        {"hidden": [rows, length, width], **{name: grown for name in cache_names("present", layers)}}, keys.device)
    cache.tensors = presents
    return hidden


class OnnxBackboneRunner:
    """A language model's decoder step (GPT-2 or Llama) on ONNX Runtime; a drop-in for `LanguageModel.new_cache` /
    `decode`."""

    def __init__(self, graphs: OpenGraphs, block_size: int, n_embd: int) -> None:
        self.graphs = graphs
        self.session = graphs.sessions["decoder"]
        record = graphs.record
        self.layers, self.heads, self.head_dim = int(record["layers"]), int(record["heads"]), int(record["head_dim"])
        self.block_size = block_size
        self.n_embd = n_embd
        self.device = graphs.device

    @property
    def name(self) -> str:
        return f"onnx ({self.graphs.provider})"

    def check(self) -> None:
        """Run one tiny step (1 row, 2 tokens): raises if the graph cannot run here — a provider without
        a kernel for one of its nodes, or a graph whose shapes are not the record's."""
        self.decode(torch.zeros(1, 2, dtype=torch.int64, device=self.device), self.new_cache(1))

    def new_cache(self, rows: int, positions: int | None = None) -> OnnxKVCache:
        """An empty cache for `rows` rows holding up to `positions` positions (at most, and by default, a block);
        it grows step by step, so nothing is allocated for the positions ahead."""
        empty = torch.empty(rows, self.heads, 0, self.head_dim, device=self.device)
        return OnnxKVCache([empty] * (2 * self.layers), min(positions or self.block_size, self.block_size))

    def decode(self, input_ids: torch.Tensor, cache: OnnxKVCache) -> torch.Tensor:
        """Hidden states [N, T, D] of ids [N, T] following the cache's positions; grows the cache."""
        total = cache.length + input_ids.shape[1]
        if total > cache.capacity:
            raise ValueError(f"KV cache holds {cache.capacity} positions; {total} needed (re-encode a shorter window)")
        return grow_step(self.session, {"input_ids": input_ids.to(torch.int64)}, cache, self.n_embd)
