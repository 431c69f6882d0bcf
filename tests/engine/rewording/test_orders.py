"""Word-order alternations on spaCy's parse: particles, recipients, adverbs and time phrases."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.rewording.edits import Rewrite
from engine.rewording.orders import Order, adverb_moves, particle_shifts, recipient_shifts, time_frontings
from engine.rewording.wordnet import WordNet

Parse = Callable[[str], Any]


def written(parse: Parse, sentence: str, orders: Callable[[Any], list[Order]]) -> list[str]:
    doc = parse(sentence)
    return [Rewrite(doc, order).text for order in orders(doc)]


def test_a_particle_moves_past_its_object_and_back(parse: Parse, wordnet: WordNet) -> None:
    cases = {
        "She picked up the phone.": ["She picked the phone up."],
        "He turned the lights off.": ["He turned off the lights."],
        "Kelly brought home a new turtle.": ["Kelly brought a new turtle home."],
        "She picked it up.": [],  # a pronoun object has one place
        "They floated down a river.": [],  # WordNet has no verb "float down": "down" is a preposition here
        "He picked up the big old red box.": [],  # too long an object to put between
    }
    for sentence, expected in cases.items():
        assert written(parse, sentence, lambda doc: particle_shifts(doc, wordnet)) == expected, sentence


def test_the_recipient_of_a_verb_of_giving_changes_place(parse: Parse, wordnet: WordNet) -> None:
    cases = {
        "He gave his mom a big hug.": ["He gave a big hug to his mom."],
        "She sent a letter to her grandmother.": ["She sent her grandmother a letter."],
        "She baked her son a cake.": ["She baked a cake for her son."],
        "She bought a ticket for the show.": [],  # a "for" phrase is not turned back
        "He sent the box to Paris.": [],  # a place is no recipient
        "He was given a prize.": [],  # passive
        "She sent it to her mom.": [],  # "sent her mom it" never
    }
    for sentence, expected in cases.items():
        assert written(parse, sentence, lambda doc: recipient_shifts(doc, wordnet)) == expected, sentence


def test_a_final_time_phrase_opens_the_sentence(parse: Parse) -> None:
    cases = {
        "We played soccer after school.": ["After school, we played soccer."],
        "He went to the store yesterday.": ["Yesterday, he went to the store."],
        "I called my mom in the morning.": ["In the morning, I called my mom."],
        "The team won the title in 1998.": ["In 1998, the team won the title."],
        "Most of the dancers were in their twenties.": [],  # what "be" says, not when
        "He served as the minister between 1945 and 1946.": [],  # a date inside is not a time phrase
        "Yesterday, I went home.": [],  # already in front
        "Tom went to bed early.": [],  # "early" is no time phrase of its own
        "Chuck came over in the evening to get help.": ["In the evening, Chuck came over to get help."],
        "She sold bread every day and was successful.": [],  # in front it would bear on both verbs
    }
    for sentence, expected in cases.items():
        assert written(parse, sentence, time_frontings) == expected, sentence


def test_a_manner_adverb_moves_before_its_verb_and_back(parse: Parse) -> None:
    cases = {
        "Charles washes his hands thoroughly.": ["Charles thoroughly washes his hands."],
        "She was walking slowly.": ["She was slowly walking."],
        "She carefully opened the box.": ["She opened the box carefully."],
        "She only ate apples.": [],  # "only" bears on what follows it
        "He quickly ran home because he was late.": [],  # not past a clause
        "Luckily the bus came.": [],
    }
    for sentence, expected in cases.items():
        assert written(parse, sentence, adverb_moves) == expected, sentence
