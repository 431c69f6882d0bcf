"""Over-generate and select: sample K drafts per variant, score them for sense, show the best that differ
(docs/coherence.md)."""
