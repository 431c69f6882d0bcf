"""Sentence-based decoding (§4.3) with beam search inside every sentence (paper §4.3 step 3 allows
any token decoder there): the one beam search (engine/decoding/beam.py) over PermGen's rows.

Within sentence t the candidates are V ∪ {⟨E-t⟩}, so a hypothesis is scored by the sum of its
log-probs under the model's distribution *restricted to that set and renormalised*, the
distribution the sampler draws from, and beam width 1 is exactly greedy decoding. At the
per-sentence cap only ⟨E-t⟩ is allowed, so every search ends within cap + 1 steps. Finished
hypotheses are ranked by summed score (no length normalisation; ties → the one finished first).
Beam scores use the head's marginal p(x); for a two-stage head (F², POSG) this is the marginal
beam (width 1 equals greedy with `flat_sampling`), and sampling controls (temperature, top-k,
top-p, repetition penalty, group controls) do not apply to beams. Each token also keeps its
*unrestricted* marginal log-prob, which Eq. 8 ranking uses.

The marks are chosen exactly as in `PermGenStream` (first marks drawn without replacement or given
by the writer, then the most likely allowed ⟨B-t'⟩ ∪ ⟨EOP⟩), and each sentence is the best
finished hypothesis of a beam of `beam_width`. Candidates are decoded one after another (each
runs its own beam of `beam_width` rows with one KV cache); a sentence streams as soon as its beam
has finished. Eq. 8 ranking and reordering by index are those of `PermGenStream`. Every decode
ends: at most T sentences of at most cap + 1 beam steps each, then ⟨EOP⟩.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any

import torch

from engine.data.truecase import CaseTable
from engine.decode_fields import BEAM_WIDTH, GUIDANCE
from engine.decoding.beam import Hypothesis, beam_search
from engine.decoding.copy_limit import CopyLimit
from engine.decoding.real_words import RealWordRows, WordSpeller
from engine.decoding.settings import DecodeConfig
from engine.decoding.step import DecodeRows
from engine.decoding.stream import FINISH_CANCELLED, TokenEvent
from engine.permgen.control import OrderControl
from engine.permgen.decode import FIRST_WORD_ID, PermGenStream, first_marks
from engine.permgen.marks import EOP_ID, begin_id, end_id, sentence_of_begin
from engine.permgen.network import PermGenNetwork
from engine.permgen.rows import PermGenRunner, SentenceRows, open_rows
from engine.permgen.sentence_ends import SentenceEnds
from engine.tokenizer import VariorumTokenizer


def sentence_beam(
    rows: DecodeRows, sentence: int, width: int, cap: int, should_stop: Callable[[], bool],
    speller: WordSpeller | None = None, copy_limit: CopyLimit | None = None, ends: SentenceEnds | None = None,
) -> list[Hypothesis] | None:
    """Finished hypotheses of sentence `sentence` (words then ⟨E-t⟩), best first; None when cancelled.

    `rows` holds one row after ⟨B-t⟩ on entry and the search's last rows on return. With `speller`
    (real words only) each hypothesis is also held to the real-words mask of its partial word; with
    `copy_limit`, to the runs it may not extend (engine/decoding/copy_limit.py: a paraphrase's source, a prose
    story's own text); with `ends` (a prose model), to ending at its first full stop on one line
    (engine/permgen/sentence_ends.py)."""
    if width < 1 or cap < 0:
        raise ValueError(f"beam width must be >= 1 and the sentence cap >= 0, got {width}, {cap}")
    end = end_id(sentence)
    words = torch.zeros(rows.head.vocab_size, dtype=torch.bool, device=rows.hidden.device)  # [V]
    words[FIRST_WORD_ID:] = True
    words[end] = True
    only_end = torch.zeros_like(words)
    only_end[end] = True
    first_words = words.clone()
    first_words[end] = False  # a sentence has a word before its end (as PermGenStream's sampling)

    def allowed(expansion: int, alive: Sequence[Hypothesis]) -> torch.Tensor:
        if expansion >= cap:
            return only_end
        some_words = words if expansion else first_words
        if speller is None and copy_limit is None and ends is None:
            return some_words
        rows_allowed = some_words.expand(len(alive), -1)  # [M, V]
        if ends is not None:
            rows_allowed = ends.restrict(rows_allowed, [h.tokens for h in alive], [end] * len(alive))
        if copy_limit is not None:
            rows_allowed = copy_limit.mask(rows_allowed, [h.tokens for h in alive])
        if speller is None:
            return rows_allowed
        spelled = RealWordRows(speller, [speller.partial_after("", h.tokens) for h in alive])
        return spelled.allowed(rows_allowed, [expansion == cap - 1] * len(alive))  # [M, V]

    found = beam_search(rows, width, cap + 1, {end}, allowed, should_stop)
    return None if found is None else found.finished


def refuse_guided_beam(settings: DecodeConfig) -> None:
    """ValueError when `settings` guide a sentence beam (a story's or a paraphrase's)."""
    if settings.guidance != GUIDANCE.off:
        raise ValueError("guidance weighs sampled tokens; the sentence beam keeps the model's own likeliest "
                         "sentences: leave guidance at 1 or sample")


class BeamPermGenStream(PermGenStream):
    """`PermGenStream` whose sentences come from beam search of width `beam_width`."""

    def __init__(
        self,
        model: PermGenNetwork[Any],
        tokenizer: VariorumTokenizer,
        source_ids: list[int],
        n: int,
        settings: DecodeConfig,
        control: OrderControl,
        beam_width: int,
        should_stop: Callable[[], bool] | None = None,
        runner: PermGenRunner | None = None,
        words: WordSpeller | None = None,
        case: CaseTable | None = None,
    ) -> None:
        BEAM_WIDTH.check(beam_width)
        refuse_guided_beam(settings)
        super().__init__(model, tokenizer, source_ids, n, settings, control, should_stop, runner, words, case=case)
        self.beam_width = beam_width
        for variant in self.candidates:
            variant.settings["beam_width"] = beam_width

    def _run(self) -> Iterator[TokenEvent]:
        firsts: list[int] = []
        bound = self.control.limit * (self.cap + 2) + 1  # every token a candidate's rows are fed, at most
        for i in range(len(self.candidates)):
            rows = open_rows(self.seq2seq, self.source_ids, 1, self.runner, bound)  # each candidate its own beam
            if not firsts:  # every candidate's first step is the same distribution
                firsts = first_marks(rows.log_probs()[0], self.control, len(self.candidates), self.base_seed)
            if not (yield from self._candidate(i, rows, firsts[i])):
                for j in range(i, len(self.candidates)):
                    self.candidates[j].finish_reason = FINISH_CANCELLED
                return

    def _candidate(self, i: int, rows: SentenceRows, first: int) -> Generator[TokenEvent, None, bool]:
        """Decode candidate i; returns False when cancelled (a generator's return value)."""
        variant = self.candidates[i]
        while True:
            if self.should_stop():
                return False
            marginal = rows.log_probs()[0]  # [V]
            marks = self.control.allowed_marks(variant.order)
            mark = begin_id(first) if not variant.order else marks[int(marginal[marks].argmax())]
            yield self._take(i, mark, float(marginal[mark]))
            if mark == EOP_ID:
                return True
            rows.advance(torch.tensor([mark], device=rows.hidden.device))
            before = rows.snapshot()
            found = sentence_beam(rows, sentence_of_begin(mark), self.beam_width, self.cap, self.should_stop,
                                  self.words, None if self.said is None else self.said[i], self.ends)
            if found is None:
                return False
            best: Hypothesis = found[0]
            rows.rewind(before)  # the rows share the prefix up to ⟨B-t⟩; feed the chosen sentence
            rows.extend(best.tokens)
            for token, log_prob in zip(best.tokens, best.log_probs, strict=True):
                yield self._take(i, token, log_prob)

    def _take(self, i: int, token: int, log_prob: float) -> TokenEvent:
        """Record candidate i's `token` (beams record no group) and stream it."""
        self.candidates[i].add(token, log_prob, 0)
        return self._event(i, token, log_prob, 0)
