"""What every decode stream is, and the skeleton the streams share.

`DecodeStream`: iterate for `TokenEvent`s; when iteration ends, `variants` holds the N results (what
the app, the CLI and the API consume), whatever the model family.

`BatchStream` sets up the N variants of one request, as every stream does: variant i gets seed
base + i (the request's seed, else a random base) and records the settings with that seed; the real
words are checked to be there when the settings ask for them; the one sampler is built once, so a
bad control fails before any token (a stream made of other streams hands its sampler down).

`RowStream` is the step loop of the sampled streams (the language model's `VariantStream`,
engine/decoding/generate.py, and PermGen's `PermGenStream`, engine/permgen/decode.py): the variants
decode in lock-step as rows of a `DecodeRows` (engine/decoding/step.py), each row drawn by the one
sampler with its own seed, under its allowed-token mask (real words only, and whatever the stream
adds); cancellation is checked every step; a row whose variant ended leaves the batch on the CPU
(docs/decoding_speed.md). A stream says only what is its own: which tokens a row may take, which
token a row writes when the draw is overridden (PermGen's marks), what ends a variant, and what an
event streams.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import torch

from engine.decoding.cpu_threads import StepThreads
from engine.decoding.doubled_words import REDRAW_STEP, DoubledWords
from engine.decoding.real_words import RealWordRows, WordSpeller
from engine.decoding.settings import DecodeConfig
from engine.decoding.step import DecodeRows
from engine.decoding.token_sampler import Draw, TokenSampler
from engine.heads.base import OutputHead
from engine.tokenizer import VariorumTokenizer

INCOMPLETE_CHAR = "\ufffd"  # byte-level BPE text ends mid-character until the next token
MAX_ROWS = 64  # variants of one stream (the evaluation decodes this many prompts as one batch)

FINISH_EOS = "eos"
FINISH_LENGTH = "length"
FINISH_CANCELLED = "cancelled"


@dataclass(frozen=True)
class TokenEvent:
    """One new token of one variant, as streamed."""

    variant: int
    token_id: int
    text_delta: str  # display text added by this token ("" while a character is incomplete)
    log_prob: float  # model's marginal log p(token), before decoding processors
    group: int
    sentence: int = 0  # PermGen: the sentence t this token writes (its ⟨B-t⟩ too); 0 for a language model
    draft: bool = False  # a draft the selection may not show (engine/selection/stream.py)


@dataclass
class Variant:
    """One finished (or stopped) generation and everything needed to reproduce it."""

    index: int
    seed: int
    settings: dict[str, Any]
    token_ids: list[int] = field(default_factory=list)
    token_log_probs: list[float] = field(default_factory=list)
    token_groups: list[int] = field(default_factory=list)
    text: str = ""
    finish_reason: str = ""
    prompt_cut: bool = False  # the context was longer than the model's window: only its end was read

    @property
    def log_prob(self) -> float:
        return float(sum(self.token_log_probs))

    def add(self, token: int, log_prob: float, group: int) -> None:
        """Record one more token: its id, the model's marginal log-prob and the group it was drawn from."""
        self.token_ids.append(token)
        self.token_log_probs.append(log_prob)
        self.token_groups.append(group)


class DecodeStream(ABC):
    """N variants decoded as one stream, whatever the model family: iterate for `TokenEvent`s; when
    iteration ends, `variants` holds the N results (what the app, the CLI and the API consume)."""

    variants: list[Variant]

    @abstractmethod
    def __iter__(self) -> Iterator[TokenEvent]:
        """Decode, yielding every new token of every variant."""


V = TypeVar("V", bound=Variant)
R = TypeVar("R", bound=DecodeRows)


def never() -> bool:
    """The `should_stop` of a stream nobody stops."""
    return False


