"""Coherence of a continuation given its prompt: features from a language model, a linear scorer fitted on
Story Cloze, and the Story Cloze reader that measures it (docs/coherence.md)."""
