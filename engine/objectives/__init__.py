"""Training objectives: MLE, AGG, unlikelihood baselines, and their registry.

`build_objective(train_config, …)` turns `TrainConfig.objective` into an `Objective`:

| name            | loss                                                              |
|-----------------|-------------------------------------------------------------------|
| `mle`           | token NLL of the head                                              |
| `agg`           | NLL with AGG's gated embedding gradient (fused; agg.py)           |
| `agg-reference` | the same, computed the paper's way (three logit passes; slower)   |
| `ul-token`      | MLE + α · token-level unlikelihood (unlikelihood.py)              |
| `agg+ul-token`  | AGG + α · token-level unlikelihood (AGG paper Table 4)             |
| `ul-seq`        | sequence-level UL fine-tuning mixed with MLE                      |
| `ul-token+seq`  | sequence-level UL fine-tuning mixed with token-level UL           |
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from engine.config import ConfigError, TrainConfig
from engine.objectives.agg import AggObjective, agg_loss_fused, agg_loss_reference, agg_nll
from engine.objectives.base import MleObjective, Objective, ObjectiveModule
from engine.objectives.token_memory import TokenCounterMemory, count_targets
from engine.objectives.unlikelihood import SequenceUnlikelihood, TokenUnlikelihood
from engine.tokenizer import PAD, SPECIAL_TOKENS


@dataclass(frozen=True)
class ObjectiveContext:
    """What a factory may need beyond the train config."""

    vocab_size: int
    steps_per_epoch: int
    block_size: int
    device: torch.device


ObjectiveFactory = Callable[[TrainConfig, ObjectiveContext], Objective]


def _agg(config: TrainConfig, context: ObjectiveContext, fused: bool = True) -> AggObjective:
    window = config.agg_window or context.steps_per_epoch
    if config.agg_window < 0:
        raise ConfigError(f"agg_window must be >= 0 (0 = steps per epoch), got {config.agg_window}")
    static_after = context.steps_per_epoch if config.agg_static else 0
    memory = TokenCounterMemory(context.vocab_size, window, config.agg_alpha, static_after, context.device)
    return AggObjective(memory, config.agg_gate1, config.agg_gate2, fused=fused)


def _token_ul(primary: Objective, config: TrainConfig) -> TokenUnlikelihood:
    return TokenUnlikelihood(primary, config.ul_alpha, exclude=[SPECIAL_TOKENS.index(PAD)])


def _sequence_ul(base: Objective, config: TrainConfig, context: ObjectiveContext) -> SequenceUnlikelihood:
    objective = SequenceUnlikelihood(base, config.ul_seq_rate, config.ul_prefix, config.ul_continuation,
                                     config.ul_ngram, config.seed)
    objective.check_block(context.block_size)
    return objective


OBJECTIVES: dict[str, ObjectiveFactory] = {
    "mle": lambda config, context: MleObjective(),
    "agg": _agg,
    "agg-reference": lambda config, context: _agg(config, context, fused=False),
    "ul-token": lambda config, context: _token_ul(MleObjective(), config),
    "agg+ul-token": lambda config, context: _token_ul(_agg(config, context), config),
    "ul-seq": lambda config, context: _sequence_ul(MleObjective(), config, context),
    "ul-token+seq": lambda config, context: _sequence_ul(_token_ul(MleObjective(), config), config, context),
}


def build_objective(config: TrainConfig, context: ObjectiveContext) -> Objective:
    """The objective named by `config.objective`, or a ConfigError listing the known names."""
    try:
        factory = OBJECTIVES[config.objective]
    except KeyError:
        raise ConfigError(f"unknown objective {config.objective!r}; available: {sorted(OBJECTIVES)}") from None
    return factory(config, context)


__all__ = [
    "OBJECTIVES",
    "AggObjective",
    "MleObjective",
    "Objective",
    "ObjectiveContext",
    "ObjectiveModule",
    "SequenceUnlikelihood",
    "TokenCounterMemory",
    "TokenUnlikelihood",
    "agg_loss_fused",
    "agg_loss_reference",
    "agg_nll",
    "build_objective",
    "count_targets",
]
