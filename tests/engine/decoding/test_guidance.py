"""Classifier-free guidance: the guided distribution's maths, a language model's twin rows, and where guidance is
refused (group controls, a draw without the twin, paraphrases)."""

from __future__ import annotations

import pytest
import torch

from engine.decoding.generate import VariantStream
from engine.decoding.guidance import LOG_FLOOR, guided_log_probs, refuse_guidance
from engine.decoding.settings import DecodeConfig, DecodeSettingError
from engine.decoding.token_sampler import TokenSampler
from engine.model import EOS_ID, LanguageModel
from engine.permgen.decoder_model import DecoderPermGenModel
from engine.tokenizer import VariorumTokenizer
from tests.engine.decoding.test_termination_decoding import adversarial_model


def test_guidance_one_is_the_model_and_more_extrapolates_from_no_text() -> None:
    torch.manual_seed(0)
    with_text = torch.log_softmax(torch.randn(3, 11), dim=-1)
    without = torch.log_softmax(torch.randn(3, 11), dim=-1)
    assert torch.allclose(guided_log_probs(with_text, without, 1.0), with_text, atol=1e-6)
    expected = torch.log_softmax(without + 2.5 * (with_text - without), dim=-1)
    assert torch.allclose(guided_log_probs(with_text, without, 2.5), expected, atol=1e-6)
    assert torch.allclose(guided_log_probs(with_text, without, 2.5).exp().sum(-1), torch.ones(3))


def test_a_token_impossible_under_either_distribution_stays_out_without_nan() -> None:
    with_text = torch.log_softmax(torch.tensor([[0.0, 1.0, float("-inf")]]), dim=-1)
    without = torch.log_softmax(torch.tensor([[2.0, float("-inf"), float("-inf")]]), dim=-1)
    guided = guided_log_probs(with_text, without, 3.0)
    assert not torch.isnan(guided).any() and float(guided[0, 2].exp()) == 0.0
    assert float(guided[0, 1]) > float(guided[0, 0])  # only the text makes token 1 likely: guidance favours it
    assert LOG_FLOOR < -1000
    with pytest.raises(ValueError, match="guidance must be >= 1"):
        guided_log_probs(with_text, without, 0.5)


def test_guidance_refuses_group_controls_and_a_draw_without_the_twin(tiny_model: LanguageModel) -> None:
    refused = r"guidance \(“Stay on topic”\) draws each token .* class_top_k \(“Word classes to consider”\)"
    with pytest.raises(DecodeSettingError, match=refused):
        DecodeConfig(guidance=1.5, class_top_k=3)
    with pytest.raises(DecodeSettingError, match=r"guidance must be in \[1, 10\]"):
        DecodeConfig(guidance=0.5)
    sampler = TokenSampler(tiny_model.head, DecodeConfig(guidance=1.5))
    hidden = torch.zeros(1, tiny_model.config.n_embd)
    steps, seeds, history = torch.ones(1, dtype=torch.long), torch.zeros(1, dtype=torch.long), torch.zeros(1, 1)
    with pytest.raises(ValueError, match="needs the twin rows' log-probs"):
        sampler.draw(hidden, steps, None, history.long(), seeds, 1)
    with pytest.raises(ValueError, match="only a guided one takes them"):
        TokenSampler(tiny_model.head, DecodeConfig()).draw(hidden, steps, None, history.long(), seeds, 1,
                                                           guide=torch.zeros(1, tiny_model.config.vocab_size))
    with pytest.raises(ValueError, match="rewording picks among rewordings of the sentence"):
        refuse_guidance(DecodeConfig(guidance=2.0))
    refuse_guidance(DecodeConfig())


def test_a_guided_decode_on_a_termination_head_still_ends() -> None:
    """The twin says eos is certain, so guidance alone would all but forbid it; the head's floor raises it back."""
    eps = 0.05
    model = adversarial_model("nmst", eps)
    vocab = model.config.vocab_size
    sampler = TokenSampler(model.head, DecodeConfig(guidance=3.0, greedy=True))
    hidden, steps = torch.ones(1, model.config.n_embd), torch.tensor([200])  # 1 − 0.95^200 ≈ 1: eos must come
    guide = torch.full((1, vocab), -30.0)
    guide[0, EOS_ID] = 0.0
    draw = sampler.draw(hidden, steps, None, torch.zeros(1, 1, dtype=torch.long), torch.zeros(1, dtype=torch.long),
                        1, guide=guide)
    assert int(draw.tokens[0]) == EOS_ID
    marginal = model.head.decode_log_probs(hidden, steps, None)
    assert torch.equal(draw.marginal, marginal)  # the recorded log-prob stays the model's own


def guided_recompute(model: LanguageModel | DecoderPermGenModel, with_text: list[int], without: list[int],
                   strength: float) -> tuple[torch.Tensor, torch.Tensor]:
    """The model's log p(x | text) and the guided scores, each recomputed from whole sequences without a cache."""
    with torch.no_grad():
        conditioned = model.head.log_probs(model.backbone(torch.tensor([with_text]))[:, -1])
        unconditioned = model.head.log_probs(model.backbone(torch.tensor([without]))[:, -1])
    return conditioned[0], guided_log_probs(conditioned, unconditioned, strength)[0]


def test_a_guided_language_model_writes_the_argmax_of_the_guided_distribution(
    tiny_model: LanguageModel, tokenizer: VariorumTokenizer
) -> None:
    prompt = tokenizer.encode("Mara found a")
    stream = VariantStream(tiny_model, tokenizer, prompt, 1, DecodeConfig(max_new_tokens=8, greedy=True, guidance=2.0))
    list(stream)
    variant = stream.variants[0]
    written: list[int] = []
    for token, recorded in zip(variant.token_ids, variant.token_log_probs, strict=True):
        conditioned, guided = guided_recompute(tiny_model, [EOS_ID, *prompt, *written], [EOS_ID, *written], 2.0)
        assert token == int(guided.argmax())
        assert recorded == pytest.approx(float(conditioned[token]), abs=1e-4)
        written.append(token)
    unguided = VariantStream(tiny_model, tokenizer, prompt, 1, DecodeConfig(max_new_tokens=8, greedy=True))
    list(unguided)
    assert unguided.twin is None and stream.twin is not None
