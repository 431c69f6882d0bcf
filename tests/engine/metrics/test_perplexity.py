"""Perplexity from the head's marginal log-probs agrees with the training loss for softmax."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from engine.evaluate import block_perplexity
from engine.metrics.perplexity import perplexity, score_blocks
from engine.model import LanguageModel


def test_marginal_perplexity_matches_block_perplexity(tiny_model: LanguageModel) -> None:
    blocks = torch.randint(0, tiny_model.config.vocab_size, (5, 17), generator=torch.Generator().manual_seed(0))
    scored = score_blocks(tiny_model, blocks, batch_size=2)
    assert scored.nll.shape == (5 * 16,)
    assert scored.targets.tolist() == blocks[:, 1:].reshape(-1).tolist()
    mean, ppl = block_perplexity(tiny_model, blocks)
    assert perplexity(scored.nll) == pytest.approx(ppl, rel=1e-5)
    assert float(scored.nll.mean()) == pytest.approx(mean, rel=1e-5)


def test_predictions_are_the_marginal_argmax(tiny_model: LanguageModel) -> None:
    blocks = torch.randint(0, tiny_model.config.vocab_size, (3, 9), generator=torch.Generator().manual_seed(1))
    scored = score_blocks(tiny_model, blocks)
    with torch.no_grad():
        expected = tiny_model.next_log_probs(blocks[:, :-1]).argmax(-1).reshape(-1)
    assert scored.predictions.tolist() == expected.tolist()


def test_perplexity_errors_and_cap() -> None:
    with pytest.raises(ValueError, match="no tokens"):
        perplexity(np.zeros(0))
    assert perplexity(np.array([math.log(4.0)] * 3)) == pytest.approx(4.0)
    assert math.isfinite(perplexity(np.array([1e6])))
