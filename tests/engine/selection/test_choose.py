"""Choosing variants among drafts: coherent first, repeats last, near-copies of a shown variant avoided."""

from __future__ import annotations

import pytest

from engine.metrics.sentence_repeats import repeated_sentence_share, repeats_a_sentence, sentence_keys
from engine.selection.choose import Draft, choose_drafts


def test_sentences_are_compared_without_case_punctuation_or_short_ones() -> None:
    assert sentence_keys('He went home. "Yes!" She said, "I know."') == ["he went home", "she said i know"]
    assert repeats_a_sentence("He went home. Then he slept well. he went HOME!")
    assert not repeats_a_sentence("Yes. Yes. He went home.")  # short sentences may recur
    assert repeats_a_sentence(" Tom ran fast to school.", prompt="Tom ran fast to school. He was late.")
    assert repeated_sentence_share(["A b c. A b c.", "A b c."]) == 0.5


def test_the_best_scores_are_chosen_when_drafts_differ() -> None:
    drafts = [Draft("The cat slept all day.", 0.1), Draft("A storm knocked the fence down.", 2.0),
              Draft("Mia found a coin under the bed.", 1.5), Draft("Nobody came to the party at all.", -1.0)]
    assert choose_drafts(drafts, 2) == [1, 2]


def test_a_draft_repeating_a_sentence_comes_after_every_other() -> None:
    drafts = [Draft("He ran home. He ran home. He ran home.", 9.0), Draft("She called her mother at noon.", 0.0)]
    assert choose_drafts(drafts, 2) == [1, 0]
    assert choose_drafts(drafts, 1, prompt="") == [1]


def test_an_empty_draft_comes_late_and_a_copy_of_a_shown_one_last() -> None:
    drafts = [Draft("The bus was late again.", 3.0), Draft("The bus was late again.", 2.9), Draft("", 5.0),
              Draft("Rain fell on the old roof.", -2.0)]
    assert choose_drafts(drafts, 3, diversity=0.0) == [0, 3, 2]
    assert choose_drafts(drafts, 4, diversity=0.0) == [0, 3, 2, 1]


def test_diversity_trades_score_against_repeating_a_shown_variant() -> None:
    drafts = [Draft("Sam baked a loaf of bread for his sister.", 1.0),
              Draft("Sam baked a loaf of bread for his brother.", 0.9),
              Draft("The oven caught fire and the alarm rang.", 0.0)]
    assert choose_drafts(drafts, 2, diversity=0.0) == [0, 1]
    assert choose_drafts(drafts, 2, diversity=3.0) == [0, 2]


def test_drafts_are_weighed_against_the_text_they_are_to_differ_from_first_included() -> None:
    sentence = "Sam baked a loaf of bread for his sister"
    drafts = [Draft("Sam baked a loaf of bread for his little sister.", 1.0),
              Draft("For his sister, Sam made a loaf of bread.", 0.9),
              Draft("The oven caught fire and the alarm rang.", -3.0)]
    assert choose_drafts(drafts, 1) == [0]
    assert choose_drafts(drafts, 1, unlike=sentence) == [1]  # the likeliest says the sentence nearly word for word
    assert choose_drafts(drafts, 2, unlike=sentence) == [1, 0]
    assert choose_drafts(drafts, 2, unlike=" ") == choose_drafts(drafts, 2)  # nothing to differ from


@pytest.mark.parametrize("n, diversity, problem", [(0, 1.0, "cannot choose 0"), (4, 1.0, "cannot choose 4"),
                                                   (1, -1.0, "diversity must be")])
def test_impossible_choices_are_refused(n: int, diversity: float, problem: str) -> None:
    drafts = [Draft("a b c", 0.0)] * 3
    with pytest.raises(ValueError, match=problem):
        choose_drafts(drafts, n, diversity=diversity)
