"""The one sampler: one token per row for N rows, for every head, under every decoding control.

Two-stage heads (F² classes, POSG tags, termination's eos group; docs/architecture.md) draw a
group from the group-stage scores (group processors: F² class controls, POS bias / k_POS) and then
a token from the group's processed distribution (token processors: repetition penalty,
temperature, top-k, top-p). One-group heads, flat sampling and heads that sample the marginal
(`OutputHead.samples_marginal`) draw the token from the marginal p(x) in one stage, after the
same token processors; the head may floor the result (`floor_marginal`, ST / NMST's eos bound).
Greedy is the argmax of each stage. Every row's draw comes from `draw_rows` (engine/decoding/
sampler.py): its noise depends only on (seed, step, stage).

**Allowed tokens.** An optional bool mask `allowed` [N, V] restricts each row's next token to a
set A (PermGen: inside sentence t, the words and ⟨E-t⟩). One stage: the marginal restricted to A.
Two stages: the restriction is applied exactly to the two-level distribution,

    p(g, x | x ∈ A) ∝ p(g) · p(x | g) · 1[x ∈ A]  ⇒  p(g | A) ∝ p(g) · p(A | g),  p(x | g, A) ∝ p(x | g) 1[x ∈ A]

so the group is drawn from log p(g) + log p(A | g) (the group processors act on that) and the
token from its group's allowed tokens (the token processors act there). Groups with no allowed
token get −inf and are never drawn. The real-words control (engine/decoding/real_words.py) is such
a mask, so it holds for every head; a termination head's eos floor (`floor_marginal`) is applied
before the mask, so eos keeps its bound wherever the mask allows it.

**Guidance.** With `guidance` γ > 1 the draw also gets the twin rows' log p(x) after no text (`guide`), and the
token is drawn in one stage from the guided marginal (engine/decoding/guidance.py), as in flat sampling.

The recorded log-prob of a token is always the model's marginal log p(x) of one decoding step,
before any processor, restriction or guidance.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from engine.decode_fields import GUIDANCE
from engine.decoding.class_sampling import check_group_controls, most_likely_groups
from engine.decoding.guidance import guided_log_probs
from engine.decoding.processors import NEG_INF, apply_processors
from engine.decoding.sampler import STAGE_GROUP, STAGE_TOKEN, draw_rows
from engine.decoding.settings import DecodeConfig
from engine.heads.base import HeadState, OutputHead
from engine.packed_linear import one_product_per_input


@dataclass(frozen=True)
class Draw:
    """One step's draw for N rows."""

    tokens: torch.Tensor  # [N]
    groups: torch.Tensor  # [N] the group each token was drawn from (flat: its likeliest group)
    marginal: torch.Tensor  # [N, V] the model's marginal log p(x) of this step (unprocessed)

    @property
    def log_probs(self) -> torch.Tensor:
        """The model's marginal log p(token) of each row [N]."""
        return self.marginal.gather(-1, self.tokens[:, None])[:, 0]


class TokenSampler:
    """Draws tokens of `head` under `settings`; built once per decode, so bad controls fail before any token."""

    def __init__(self, head: OutputHead, settings: DecodeConfig) -> None:
        check_group_controls(settings.active_class_controls(), head)  # F² controls need an F² head
        self.head = head
        self.greedy = settings.greedy
        self.token_processors = settings.processors()
        # POS bias names need the head's groups: those the controls address (a termination head's inner head).
        self.group_processors = settings.group_processors(head.controlled_head.group_names())
        self.guidance = settings.guidance  # γ; 1 = off
        self.one_stage = (head.num_groups == 1 or settings.flat_sampling or head.samples_marginal
                          or self.guided)
        self.flat = head.num_groups > 1 and self.one_stage  # one stage although the head has groups

    @property
    def guided(self) -> bool:
        """Each draw needs the twin rows' log p(x) after no text (`draw`'s `guide`)."""
        return self.guidance != GUIDANCE.off

    def draw(
        self,
        hidden: torch.Tensor,  # [N, D] last hidden state of each row
        steps: torch.Tensor,  # [N] termination step t of the token drawn
        state: HeadState,  # the head's decoding state (engine/heads/base.py)
        history: torch.Tensor,  # [N, T] ids so far (repetition penalty)
        seeds: torch.Tensor,  # [N] each row's noise key
        step: int,
        allowed: torch.Tensor | None = None,  # bool [N, V]: the tokens each row may take
        guide: torch.Tensor | None = None,  # [N, V] the twin rows' log p(x) after no text, when `guided`
    ) -> Draw:
        if self.guided != (guide is not None):
            raise ValueError("a guided draw needs the twin rows' log-probs (`guide`), and only a guided one takes them")
        with one_product_per_input(self.head):  # every stage below projects the same rows: once
            return self._draw(hidden, steps, state, history, seeds, step, allowed, guide)

    def _draw(self, hidden: torch.Tensor, steps: torch.Tensor, state: HeadState, history: torch.Tensor,
              seeds: torch.Tensor, step: int, allowed: torch.Tensor | None, guide: torch.Tensor | None) -> Draw:
        head = self.head
        marginal = head.decode_log_probs(hidden, steps, state)  # [N, V]
        groups = torch.zeros(hidden.shape[0], dtype=torch.long, device=hidden.device)
        if guide is not None:
            scores = guided_log_probs(marginal, guide, self.guidance)
        elif self.one_stage:
            scores = marginal
        else:
            restriction = None if allowed is None else head.allowed_group_mass(hidden, steps, allowed)
            group_scores = head.group_stage_scores(
                hidden, steps, state, lambda s: apply_processors(self.group_processors, history, s), restriction)
            groups = draw_rows(group_scores, seeds, step, STAGE_GROUP, self.greedy)
            scores = head.token_log_probs_in_group(hidden, groups, steps)
        if allowed is not None:
            scores = scores.masked_fill(~allowed, NEG_INF)
        scores = apply_processors(self.token_processors, history, scores)
        if self.flat:
            scores = head.floor_marginal(scores, steps)
            if allowed is not None:  # the floor raises eos even where the mask excludes it (mid-word)
                scores = scores.masked_fill(~allowed, NEG_INF)
        tokens = draw_rows(scores, seeds, step, STAGE_TOKEN, self.greedy)
        if self.flat:
            groups = most_likely_groups(head, hidden, tokens, steps)
        return Draw(tokens, groups, marginal)
