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
