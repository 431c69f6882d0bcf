"""Sentence-based decoding (§4.3) with beam search inside every sentence (engine/permgen/beam.py).

The marks are chosen exactly as in `PermGenStream` (first marks drawn without replacement or given
by the writer, then the most likely allowed ⟨B-t'⟩ ∪ ⟨EOP⟩), and each sentence is the best
finished hypothesis of a beam of `beam_width`. Candidates are decoded one after another (each
runs its own beam of `beam_width` rows with one KV cache); a sentence streams as soon as its beam
has finished. Eq. 8 ranking and reordering by index are those of `PermGenStream`. Every decode
ends: at most T sentences of at most cap + 1 beam steps each, then ⟨EOP⟩.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator

import torch

from engine.decoding.generate import FINISH_CANCELLED, TokenEvent
from engine.decoding.settings import DecodeConfig
from engine.permgen.beam import DecoderRows, Hypothesis, sentence_beam
from engine.permgen.control import OrderControl
from engine.permgen.decode import PermGenStream, first_marks
from engine.permgen.marks import EOP_ID, begin_id, sentence_of_begin
from engine.permgen.model import START_ID, PermGenModel
from engine.tokenizer import VariorumTokenizer

MAX_BEAM_WIDTH = 16


class BeamPermGenStream(PermGenStream):
    """`PermGenStream` whose sentences come from beam search of width `beam_width`."""

    def __init__(
        self,
        model: PermGenModel,
        tokenizer: VariorumTokenizer,
        source_ids: list[int],
        n: int,
        settings: DecodeConfig,
        control: OrderControl,
        beam_width: int,
        should_stop: Callable[[], bool] | None = None,
    ) -> None:
        if not 1 <= beam_width <= MAX_BEAM_WIDTH:
            raise ValueError(f"beam width must be from 1 to {MAX_BEAM_WIDTH}, got {beam_width}")
        super().__init__(model, tokenizer, source_ids, n, settings, control, should_stop)
        self.beam_width = beam_width
        for variant in self.candidates:
            variant.settings["beam_width"] = beam_width

    def encoded_source(self) -> torch.Tensor:
        """Encoder states of the source [1, S, D]."""
        device = next(self.seq2seq.parameters()).device
        source = torch.tensor([self.source_ids], device=device)
        states: torch.Tensor = self.seq2seq.backbone.encode(source, torch.ones_like(source, dtype=torch.bool))
        return states

    def _run(self) -> Iterator[TokenEvent]:
        states = self.encoded_source()
        firsts: list[int] = []
        for i in range(len(self.candidates)):
            rows = DecoderRows(self.seq2seq, states)
            hidden = rows.feed(torch.tensor([[START_ID]], device=states.device), 0, 0)
            if not firsts:  # every candidate's first step is the same distribution
                steps = torch.ones(1, dtype=torch.long, device=states.device)
                firsts = first_marks(self.seq2seq.head.log_probs(hidden, steps)[0], self.control, len(self.candidates),
                                     self.base_seed)
            if not (yield from self._candidate(i, rows, hidden, firsts[i])):
                for j in range(i, len(self.candidates)):
                    self.candidates[j].finish_reason = FINISH_CANCELLED
                return

    def _candidate(
        self, i: int, rows: DecoderRows, hidden: torch.Tensor, first: int
    ) -> Generator[TokenEvent, None, bool]:
        """Decode candidate i; returns False when cancelled (a generator's return value)."""
        variant, step = self.candidates[i], 1
        while True:
            if self.should_stop():
                return False
            marginal = self.seq2seq.head.log_probs(hidden, torch.full((1,), step, device=hidden.device))[0]  # [V]
            marks = self.control.allowed_marks(variant.order)
            mark = begin_id(first) if step == 1 else marks[int(marginal[marks].argmax())]
            yield self._event(i, mark, float(marginal[mark]))
            if mark == EOP_ID:
                return True
            sentence = sentence_of_begin(mark)
            hidden = rows.feed(torch.tensor([[mark]], device=hidden.device), sentence, 0)
            start = rows.length
            found = sentence_beam(rows, hidden, sentence, step + 1, self.beam_width, self.cap, self.should_stop)
            if found is None:
                return False
            best: Hypothesis = found[0]
            rows.select(torch.zeros(1, dtype=torch.long, device=hidden.device))
            rows.truncate(start)  # all rows share the prefix up to ⟨B-t⟩; feed the chosen sentence
            hidden = rows.feed(torch.tensor([best.tokens], device=hidden.device), sentence, 1)
            for token, log_prob in zip(best.tokens, best.log_probs, strict=True):
                yield self._event(i, token, log_prob)
            step += 1 + len(best.tokens)

    def _event(self, i: int, token: int, log_prob: float) -> TokenEvent:
        variant = self.candidates[i]
        variant.token_ids.append(token)
        variant.token_log_probs.append(log_prob)
        variant.token_groups.append(0)
        return TokenEvent(i, token, self._advance(i, token), log_prob, 0)
