"""Batched, KV-cached, streaming generation of N variants of one prompt.

All N variants run as one batch of decoding rows (engine/decoding/step.py: one preallocated KV
cache, a sliding window, the head's decoding state), and every row is drawn by the one sampler
(engine/decoding/token_sampler.py) whose noise comes from (seed + i, step) alone, so a variant is
reproduced exactly from its seed whatever N is. On the CPU a variant's row leaves the batch when
the variant ends, so the remaining rows' steps get cheaper. Decoding is two-stage (docs/architecture.md,
"Two-level distribution"): a group, then a token inside it; one stage for one-group heads, flat
sampling and termination heads around a one-group head. `greedy`, `top_k` and `top_p` give
exactly the NMST paper's greedy, top-k and nucleus decoders on a termination head.

Several prompts of equal token length can share one batch (`prompts=`, one per row, used by
the evaluation protocols): row i decodes prompts[i] with seed `seed + i`, and its tokens are
those of decoding prompts[i] alone with that seed, since rows never interact.

Termination heads (ST/NMST, engine/heads/termination.py) decode here too: the eos group is drawn
with probability exactly α_t (ST carries its running log(1 − α) per row, starting from the
prompt's factors), and group controls act only on the inner head's groups (the head's
`group_stage_scores`).

The context always starts with eos, the document separator used in training, so that an
empty prompt means "start of a document". When the context outgrows the model's block size,
it is cut to its last half-block and re-encoded (a sliding window), so any length works. A variant
stuck repeating a few tokens ends with `FINISH_LOOP` (engine/decoding/loops.py).
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from engine.decoding.backbone_runner import BackboneRunner
from engine.decoding.loops import FINISH_LOOP, LoopGuard
from engine.decoding.real_words import RealWordRows, WordSpeller, trailing_partial
from engine.decoding.settings import DecodeConfig
from engine.decoding.step import LanguageModelRows
from engine.decoding.token_sampler import TokenSampler
from engine.heads.termination import prompt_start_step
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from engine.torch_modes import eval_mode

INCOMPLETE_CHAR = "\ufffd"  # byte-level BPE text ends mid-character until the next token

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


def _row_prompts(
    eos_id: int, prompt_ids: Sequence[int], n: int, prompts: Sequence[Sequence[int]] | None
) -> list[list[int]]:
    """Each row's context [eos, *prompt]: `prompt_ids` for all n rows, or prompts[i] for row i."""
    if prompts is None:
        return [[eos_id, *prompt_ids]] * n
    if prompt_ids:
        raise ValueError("give either prompt_ids (one prompt for every variant) or prompts (one per row), not both")
    if len(prompts) != n:
        raise ValueError(f"{len(prompts)} prompts for {n} variants; give one prompt per variant")
    lengths = sorted({len(p) for p in prompts})
    if len(lengths) > 1:
        raise ValueError(f"prompts decoded as one batch must have equal token lengths, got lengths {lengths}")
    return [[eos_id, *p] for p in prompts]


class DecodeStream(ABC):
    """N variants decoded as one stream, whatever the model family: iterate for `TokenEvent`s; when
    iteration ends, `variants` holds the N results (what the app, the CLI and the API consume)."""

    variants: list[Variant]

    @abstractmethod
    def __iter__(self) -> Iterator[TokenEvent]:
        """Decode, yielding every new token of every variant."""


