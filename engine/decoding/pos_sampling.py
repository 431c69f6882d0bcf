"""POS-stage controls of POS Guided Sampling (paper §4.2 Eq. 5, §6.2 Table 9): group processors.

Two-stage sampling draws a POS group from p'(ρ) and then a token from the processed in-group
distribution p'(x | ρ) (`engine.decoding.generate`). The controls here act on the first stage,
scores [N, P] over the head's groups, and run in this order:

1. `GroupBias` — POS bias: multiply p(ρ) of chosen tags by factors (bounds: engine/decode_fields) and renormalize
   (§6.2: "multiply the probability of 'Adjective' and renormalize by dividing by the sum").
   A writer names PTB tags ("JJ") or coarse groups ("adjectives" = JJ JJR JJS, `engine.pos.tags`);
   several at once; a tag named twice (itself and through its group) gets the product.
2. `PosTopK` — k_POS: keep the k most probable groups after the bias (P' of Eq. 5; the paper uses
   k = 20 for language modelling, 5 for paraphrase).

Token nucleus within V_ρ (α_token) is the ordinary `TopP` token processor applied to the in-group
distribution, whose out-of-group tokens are already −inf: one nucleus convention everywhere (keep
the smallest most-probable set whose mass reaches α, see `TopP`). Applied after bias, so k_POS
picks among the biased probabilities. Special groups (eos …) are groups like any other here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import torch

from engine.decode_fields import POS_BIAS_FACTORS
from engine.decoding.processors import DecodeSettingError, ScoreProcessor, TopK
from engine.pos.tags import COARSE_GROUPS, PTB_TAGS
from engine.pos.vocab import SPECIAL_GROUP, UNSEEN_GROUP

POS_GROUP_NAMES = (*PTB_TAGS, SPECIAL_GROUP, UNSEEN_GROUP)


class GroupBias(ScoreProcessor):
    """Multiply each group's probability by a factor and renormalize: scores [N, G] → log p'(ρ)."""

    def __init__(self, factors: Sequence[float]) -> None:
        if not factors or any(not (math.isfinite(f) and f > 0) for f in factors):
            raise DecodeSettingError(f"group bias factors must be finite and > 0, got {list(factors)}")
        self.log_factors = torch.tensor([math.log(f) for f in factors], dtype=torch.float32)  # [G]

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if scores.shape[-1] != self.log_factors.numel():
            raise DecodeSettingError(f"bias has {self.log_factors.numel()} factors for {scores.shape[-1]} groups")
        biased = scores + self.log_factors.to(scores.device, scores.dtype)  # log(p·f), [N, G]
        return torch.log_softmax(biased, dim=-1)  # divide by the sum


class PosTopK(TopK):
    """k_POS: keep the k most probable POS groups (ties at the k-th are kept, as `TopK`)."""

    setting = "pos_top_k (k_POS)"


def check_pos_bias(bias: Mapping[str, float]) -> None:
    """Validate names and factor ranges without a model (DecodeConfig validation)."""
    for name, factor in bias.items():
        if name not in COARSE_GROUPS and name not in POS_GROUP_NAMES:
            raise DecodeSettingError(
                f"unknown POS bias target {name!r}; use a coarse group ({', '.join(COARSE_GROUPS)}) "
                f"or a PTB tag such as JJ, NN, VBD"
            )
        if isinstance(factor, bool) or not isinstance(factor, int | float) or not POS_BIAS_FACTORS.holds(factor):
            raise DecodeSettingError(
                f"POS bias for {name!r} must be a number {POS_BIAS_FACTORS.text()}, got {factor!r}")


def bias_factors(bias: Mapping[str, float], group_names: Sequence[str]) -> list[float]:
    """One factor per group of the model (1.0 where not biased); names must exist in the model."""
    check_pos_bias(bias)
    index = {name: g for g, name in enumerate(group_names)}
    factors = [1.0] * len(group_names)
    for name, factor in bias.items():
        tags = COARSE_GROUPS.get(name, (name,))
        present = [index[t] for t in tags if t in index]
        if not present:
            raise DecodeSettingError(
                f"POS bias {name!r}: this model has no POS group {' / '.join(tags)}"
                + ("" if any(n in POS_GROUP_NAMES for n in group_names) else " (it is not a POSG model)")
            )
        for g in present:
            factors[g] *= float(factor)
    return factors


def pos_group_processors(bias: Mapping[str, float], pos_top_k: int,
                         group_names: Sequence[str] | None) -> list[ScoreProcessor]:
    """The POS-stage chain for a model with these groups; with `group_names` None, only validates."""
    check_pos_bias(bias)
    top_k = PosTopK(pos_top_k) if pos_top_k else None
    if group_names is None:
        return []
    if (bias or top_k) and not any(name in POS_GROUP_NAMES for name in group_names):
        raise DecodeSettingError("POS bias and k_POS need a POSG model; this model has no POS groups")
    chain: list[ScoreProcessor] = []
    if bias:
        chain.append(GroupBias(bias_factors(bias, group_names)))
    if top_k is not None:
        chain.append(top_k)
    return chain


def parse_pos_bias(items: Sequence[str]) -> dict[str, float]:
    """`["adjectives=10", "NN=0.5"]` (command line) → {"adjectives": 10.0, "NN": 0.5}, validated."""
    bias: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            factor = float(value)
        except ValueError:
            factor = math.nan
        if not sep or not name or math.isnan(factor):
            raise DecodeSettingError(f"POS bias {item!r}: expected TAG=FACTOR or GROUP=FACTOR, e.g. adjectives=10")
        bias[name] = factor
    check_pos_bias(bias)
    return bias
