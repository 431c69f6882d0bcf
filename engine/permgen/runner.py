"""The encoder-decoder runner seam: what PermGen's decoding rows need from whatever runs the backbone.

A runner `start`s a request — encodes the source [1, S] once and makes an empty decoder cache for
N rows that holds the encoded source — and `decode`s ids with their hierarchical positions
[N, T] after the cache's inputs → hidden [N, T, D], growing the cache. The cache (`Seq2SeqCache`)
keeps rows (`select_rows`, beams) and forgets later inputs (`length` set shorter: the sentence
beam's rewind). `TorchSeq2SeqRunner` runs the `BartBackbone` itself; `engine.onnx.seq2seq_runner.
OnnxSeq2SeqRunner` runs the exported encoder and decoder step on ONNX Runtime. The head stays in
torch either way, so the two-level distributions come from the one implementation in engine/heads.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

import torch
from transformers.cache_utils import EncoderDecoderCache

from engine.backbones.bart import BartBackbone


class Seq2SeqCache(Protocol):
    """A decoder cache over one encoded source: `length` inputs fed (settable to fewer), rows selectable."""

    length: int

    def select_rows(self, rows: torch.Tensor) -> None: ...


Cache = TypeVar("Cache", bound=Seq2SeqCache)


class Seq2SeqRunner(Protocol[Cache]):
    """`start(source [1, S], rows)` and `decode(ids, sentence, local [N, T], cache) -> hidden [N, T, D]`."""

    def start(self, source_ids: torch.Tensor, rows: int) -> Cache: ...

    def decode(self, ids: torch.Tensor, sentence: torch.Tensor, local: torch.Tensor, cache: Cache) -> torch.Tensor: ...


class TorchSeq2SeqCache:
    """transformers' self- and cross-attention cache plus the encoder states [1, S, D] it attends to."""

    def __init__(self, encoder_states: torch.Tensor, past: EncoderDecoderCache) -> None:
        self.encoder_states = encoder_states
        self.past = past

    @property
    def length(self) -> int:
        return int(self.past.get_seq_length())

    @length.setter
    def length(self, value: int) -> None:
        if not 0 <= value <= self.length:
            raise ValueError(f"the cache holds {self.length} inputs; cannot set its length to {value}")
        if value < self.length:
            self.past.crop(value - self.length)  # transformers 5: a negative count of inputs to drop

    def select_rows(self, rows: torch.Tensor) -> None:
        self.past.reorder_cache(rows.long())  # type: ignore[arg-type]  # typed as the legacy LongTensor


class TorchSeq2SeqRunner:
    """The torch `BartBackbone` as a runner (the default one)."""

    def __init__(self, backbone: BartBackbone) -> None:
        self.backbone = backbone

    def start(self, source_ids: torch.Tensor, rows: int) -> TorchSeq2SeqCache:
        """Encode source_ids [1, S]; the cache grows to `rows` rows at the first decode."""
        states = self.backbone.encode(source_ids, torch.ones_like(source_ids, dtype=torch.bool))  # [1, S, D]
        return TorchSeq2SeqCache(states, self.backbone.new_cache())

    def decode(self, ids: torch.Tensor, sentence: torch.Tensor, local: torch.Tensor,
               cache: TorchSeq2SeqCache) -> torch.Tensor:
        """ids, sentence, local [N, T] → hidden [N, T, D]."""
        rows = ids.shape[0]
        states = cache.encoder_states.expand(rows, -1, -1)
        mask = torch.ones(rows, states.shape[1], dtype=torch.bool, device=ids.device)
        hidden: torch.Tensor = self.backbone.decoder(ids, sentence, local, states, mask, past=cache.past)
        return hidden
