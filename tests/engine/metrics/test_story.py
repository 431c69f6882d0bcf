"""A story keeps an asked sentence order only when every sentence is written whole, and repeats its title word
only when one sentence says it twice."""

from __future__ import annotations

from engine.metrics.story import ends_as_a_sentence, follows_order, repeats_title_word, share, title_words


def test_an_order_is_followed_only_by_whole_sentences_in_that_order_ending_on_their_own() -> None:
    sentences = {1: "Tom woke up.", 2: "He was late!", 3: 'She said "go."'}
    assert follows_order([2, 1, 3], [2, 1, 3], sentences, ended=True)
    assert not follows_order([2, 1, 3], [1, 2, 3], sentences, ended=True)  # another order
    assert not follows_order([2, 1, 3], [2, 1, 3], sentences, ended=False)  # stopped at a limit
    assert not follows_order([2, 1, 3], [2, 1, 3], {**sentences, 3: "and then the"}, ended=True)  # cut off
    assert not follows_order([2, 1, 3], [2, 1, 3], {1: "Tom woke up.", 2: "He was late!"}, ended=True)  # missing
    assert ends_as_a_sentence("It was (finally.) ") and not ends_as_a_sentence("It was")


def test_a_title_word_twice_in_one_sentence_counts_and_once_in_each_sentence_does_not() -> None:
    assert title_words("The Old Lighthouse of 1901") == {"old", "lighthouse"}
    assert repeats_title_word("The Lighthouse", ["We went out.", "The lighthouse was a Lighthouse."])
    assert not repeats_title_word("The Lighthouse", ["The lighthouse stood.", "We climbed the lighthouse."])
    assert not repeats_title_word("The the", ["The the the."])  # stop words are not title words
    assert share([True, False, False, True]) == 0.5 and share([]) is None
