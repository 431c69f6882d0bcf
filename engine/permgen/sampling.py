"""One token per candidate under an allowed-token set, for any head (one-group or two-stage).

Inside sentence t the paper samples from V ∪ {⟨E-t⟩} (§4.3 step 3). For a one-group head (or
flat sampling) that is the marginal restricted to the allowed set, then the token processors
(temperature, top-k, nucleus, repetition penalty; greedy = argmax). For a two-stage head (F²
classes, POSG tags) the restriction is applied exactly to the two-level distribution:

    p(g, x | x ∈ A) ∝ p(g) · p(x | g) · 1[x ∈ A]  ⇒  p(g | A) ∝ p(g) · p(A | g),  p(x | g, A) ∝ p(x | g) 1[x ∈ A]

so a group is drawn from log p(g) + log p(A | g) (group processors, e.g. POS bias / k_POS, act
on that) and the token from its group's allowed tokens (token processors act there). Groups with
no allowed token get −inf and are never drawn.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from engine.decoding.class_sampling import most_likely_groups
from engine.decoding.processors import NEG_INF, ScoreProcessor, apply_processors
from engine.decoding.sampler import STAGE_GROUP, STAGE_TOKEN, draw_rows
from engine.heads import OutputHead


def sample_allowed(
    head: OutputHead,
    hidden: torch.Tensor,  # [N, D]
    steps: torch.Tensor,  # [N]
    allowed: torch.Tensor,  # bool [N, V]
    history: torch.Tensor,  # [N, T] ids so far (for repetition penalty)
    token_processors: Sequence[ScoreProcessor],
    group_processors: Sequence[ScoreProcessor],
    seeds: torch.Tensor,  # [N] each row's noise key (engine/decoding/sampler.py)
    step: int,
    greedy: bool = False,
    flat: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(tokens [N], groups [N]) drawn from the head's distribution restricted to `allowed`."""
    if head.num_groups == 1 or flat:
        scores = head.log_probs(hidden, steps).masked_fill(~allowed, NEG_INF)
        tokens = draw_rows(apply_processors(token_processors, history, scores), seeds, step, STAGE_TOKEN, greedy)
        groups = most_likely_groups(head, hidden, tokens, steps) if flat else torch.zeros_like(tokens)
        return tokens, groups
    group_scores = head.group_log_probs(hidden, steps).clone()  # [N, G]
    for g in range(head.num_groups):
        in_group = head.token_log_probs_in_group(hidden, torch.full_like(steps, g), steps)  # [N, V]
        group_scores[:, g] += torch.logsumexp(in_group.masked_fill(~allowed, NEG_INF), dim=-1)  # log p(A | g)
    groups = draw_rows(apply_processors(group_processors, history, group_scores), seeds, step, STAGE_GROUP, greedy)
    in_group = head.token_log_probs_in_group(hidden, groups, steps).masked_fill(~allowed, NEG_INF)
    tokens = draw_rows(apply_processors(token_processors, history, in_group), seeds, step, STAGE_TOKEN, greedy)
    return tokens, groups
