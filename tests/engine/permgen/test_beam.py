"""Beam search inside sentences: a hand example, width 1 = greedy, every search ends, order control holds."""

from __future__ import annotations

import math

import pytest
import torch

from engine.decoding.settings import DecodeConfig
from engine.decoding.step import DecodeRows
from engine.permgen.beam_decode import BeamPermGenStream, sentence_beam
from engine.permgen.control import OrderControl
from engine.permgen.decode import FINISH_EOP, FIRST_WORD_ID, PermGenStream
from engine.permgen.marks import EOP_ID, end_id, split_marked
from engine.permgen.model import PermGenModel
from engine.tokenizer import VariorumTokenizer

A, B, END = FIRST_WORD_ID, FIRST_WORD_ID + 1, end_id(1)
# Next-token probabilities after each prefix of sentence 1 (everything else has probability 0).
TABLE = {(): {A: 0.5, B: 0.4, END: 0.1}, (A,): {A: 0.36, B: 0.34, END: 0.3}, (B,): {END: 0.9, A: 0.05, B: 0.05},
         (A, A): {END: 1.0}, (A, B): {END: 1.0}, (B, A): {END: 1.0}, (B, B): {END: 1.0}}


class TableHead:
    """A fake head: hidden row r holds the index of its prefix in `rows.prefixes`."""

    vocab_size = FIRST_WORD_ID + 2

    def __init__(self, rows: TableRows) -> None:
        self.rows = rows

    def decode_log_probs(self, hidden: torch.Tensor, steps: torch.Tensor, state: object) -> torch.Tensor:
        out = torch.full((hidden.shape[0], self.vocab_size), -math.inf)
        for r, index in enumerate(hidden[:, 0].long().tolist()):
            for token, p in TABLE[self.rows.prefixes[index]].items():
                out[r, token] = math.log(p)
        return out

    def next_state(self, hidden: torch.Tensor, steps: torch.Tensor, state: object) -> None:
        return None


class TableRows(DecodeRows):
    """Decoding rows whose model is the table: rows are prefixes; feeding appends a token to each."""

    def __init__(self) -> None:
        self.prefixes: list[tuple[int, ...]] = [()]
        super().__init__(TableHead(self), torch.zeros(1, 1), torch.ones(1, dtype=torch.long), None)  # type: ignore[arg-type]

    def _select(self, rows: torch.Tensor) -> None:
        self.prefixes = [self.prefixes[int(i)] for i in rows]

    def _feed(self, tokens: torch.Tensor) -> torch.Tensor:
        self.prefixes = [(*p, int(t)) for p, t in zip(self.prefixes, tokens, strict=True)]
        return torch.arange(len(self.prefixes), dtype=torch.float)[:, None]


def _search(width: int) -> list[tuple[list[int], float]]:
    found = sentence_beam(TableRows(), 1, width, 2, lambda: False)
    assert found is not None
    return [(h.tokens, h.score) for h in found]


def test_beam_finds_the_better_sentence_greedy_misses() -> None:
    # a sentence's first token is a word: <E-1> (.1) is masked there, so A has .5/.9 and B .4/.9.
    # greedy: A, A (.36), then only <E-1> at the cap: p = .2; beam 2 keeps B, whose <E-1> has .9 → .4
    greedy = _search(1)
    assert greedy == [([A, A, END], pytest.approx(math.log(0.5 / 0.9 * 0.36)))]
    beam = _search(2)
    assert [tokens for tokens, _ in beam] == [[B, END], [A, A, END]]
    assert beam[0][1] == pytest.approx(math.log(0.4 / 0.9 * 0.9)) and beam[1][1] == pytest.approx(math.log(0.2))
    assert len(_search(3)) == 3  # width finished hypotheses (the third: A B <E-1>, .17)


def _decode(model: PermGenModel, tok: VariorumTokenizer, beam: int, control: OrderControl,
            n: int = 2) -> list[list[int]]:
    settings = DecodeConfig(seed=3, max_new_tokens=5, greedy=True)
    source = tok.encode("title : the cake keywords : mia")
    if beam == 0:
        stream: PermGenStream = PermGenStream(model, tok, source, n, settings, control)
    else:
        stream = BeamPermGenStream(model, tok, source, n, settings, control, beam)
    events = list(stream)
    assert len(events) == sum(len(v.token_ids) for v in stream.candidates)
    assert all(v.finish_reason == FINISH_EOP and v.token_ids[-1] == EOP_ID for v in stream.candidates)
    return [v.token_ids for v in stream.candidates]


def test_beam_width_1_equals_greedy(pg_model: PermGenModel, pg_tokenizer: VariorumTokenizer) -> None:
    for control in (OrderControl(num_sentences=3), OrderControl(num_sentences=2, order=(2, 1)), OrderControl()):
        assert _decode(pg_model, pg_tokenizer, 1, control) == _decode(pg_model, pg_tokenizer, 0, control)


def test_beam_decoding_ends_and_follows_the_order_control(
    pg_model: PermGenModel, pg_tokenizer: VariorumTokenizer
) -> None:
    for control in (OrderControl(num_sentences=4, order=(3, 1, 4, 2)), OrderControl(num_sentences=3, order=(2,))):
        for ids in _decode(pg_model, pg_tokenizer, 3, control, n=2):
            indices = [t for t, _ in split_marked(ids)]
            assert sorted(indices) == list(range(1, control.limit + 1))
            assert indices[0] == control.order[0] and (len(control.order) == 1 or indices == list(control.order))
            assert all(len(body) <= 5 for _, body in split_marked(ids))  # the per-sentence cap


def test_beam_cancellation_stops_every_candidate(pg_model: PermGenModel, pg_tokenizer: VariorumTokenizer) -> None:
    calls = iter(range(1000))
    stream = BeamPermGenStream(pg_model, pg_tokenizer, pg_tokenizer.encode("title : x"), 3, DecodeConfig(seed=0),
                               OrderControl(num_sentences=3), 2, should_stop=lambda: next(calls) >= 4)
    list(stream)
    assert all(v.finish_reason == "cancelled" for v in stream.candidates)
    assert stream.candidates[0].settings["beam_width"] == 2
    with pytest.raises(ValueError, match=r"beam_width must be in \[1, 16\]"):
        BeamPermGenStream(pg_model, pg_tokenizer, [40], 1, DecodeConfig(), OrderControl(), 0)
