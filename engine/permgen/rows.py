"""PermGen's decoding rows: the step interface (engine/decoding/step.py) for either layout.

`open_rows` makes the rows of a model's layout. Encoder-decoder (`PermGenRows`): N rows share one encoded
source and one decoder cache, both held by the runner's cache (engine/permgen/runner.py: the torch
backbone by default, ONNX Runtime where exported); each row keeps its own hierarchical position
(sentence index t and position within the sentence, `PositionTracker`), which the marks it is fed move
on. Decoder-only (`DecoderRows`): the prefix (eos, source, eos; engine/permgen/decoder_model.py) is
encoded once into a preallocated KV cache sized to the request and copied to the N rows; the Llama's
rotary positions follow the cache. Either way the head's termination step t is the decoder step: 1 for
the first token after the start token.

`rewind` / `extend` are PermGen's own: the sentence beam returns the best sentence, whose rows
may be gone, so the rows go back to the one row before the sentence (`snapshot`) and feed the
chosen sentence at once.
"""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, TypeAlias, cast

import torch

from engine.backbones.kv_cache import KVCache
from engine.decoding.backbone_runner import BackboneRunner
from engine.decoding.step import DecodeRows
from engine.heads.base import HeadState
from engine.permgen.decoder_model import DecoderPermGenModel, prefix_ids
from engine.permgen.marks import PositionTracker
from engine.permgen.model import START_ID, PermGenModel
from engine.permgen.network import PermGenNetwork
from engine.permgen.runner import Seq2SeqCache, Seq2SeqRunner, TorchSeq2SeqRunner

# What runs a layout's backbone: the encoder-decoder's runner, or a decoder-only model's (a language model's).
PermGenRunner: TypeAlias = Seq2SeqRunner[Any] | BackboneRunner[Any]


@dataclass(frozen=True)
class RowsSnapshot:
    """What `rewind` restores: one row's decoder length, position, hidden, t and head state."""

    length: int
    tracker: PositionTracker | None  # the hierarchical position; None in the decoder-only layout
    hidden: torch.Tensor  # [1, D]
    steps: torch.Tensor  # [1]
    state: HeadState


class SentenceRows(DecodeRows):
    """Decoding rows with PermGen's `snapshot` / `rewind` / `extend` (see the module docstring)."""

    cache: Seq2SeqCache | KVCache

    @property
    def length(self) -> int:
        """Decoder inputs fed so far (the same for every row)."""
        return int(self.cache.length)

    def snapshot(self) -> RowsSnapshot:
        """Row 0 as it is now (for `rewind`)."""
        return RowsSnapshot(self.length, self._tracker(), self.hidden[:1], self.steps[:1],
                            None if self.state is None else self.state[:1])

    def rewind(self, snapshot: RowsSnapshot) -> None:
        """Back to one row as at `snapshot`: the cache forgets every later input."""
        self._select(torch.zeros(1, dtype=torch.long, device=self.hidden.device))
        self.cache.length = snapshot.length
        self._set_tracker(snapshot.tracker)
        self.hidden, self.steps, self.state = snapshot.hidden, snapshot.steps, snapshot.state

    def extend(self, tokens: list[int]) -> torch.Tensor:
        """Feed several tokens to the one row → the last hidden [1, D]: at once, or token by token
        when the head's state needs every step's hidden (ST)."""
        if self.head.next_state(self.hidden, self.steps, self.state) is not None:
            for token in tokens:
                self.advance(torch.tensor([token], device=self.hidden.device))
            return self.hidden
        self.hidden = self._feed_row(tokens)
        self.steps = self.steps + len(tokens)
        return self.hidden

    @abstractmethod
    def _feed_row(self, tokens: list[int]) -> torch.Tensor:
        """Feed `tokens` to the one row at once → the hidden of the last [1, D]."""

    def _tracker(self) -> PositionTracker | None:
        """Row 0's hierarchical position, if the layout has one."""
        return None

    def _set_tracker(self, tracker: PositionTracker | None) -> None:
        """Make `tracker` the one row's position (the encoder-decoder's)."""


