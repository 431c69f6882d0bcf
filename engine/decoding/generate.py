"""Batched, KV-cached, streaming generation of N variants of one prompt.

All N variants run as one batch with one preallocated KV cache (engine/backbones/kv_cache.py),
and every row is drawn in one vectorised call whose noise comes from (seed + i, step) alone
(engine/decoding/sampler.py), so a variant is reproduced exactly from its seed whatever N is.
Decoding is two-stage (docs/architecture.md, "Two-level distribution"): a group is drawn from the
head's group distribution, then a token from the processed in-group distribution; for one-group
heads the first stage is skipped.

Several prompts of equal token length can share one batch (`prompts=`, one per row, used by
the evaluation protocols): row i decodes prompts[i] with seed `seed + i`, and its tokens are
those of decoding prompts[i] alone with that seed, since rows never interact.

Termination heads (ST/NMST, engine/heads/termination.py) decode here too: the eos group is drawn
with probability exactly α_t (ST carries its running log(1 − α) per row, starting from the
prompt's factors), and group controls act only on the inner head's groups (`group_stage_scores`).

The context always starts with eos, the document separator used in training, so that an
empty prompt means "start of a document". When the context outgrows the model's block size,
it is cut to its last half-block and re-encoded (a sliding window), so any length works.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import torch

from engine.decoding.backbone_runner import BackboneRunner, StepCache
from engine.decoding.class_sampling import check_group_controls, most_likely_groups
from engine.decoding.processors import ScoreProcessor, apply_processors
from engine.decoding.sampler import STAGE_GROUP, STAGE_TOKEN, draw_rows
from engine.decoding.settings import DecodeConfig
from engine.heads.base import OutputHead
from engine.heads.termination import (
    TerminationHead,
    context_steps,
    log1mexp,
    prompt_start_step,
    st_prompt_state,
)
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer

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


class VariantStream:
    """Iterate for `TokenEvent`s; when iteration ends, `variants` holds the N results."""

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
    ) -> None:
        """`runner` computes the hidden states (engine/decoding/backbone_runner.py); default: `model` itself."""
        if not 1 <= n <= 64:
            raise ValueError(f"number of variants must be in [1, 64], got {n}")
        check_group_controls(settings.active_class_controls(), model.head)  # F² controls need an F² head
        self.model = model
        self.runner: BackboneRunner[Any] = runner if runner is not None else model
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
        # Built here so a bad group control fails before any token; POS bias names need the head's groups.
        self.group_processors = settings.group_processors(controlled_head(model.head).group_names())
        base = settings.seed if settings.seed is not None else random.randrange(2**62)
        self.variants = [
            Variant(index=i, seed=base + i, settings=settings.with_seed(base + i).to_dict(), prompt_cut=self.prompt_cut)
            for i in range(n)
        ]

    def __iter__(self) -> Iterator[TokenEvent]:
        was_training = self.model.training
        self.model.eval()
        try:
            with torch.inference_mode():
                yield from self._run()
        finally:
            self.model.train(was_training)

    def _encode(self, ids: torch.Tensor, cache: StepCache) -> torch.Tensor:
        """Encode the context [N, T] (cropped to the block) into the emptied cache → hidden [N, W, D]."""
        block = self.model.config.block_size
        if ids.shape[1] > block:
            ids = ids[:, -(block // 2) :]
        cache.length = 0
        return self.runner.decode(ids, cache)

    def _initial_st_state(self, ids: torch.Tensor, hidden: torch.Tensor) -> torch.Tensor | None:
        """ST's running log(1 − α) over the prompt (None for other heads); ids [N, P], hidden [N, W, D]."""
        head = self.model.head
        if not (isinstance(head, TerminationHead) and head.needs_decoding_state):
            return None
        steps = context_steps(ids, self.tokenizer.eos_id)[:, -hidden.shape[1] :]  # [N, W]
        return st_prompt_state(head, hidden, steps)

    def _run(self) -> Iterator[TokenEvent]:
        device = next(self.model.parameters()).device
        n, prompt_length = len(self.variants), len(self.row_prompts[0])
        seeds = torch.tensor([v.seed for v in self.variants], device=device)  # [N] per-row noise keys
        # Every row's ids so far, preallocated: [N, P + max_new_tokens]; `length` are filled.
        history = torch.full((n, prompt_length + self.settings.max_new_tokens), self.tokenizer.pad_id, device=device)
        history[:, :prompt_length] = torch.tensor(self.row_prompts, device=device)
        length = prompt_length
        start_steps = torch.tensor(self.start_steps, device=device)  # [N]
        cache = self.runner.new_cache(n)
        context = self._encode(history[:, :length], cache)
        st_state = self._initial_st_state(history[:, :length], context)  # ST only: p(eos_t) depends on every step
        hidden = context[:, -1]
        active = torch.ones(n, dtype=torch.bool, device=device)
        processors = self.settings.processors()
        group_processors = self.group_processors
        head, greedy = self.model.head, self.settings.greedy
        for step in range(1, self.settings.max_new_tokens + 1):
            if self.should_stop():
                self._finish(active, FINISH_CANCELLED)
                return
            ids = history[:, :length]  # [N, T]
            steps = start_steps + step  # [N]
            groups = torch.zeros(n, dtype=torch.long, device=device)
            flat = samples_marginal(head, self.settings)
            if head.num_groups > 1 and not flat:
                group_scores = group_stage_scores(head, group_processors, ids, hidden, steps, st_state)
                groups = draw_rows(group_scores, seeds, step, STAGE_GROUP, greedy)
            in_group = (_marginal(head, hidden, steps, st_state) if flat
                        else head.token_log_probs_in_group(hidden, groups, steps))
            scores = apply_processors(processors, ids, in_group)
            if flat and isinstance(head, TerminationHead):
                scores = floor_eos(head, scores, steps)
            tokens = draw_rows(scores, seeds, step, STAGE_TOKEN, greedy)
            if flat:
                groups = most_likely_groups(head, hidden, tokens, steps)
            marginal = in_group if head.num_groups == 1 or flat else _marginal(head, hidden, steps, st_state)
            if st_state is not None:
                st_state = cast(TerminationHead, head).eos_terms(hidden, steps, st_state)[2]
            log_probs = marginal.gather(-1, tokens[:, None])[:, 0]
            tokens = torch.where(active, tokens, torch.full_like(tokens, self.tokenizer.pad_id))
            yield from self._record(active, tokens, log_probs, groups)
            active &= tokens != self.tokenizer.eos_id
            if not bool(active.any()):
                return
            history[:, length] = tokens
            length += 1
            if cache.length < cache.capacity:
                hidden = self.runner.decode(tokens[:, None], cache)[:, -1]
            else:  # the window is full: re-encode its last half (a sliding window)
                hidden = self._encode(history[:, :length], cache)[:, -1]
        self._finish(active, FINISH_LENGTH)

    def _record(
        self, active: torch.Tensor, tokens: torch.Tensor, log_probs: torch.Tensor, groups: torch.Tensor
    ) -> Iterator[TokenEvent]:
        # One device → host copy per tensor per step, not one per row and field.
        token_list, log_prob_list, group_list = tokens.tolist(), log_probs.tolist(), groups.tolist()
        for i in active.nonzero()[:, 0].tolist():
            variant, token, log_prob, group = self.variants[i], token_list[i], log_prob_list[i], group_list[i]
            variant.token_ids.append(token)
            variant.token_log_probs.append(log_prob)
            variant.token_groups.append(group)
            delta = self._update_text(variant)
            if token == self.tokenizer.eos_id:
                variant.finish_reason = FINISH_EOS
            yield TokenEvent(i, token, delta, log_prob, group)

    def _update_text(self, variant: Variant) -> str:
        """Decode the variant so far; hold back an incomplete trailing character.

        A variant that ends mid-character (length cap, cancellation) keeps the text up to
        its last complete character, so `text` is always exactly the concatenated deltas.
        """
        text = self.tokenizer.decode(variant.token_ids)
        if text.endswith(INCOMPLETE_CHAR):
            return ""
        delta = text.removeprefix(variant.text)
        variant.text = text
        return delta

    def _finish(self, active: torch.Tensor, reason: str) -> None:
        for i in active.nonzero()[:, 0].tolist():
            self.variants[i].finish_reason = reason


