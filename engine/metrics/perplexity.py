"""Perplexity from any head's marginal log p(x) (so F², POSG and termination heads all work).

Scoring goes through `LanguageModel.next_log_probs`, i.e. `head.log_probs` — the marginal
log p(x) = logsumexp over the groups holding x — never through the training loss, which for
overlapping groups (POSG) is the joint −log p(group) − log p(x | group), not −log p(x). Steps
are positions 1..T within each block, exactly as in training.

`score_blocks` returns, for every scored position, the target, its NLL and the model's argmax
next-token prediction. Per-frequency-group PPL and AGG's "Uniq" (distinct argmax next-token
predictions) have their one definition in `engine.diagnostics.predictions` (same marginal
log-probs), which the evaluation's AGG table uses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from engine.model import LanguageModel

SCORE_BUDGET = 2**24  # floats of [B, T, V] log-probs held at once (64 MiB)


@dataclass(frozen=True)
class ScoredTokens:
    """targets, nll, predictions: [M] arrays over every scored position."""

    targets: np.ndarray
    nll: np.ndarray
    predictions: np.ndarray


@torch.no_grad()
def score_blocks(model: LanguageModel, blocks: torch.Tensor, batch_size: int | None = None) -> ScoredTokens:
    """Score every block [num_blocks, T + 1]: inputs blocks[:, :-1], targets blocks[:, 1:]."""
    if blocks.ndim != 2 or blocks.shape[1] < 2:
        raise ValueError(f"blocks must be [num_blocks, T + 1] with T >= 1, got {tuple(blocks.shape)}")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    length = blocks.shape[1] - 1
    size = batch_size or max(1, SCORE_BUDGET // (length * model.config.vocab_size))
    targets, nll, predictions = [], [], []
    try:
        for start in range(0, len(blocks), size):
            block = blocks[start : start + size].to(device)
            log_probs = model.next_log_probs(block[:, :-1])  # [B, T, V] marginal
            target = block[:, 1:]
            nll.append(-log_probs.gather(-1, target[..., None])[..., 0].double().reshape(-1).cpu())
            predictions.append(log_probs.argmax(-1).reshape(-1).cpu())
            targets.append(target.reshape(-1).cpu())
    finally:
        model.train(was_training)
    return ScoredTokens(torch.cat(targets).numpy(), torch.cat(nll).numpy(), torch.cat(predictions).numpy())


def perplexity(nll: np.ndarray) -> float:
    """exp(mean NLL) in nats per token; NaN-free: raises on no tokens."""
    if nll.size == 0:
        raise ValueError("no tokens to compute perplexity over")
    return math.exp(min(float(nll.mean()), 700.0))
