"""Continuation features: the log-probabilities are the model's own, padding and batching change nothing."""

from __future__ import annotations

import pytest
import torch

from engine.coherence.features import SCALARS, FeatureLimits, continuation_features, feature_width
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from tests.conftest import tiny_config

PROMPTS = ["The dog ran to the park.", "Anna baked bread for her family and friends.", ""]
ENDINGS = [" It played with a ball.", " Everyone loved it.", " Then it rained."]


@pytest.fixture
def model(tokenizer: VariorumTokenizer) -> LanguageModel:
    """A tiny model whose window holds every prompt and ending here whole."""
    torch.manual_seed(0)
    return LanguageModel(tiny_config(tokenizer.vocab_size, block_size=64)).eval()


def _mean_log_p(model: LanguageModel, tokenizer: VariorumTokenizer, prompt: str, ending: str) -> float:
    prompt_ids, ending_ids = tokenizer.encode(prompt), tokenizer.encode(ending)
    ids = torch.tensor([[tokenizer.eos_id, *prompt_ids, *ending_ids]])
    log_probs = model.next_log_probs(ids)[0]  # [T, V]
    start = len(prompt_ids)  # position predicting the first ending token
    picked = [float(log_probs[start + i, token]) for i, token in enumerate(ending_ids)]
    return sum(picked) / len(picked)


def test_scalars_are_the_models_mean_log_probabilities(model: LanguageModel,
                                                       tokenizer: VariorumTokenizer) -> None:
    features = continuation_features(model, tokenizer, PROMPTS, ENDINGS)
    assert features.shape == (3, feature_width(model))
    for row, (prompt, ending) in enumerate(zip(PROMPTS, ENDINGS, strict=True)):
        cond = _mean_log_p(model, tokenizer, prompt, ending)
        uncond = _mean_log_p(model, tokenizer, "", ending)
        assert features[row, SCALARS.index("cond")] == pytest.approx(cond, abs=1e-4)
        assert features[row, SCALARS.index("uncond")] == pytest.approx(uncond, abs=1e-4)
        assert features[row, SCALARS.index("pmi")] == pytest.approx(cond - uncond, abs=1e-4)
    # a pair without a prompt reads the same text twice: its pmi is zero and both hidden means agree
    dim = model.config.n_embd
    assert torch.allclose(features[2, 3 : 3 + dim], features[2, 3 + dim :], atol=1e-5)


def test_batching_and_padding_change_nothing(model: LanguageModel, tokenizer: VariorumTokenizer) -> None:
    together = continuation_features(model, tokenizer, PROMPTS, ENDINGS, FeatureLimits(batch_size=3))
    alone = torch.cat([continuation_features(model, tokenizer, [p], [e])
                       for p, e in zip(PROMPTS, ENDINGS, strict=True)])
    assert torch.allclose(together, alone, atol=1e-5)


def test_long_prompts_keep_their_end_within_the_window(model: LanguageModel,
                                                       tokenizer: VariorumTokenizer) -> None:
    """The continuation first, then as much of the prompt's end as the window holds."""
    long_prompt = "The dog ran to the park." * 40  # far past the tiny model's 64 positions
    ending_ids = tokenizer.encode(ENDINGS[0])
    kept = tokenizer.encode(long_prompt)[-(63 - len(ending_ids)):]
    features = continuation_features(model, tokenizer, [long_prompt], [ENDINGS[0]])
    ids = torch.tensor([[tokenizer.eos_id, *kept, *ending_ids]])
    log_probs = model.next_log_probs(ids)[0]
    expected = sum(float(log_probs[len(kept) + i, t]) for i, t in enumerate(ending_ids)) / len(ending_ids)
    assert features[0, 0] == pytest.approx(expected, abs=1e-4)


def test_an_empty_continuation_scores_as_nothing_written(model: LanguageModel,
                                                         tokenizer: VariorumTokenizer) -> None:
    features = continuation_features(model, tokenizer, ["The dog ran."], [""])
    assert features[0, SCALARS.index("cond")] == -50.0
    assert torch.count_nonzero(features[0, len(SCALARS):]) == 0


def test_mismatched_lengths_are_refused(model: LanguageModel, tokenizer: VariorumTokenizer) -> None:
    with pytest.raises(ValueError, match="2 prompts for 1 continuations"):
        continuation_features(model, tokenizer, ["a", "b"], ["c"])
