"""The changes proposed on spaCy's parse of a sentence, and how a chosen set is written out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.rewording.edits import (
    Rewrite,
    WordEdit,
    clause_moves,
    conjunct_swaps,
    indefinite_article,
    non_overlapping,
    word_edits,
)
from engine.rewording.phrasing import phrasing_edits
from engine.rewording.wordnet import WordNet

Parse = Callable[[str], Any]


class Synonyms(WordNet):
    """A WordNet that knows only the synonyms it is given (lemma → words)."""

    def __init__(self, table: dict[str, list[str]]) -> None:
        self.table = table

    def synonyms(self, lemma: str, pos: str, attributive: bool | None = None) -> list[str]:
        return self.table.get(lemma, [])


def rewrites(parse: Parse, sentence: str, edits: list[WordEdit]) -> dict[int, list[str]]:
    """token index → the sentences its single edits write."""
    doc = parse(sentence)
    order = tuple(token.i for token in doc)
    found: dict[int, list[str]] = {}
    for edit in edits:
        found.setdefault(edit.index, []).append(Rewrite(doc, order, (edit,)).text)
    return found


def test_first_sense_synonyms_inflected_like_the_word(parse: Parse, wordnet: WordNet) -> None:
    sentence = "He bought two new cars because the children were sick."
    written = [t for texts in rewrites(parse, sentence, word_edits(parse(sentence), wordnet)).values() for t in texts]
    assert "He purchased two new cars because the children were sick." in written  # VBD
    assert "He bought two new cars because the kids were sick." in written
    assert "He bought two new cars because the children were ill." not in written  # sick: not mostly "ill"
    assert all(t.startswith("He ") for t in written)  # a pronoun is never replaced


def test_words_of_a_compound_keep_their_words(parse: Parse) -> None:
    doc = parse("They hired a country band and emptied the trash can.")
    changed = {doc[e.index].text for e in word_edits(doc, Synonyms({w: ["thing"] for w in ("country", "band",
                                                                                           "trash", "can")}))}
    assert changed == set()
    doc = parse("It was a big country western band.")  # "country" modifies "band" (nmod)
    assert [e.text for e in word_edits(doc, Synonyms({"country": ["nation"], "big": ["large"]}))] == ["a large"]
    adjectives = Synonyms({"small": ["little"], "high": ["tall"], "aged": ["elderly"], "big": ["large"]})
    doc = parse("Small value parts went to his college aged son, a high school student with a big car.")
    assert [doc[e.covered[-1]].text for e in word_edits(doc, adjectives)] == ["big"]  # "a big" → "a large"


def test_names_stop_words_passives_and_light_verbs_keep_their_words(parse: Parse) -> None:
    every_word = Synonyms({w: ["thing"] for w in ("tom", "meeting", "move", "be", "friday", "have")})
    doc = parse("Tom said the meeting was moved to Friday and we have been there.")
    changed = {doc[e.index].text for e in word_edits(doc, every_word)}
    assert changed == {"meeting"}  # not the name, the passive "moved", "be" / "have", nor a stop word


def test_rare_abbreviated_phrase_and_function_word_synonyms_are_left_out(parse: Parse) -> None:
    table = {"later": ["after", "then", "earlier"], "day": ["solar day", "night"], "east": ["E", "west", "easts"],
             "bread": ["staff of life", "breadstuff", "food"], "walk": ["head out", "run"], "bake": ["broil"]}
    doc = parse("Later that day, they baked bread and walked east.")
    texts = {e.text for e in word_edits(doc, Synonyms(table))}
    # not: stop words (after, then), phrases (solar day, staff of life, head out), an abbreviation (E), a spelling,
    # a rare word (breadstuff), a word much rarer than the writer's ("broiled" for "baked")
    assert texts == {"Earlier", "night", "west", "food", "ran"}  # the capital kept, the tense followed


def test_a_substitute_after_an_article_brings_the_article_it_needs(parse: Parse) -> None:
    doc = parse("She ate an egg and a cake.")
    edits = word_edits(doc, Synonyms({"egg": ["cake"], "cake": ["egg"]}))
    texts = sorted(Rewrite(doc, tuple(t.i for t in doc), (e,)).text for e in edits)
    assert texts == ["She ate a cake and a cake.", "She ate an egg and an egg."]
    assert indefinite_article("orange") == "an" and indefinite_article("Pear") == "a"
    assert not non_overlapping(edits[:1] * 2) and non_overlapping(edits)


def test_a_final_subordinate_clause_moves_to_the_front_and_back(parse: Parse) -> None:
    doc = parse("The meeting was moved to Friday because the manager was sick.")
    assert [Rewrite(doc, order).text for order in clause_moves(doc)] == [
        "Because the manager was sick, the meeting was moved to Friday."]
    doc = parse("When the rain stopped, Tom ran outside.")
    assert [Rewrite(doc, order).text for order in clause_moves(doc)] == ["Tom ran outside when the rain stopped."]
    doc = parse("After dinner, we watched a movie.")
    assert [Rewrite(doc, order).text for order in clause_moves(doc)] == ["We watched a movie after dinner."]
    doc = parse("Six weeks later their divorce was final.")  # no comma
    assert [Rewrite(doc, order).text for order in clause_moves(doc)] == ["Their divorce was final six weeks later."]
    assert clause_moves(parse("However, it rained.")) == clause_moves(parse("Sadly, it rained.")) == []  # 1 word
    assert clause_moves(parse("She smiled.")) == []
    assert clause_moves(parse("For example, the king was born on a Monday.")) == []  # it links back
    assert clause_moves(parse("Following the drummers are the dancers.")) == []  # a verb would open it
    assert clause_moves(parse("The wind rose soon after I arrived.")) == []  # not "After I arrived, … soon."
    assert clause_moves(parse("When Pablo came home he smiled.")) == []  # not "He smiled when Pablo came home."


def test_a_move_and_word_edits_write_together(parse: Parse, wordnet: WordNet) -> None:
    doc = parse("I walked home because I was tired.")
    [order] = clause_moves(doc)
    edit = next(e for e in word_edits(doc, Synonyms({"walk": ["run"]})))
    assert Rewrite(doc, order, (edit,)).text == "Because I was tired, I ran home."


def test_phrases_contractions_verb_forms_and_that(parse: Parse) -> None:
    cases = {
        "He didn't go.": ["He did not go."],
        "She was not ready.": ["She wasn't ready."],
        "I can't swim.": ["I cannot swim."],
        "They will not come.": ["They won't come."],
        "It's cold today.": ["It is cold today."],
        "It is cold today.": ["It's cold today."],
        "She said that Tom's dog was lost.": ["She said Tom's dog was lost."],  # a possessive 's stays
        "She thought Anna was late.": ["She thought that Anna was late."],
        "She told him how she felt.": [],  # "how" opens the clause
        "They told him it was dead.": ["They told him that it was dead."],
        "He saw it snow outside.": [],  # a bare verb: not a clause "that" can open
        "It has a copy which is small.": ["It has a copy that is small."],  # never "which's"
        "Yes, it is.": [],  # never end a sentence on a clitic
        "It started crawling on her.": ["It started to crawl on her."],
        "They began to run home.": ["They began running home."],
        "He wanted to run home.": [],  # "want" takes only "to"
        "He left because of the rain.": ["He left due to the rain."],  # the longest phrase, not "because"
        "It rained, though.": [],  # an adverb "though" is not "although"
        "Although tired, he ran almost home.": ["Though tired, he ran almost home.",
                                                "Even though tired, he ran almost home.",
                                                "Although tired, he ran nearly home."],
        "The man who lived next door was kind.": ["The man that lived next door was kind."],
        "The book, which he wrote, sold well.": [],  # after a comma the clause is a remark: no "that"
        "The house in which she lived burned.": [],  # nor after a preposition
        "People who are waiting outside got wet.": ["People that are waiting outside got wet.",
                                                    "People waiting outside got wet.",
                                                    "People who are waiting outside became wet."],
        "She got married.": [],  # "get" + a participle is no change of state into an adjective
        "It got him angry.": [],
        "The game got underway.": [],  # an idiom, not a state
        "He found out she moved away.": ["He found out that she moved away."],  # after a particle too
        "She was a little sad.": ["She was a bit sad."],
        "She drank a little water.": [],  # "a little" of an amount stays
        "The man who was killed was old.": ["The man that was killed was old."],  # "the man killed was" misleads
        "The game was cancelled due to rain.": ["The game was cancelled because of rain."],
        "The train is due to arrive soon.": [],  # "due to" before a verb means "expected to"
        "It cost approximately five dollars.": ["It cost about five dollars.", "It cost around five dollars."],
        "As a result of the storm, we stayed.": ["Because of the storm, we stayed."],  # four words
        "All of a sudden, the lights went out.": ["Suddenly, the lights went out."],
        "She was really happy.": ["She was very happy."],
        "She really wanted a dog.": [],  # "really" that is not a degree stays
        "The next day, he called her.": ["The following day, he called her."],
        "That is what they are.": ["That's what they are."],  # "that" contracts only with "is"
    }
    for sentence, expected in cases.items():
        doc = parse(sentence)
        order = tuple(t.i for t in doc)
        assert [Rewrite(doc, order, (e,)).text for e in phrasing_edits(doc)] == expected, sentence


def test_two_joined_nouns_or_adjectives_change_places(parse: Parse) -> None:
    cases = {
        "The cat and the dog slept.": ["The dog and the cat slept."],
        "Tom and Anna went home.": ["Anna and Tom went home."],  # names keep their capitals
        "The bright and warm room was red or blue.": ["The warm and bright room was red or blue.",
                                                      "The bright and warm room was blue or red."],
        "She bought some bread and milk.": [],  # "some" is shared: "milk and some bread" would change it
        "They ran and jumped.": [],  # events in order
        "We met the cook and the maid, a friend.": [],  # punctuation inside a conjunct
        "He joined the Rock and Roll Hall of Fame.": [],  # inside one name
        "He bought apples, pears, and plums.": ["He bought pears, apples, and plums."],  # a list: the first two
        "We saw lions, tigers or bears.": ["We saw tigers, lions or bears."],
        "He liked red, blue but not green.": [],  # "but" joins what differs
        "He did not have a fireplace and no blankets.": [],  # "no" would change what it denies
    }
    for sentence, expected in cases.items():
        doc = parse(sentence)
        assert [Rewrite(doc, order).text for order in conjunct_swaps(doc)] == expected, sentence


def test_a_rare_word_keeps_its_place(parse: Parse) -> None:
    doc = parse("Fives is a British sport.")  # "fives", a sport, is rarer than MIN_ZIPF
    assert word_edits(doc, Synonyms({"fives": ["fins"], "sport": ["game"]})) == [WordEdit(4, "game")]


def test_a_plural_in_s_is_not_put_before_a_possessive_s(parse: Parse) -> None:
    kids = Synonyms({"child": ["kid"]})
    assert word_edits(parse("They sold the children's toys."), kids) == []  # never "kids's toys"
    assert word_edits(parse("They sold the child's toys."), kids) == [WordEdit(3, "kid")]
