"""The ONNX Runtime runner of PermGen bundles: the exported encoder and decoder step behind the
encoder-decoder runner seam (engine/permgen/runner.py), so PermGen's one decoder — sentence marks,
order control, sampler, beams, paraphrases — runs unchanged over ONNX Runtime.

`start` runs the encoder graph once per request: the source [1, S] → the cross-attention keys and
values of every decoder layer [1, H, S, d], kept in the cache and broadcast to the rows by the
decoder graph. `decode` runs the decoder step with the self-attention cache [N, H, P, d] per layer
and returns hidden [N, T, D]. Tensors cross as in engine/onnx/runner.py (`run_graph`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import torch

from engine.onnx.export_format import cache_names
from engine.onnx.runner import OnnxKVCache, grow_step, run_graph
from engine.onnx.session import OpenGraphs

if TYPE_CHECKING:
    from engine.backbones.bart import HierarchicalDecoder


class OnnxSeq2SeqCache(OnnxKVCache):
    """The decoder's self-attention keys / values [N, H, P, d] per layer (`OnnxKVCache`), plus the
    source's cross-attention keys / values [1, H, S, d] per layer, which no row selection touches."""

    def __init__(self, tensors: list[torch.Tensor], cross: list[torch.Tensor]) -> None:
        # No capacity limit: PermGen's decoding ends after a bounded number of inputs (engine/permgen/decode.py)
        super().__init__(tensors, sys.maxsize)
        self.cross = cross


class OnnxSeq2SeqRunner:
    """PermGen's BART encoder and decoder step on ONNX Runtime; a drop-in for `TorchSeq2SeqRunner`."""

    def __init__(self, graphs: OpenGraphs, decoder: HierarchicalDecoder) -> None:
        """`decoder`: the torch decoder of the same weights, whose position checks run before every step
        (ONNX Runtime would fail on a position outside its tables with a less helpful message)."""
        self.graphs = graphs
        record = graphs.record
        self.layers, self.heads, self.head_dim = int(record["layers"]), int(record["heads"]), int(record["head_dim"])
        self.n_embd = decoder.layernorm_embedding.normalized_shape[0]
        self.check_positions = decoder.check_positions
        self.hierarchical = "sentence" in record["graphs"]["decoder"]["inputs"]  # plain BART: positions from P
        self.device = graphs.device

    @property
    def name(self) -> str:
        return f"onnx ({self.graphs.provider})"

    def check(self) -> None:
        """Encode a 2-token source and run one 2-token decoder step: raises if the graphs cannot run here."""
        ids = torch.zeros(1, 2, dtype=torch.int64, device=self.device)
        self.decode(ids, torch.zeros_like(ids), torch.arange(2, device=self.device)[None], self.start(ids, 1))

    def start(self, source_ids: torch.Tensor, rows: int) -> OnnxSeq2SeqCache:
        """Encode source_ids [1, S] → an empty decoder cache for `rows` rows holding the cross keys / values."""
        shape = [1, self.heads, source_ids.shape[1], self.head_dim]
        cross = run_graph(self.graphs.sessions["encoder"], {"source_ids": source_ids.to(torch.int64)},
                          dict.fromkeys(cache_names("cross", self.layers), shape), self.device)
        empty = torch.empty(rows, self.heads, 0, self.head_dim, device=self.device)
        return OnnxSeq2SeqCache([empty] * (2 * self.layers), cross)

    def decode(self, ids: torch.Tensor, sentence: torch.Tensor, local: torch.Tensor,
               cache: OnnxSeq2SeqCache) -> torch.Tensor:
        """ids, sentence, local [N, T] → hidden [N, T, D]; grows the cache by T inputs."""
        self.check_positions(sentence, local, cache.length)
        inputs = {"input_ids": ids.to(torch.int64)}
        if self.hierarchical:
            inputs.update(sentence=sentence.to(torch.int64), local=local.to(torch.int64))
        inputs.update(zip(cache_names("cross", self.layers), cache.cross, strict=True))
        return grow_step(self.graphs.sessions["decoder"], inputs, cache, self.n_embd)
