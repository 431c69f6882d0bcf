"""Sentence-based decoding (paper §4.3, Fig. 3), streamed, for N candidates in one batch.

Steps per candidate: I = {} → choose a mark among the allowed ⟨B-t⟩ ∪ ⟨EOP⟩ (engine/permgen/
control.py) by masking the decoder's own classifier → if ⟨EOP⟩, stop → write sentence t token by
token from V ∪ {⟨E-t⟩} with any token decoder (DecodeConfig: greedy, temperature, top-k, nucleus,
repetition penalty; two-stage heads sample group then token: the one sampler, engine/decoding/
token_sampler.py, with the allowed-token mask) → I ← I ∪ {t} → choose again. The N candidates run
in lock-step as decoding rows (engine/permgen/rows.py: one KV cache, per-row hierarchical positions);
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

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from engine.data.text import display_paragraph
from engine.decoding.class_sampling import most_likely_groups
from engine.decoding.copy_limit import CopyLimit
from engine.decoding.generate import (
    FINISH_CANCELLED,
    INCOMPLETE_CHAR,
    DecodeStream,
    TokenEvent,
    Variant,
    checked_speller,
    refuse_copy_limit,
)
from engine.decoding.real_words import RealWordRows, WordSpeller
from engine.decoding.settings import DecodeConfig
from engine.decoding.token_sampler import TokenSampler
from engine.permgen.control import OrderControl
from engine.permgen.marks import EOP_ID, end_id, sentence_of_begin
from engine.permgen.model import PAD_ID, START_ID, PermGenModel
from engine.permgen.rows import PermGenRows
from engine.permgen.runner import Seq2SeqRunner
from engine.tokenizer import SPECIAL_TOKENS, VariorumTokenizer
from engine.torch_modes import eval_mode

FINISH_EOP = "eop"
FIRST_WORD_ID = len(SPECIAL_TOKENS)  # ids below are special tokens, never sentence words


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


class PermGenStream(DecodeStream):
    """Iterate for `TokenEvent`s; when iteration ends, `variants` holds the N ranked candidates."""

    def __init__(
        self,
        model: PermGenModel,
        tokenizer: VariorumTokenizer,
        source_ids: list[int],
        n: int,
        settings: DecodeConfig,
        control: OrderControl,
        should_stop: Callable[[], bool] | None = None,
        runner: Seq2SeqRunner[Any] | None = None,
        words: WordSpeller | None = None,
        copy_limit: CopyLimit | None = None,
    ) -> None:
        """`runner` runs the backbone (engine/permgen/runner.py); None: the torch model. `words` spells the
        allowed words under `settings.real_words` (engine/decoding/real_words.py; the marks end words).
        `copy_limit`: no sentence repeats a longer run of the source than it allows (paraphrases)."""
        if not 1 <= n <= 64:
            raise ValueError(f"number of variants must be in [1, 64], got {n}")
        if not source_ids:
            raise ValueError("the source (title and keywords) is empty")
        if model.config.task != "paraphrase":
            refuse_copy_limit(settings, f"this model writes a {model.config.task}")
        self.words = checked_speller(settings, words)
        self.sampler = TokenSampler(model.head, settings)  # a bad control fails here, before any token
        self.seq2seq, self.tokenizer, self.settings, self.control = model, tokenizer, settings, control
        self.source_ids = source_ids[: model.config.max_source_len]
        self.should_stop = should_stop or (lambda: False)
        self.runner, self.copy_limit = runner, copy_limit
        self.cap = min(model.config.max_sentence_len - 2, settings.max_new_tokens)
        base = settings.seed if settings.seed is not None else random.randrange(2**62)
        self.base_seed = base
        self.candidates = [PermGenVariant(index=i, seed=base + i, settings=settings.variant_record(base + i))
                           for i in range(n)]
        self.variants: list[Variant] = list(self.candidates)  # the same objects, typed as the base class's
        self.states = [_State() for _ in range(n)]
        self.row_candidates = list(range(n))  # the candidate each decoding row writes

    def __iter__(self) -> Iterator[TokenEvent]:
        try:
            with eval_mode(self.seq2seq), torch.inference_mode():
                yield from self._run()
        finally:
            self._finish_texts()

    def _run(self) -> Iterator[TokenEvent]:
        device = next(self.seq2seq.parameters()).device
        n = len(self.variants)
        seeds = torch.tensor([v.seed for v in self.candidates], device=device)  # [N] per-row noise keys
        rows = PermGenRows(self.seq2seq, self.source_ids, n, self.runner)
        history = torch.full((n, 1), START_ID, device=device)
        active = torch.ones(n, dtype=torch.bool, device=device)
        head, limit = self.seq2seq.head, self.control.limit
        spelled = None if self.words is None else RealWordRows(self.words, [""] * n)
        firsts: list[int] = []
        for step in range(1, limit * (self.cap + 2) + 2):
            if self.should_stop():
                self._stop(active)
                return
            allowed = self._allowed_words(device)
            if spelled is not None:  # a sentence's last token before its cap closes the open word
                allowed = spelled.allowed(allowed, [len(self.states[c].words) == self.cap - 1
                                                    for c in self.row_candidates])
            if self.copy_limit is not None:
                allowed = self.copy_limit.mask(allowed, [self.states[c].words for c in self.row_candidates])
            draw = self.sampler.draw(rows.hidden, rows.steps, rows.state, history, seeds, step, allowed)
            if step == 1:
                firsts = first_marks(draw.marginal[0], self.control, n, self.base_seed)
            tokens = self._override_marks(draw.tokens, draw.marginal, firsts, step)
            forced = tokens != draw.tokens  # [N]
            groups = draw.groups
            if head.num_groups > 1 and bool(forced.any()):  # a forced mark was not drawn from `groups`:
                # record the group it most likely came from (POSG: the special group), not the discarded draw's
                groups = torch.where(forced, most_likely_groups(head, rows.hidden, tokens, rows.steps), groups)
            tokens = torch.where(active, tokens, torch.full_like(tokens, PAD_ID))
            log_probs = draw.marginal.gather(1, tokens[:, None])[:, 0]
            yield from self._record(active, tokens, log_probs, groups)
            active &= tokens != EOP_ID
            if not bool(active.any()):
                return
            history = torch.cat([history, tokens[:, None]], dim=1)
            if spelled is not None:
                spelled.advance(tokens.tolist())
            kept = rows.drop_ended(active)  # [M] on the CPU when a candidate ended
            if kept is not None:
                seeds, tokens, active, history = seeds[kept], tokens[kept], active[kept], history[kept]
                self.row_candidates = [self.row_candidates[r] for r in kept.tolist()]
                if spelled is not None:
                    spelled.select(kept.tolist())
            rows.advance(tokens)
        raise RuntimeError("PermGen decoding exceeded its step bound")  # unreachable: marks force the end

    def _allowed_words(self, device: torch.device) -> torch.Tensor:
        """bool [rows, V]: inside sentence t, the words and ⟨E-t⟩ (§4.3 step 3)."""
        rows = len(self.row_candidates)
        allowed = torch.zeros(rows, self.seq2seq.config.model.vocab_size, dtype=torch.bool, device=device)
        allowed[:, FIRST_WORD_ID:] = True
        for row, candidate in enumerate(self.row_candidates):
            if self.states[candidate].sentence:
                allowed[row, end_id(self.states[candidate].sentence)] = True
        return allowed

    def _override_marks(
        self, tokens: torch.Tensor, marginal: torch.Tensor, firsts: list[int], step: int
    ) -> torch.Tensor:
        """Between sentences: the most likely allowed mark (or the first mark); at the cap: ⟨E-t⟩."""
        chosen = tokens.clone()
        for row, candidate in enumerate(self.row_candidates):
            state = self.states[candidate]
            if state.sentence and len(state.words) >= self.cap:
                chosen[row] = end_id(state.sentence)
            elif not state.sentence:
                marks = self.control.allowed_marks(self.candidates[candidate].order)
                if step == 1:  # the first mark was drawn for all candidates at once (`first_marks`)
                    chosen[row] = next(m for m in marks if sentence_of_begin(m) == firsts[candidate])
                else:
                    chosen[row] = marks[int(marginal[row, marks].argmax())]
        return chosen

    def _record(
        self, active: torch.Tensor, tokens: torch.Tensor, log_probs: torch.Tensor, groups: torch.Tensor
    ) -> Iterator[TokenEvent]:
        # One device → host copy per tensor per step, not one per row and field.
        token_list, log_prob_list, group_list = tokens.tolist(), log_probs.tolist(), groups.tolist()
        for row in active.nonzero()[:, 0].tolist():
            i = self.row_candidates[row]
            variant, token, log_prob, group = self.candidates[i], token_list[row], log_prob_list[row], group_list[row]
            variant.token_ids.append(token)
            variant.token_log_probs.append(log_prob)
            variant.token_groups.append(group)
            yield self._sentence_event(i, token, log_prob, group)

    def _sentence_event(self, i: int, token: int, log_prob: float, group: int) -> TokenEvent:
        """Candidate i's event for `token`, naming the sentence it writes (0 for ⟨E-t⟩ and ⟨EOP⟩)."""
        delta = self._advance(i, token)
        return TokenEvent(i, token, delta, log_prob, group, self.states[i].sentence)

    def _advance(self, i: int, token: int) -> str:
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
            variant.sentences[state.sentence] = self.tokenizer.decode(state.words).strip()
            state.sentence = 0
            return ""
        state.words.append(token)
        text = self.tokenizer.decode(state.words)
        if text.endswith(INCOMPLETE_CHAR):
            return ""
        delta, state.shown = text.removeprefix(state.shown), text
        return delta

    def _stop(self, active: torch.Tensor) -> None:
        for row in active.nonzero()[:, 0].tolist():
            candidate = self.row_candidates[row]
            state, variant = self.states[candidate], self.candidates[candidate]
            if state.sentence:  # keep the unfinished sentence's text
                variant.sentences[state.sentence] = self.tokenizer.decode(state.words).strip()
            variant.finish_reason = FINISH_CANCELLED

    def _finish_texts(self) -> None:
        for variant in self.candidates:
            variant.text = display_paragraph([variant.sentences[t] for t in sorted(variant.sentences)])
        rank_variants(self.candidates)
