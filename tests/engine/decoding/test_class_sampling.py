"""F² class-sampling controls on ramp scores, and decoupled / flat generation with an F² head."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from engine.controls import Termination
from engine.decoding import DecodeConfig, DecodeSettingError, generate_variants
from engine.decoding.class_sampling import ClassTemperature, ClassTopK, RarityBias
from engine.decoding.stream import FINISH_EOS, FINISH_LENGTH
from engine.heads.termination import TerminationHead
from engine.model import LanguageModel
from engine.tokenizer import VariorumTokenizer
from tests.engine.heads.f2_support import build_f2_model, f2_head

IDS = torch.zeros(2, 1, dtype=torch.long)
RAMP = torch.log_softmax(torch.tensor([[3.0, 2.0, 1.0, 0.0, -1.0], [0.0, 0.5, 1.0, 0.5, 0.0]]), dim=-1)


def probs(scores: torch.Tensor) -> torch.Tensor:
    return torch.softmax(scores, dim=-1)


def mean_class(scores: torch.Tensor) -> torch.Tensor:
    return (probs(scores) * torch.arange(scores.shape[-1])).sum(-1)


def test_rarity_bias_by_hand_and_direction() -> None:
    zeros = torch.zeros(1, 5)
    assert torch.allclose(RarityBias(2.0)(IDS, zeros), torch.tensor([[0.0, 0.5, 1.0, 1.5, 2.0]]))
    # the rarest class gains e^β relative to the most frequent one
    tilted = probs(RarityBias(1.5)(IDS, RAMP))
    assert torch.allclose(tilted[:, 4] / tilted[:, 0], probs(RAMP)[:, 4] / probs(RAMP)[:, 0] * math.exp(1.5))
    means = [mean_class(RarityBias(b)(IDS, RAMP)) for b in (-3.0, -1.0, 0.0, 1.0, 3.0)]
    assert all(bool((later > earlier).all()) for earlier, later in itertools.pairwise(means))
    assert torch.equal(RarityBias(0.0)(IDS, RAMP), RAMP)
    one = torch.zeros(1, 1)
    assert torch.equal(RarityBias(5.0)(IDS, one), one)


def test_class_temperature_sharpens_and_flattens() -> None:
    def entropy(scores: torch.Tensor) -> torch.Tensor:
        p = probs(scores)
        return -(p * p.log()).sum(-1)

    assert torch.allclose(ClassTemperature(0.5)(IDS, RAMP), RAMP * 2)
    assert (entropy(ClassTemperature(0.5)(IDS, RAMP)) < entropy(RAMP)).all()
    assert (entropy(ClassTemperature(2.0)(IDS, RAMP)) > entropy(RAMP)).all()
    assert (probs(ClassTemperature(0.5)(IDS, RAMP))[0, 0] > probs(RAMP)[0, 0]).all()


def test_class_top_k_keeps_the_best_and_ties() -> None:
    kept = ClassTopK(2)(IDS, RAMP)
    assert torch.isfinite(kept[0]).tolist() == [True, True, False, False, False]
    assert torch.isfinite(kept[1]).tolist() == [False, True, True, True, False]  # tie at 0.5 kept
    assert torch.equal(ClassTopK(9)(IDS, RAMP), RAMP)


def test_processors_leave_their_input_alone() -> None:
    before = RAMP.clone()
    for processor in (RarityBias(2.0), ClassTemperature(0.7), ClassTopK(1)):
        processor(IDS, RAMP)
    assert torch.equal(RAMP, before)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: RarityBias(10.5), "class_rarity_bias must be in"),
        (lambda: RarityBias(float("nan")), "class_rarity_bias"),
        (lambda: ClassTemperature(0.0), "class_temperature must be > 0"),
        (lambda: ClassTemperature(float("inf")), "class_temperature"),
        (lambda: ClassTopK(0), "class_top_k must be an integer"),
        (lambda: ClassTopK(True), "class_top_k"),
        (lambda: DecodeConfig(class_top_k=-1), "class_top_k must be >= 0"),
        (lambda: DecodeConfig(class_temperature=-2.0), "class_temperature"),
        (lambda: DecodeConfig(class_rarity_bias=20.0), "class_rarity_bias"),
        (lambda: DecodeConfig(flat_sampling=True, class_top_k=2), "flat_sampling skips"),
    ],
)
def test_invalid_settings_raise(make: object, message: str) -> None:
    with pytest.raises(DecodeSettingError, match=message):
        make()  # type: ignore[operator]


def test_settings_build_the_group_chain_in_order() -> None:
    settings = DecodeConfig(class_top_k=2, class_temperature=0.5, class_rarity_bias=1.0)
    assert [type(p) for p in settings.group_processors()] == [RarityBias, ClassTemperature, ClassTopK]
    assert settings.active_class_controls() == ["class_temperature", "class_top_k", "class_rarity_bias"]
    assert DecodeConfig().group_processors() == []


def test_decoupled_decoding_stays_in_the_sampled_class(tokenizer: VariorumTokenizer) -> None:
    model = build_f2_model(tokenizer)
    head = f2_head(model)
    settings = DecodeConfig(max_new_tokens=30, seed=11, top_k=3, class_temperature=1.5)
    variants = generate_variants(model, tokenizer, "Mara found", 4, settings)
    for variant in variants:
        assert variant.finish_reason in (FINISH_EOS, FINISH_LENGTH)
        classes = head.token_class[torch.tensor(variant.token_ids)].tolist()
        assert classes == variant.token_groups  # every token is from the class drawn for it
    again = generate_variants(model, tokenizer, "Mara found", 4, settings)
    assert [v.token_ids for v in again] == [v.token_ids for v in variants]
    assert len({tuple(v.token_ids) for v in variants}) > 1


def test_class_controls_move_generated_classes(tokenizer: VariorumTokenizer) -> None:
    model = build_f2_model(tokenizer)
    k = f2_head(model).num_groups

    def classes(**controls: float) -> list[int]:
        settings = DecodeConfig(max_new_tokens=20, seed=5, **controls)  # type: ignore[arg-type]
        return [g for v in generate_variants(model, tokenizer, "The dog", 6, settings) for g in v.token_groups]

    rare, frequent = classes(class_rarity_bias=8.0), classes(class_rarity_bias=-8.0)
    assert sum(rare) / len(rare) > sum(frequent) / len(frequent) + k / 4


def test_class_top_1_takes_the_most_likely_class(tokenizer: VariorumTokenizer) -> None:
    model = build_f2_model(tokenizer)
    (variant,) = generate_variants(model, tokenizer, "Tom", 1, DecodeConfig(max_new_tokens=10, seed=4, class_top_k=1))
    context = [tokenizer.eos_id, *tokenizer.encode("Tom"), *variant.token_ids]
    with torch.no_grad():
        hidden = model.hidden_states(torch.tensor([context]))
        best = model.head.group_log_probs(hidden[0]).argmax(-1)  # [T]
    start = len(context) - len(variant.token_ids) - 1
    assert variant.token_groups == best[start : start + len(variant.token_ids)].tolist()


def test_greedy_takes_the_best_class_then_the_best_token_in_it(tokenizer: VariorumTokenizer) -> None:
    model = build_f2_model(tokenizer)
    (variant,) = generate_variants(model, tokenizer, "Mara", 1, DecodeConfig(max_new_tokens=8, greedy=True))
    context = [tokenizer.eos_id, *tokenizer.encode("Mara"), *variant.token_ids]
    with torch.no_grad():
        hidden = model.hidden_states(torch.tensor([context]))
        best_class = model.head.group_log_probs(hidden[0]).argmax(-1)  # [T]
        best_token = model.head.token_log_probs_in_group(hidden[0], best_class).argmax(-1)  # [T]
    start = len(context) - len(variant.token_ids) - 1
    span = slice(start, start + len(variant.token_ids))
    assert variant.token_groups == best_class[span].tolist()
    assert variant.token_ids == best_token[span].tolist()


def test_flat_sampling_draws_from_the_marginal(tokenizer: VariorumTokenizer) -> None:
    model = build_f2_model(tokenizer)
    head = f2_head(model)
    settings = DecodeConfig(max_new_tokens=12, seed=2, flat_sampling=True, greedy=True)
    (variant,) = generate_variants(model, tokenizer, "Lena", 1, settings)
    context = [tokenizer.eos_id, *tokenizer.encode("Lena"), *variant.token_ids]
    marginal = model.next_log_probs(torch.tensor([context]))[0]  # [T, V]
    start = len(context) - len(variant.token_ids) - 1
    assert variant.token_ids == [int(marginal[start + i].argmax()) for i in range(len(variant.token_ids))]
    assert variant.token_groups == head.token_class[torch.tensor(variant.token_ids)].tolist()


def test_class_controls_need_an_f2_head(tiny_model: LanguageModel, tokenizer: VariorumTokenizer) -> None:
    with pytest.raises(DecodeSettingError, match="class_rarity_bias need"):
        generate_variants(tiny_model, tokenizer, "Hi", 1, DecodeConfig(class_rarity_bias=1.0))


@pytest.mark.parametrize("termination", ["nmst", "st"])
def test_class_controls_under_a_termination_head_leave_p_eos_alone(
    tokenizer: VariorumTokenizer, termination: str
) -> None:
    # F² + NMST/ST: the rarity bias tilts the F² classes (not the appended eos group) and the
    # eos group keeps exactly α_t, so every decode still ends.
    model = build_f2_model(tokenizer, termination=termination, termination_eps=0.01)
    head = model.head
    assert isinstance(head, TerminationHead)
    capabilities = head.capabilities()
    assert capabilities.termination == Termination(termination, 0.01) and "class_rarity_bias" in capabilities.controls
    hidden, steps = torch.randn(3, model.config.n_embd), torch.tensor([1, 5, 40])
    state = torch.tensor([0.0, -0.3, -2.0], dtype=torch.float64) if termination == "st" else None
    scores = head.group_stage_scores(hidden, steps, state, lambda s: RarityBias(3.0)(IDS, s))  # [3, K + 1]
    log_alpha, log_not, _ = head.eos_terms(hidden, steps, state)
    torch.testing.assert_close(scores[:, -1], log_alpha)
    k = head.inner.num_groups
    tilted = head.inner_group_log_probs(hidden, steps) + 3.0 * torch.arange(k) / (k - 1)
    torch.testing.assert_close(scores[:, :-1], torch.log_softmax(tilted, dim=-1) + log_not[:, None])
    assert torch.logsumexp(scores, dim=-1).tolist() == pytest.approx([0.0, 0.0, 0.0], abs=1e-5)
    settings = DecodeConfig(seed=0, max_new_tokens=12, class_rarity_bias=3.0, class_top_k=2)
    variants = generate_variants(model, tokenizer, "The", 2, settings)
    assert all(v.finish_reason in (FINISH_EOS, FINISH_LENGTH) and v.token_ids for v in variants)
