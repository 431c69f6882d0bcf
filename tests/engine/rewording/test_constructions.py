"""Changes of construction: passive to active, an appositive to a relative clause."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.rewording.constructions import active_voice, appositive_clauses
from engine.rewording.edits import Rewrite
from engine.rewording.wordnet import WordNet

Parse = Callable[[str], Any]


def test_a_passive_with_an_agent_turns_active(parse: Parse) -> None:
    cases = {
        "The quark model was independently proposed by physicists Murray Gell-Mann and George Zweig in 1964.":
            ["Physicists Murray Gell-Mann and George Zweig independently proposed the quark model in 1964."],
        "The song is sung by the children every morning.": ["The children sing the song every morning."],
        "She was bitten by a dog.": ["A dog bit her."],  # pronouns change case
        "The cake was eaten by them.": ["They ate the cake."],
        "Later, he was hired by the company.": ["Later, the company hired him."],  # a fronted phrase stays
        "The bridge can be seen by visitors.": [],  # a modal
        "The prize was not won by anyone.": [],  # a negation
        "The city is surrounded by mountains and by rivers, he said.": [],
        "They are rivaled in toughness only by chitin.": [],  # "only by" would lose its "only"
        "Computer speed is characterized by the work done.": [],  # "characterizes" is rarer than a real word here
    }
    for sentence, expected in cases.items():
        doc = parse(sentence)
        assert [Rewrite(doc, order).text for order in active_voice(doc)] == expected, sentence


def test_an_appositive_becomes_a_relative_clause(parse: Parse, wordnet: WordNet) -> None:
    cases = {
        "The Janjaweed, a militia group, fought.": ["The Janjaweed, which was a militia group, fought."],
        "He met Tom, a teacher from Ohio.": ["He met Tom, who was a teacher from Ohio."],  # a person: "who"
        "Brighton, a city in Iowa, has two schools.": ["Brighton, which is a city in Iowa, has two schools."],
        "His wife, Mary, came.": [],  # a name in apposition
        "She lived in Paris, 1990.": [],
    }
    for sentence, expected in cases.items():
        doc = parse(sentence)
        assert [Rewrite(doc, order).text for order in appositive_clauses(doc, wordnet)] == expected, sentence