class VariantStream(DecodeStream):
    """A language model's stream: N continuations of one prompt (or one prompt per row)."""

    def __init__(
        self,
        model: LanguageModel,
        tokenizer: VariorumTokenizer,
        prompt_ids: Sequence[int],
        n: int,
        settings: DecodeConfig,
        should_stop: Callable[[], bool] | None = None,
        prompts: Sequence[Sequence[int]] | None = None,
        runner: BackboneRunner[Any] | None = None,
        words: WordSpeller | None = None,
    ) -> None:
        """`runner` computes the hidden states (engine/decoding/backbone_runner.py); default: `model` itself.
        `words` spells the allowed words when `settings.real_words` is on (engine/decoding/real_words.py)."""
        if not 1 <= n <= 64:
            raise ValueError(f"number of variants must be in [1, 64], got {n}")
        refuse_copy_limit(settings, "a language model continues its prompt")
        self.words = checked_speller(settings, words)
        self.sampler = TokenSampler(model.head, settings)  # a bad control fails here, before any token
        self.model = model
        self.runner = runner  # the backbone's step (engine/decoding/step.py); None = the torch model
        self.tokenizer = tokenizer
        # One context per row: the shared prompt n times, or each row its own (`prompts`).
        self.row_prompts = _row_prompts(tokenizer.eos_id, prompt_ids, n, prompts)
        # A context longer than the block is cut to its last half-block before anything is counted, so
        # the termination step t counts the window's tokens, as in training (`document_steps` starts
        # each training window at t = 1); counting a 65k-token prompt would start NMST near α = 1/2.
        block = model.config.block_size
        self.prompt_cut = len(self.row_prompts[0]) > block
        if self.prompt_cut:
            self.row_prompts = [row[-(block // 2) :] for row in self.row_prompts]
        self.prompt_ids = self.row_prompts[0]  # the shared prompt (row 0's when rows have their own)
        # Termination step t counts the document's tokens, prompt included (engine/heads/termination.py).
        self.start_step = prompt_start_step(self.prompt_ids, tokenizer.eos_id)
        self.start_steps = [prompt_start_step(p, tokenizer.eos_id) for p in self.row_prompts]  # per row
        self.settings = settings
        self.should_stop = should_stop or (lambda: False)
        base = settings.seed if settings.seed is not None else random.randrange(2**62)
        self.variants = [
            Variant(index=i, seed=base + i, settings=settings.variant_record(base + i), prompt_cut=self.prompt_cut)
            for i in range(n)
        ]
        self.text_tokens = [0] * n  # per variant: how many of its tokens `text` already shows in full

    def __iter__(self) -> Iterator[TokenEvent]:
        with eval_mode(self.model), torch.inference_mode():
            yield from self._run()

    def _run(self) -> Iterator[TokenEvent]:
        device = next(self.model.parameters()).device
        row_variants = [v.index for v in self.variants]  # the variant each row decodes
        seeds = torch.tensor([v.seed for v in self.variants], device=device)  # [N] per-row noise keys
        rows = LanguageModelRows(self.model, self.row_prompts, self.settings.max_new_tokens, self.runner)
        active = torch.ones(len(row_variants), dtype=torch.bool, device=device)
        spelled = None if self.words is None else RealWordRows(self.words, self._start_partials())
        loops = LoopGuard(len(row_variants))
        for step in range(1, self.settings.max_new_tokens + 1):
            if self.should_stop():
                self._finish(row_variants, active, FINISH_CANCELLED)
                return
            last = step == self.settings.max_new_tokens  # the cap follows: close the open words
            allowed = None if spelled is None else spelled.allowed(closing=[last] * len(row_variants))
            draw = self.sampler.draw(rows.hidden, rows.steps, rows.state, rows.ids, seeds, step, allowed)
            tokens = torch.where(active, draw.tokens, torch.full_like(draw.tokens, self.tokenizer.pad_id))
            yield from self._record(row_variants, active, tokens, draw.log_probs, draw.groups)
            active &= tokens != self.tokenizer.eos_id
            active &= ~self._stop_loops(loops, row_variants, active, tokens)
            if not bool(active.any()):
                return
            if step == self.settings.max_new_tokens:  # no token follows: feeding this one would be wasted
                break
            if spelled is not None:
                spelled.advance(tokens.tolist())
            kept = rows.drop_ended(active)  # [M] on the CPU when a variant ended (docs/decoding_speed.md)
            if kept is not None:
                seeds, tokens, active = seeds[kept], tokens[kept], active[kept]
                row_variants = [row_variants[r] for r in kept.tolist()]
                loops.select(kept.tolist())
                if spelled is not None:
                    spelled.select(kept.tolist())
            rows.advance(tokens)
        self._finish(row_variants, active, FINISH_LENGTH)
        if self.settings.end_at_sentence:
            from engine.decoding.sentence_end import end_at_sentence  # here: that module imports this one

            end_at_sentence([self.variants[row_variants[r]] for r in active.nonzero()[:, 0].tolist()],
                            self.tokenizer.decode)

    def _stop_loops(self, loops: LoopGuard, row_variants: list[int], active: torch.Tensor,
                    tokens: torch.Tensor) -> torch.Tensor:
        """[N] True for the rows whose latest tokens are a loop (engine/decoding/loops.py); they end here."""
        looping = torch.tensor(loops.add(tokens.tolist()), device=active.device) & active
        self._finish(row_variants, looping, FINISH_LOOP)
        return looping

    def _start_partials(self) -> list[str]:
        """Each row's partial word before its first token: the letters its context ends with."""
        return [trailing_partial(self.tokenizer.decode(prompt)) for prompt in self.row_prompts]

    def _record(
        self, row_variants: list[int], active: torch.Tensor, tokens: torch.Tensor, log_probs: torch.Tensor,
        groups: torch.Tensor,
    ) -> Iterator[TokenEvent]:
        # One device → host copy per tensor per step, not one per row and field.
        token_list, log_prob_list, group_list = tokens.tolist(), log_probs.tolist(), groups.tolist()
        for row in active.nonzero()[:, 0].tolist():
            i = row_variants[row]
            variant, token, log_prob, group = self.variants[i], token_list[row], log_prob_list[row], group_list[row]
            variant.token_ids.append(token)
            variant.token_log_probs.append(log_prob)
            variant.token_groups.append(group)
            delta = self._update_text(variant)
            if token == self.tokenizer.eos_id:
                variant.finish_reason = FINISH_EOS
            yield TokenEvent(i, token, delta, log_prob, group)

    def _update_text(self, variant: Variant) -> str:
        """Decode the variant's tokens not yet in its text; hold back an incomplete trailing character.

        A variant that ends mid-character (length cap, cancellation) keeps the text up to
        its last complete character, so `text` is always exactly the concatenated deltas.
        Only the tokens after the text's last complete character are decoded: byte-level BPE
        decodes to the UTF-8 of the tokens' bytes, and bytes that end on a character boundary
        decode the same alone as in front of more bytes, so a step costs the same at token 5
        and at token 500 (decoding every token each step grew with the length).
        """
        shown = self.text_tokens[variant.index]
        delta = self.tokenizer.decode(variant.token_ids[shown:])
        if delta.endswith(INCOMPLETE_CHAR):
            return ""
        variant.text += delta
        self.text_tokens[variant.index] = len(variant.token_ids)
        return delta

    def _finish(self, row_variants: list[int], active: torch.Tensor, reason: str) -> None:
        for row in active.nonzero()[:, 0].tolist():
            self.variants[row_variants[row]].finish_reason = reason


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


def generate_variants(
    model: LanguageModel,
    tokenizer: VariorumTokenizer,
    prompt: str,
    n: int,
    settings: DecodeConfig,
    on_token: Callable[[TokenEvent], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    runner: BackboneRunner[Any] | None = None,
    words: WordSpeller | None = None,
) -> list[Variant]:
    """Generate `n` continuations of `prompt`, calling `on_token` for each streamed token."""
    stream = VariantStream(model, tokenizer, tokenizer.encode(prompt), n, settings, should_stop, runner=runner,
                           words=words)
    for event in stream:
        if on_token is not None:
            on_token(event)
    return stream.variants