def samples_marginal(head: OutputHead, settings: DecodeConfig) -> bool:
    """Whether tokens are drawn in one stage from the marginal p(x) (over V ∪ {eos}) instead of group → token.

    Always for the flat-sampling ablation. Also for a termination head around a one-group head: its
    groups are only "eos" and "the rest", and NMST defines greedy, top-k and nucleus on the
    distribution over V ∪ {eos} (paper Eq. 8 ff.), so greedy ends as soon as eos is the most probable
    token, not only once p(eos) > 1/2 (docs/architecture.md, "Termination heads")."""
    if head.num_groups == 1:
        return False
    return settings.flat_sampling or (isinstance(head, TerminationHead) and head.inner.num_groups == 1)


def floor_eos(head: TerminationHead, scores: torch.Tensor, steps: torch.Tensor) -> torch.Tensor:
    """Processed scores [N, V] → log-probs with p(eos) ≥ 1 − (1 − ε)^t, the bound every ST / NMST α_t meets.

    Sampling from the marginal lets token processors reach eos: a huge temperature flattens p(eos)
    to about 1/V, a truncation may drop it. Raising eos back to the bound (the other tokens scaled
    by the mass left) keeps the guarantee that every decode ends; rows already above it are unchanged."""
    log_p = torch.log_softmax(scores.float(), dim=-1)  # [N, V]
    log_eos = log_p[:, head.eos_id]  # [N]
    log_bound = log1mexp(steps.float() * math.log1p(-head.eps))  # log(1 − (1 − ε)^t), [N]
    raised = torch.maximum(log_eos, log_bound)
    rest = log1mexp(raised) - log1mexp(log_eos)  # log of the non-eos mass's scale factor, [N]
    eos_column = torch.full_like(log_p[:, :1], head.eos_id, dtype=torch.long)
    floored = (log_p + rest[:, None]).scatter(-1, eos_column, raised[:, None])
    return torch.where((log_eos < log_bound)[:, None], floored, log_p)


