"""Sentence-based decoding (paper §4.3, Fig. 3), streamed, for N candidates in one batch.

Steps per candidate: I = {} → choose a mark among the allowed ⟨B-t⟩ ∪ ⟨EOP⟩ (engine/permgen/
control.py) by masking the decoder's own classifier → if ⟨EOP⟩, stop → write sentence t token by
token from V ∪ {⟨E-t⟩} with any token decoder (DecodeConfig: greedy, temperature, top-k, nucleus,
repetition penalty; two-stage heads sample group then token: the one sampler, engine/decoding/
token_sampler.py, with the allowed-token mask) → I ← I ∪ {t} → choose again. The N candidates run
in lock-step as decoding rows (engine/permgen/rows.py: one KV cache; per-row hierarchical positions in the
encoder-decoder layout, the prefix's cache copied to every row in the decoder-only one);
on the CPU a candidate's row leaves the batch once it has written ⟨EOP⟩. Each token
records the group it was drawn from (POSG: its tag); a mark forced between sentences or at the
cap records its likeliest group instead (POSG: the special group), never the discarded draw's.

Every decode ends: a sentence is closed with ⟨E-t⟩ when it reaches the per-sentence cap
min(max_sentence_len − 2, DecodeConfig.max_new_tokens) tokens, at most T sentences are written,
and then ⟨EOP⟩ is the only choice — at most T·(cap + 2) + 1 steps. Cancellation (`should_stop`)
is checked every step.

Each candidate is scored by Eq. 8, the mean of the model's log p(y_l | y_<l, X) over all L
generated tokens (marks and ⟨EOP⟩ included; log-probs of the unmasked model distribution), and
ranked (rank 1 = best; ties → lower index). Its text is the sentences reordered by index
(§4.3 "reorder"), detokenized for display. While streaming, deltas follow generation order (model
text, a space between sentences) and each event names its sentence, so a front end can show the
sentences in reading order as they grow; the final `text` replaces them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from engine.data.text import display_paragraph
from engine.data.truecase import CaseTable
from engine.decoding.class_sampling import most_likely_groups
from engine.decoding.copy_limit import CopyLimit, SaidBefore
from engine.decoding.real_words import WordSpeller
from engine.decoding.settings import DecodeConfig
from engine.decoding.stream import (
    INCOMPLETE_CHAR,
    RowStream,
    TokenEvent,
    Variant,
    refuse_copy_limit,
)
from engine.decoding.text_cleanup import drop_control_characters
from engine.decoding.token_sampler import Draw, TokenSampler
from engine.permgen.control import OrderControl
from engine.permgen.marks import EOP_ID, end_id, sentence_of_begin
from engine.permgen.model import PAD_ID, START_ID
from engine.permgen.network import PermGenNetwork
from engine.permgen.rows import PermGenRunner, SentenceRows, open_rows
from engine.permgen.sentence_ends import sentence_ends
from engine.tokenizer import SPECIAL_TOKENS, VariorumTokenizer
from engine.torch_modes import eval_mode

FINISH_EOP = "eop"
FIRST_WORD_ID = len(SPECIAL_TOKENS)  # ids below are special tokens, never sentence words
# A prose story writes no run of this many + 1 tokens (about four words) twice, an abstract none of this many + 1
# (about three): an abstract on the base said its terms over in four-word runs (". We propose a", "open loop mode
# selection"), 2.93% of its word 4-grams on 60 AGENDA abstracts at 4, 0.435% at 3 (docs/permgen-decoder-only.md);
# a story's shorter runs ("Tom went to the") stay free.
SAID_BEFORE_RUN = {"story": 4, "abstract": 3}


@dataclass
class PermGenVariant(Variant):
    """A candidate paragraph: tokens in generation order, sentences by index, Eq. 8 score and rank."""

    order: list[int] = field(default_factory=list)  # sentence indices in generation order
    sentences: dict[int, str] = field(default_factory=dict)  # index → normalised sentence text
    score: float = float("-inf")  # Eq. 8
    rank: int = 0  # 1 = best score among the candidates of this request


@dataclass
class _State:
    """Per-candidate sentence state (its decoder position is kept by `PermGenRows`)."""

    sentence: int = 0  # index being written, 0 while choosing a mark
    words: list[int] = field(default_factory=list)  # tokens of the current sentence
    shown: str = ""  # streamed text of the current sentence


def first_marks(first_log_probs: torch.Tensor, control: OrderControl, n: int, seed: int) -> list[int]:
    """Each candidate's first sentence index (§4.3 footnote 1).

    `first_log_probs` [V] is the model's first-step distribution. User-given first sentence: all
    start there. Model's choice with `distinct_starts`: indices drawn without replacement from
    p(⟨B-t⟩) over t ≤ T (a new round after every T); otherwise the most likely one for all.
    """
    if control.first:
        return [control.first] * n
    device = first_log_probs.device  # a CPU generator cannot draw from CUDA probabilities
    marks = torch.tensor([m for m in control.allowed_marks([]) if m != EOP_ID], device=device)
    indices = [sentence_of_begin(int(m)) for m in marks]
    probs = torch.softmax(first_log_probs[marks].double(), dim=0)
    if not control.distinct_starts:
        return [indices[int(probs.argmax())]] * n
    generator = torch.Generator(device=device).manual_seed(seed)
    picks: list[int] = []
    while len(picks) < n:
        take = min(n - len(picks), len(indices))
        picks += [indices[int(i)] for i in torch.multinomial(probs, take, replacement=False, generator=generator)]
    return picks


def rank_variants(variants: list[PermGenVariant]) -> None:
    """Set each candidate's Eq. 8 score and its rank (1 = best, ties → lower index)."""
    for v in variants:
        v.score = sum(v.token_log_probs) / len(v.token_log_probs) if v.token_log_probs else float("-inf")
    for rank, v in enumerate(sorted(variants, key=lambda v: (-v.score, v.index)), start=1):
        v.rank = rank


