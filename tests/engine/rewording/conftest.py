"""The English parser and the installed WordNet, once per session; skipped where the `pos` extra is missing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from engine.rewording import rewording_available
from engine.rewording.wordnet import WordNet


@pytest.fixture(scope="session")
def parse() -> Callable[[str], Any]:
    if not rewording_available():
        pytest.skip("rewording needs the `pos` extra (spaCy's English model, wn, lemminflect)")
    from engine.rewording.stream import english_parser

    return english_parser()


@pytest.fixture(scope="session")
def wordnet(parse: Callable[[str], Any]) -> WordNet:
    return WordNet()
