"""Processors on ramp scores: exact kept sets, maths of each control, no in-place changes."""

from __future__ import annotations

import math

import pytest
import torch

from engine.decoding import DecodeConfig, DecodeSettingError, RepetitionPenalty, Temperature, TopK, TopP

# log-probs of a 5-token distribution with probabilities 0.4, 0.3, 0.15, 0.1, 0.05
PROBS = torch.tensor([[0.4, 0.3, 0.15, 0.1, 0.05]])
RAMP = PROBS.log()
IDS = torch.tensor([[0, 3]])


def kept(scores: torch.Tensor) -> list[int]:
    return torch.isfinite(scores[0]).nonzero()[:, 0].tolist()


def test_temperature_scales_scores() -> None:
    out = Temperature(0.5)(IDS, RAMP)
    assert torch.allclose(out, RAMP * 2)
    sharpened = torch.softmax(out, -1)
    assert sharpened[0, 0] > PROBS[0, 0]  # T < 1 concentrates mass on the top token


def test_top_k_keeps_exactly_k_best() -> None:
    assert kept(TopK(2)(IDS, RAMP)) == [0, 1]
    assert kept(TopK(99)(IDS, RAMP)) == [0, 1, 2, 3, 4]


NUCLEUS_CASES = [(0.4, [0]), (0.41, [0, 1]), (0.7, [0, 1]), (0.71, [0, 1, 2]), (1.0, [0, 1, 2, 3, 4])]


@pytest.mark.parametrize(("p", "expected"), NUCLEUS_CASES)
def test_top_p_keeps_smallest_set_reaching_p(p: float, expected: list[int]) -> None:
    assert kept(TopP(p)(IDS, RAMP)) == expected


def test_top_p_on_unsorted_scores() -> None:
    shuffled = RAMP[:, [3, 0, 4, 1, 2]]  # probabilities 0.1, 0.4, 0.05, 0.3, 0.15
    assert kept(TopP(0.7)(IDS, shuffled)) == [1, 3]


def test_repetition_penalty_lowers_seen_tokens_only() -> None:
    out = RepetitionPenalty(2.0)(IDS, RAMP)
    assert torch.allclose(out[0, [0, 3]], RAMP[0, [0, 3]] * 2)
    assert torch.equal(out[0, [1, 2, 4]], RAMP[0, [1, 2, 4]])


@pytest.mark.parametrize(
    "processor", [Temperature(0.7), TopK(2), TopP(0.5), RepetitionPenalty(1.3)], ids=lambda p: type(p).__name__
)
def test_processors_do_not_modify_input(processor: object) -> None:
    scores = RAMP.clone()
    ids = IDS.clone()
    processor(ids, scores)  # type: ignore[operator]
    assert torch.equal(scores, RAMP)
    assert torch.equal(ids, IDS)


@pytest.mark.parametrize(
    "make",
    [
        lambda: Temperature(0.0),
        lambda: Temperature(-1.0),
        lambda: Temperature(math.nan),
        lambda: TopK(0),
        lambda: TopK(2.5),  # type: ignore[arg-type]
        lambda: TopP(0.0),
        lambda: TopP(1.5),
        lambda: RepetitionPenalty(0.5),
        lambda: DecodeConfig(max_new_tokens=0),
        lambda: DecodeConfig(top_k=-1),
        lambda: DecodeConfig(seed=-3),
    ],
)
def test_invalid_settings_raise_in_init(make: object) -> None:
    with pytest.raises(DecodeSettingError):
        make()  # type: ignore[operator]


def test_settings_build_processors_in_order() -> None:
    chain = DecodeConfig(temperature=0.8, top_k=5, top_p=0.9, repetition_penalty=1.2).processors()
    assert [type(p).__name__ for p in chain] == ["RepetitionPenalty", "Temperature", "TopK", "TopP"]
    assert DecodeConfig().processors() == []


def sort_based_top_p(p: float, scores: torch.Tensor) -> torch.Tensor:
    """The former TopP: full argsort, then scatter the dropped positions back."""
    sorted_scores, order = torch.sort(scores, dim=-1, descending=True)
    probs = torch.softmax(sorted_scores, dim=-1)
    drop_sorted = (torch.cumsum(probs, dim=-1) - probs) >= p
    drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
    return scores.masked_fill(drop, float("-inf"))


@pytest.mark.parametrize("p", [0.05, 0.5, 0.9, 0.99, 1.0])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_top_p_equals_the_sort_based_definition(p: float, dtype: torch.dtype) -> None:
    generator = torch.Generator().manual_seed(7)
    scores = torch.log_softmax(torch.randn(6, 500, generator=generator, dtype=dtype) * 3, dim=-1)
    scores[1, ::3] = float("-inf")  # forbidden tokens
    scores[2] = float("-inf")  # a row with nothing allowed stays as it is
    scores[2, 0] = 0.0
    assert torch.equal(TopP(p)(IDS, scores), sort_based_top_p(p, scores))


def test_top_p_keeps_every_token_tied_with_the_smallest_kept() -> None:
    scores = torch.tensor([[0.5, 0.25, 0.25]]).log()  # the second token alone reaches p = 0.6
    assert kept(TopP(0.6)(IDS, scores)) == [0, 1, 2]
    assert kept(TopP(0.5)(IDS, scores)) == [0]


def test_top_p_leaves_an_all_forbidden_row_unchanged() -> None:
    scores = torch.full((1, 4), float("-inf"))
    assert torch.equal(TopP(0.9)(IDS, scores), scores)
