"""POS-stage controls (POS bias, k_POS) on hand-made group distributions, and their settings checks."""

from __future__ import annotations

import math

import pytest
import torch

from engine.decoding import DecodeConfig, DecodeSettingError
from engine.decoding.pos_sampling import GroupBias, PosTopK, bias_factors, pos_group_processors
from engine.decoding.processors import TopP, apply_processors

NAMES = ["DT", "JJ", "JJR", "NN", "VB", "<special>"]
IDS = torch.zeros(1, 1, dtype=torch.long)


def ramp() -> torch.Tensor:
    """log p(ρ) ∝ 1..6 over NAMES: p = (1, 2, 3, 4, 5, 6) / 21."""
    return torch.log(torch.arange(1.0, 7.0) / 21.0)[None]


def test_bias_times_ten_on_adjectives_follows_the_formula() -> None:
    (bias,) = pos_group_processors({"adjectives": 10.0}, 0, NAMES)
    p = apply_processors([bias], IDS, ramp()).exp()[0]
    # adjectives JJ, JJR have mass 5/21; ×10 → 50 / (50 + 16) of the renormalized mass
    assert float(p[1] + p[2]) == pytest.approx(50 / 66, rel=1e-6)
    assert float(p[1]) == pytest.approx(20 / 66, rel=1e-6)
    assert float(p[3]) == pytest.approx(4 / 66, rel=1e-6)
    assert float(p.sum()) == pytest.approx(1.0, rel=1e-6)


def test_bias_times_one_changes_nothing() -> None:
    scores = ramp()
    (bias,) = pos_group_processors({"JJ": 1.0, "nouns": 1.0}, 0, NAMES)
    assert torch.allclose(apply_processors([bias], IDS, scores), scores, atol=1e-6)


def test_several_biases_multiply_and_the_input_is_untouched() -> None:
    scores = ramp()
    before = scores.clone()
    factors = bias_factors({"JJ": 2.0, "adjectives": 0.5, "NN": 3.0}, NAMES)
    assert factors == [1.0, 1.0, 0.5, 3.0, 1.0, 1.0]
    out = GroupBias(factors)(IDS, scores).exp()[0]
    weights = [1, 2, 1.5, 12, 5, 6]
    assert out.tolist() == pytest.approx([w / sum(weights) for w in weights], rel=1e-5)
    assert torch.equal(scores, before)


@pytest.mark.parametrize("factor", [0.05, 10.5, math.nan, math.inf, True, "2"])
def test_out_of_range_bias_is_refused(factor: object) -> None:
    with pytest.raises(DecodeSettingError, match=r"in \[0.1, 10\]"):
        DecodeConfig(pos_bias={"adjectives": factor})  # type: ignore[dict-item]


def test_unknown_and_absent_tags_are_refused() -> None:
    with pytest.raises(DecodeSettingError, match="unknown POS bias target 'adjective'"):
        DecodeConfig(pos_bias={"adjective": 2.0})
    with pytest.raises(DecodeSettingError, match="no POS group RB / RBR / RBS / WRB"):
        pos_group_processors({"adverbs": 2.0}, 0, NAMES)
    with pytest.raises(DecodeSettingError, match="need a POSG model"):
        pos_group_processors({}, 3, ["all tokens"])
    with pytest.raises(DecodeSettingError, match="flat_sampling"):
        DecodeConfig(pos_top_k=5, flat_sampling=True)
    with pytest.raises(DecodeSettingError, match="pos_top_k must be >= 0"):
        DecodeConfig(pos_top_k=-1)


def test_pos_top_k_keeps_the_k_most_probable_tags_after_the_bias() -> None:
    chain = pos_group_processors({"DT": 10.0}, 2, NAMES)
    assert [type(p) for p in chain] == [GroupBias, PosTopK]
    kept = torch.isfinite(apply_processors(chain, IDS, ramp()))[0].tolist()
    assert kept == [True, False, False, False, False, True]  # DT: 10/21 beats everything but <special>


def test_settings_chain_and_dict_round_trip() -> None:
    settings = DecodeConfig(pos_top_k=20, pos_bias={"adjectives": 10.0}, top_p=0.5)
    assert [type(p) for p in settings.group_processors(NAMES)] == [GroupBias, PosTopK]
    assert settings.group_processors() == []  # no model: validation only
    assert [type(p) for p in settings.processors()] == [TopP]
    assert DecodeConfig.from_dict(settings.to_dict()) == settings
