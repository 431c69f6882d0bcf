"""Keyword extraction needs no spaCy: its stop words are kept as data, equal to spaCy's list."""

from __future__ import annotations

import pytest

from engine.data.stop_words import SPACY_ENGLISH_STOP_WORDS
from engine.permgen.keywords import title_keywords


def test_the_stop_words_are_spacys() -> None:
    stop_words = pytest.importorskip("spacy.lang.en.stop_words")
    assert frozenset(stop_words.STOP_WORDS) == SPACY_ENGLISH_STOP_WORDS


def test_title_keywords_drop_stop_words() -> None:
    assert title_keywords("The Dog and the Lost Ball") == ["dog", "lost", "ball"]