class BatchStream(DecodeStream, Generic[V]):
    """The N variants of one request (see the module docstring); `candidates` are `variants`, typed as made."""

    def __init__(
        self, head: OutputHead, n: int, settings: DecodeConfig, should_stop: Callable[[], bool] | None,
        words: WordSpeller | None, sampler: TokenSampler | None = None,
    ) -> None:
        if not 1 <= n <= MAX_ROWS:
            raise ValueError(f"number of variants must be in [1, {MAX_ROWS}], got {n}")
        self.words = checked_speller(settings, words)
        self.sampler = sampler if sampler is not None else TokenSampler(head, settings)  # a bad control fails here
        self.settings = settings
        self.should_stop = should_stop or never
        self.base_seed = settings.seed if settings.seed is not None else random.randrange(2**62)
        self.candidates: list[V] = [self._new_variant(i, self.base_seed + i) for i in range(n)]
        self.variants: list[Variant] = list(self.candidates)  # the same objects, typed as the base class's

    @abstractmethod
    def _new_variant(self, index: int, seed: int) -> V:
        """Variant `index`, decoded with `seed`."""


class RowStream(BatchStream[V], Generic[V, R]):
    """The step loop of a sampled stream (see the module docstring); subclasses run `_steps` and say the rest."""

    row_variants: list[int]  # the variant each decoding row writes
    spelled: RealWordRows | None  # each row's partial word, when real words only is on
    tokenizer: VariorumTokenizer  # the model's (no doubled words reads its pieces)
    step_threads: StepThreads | None = None  # the thread counts of a torch decode on the CPU (cpu_threads.py)
    # guidance's twin: the same model after no text, fed the rows' tokens (engine/decoding/guidance.py); a stream
    # opens it in `_run` when its sampler is guided
    twin: DecodeRows | None = None

    def _steps(
        self, rows: R, max_steps: int, partials: Sequence[str], pad_id: int
    ) -> Generator[TokenEvent, None, torch.Tensor | None]:
        """Decode up to `max_steps` steps from `rows` (rows start with their variants' `partials` words); yields
        every token, then returns the rows still writing when the steps ran out (None: all ended, or stopped)."""
        device = rows.hidden.device
        self.row_variants = [v.index for v in self.candidates]
        self.spelled = None if self.words is None else RealWordRows(self.words, partials)
        doubled = DoubledWords.of(self.tokenizer) if self.settings.no_doubled_words else None
        seeds = torch.tensor([v.seed for v in self.candidates], device=device)  # [N] per-row noise keys
        active = torch.ones(len(self.candidates), dtype=torch.bool, device=device)
        threads = self.step_threads or StepThreads(torch.get_num_threads())
        if self.twin is not None:  # t counts the writer's text in both: the head's eos floor is the same
            self.twin.steps = rows.steps.clone()
        for step in range(1, max_steps + 1):
            if self.should_stop():
                self._cancel(active)
                return None
            with threads.timed():  # the step's compute; the reader's time between tokens is not counted
                allowed = self._allowed(step == max_steps)
                guide = None if self.twin is None else self.twin.log_probs()  # [N, V]
                draw = self.sampler.draw(rows.hidden, rows.steps, rows.state, self._history(rows), seeds, step,
                                         allowed, guide)
                if doubled is not None:
                    draw = self._undoubled(doubled, draw, rows, seeds, step, allowed, guide)
            tokens, groups = self._chosen(draw, rows, step)
            tokens = torch.where(active, tokens, torch.full_like(tokens, pad_id))
            log_probs = draw.marginal.gather(1, tokens[:, None])[:, 0]
            yield from self._record(active, tokens, log_probs, groups)
            active &= ~self._ended(tokens, active)
            if not bool(active.any()):
                return None
            if step == max_steps:  # no token follows: feeding this one would be wasted
                break
            self._advance(tokens)
            kept = rows.drop_ended(active)  # [M] on the CPU when a variant ended (docs/decoding_speed.md)
            if kept is not None:
                seeds, tokens, active = seeds[kept], tokens[kept], active[kept]
                self._keep(kept)
            with threads.timed():
                rows.advance(tokens)
                if self.twin is not None:
                    self.twin.advance(tokens)
            threads.step_done()
        return active

    def _undoubled(self, doubled: DoubledWords, draw: Draw, rows: R, seeds: torch.Tensor, step: int,
                   allowed: torch.Tensor | None, guide: torch.Tensor | None) -> Draw:
        """`draw`, where each row that drew its last word again has drawn once more without that word
        (engine/decoding/doubled_words.py: rejection sampling, so other rows keep their draws)."""
        history = self._history(rows)
        again = doubled.doubled(history[:, -1], draw.tokens)  # [N]
        if not bool(again.any()):
            return draw
        banned = doubled.mask(allowed, history[:, -1].tolist(), history.device)
        redraw = self.sampler.draw(rows.hidden, rows.steps, rows.state, history, seeds, step + REDRAW_STEP, banned,
                                   guide)
        return Draw(torch.where(again, redraw.tokens, draw.tokens), torch.where(again, redraw.groups, draw.groups),
                    draw.marginal)

    def _record(
        self, active: torch.Tensor, tokens: torch.Tensor, log_probs: torch.Tensor, groups: torch.Tensor
    ) -> Iterator[TokenEvent]:
        # One device → host copy per tensor per step, not one per row and field.
        token_list, log_prob_list, group_list = tokens.tolist(), log_probs.tolist(), groups.tolist()
        for row in active.nonzero()[:, 0].tolist():
            i, token, log_prob, group = self.row_variants[row], token_list[row], log_prob_list[row], group_list[row]
            self.candidates[i].add(token, log_prob, group)
            yield self._event(i, token, log_prob, group)

    def _finish(self, rows: torch.Tensor, reason: str) -> None:
        """Set `reason` as the finish reason of the variants of the rows `rows` (bool [N]) marks."""
        for row in rows.nonzero()[:, 0].tolist():
            self.candidates[self.row_variants[row]].finish_reason = reason

    def _cancel(self, active: torch.Tensor) -> None:
        """The writer stopped the stream: the variants still writing end here."""
        self._finish(active, FINISH_CANCELLED)

    def _chosen(self, draw: Draw, rows: R, step: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The tokens [N] the rows write this step and the groups [N] they came from: the draw's, by default."""
        return draw.tokens, draw.groups

    def _advance(self, tokens: torch.Tensor) -> None:
        """Move per-row state on past `tokens` (before rows leave the batch)."""
        if self.spelled is not None:
            self.spelled.advance(tokens.tolist())

    def _keep(self, kept: torch.Tensor) -> None:
        """Only the rows `kept` [M] stay in the batch: per-row state follows them."""
        self.row_variants = [self.row_variants[r] for r in kept.tolist()]
        if self.twin is not None:
            self.twin.select(kept)
        if self.spelled is not None:
            self.spelled.select(kept.tolist())

    @abstractmethod
    def _allowed(self, last: bool) -> torch.Tensor | None:
        """bool [N, V]: the tokens each row may take (None: any); `last` when no step follows this one."""

    @abstractmethod
    def _history(self, rows: R) -> torch.Tensor:
        """Every row's ids so far [N, T] (the repetition penalty reads them)."""

    @abstractmethod
    def _ended(self, tokens: torch.Tensor, active: torch.Tensor) -> torch.Tensor:
        """bool [N]: the active rows whose variants end with `tokens` (each finish reason set, here or by `_event`)."""

    @abstractmethod
    def _event(self, i: int, token: int, log_prob: float, group: int) -> TokenEvent:
        """Variant i's event for `token`, just recorded."""


def refuse_copy_limit(settings: DecodeConfig, why: str) -> None:
    """ValueError when `settings` set a copy limit, which only a paraphrase reads (`why` says what this model does)."""
    if settings.copy_limit:
        raise ValueError(f"the copy limit applies to paraphrases only; {why}: leave copy_limit at 0")


def checked_speller(settings: DecodeConfig, words: WordSpeller | None) -> WordSpeller | None:
    """The speller a stream uses: `words` when `settings.real_words` is on, else None; ValueError when on
    without one (the loaded model builds it from the bundle's words, the word list and the writer's text)."""
    if settings.real_words and words is None:
        raise ValueError("real_words is on but no allowed words were given (a WordSpeller, "
                         "engine/decoding/real_words.py); LoadedModel.stream builds one")
    return words if settings.real_words else None
