"""Paraphrases of a passage, shared by every paraphraser: the passage's sentences and layout (passage.py) and
the variants with their distance from the source (variants.py)."""
