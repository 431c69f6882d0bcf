"""align_tokens on synthetic word spans: overlap, ties, whitespace, fallback, unicode, long lines."""

from __future__ import annotations

import time

import pytest

from engine.pos import FALLBACK_TAG, TaggedWord, align_tokens


def words_of(text: str, tagged: list[tuple[str, str]]) -> list[TaggedWord]:
    """TaggedWords for (form, tag) pairs found left to right in `text`."""
    words, cursor = [], 0
    for form, tag in tagged:
        start = text.index(form, cursor)
        words.append(TaggedWord(form, start, start + len(form), tag))
        cursor = start + len(form)
    return words


def pieces(text: str, parts: list[str]) -> list[tuple[int, int]]:
    """Offsets of consecutive `parts` that concatenate to `text`."""
    assert "".join(parts) == text
    offsets, cursor = [], 0
    for part in parts:
        offsets.append((cursor, cursor + len(part)))
        cursor += len(part)
    return offsets


def test_contractions_take_the_word_with_most_overlap() -> None:
    text = "I don't think I'm late"
    words = words_of(text, [("I", "PRP"), ("do", "VBP"), ("n't", "RB"), ("think", "VB"), ("I", "PRP"),
                            ("'m", "VBP"), ("late", "JJ")])
    parts = ["I", " don", "'t", " think", " I", "'m", " late"]
    assert align_tokens(text, words, pieces(text, parts)) == ["PRP", "VBP", "RB", "VB", "PRP", "VBP", "JJ"]


def test_hyphenated_word_pieces() -> None:
    text = "state-of-the-art"
    words = words_of(text, [("state", "NN"), ("-", "HYPH"), ("of", "IN"), ("-", "HYPH"), ("the", "DT"),
                            ("-", "HYPH"), ("art", "NN")])
    parts = ["state", "-of", "-the", "-art"]
    assert align_tokens(text, words, pieces(text, parts)) == ["NN", "IN", "DT", "NN"]


def test_ties_go_to_the_leftmost_word() -> None:
    text = "ab"
    words = words_of(text, [("a", "DT"), ("b", "NN")])
    assert align_tokens(text, words, [(0, 2)]) == ["DT"]


def test_whitespace_pieces_take_next_then_previous_word() -> None:
    text = "Hi  there\n\nBye \n"
    words = words_of(text, [("Hi", "UH"), ("there", "RB"), ("Bye", "UH")])
    parts = ["Hi", " ", " there", "\n\n", "Bye", " \n"]
    assert align_tokens(text, words, pieces(text, parts)) == ["UH", "RB", "RB", "UH", "UH", "UH"]


@pytest.mark.parametrize("text", ["", "\n", "   \n\t"])
def test_texts_without_words_get_the_fallback_tag(text: str) -> None:
    offsets = [(i, i + 1) for i in range(len(text))]
    assert align_tokens(text, [], offsets) == [FALLBACK_TAG] * len(text)


def test_empty_spans_get_the_fallback_tag_even_out_of_order() -> None:
    text = "a cat"
    words = words_of(text, [("a", "DT"), ("cat", "NN")])
    offsets = [(0, 1), (1, 5), (0, 0), (2, 5), (0, 1)]
    assert align_tokens(text, words, offsets) == ["DT", "NN", FALLBACK_TAG, "NN", "DT"]


def test_unicode_and_emoji_byte_pieces_share_one_character() -> None:
    text = "naïve café 🙂👍🏽 東京"
    words = words_of(text, [("naïve", "JJ"), ("café", "NN"), ("🙂", "NFP"), ("👍🏽", "NFP"), ("東京", "NNP")])
    emoji = text.index("🙂")
    offsets = [(0, 5), (5, 10), (10, 11), (emoji, emoji + 1), (emoji, emoji + 1), (emoji, emoji + 1),
               (emoji + 1, emoji + 2), (emoji + 2, emoji + 3), (emoji + 3, emoji + 5), (emoji + 4, emoji + 5)]
    tags = align_tokens(text, words, offsets)
    assert tags == ["JJ", "NN", "NFP", "NFP", "NFP", "NFP", "NFP", "NFP", "NNP", "NNP"]


def test_combining_characters() -> None:
    text = "cafe\u0301 ok"
    words = words_of(text, [("cafe\u0301", "NN"), ("ok", "JJ")])
    assert align_tokens(text, words, [(0, 4), (4, 5), (5, 8)]) == ["NN", "NN", "JJ"]


def test_200k_character_line_is_linear() -> None:
    text = " ".join(["word"] * 40_000)
    words = [TaggedWord("word", 5 * i, 5 * i + 4, "NN" if i % 2 else "VB") for i in range(40_000)]
    offsets = [(i, i + 1) for i in range(len(text))]
    started = time.perf_counter()
    tags = align_tokens(text, words, offsets)
    assert time.perf_counter() - started < 5.0
    assert len(tags) == len(offsets)
    assert tags[:10] == ["VB"] * 4 + ["NN"] * 5 + ["VB"]  # each space takes the next word's tag


def test_every_piece_gets_exactly_one_known_tag() -> None:
    text = "x" * 10_000 + "\n\nend"
    words = words_of(text, [("x" * 10_000, "NN"), ("end", "NN")])
    offsets = [(i, min(i + 3, len(text))) for i in range(0, len(text), 3)]
    tags = align_tokens(text, words, offsets)
    assert len(tags) == len(offsets)
    assert set(tags) == {"NN"}


def test_bad_input_is_rejected() -> None:
    text = "a b"
    with pytest.raises(ValueError, match="outside the text"):
        align_tokens(text, [], [(0, 4)])
    overlapping = [TaggedWord("a b", 0, 3, "NN"), TaggedWord("b", 2, 3, "NN")]
    with pytest.raises(ValueError, match="overlaps"):
        align_tokens(text, overlapping, [])
