"""PermGen's decoding rows: the step interface (engine/decoding/step.py) for the encoder-decoder.

N rows share one encoded source and one decoder cache, both held by the runner's cache
(engine/permgen/runner.py: the torch backbone by default, ONNX Runtime where exported); each row
keeps its own hierarchical position (sentence index t and position within the sentence,
`PositionTracker`), which the marks it is fed move on. The head's
termination step t is the decoder step: 1 for the first token after the start token.

`rewind` / `extend` are PermGen's own: the sentence beam returns the best sentence, whose rows
may be gone, so the rows go back to the one row before the sentence (`snapshot`) and feed the
chosen sentence at once.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import torch

from engine.decoding.step import DecodeRows
from engine.heads.base import HeadState
from engine.permgen.marks import PositionTracker
from engine.permgen.model import START_ID, PermGenModel
from engine.permgen.runner import Seq2SeqRunner, TorchSeq2SeqRunner


@dataclass(frozen=True)
class RowsSnapshot:
    """What `rewind` restores: one row's decoder length, position, hidden, t and head state."""

    length: int
    tracker: PositionTracker
    hidden: torch.Tensor  # [1, D]
    steps: torch.Tensor  # [1]
    state: HeadState


class PermGenRows(DecodeRows):
    """N rows decoding from `source_ids` after the start token; `runner` None: the torch backbone."""

    def __init__(self, model: PermGenModel, source_ids: list[int], n: int,
                 runner: Seq2SeqRunner[Any] | None = None) -> None:
        self.model = model
        self.runner: Seq2SeqRunner[Any] = runner if runner is not None else TorchSeq2SeqRunner(model.backbone)
        device = next(model.parameters()).device
        self.cache = self.runner.start(torch.tensor([source_ids], device=device), n)
        self.trackers = [PositionTracker() for _ in range(n)]
        hidden = self._feed(torch.full((n,), START_ID, device=device))
        super().__init__(model.head, hidden, torch.ones(n, dtype=torch.long, device=device), None)

    @property
    def length(self) -> int:
        """Decoder inputs fed so far (the same for every row)."""
        return int(self.cache.length)

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

    def snapshot(self) -> RowsSnapshot:
        """Row 0 as it is now (for `rewind`)."""
        return RowsSnapshot(self.length, dataclasses.replace(self.trackers[0]), self.hidden[:1], self.steps[:1],
                            None if self.state is None else self.state[:1])

    def rewind(self, snapshot: RowsSnapshot) -> None:
        """Back to one row as at `snapshot`: the cache forgets every later input."""
        self._select(torch.zeros(1, dtype=torch.long, device=self.hidden.device))
        self.cache.length = snapshot.length
        self.trackers = [dataclasses.replace(snapshot.tracker)]
        self.hidden, self.steps, self.state = snapshot.hidden, snapshot.steps, snapshot.state

    def extend(self, tokens: list[int]) -> torch.Tensor:
        """Feed several tokens to the one row → the last hidden [1, D]: at once, or token by token
        when the head's state needs every step's hidden (ST)."""
        device = self.hidden.device
        if self.head.next_state(self.hidden, self.steps, self.state) is not None:
            for token in tokens:
                self.advance(torch.tensor([token], device=device))
            return self.hidden
        positions = [self.trackers[0].position(token) for token in tokens]
        sentence = torch.tensor([[g for g, _ in positions]], device=device)
        local = torch.tensor([[loc for _, loc in positions]], device=device)
        self.hidden = self._decode(torch.tensor([tokens], device=device), sentence, local)
        self.steps = self.steps + len(tokens)
        return self.hidden