class PermGenStream(RowStream[PermGenVariant, SentenceRows]):
    """Iterate for `TokenEvent`s; when iteration ends, `variants` holds the N ranked candidates."""

    def __init__(
        self,
        model: PermGenNetwork[Any],
        tokenizer: VariorumTokenizer,
        source_ids: list[int],
        n: int,
        settings: DecodeConfig,
        control: OrderControl,
        should_stop: Callable[[], bool] | None = None,
        runner: PermGenRunner | None = None,
        words: WordSpeller | None = None,
        copy_limit: CopyLimit | None = None,
        sampler: TokenSampler | None = None,
        case: CaseTable | None = None,
        unconditioned_ids: list[int] | None = None,
    ) -> None:
        """`runner` runs the backbone (engine/permgen/rows.py `PermGenRunner`); None: the torch model. `words`
        spells the allowed words under `settings.real_words` (engine/decoding/real_words.py; the marks end words).
        `copy_limit`: no sentence repeats a longer run of the source than it allows (paraphrases).
        `sampler`: one already built for these settings (a paraphrase's sentences share one).
        `case`: gives names their case back in the displayed text of a lowercased model
        (engine/data/truecase.py). `unconditioned_ids`: the source of no text (an empty title and keywords, in
        the model's source form), which guidance's twin rows read (engine/decoding/guidance.py)."""
        if not source_ids:
            raise ValueError("the source (title and keywords) is empty")
        if model.config.task != "paraphrase":
            refuse_copy_limit(settings, f"this model writes a {model.config.task}")
        super().__init__(model.head, n, settings, should_stop, words, sampler)
        if self.sampler.guided and not unconditioned_ids:
            raise ValueError(f"guidance needs this {model.config.task}'s source of no text; leave guidance at 1")
        self.unconditioned_ids = unconditioned_ids if self.sampler.guided else None  # read by the twin only
        self.seq2seq, self.tokenizer, self.control = model, tokenizer, control
        self.source_ids = source_ids[: model.config.max_source_len]
        self.runner, self.copy_limit, self.case = runner, copy_limit, case
        self.cap = min(model.config.max_sentence_len - 2, settings.max_new_tokens)
        self.ends = sentence_ends(tokenizer) if model.config.text_form == "prose" else None
        # per candidate, its own text as a source it may not copy (prose paragraphs: `_allowed`)
        run = SAID_BEFORE_RUN.get(model.config.task)
        self.said = [SaidBefore(run) for _ in range(n)] if self.ends is not None and run is not None else None
        self.states = [_State() for _ in range(n)]

    def _new_variant(self, index: int, seed: int) -> PermGenVariant:
        return PermGenVariant(index=index, seed=seed, settings=self.settings.variant_record(seed))

    def __iter__(self) -> Iterator[TokenEvent]:
        try:
            with eval_mode(self.seq2seq), torch.inference_mode():
                yield from self._run()
        finally:
            self._finish_texts()

    def _run(self) -> Iterator[TokenEvent]:
        n, bound = len(self.candidates), self.control.limit * (self.cap + 2) + 1
        rows = open_rows(self.seq2seq, self.source_ids, n, self.runner, bound)
        if self.unconditioned_ids is not None:  # a guided decode (`__init__` refuses one without them)
            self.twin = open_rows(self.seq2seq, self.unconditioned_ids, n, self.runner, bound)
        self.history = torch.full((n, 1), START_ID, device=rows.hidden.device)
        self.firsts: list[int] = []
        unfinished = yield from self._steps(rows, bound, [""] * n, PAD_ID)
        if unfinished is not None:  # unreachable: the marks force ⟨EOP⟩ within the bound (module docstring)
            raise RuntimeError("PermGen decoding exceeded its step bound")

    def _allowed(self, last: bool) -> torch.Tensor:
        """Inside a sentence its words and its end mark; a prose sentence ended at its first full stop and held
        to one line (engine/permgen/sentence_ends.py), and in a prose story or abstract no run of more than
        `SAID_BEFORE_RUN[task]` tokens written twice (a model on a pretrained base, sampled cool, says a sentence
        again; the paper's models, trained from scratch, are left as they were); real
        words only (a sentence's last token before its cap closes the open word); the copy limit."""
        allowed = self._allowed_words(self.history.device)
        if self.ends is not None:
            states = [self.states[c] for c in self.row_variants]
            allowed = self.ends.restrict(allowed, [s.words if s.sentence else None for s in states],
                                         [end_id(s.sentence) if s.sentence else 0 for s in states])
        if self.said is not None:
            allowed = self._unsaid(allowed)
        if self.spelled is not None:
            allowed = self.spelled.allowed(allowed, [len(self.states[c].words) == self.cap - 1
                                                     for c in self.row_variants])
        if self.copy_limit is not None:
            allowed = self.copy_limit.mask(allowed, [self.states[c].words for c in self.row_variants])
        return allowed

    def _unsaid(self, allowed: torch.Tensor) -> torch.Tensor:
        """`allowed` [rows, V] without the tokens that would repeat a run of the row's own text."""
        assert self.said is not None
        banned = [sorted(self.said[c].forbidden(self.states[c].words)) for c in self.row_variants]
        if not any(banned):
            return allowed
        unsaid = allowed.clone()
        for row, tokens in enumerate(banned):
            unsaid[row, tokens] = False
        return unsaid

    def _history(self, rows: SentenceRows) -> torch.Tensor:
        return self.history

    def _chosen(self, draw: Draw, rows: SentenceRows, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The marks are chosen, not drawn (`_override_marks`); a forced mark records the group it most likely
        came from (POSG: the special group), not the discarded draw's."""
        if step == 1:
            self.firsts = first_marks(draw.marginal[0], self.control, len(self.candidates), self.base_seed)
        tokens = self._override_marks(draw.tokens, draw.marginal, step)
        forced = tokens != draw.tokens  # [N]
        groups = draw.groups
        head = self.seq2seq.head
        if head.num_groups > 1 and bool(forced.any()):
            groups = torch.where(forced, most_likely_groups(head, rows.hidden, tokens, rows.steps), groups)
        return tokens, groups

    def _ended(self, tokens: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        return tokens == EOP_ID

    def _advance(self, tokens: torch.Tensor) -> None:
        self.history = torch.cat([self.history, tokens[:, None]], dim=1)
        super()._advance(tokens)

    def _keep(self, kept: torch.Tensor) -> None:
        super()._keep(kept)
        self.history = self.history[kept]

    def _allowed_words(self, device: torch.device) -> torch.Tensor:
        """bool [rows, V]: inside sentence t, the words and ⟨E-t⟩ (§4.3 step 3), ⟨E-t⟩ once the sentence has a
        word: an empty sentence is no sentence of the order asked for (the paper is silent; a model on a
        pretrained base, whose marks are new, sometimes ends one at once)."""
        rows = len(self.row_variants)
        allowed = torch.zeros(rows, self.seq2seq.config.model.vocab_size, dtype=torch.bool, device=device)
        allowed[:, FIRST_WORD_ID:] = True
        for row, candidate in enumerate(self.row_variants):
            state = self.states[candidate]
            if state.sentence and state.words:
                allowed[row, end_id(state.sentence)] = True
        return allowed

    def _override_marks(self, tokens: torch.Tensor, marginal: torch.Tensor, step: int) -> torch.Tensor:
        """Between sentences: the most likely allowed mark (or the first mark); at the cap: ⟨E-t⟩."""
        chosen = tokens.clone()
        for row, candidate in enumerate(self.row_variants):
            state = self.states[candidate]
            if state.sentence and len(state.words) >= self.cap:
                chosen[row] = end_id(state.sentence)
            elif not state.sentence:
                marks = self.control.allowed_marks(self.candidates[candidate].order)
                if step == 1:  # the first mark was drawn for all candidates at once (`first_marks`)
                    chosen[row] = next(m for m in marks if sentence_of_begin(m) == self.firsts[candidate])
                else:
                    chosen[row] = marks[int(marginal[row, marks].argmax())]
        return chosen

    def _event(self, i: int, token: int, log_prob: float, group: int) -> TokenEvent:
        """Candidate i's event for `token`, naming the sentence it writes (0 for ⟨E-t⟩ and ⟨EOP⟩)."""
        delta = self._write(i, token)
        return TokenEvent(i, token, delta, log_prob, group, self.states[i].sentence)

    def _write(self, i: int, token: int) -> str:
        """Update candidate i's sentence state with `token`; return the streamed text delta."""
        state, variant = self.states[i], self.candidates[i]
        begun = sentence_of_begin(token)
        if begun:
            state.sentence, state.words, state.shown = begun, [], ""
            variant.order.append(begun)
            return " " if len(variant.order) > 1 else ""
        if token == EOP_ID:
            variant.finish_reason = FINISH_EOP
            return ""
        if state.sentence and token == end_id(state.sentence):
            variant.sentences[state.sentence] = self._sentence_text(state)
            if self.said is not None:
                self.said[i].add(state.words)
            state.sentence = 0
            return ""
        state.words.append(token)
        text = self.tokenizer.decode(state.words).lstrip()  # a prose model's sentence starts with a space
        if text.endswith(INCOMPLETE_CHAR):
            return ""
        # never into the document, and never joining two real words (engine/decoding/text_cleanup.py)
        text = drop_control_characters(text, keep_word_boundaries=True)
        delta, state.shown = text.removeprefix(state.shown), text
        return delta

    def _sentence_text(self, state: _State) -> str:
        """The text of the sentence `state` writes, as it is kept."""
        return drop_control_characters(self.tokenizer.decode(state.words), keep_word_boundaries=True).strip()

    def _cancel(self, active: torch.Tensor) -> None:
        for row in active.nonzero()[:, 0].tolist():
            state, variant = self.states[self.row_variants[row]], self.candidates[self.row_variants[row]]
            if state.sentence:  # keep the unfinished sentence's text
                variant.sentences[state.sentence] = self._sentence_text(state)
        super()._cancel(active)

    def _finish_texts(self) -> None:
        for variant in self.candidates:
            text = display_paragraph([variant.sentences[t] for t in sorted(variant.sentences)])
            variant.text = self.case.restore(text) if self.case is not None else text
        rank_variants(self.candidates)