def controlled_head(head: OutputHead) -> OutputHead:
    """The head whose groups the group controls address: a termination head's inner head."""
    return head.inner if isinstance(head, TerminationHead) else head


def group_stage_scores(
    head: OutputHead, processors: list[ScoreProcessor], ids: torch.Tensor, hidden: torch.Tensor,
    steps: torch.Tensor, st_state: torch.Tensor | None,
) -> torch.Tensor:
    """Processed group-stage scores [N, G].

    Under a termination head the controls reshape only p(g | ¬eos), the inner head's groups, and
    the eos group keeps exactly α_t: class or POS controls never change when text ends, so
    NMST's guarantee (every decode ends) holds whatever the writer sets."""
    if not isinstance(head, TerminationHead):
        return apply_processors(processors, ids, head.group_log_probs(hidden, steps))
    log_alpha, log_not, _ = head.eos_terms(hidden, steps, st_state)
    shaped = torch.log_softmax(apply_processors(processors, ids, head.inner_group_log_probs(hidden, steps)), dim=-1)
    return torch.cat([shaped + log_not[:, None], log_alpha[:, None]], dim=-1)


def _marginal(
    head: OutputHead, hidden: torch.Tensor, steps: torch.Tensor, st_state: torch.Tensor | None
) -> torch.Tensor:
    """The model's marginal log p(x) [N, V] (ST with its running state)."""
    if isinstance(head, TerminationHead):
        return head.log_probs(hidden, steps, st_state)
    return head.log_probs(hidden, steps)


def generate_variants(
    model: LanguageModel,
    tokenizer: VariorumTokenizer,
    prompt: str,
    n: int,
    settings: DecodeConfig,
    on_token: Callable[[TokenEvent], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    runner: BackboneRunner[Any] | None = None,
) -> list[Variant]:
    """Generate `n` continuations of `prompt`, calling `on_token` for each streamed token."""
    stream = VariantStream(model, tokenizer, tokenizer.encode(prompt), n, settings, should_stop, runner=runner)
    for event in stream:
        if on_token is not None:
            on_token(event)
    return stream.variants
