"""Choosing rewrites: the margins, the seeded draw and the settings' checks, with a scorer whose NLL we set."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
import torch

from engine.model import LanguageModel
from engine.rewording.search import Rewording, RewordSettings, ScoredText, SentenceScorer, split_at_an_initial
from engine.tokenizer import VariorumTokenizer
from tests.engine.rewording.test_edits import Synonyms

Parse = Callable[[str], Any]
SOURCE = "The dog ate the cake because it was hungry."


class PricedScorer(SentenceScorer):
    """NLL = 10 + the price of each priced phrase the lowercased text holds (a stand-in for the model)."""

    def __init__(self, prices: dict[str, float]) -> None:
        self.prices = prices
        self.scored: list[str] = []

    def fits(self, text: str) -> bool:
        return len(text) < 200

    def score(self, texts: Sequence[str]) -> list[ScoredText]:
        self.scored += texts
        return [ScoredText(t, [0], [-(10.0 + price(t, self.prices))]) for t in texts]


def price(text: str, prices: dict[str, float]) -> float:
    return sum(p for phrase, p in prices.items() if phrase in text.lower())


def rewording(parse: Parse, prices: dict[str, float], **settings: float) -> Rewording:
    synonyms = Synonyms({"dog": ["cat", "horse"], "cake": ["pie"], "hungry": ["starving"]})
    return Rewording(PricedScorer(prices), synonyms, parse, RewordSettings(**settings))


def test_only_changes_within_the_margin_are_kept_and_combined(parse: Parse) -> None:
    # margins: 5 nats for one edit, 5 + 3 for two, 10 for a clause move alone
    prices = {"cat": 4.0, "horse": 6.0, "pie": 2.0, "starving": 9.0, "hungry,": 11.0, "since": 1.0,
              "as it": 1.0}
    found = {s.text for s in rewording(parse, prices).rewrites(SOURCE, 50, seed=0)}
    assert "The cat ate the cake because it was hungry." in found
    assert "The dog ate the pie because it was hungry." in found
    assert "The cat ate the pie because it was hungry." in found  # 6 ≤ 8
    assert not any("horse" in t or "starving" in t or "hungry," in t for t in found)
    assert SOURCE not in found and len(found) == len(set(found))
    assert all(price(t, prices) <= 11 for t in found)  # three changes: at most 5 + 3 + 3


def test_a_clause_move_gets_its_own_margin(parse: Parse) -> None:
    found = {s.text for s in rewording(parse, {"hungry,": 9.5}).rewrites(SOURCE, 50, seed=0)}
    assert "Because it was hungry, the dog ate the cake." in found
    found = {s.text for s in rewording(parse, {"hungry,": 9.5}, move_margin=9.0).rewrites(SOURCE, 50, seed=0)}
    assert not any(t.startswith("Because") for t in found)


def test_the_draw_is_seeded_and_gives_at_most_n_distinct_rewrites(parse: Parse) -> None:
    reword = rewording(parse, {})
    first = [s.text for s in reword.rewrites(SOURCE, 3, seed=4)]
    assert first == [s.text for s in reword.rewrites(SOURCE, 3, seed=4)]
    assert len(first) == len(set(first)) == 3
    assert len({tuple(s.text for s in reword.rewrites(SOURCE, 3, seed=k)) for k in range(6)}) > 1
    assert reword.rewrites("Hello.", 3, seed=0) == []  # nothing to change: the caller keeps the sentence
    assert reword.rewrites(SOURCE + " It ate" * 40, 3, seed=0) == []  # too long for the model to score whole


def test_a_piece_of_a_sentence_cut_at_a_name_initial_is_kept_as_written(parse: Parse) -> None:
    cut = ["It was won by U.S.", "It was bought by Stephen P .", "S. Marine pilots saw it.", "S . Pilots saw it ."]
    assert all(split_at_an_initial(piece) for piece in cut)
    assert not any(split_at_an_initial(s) for s in ("So did I.", "A dog ran.", "It was plan A.", SOURCE))
    assert rewording(parse, {}).rewrites("The dog ate the cake by Stephen P.", 3, seed=0) == []


def test_a_low_temperature_picks_the_most_fluent(parse: Parse) -> None:
    prices = {"cat": -3.0, "pie": -2.0, "horse": 6.0, "starving": 6.0, "since": 6.0, "as it": 6.0, "hungry,": 11.0}
    picks = rewording(parse, prices, temperature=1e-3).rewrites(SOURCE, 1, seed=9)
    assert [p.text for p in picks] == ["The cat ate the pie because it was hungry."]  # the lowest NLL


@pytest.mark.parametrize("settings", [{"change_margin": -1.0}, {"move_margin": -0.1}, {"temperature": 0.0}])
def test_bad_settings_are_refused(settings: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RewordSettings(**settings)


def test_the_scorer_sums_each_token_nll_after_an_end_of_text_and_padding_changes_nothing(
        tiny_model: LanguageModel, tokenizer: VariorumTokenizer) -> None:
    scorer = SentenceScorer(tiny_model, tokenizer)
    short, longer = "A cat sat.", "The dog ran home fast."
    [alone] = scorer.score([short])
    batched = scorer.score([longer, short])
    assert batched[1].nll == pytest.approx(alone.nll, abs=1e-4)
    ids = [tokenizer.eos_id, *tokenizer.encode(short), tokenizer.eos_id]  # eos, the text, eos
    mean = float(tiny_model(torch.tensor([ids[:-1]]), torch.tensor([ids[1:]])))
    assert alone.nll == pytest.approx(mean * (len(ids) - 1), rel=1e-4)
    assert alone.token_ids == tokenizer.encode(short) and len(alone.log_probs) == len(ids) - 1
    assert not scorer.fits("word " * 100)
    with pytest.raises(ValueError, match="longer than the model's window"):
        scorer.score(["word " * 100])