class PermGenRows(SentenceRows):
    """Encoder-decoder rows decoding from `source_ids` after the start token; `runner` None: the torch backbone."""

    def __init__(self, model: PermGenModel, source_ids: list[int], n: int,
                 runner: Seq2SeqRunner[Any] | None = None) -> None:
        self.model = model
        self.runner: Seq2SeqRunner[Any] = runner if runner is not None else TorchSeq2SeqRunner(model.backbone)
        device = next(model.parameters()).device
        self.cache = self.runner.start(torch.tensor([source_ids], device=device), n)
        self.trackers = [PositionTracker() for _ in range(n)]
        hidden = self._feed(torch.full((n,), START_ID, device=device))
        super().__init__(model.head, hidden, torch.ones(n, dtype=torch.long, device=device), None)

    def _decode(self, tokens: torch.Tensor, sentence: torch.Tensor, local: torch.Tensor) -> torch.Tensor:
        """tokens, sentence, local [R, T] → hidden of the last position [R, D]."""
        return self.runner.decode(tokens, sentence, local, self.cache)[:, -1]

    def _feed(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = [tracker.position(token) for tracker, token in zip(self.trackers, tokens.tolist(), strict=True)]
        sentence = torch.tensor([[g] for g, _ in positions], device=tokens.device)
        local = torch.tensor([[loc] for _, loc in positions], device=tokens.device)
        return self._decode(tokens[:, None], sentence, local)

    def _select(self, rows: torch.Tensor) -> None:
        self.cache.select_rows(rows)
        self.trackers = [dataclasses.replace(self.trackers[i]) for i in rows.tolist()]

    def _tracker(self) -> PositionTracker:
        return dataclasses.replace(self.trackers[0])

    def _set_tracker(self, tracker: PositionTracker | None) -> None:
        assert tracker is not None  # a snapshot of these rows holds their position
        self.trackers = [dataclasses.replace(tracker)]

    def _feed_row(self, tokens: list[int]) -> torch.Tensor:
        device = self.hidden.device
        positions = [self.trackers[0].position(token) for token in tokens]
        sentence = torch.tensor([[g for g, _ in positions]], device=device)
        local = torch.tensor([[loc for _, loc in positions]], device=device)
        return self._decode(torch.tensor([tokens], device=device), sentence, local)


class DecoderRows(SentenceRows):
    """Decoder-only rows after the prefix of `source_ids`, with room for `steps` more tokens; `runner` None: the
    model itself (a language model's runner, engine/decoding/backbone_runner.py)."""

    cache: KVCache

    def __init__(self, model: DecoderPermGenModel, source_ids: list[int], n: int, steps: int,
                 runner: BackboneRunner[Any] | None = None) -> None:
        self.model = model
        self.runner: BackboneRunner[Any] = runner if runner is not None else model
        device = next(model.parameters()).device
        prefix = prefix_ids(source_ids, model.joined)
        self.cache = self.runner.new_cache(1, len(prefix) + steps)
        hidden = self.runner.decode(torch.tensor([prefix], device=device), self.cache)[:, -1]  # [1, D]
        self.cache.select_rows(torch.zeros(n, dtype=torch.long, device=device))  # the prefix, once per row
        super().__init__(model.head, hidden.repeat(n, 1), torch.ones(n, dtype=torch.long, device=device), None)

    def _feed(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.runner.decode(tokens[:, None], self.cache)[:, -1]  # [N, D]

    def _feed_row(self, tokens: list[int]) -> torch.Tensor:
        return self.runner.decode(torch.tensor([tokens], device=self.hidden.device), self.cache)[:, -1]

    def _select(self, rows: torch.Tensor) -> None:
        self.cache.select_rows(rows)


def open_rows(model: PermGenNetwork[Any], source_ids: list[int], n: int, runner: PermGenRunner | None = None,
              steps: int = 0) -> SentenceRows:
    """N rows of `model`'s layout decoding after `source_ids`; `steps` (decoder-only): the most tokens they
    will be fed (0: a whole paragraph of the model's longest sentences). `runner`: the layout's own."""
    if isinstance(model, DecoderPermGenModel):
        room = steps or model.config.max_target_len
        return DecoderRows(model, source_ids, n, room, cast("BackboneRunner[Any] | None", runner))
    assert isinstance(model, PermGenModel), type(model)
    return PermGenRows(model, source_ids, n, cast("Seq2SeqRunner[Any] | None", runner))
