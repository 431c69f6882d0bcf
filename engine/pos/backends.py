"""Backend registry: build a Tagger by name ("spacy", the default, or "stanza").

Loaded taggers are kept for the life of the process (loading spaCy's pipeline takes seconds and a
tagger holds no per-call state), so the trainer, the API and the benchmarks share one.
"""

from __future__ import annotations

import functools
from pathlib import Path

from engine.pos.spacy_backend import SPACY_BATCH_SIZE, SpacyTagger
from engine.pos.stanza_backend import STANZA_BATCH_SIZE, StanzaTagger
from engine.pos.tagger import Tagger

BACKENDS = ("spacy", "stanza")
DEFAULT_BACKEND = "spacy"


def load_tagger(backend: str = DEFAULT_BACKEND, batch_size: int | None = None,
                stanza_dir: Path | None = None) -> Tagger:
    """A ready Tagger for `backend`; raises TaggerUnavailableError if it cannot run here, ValueError
    for an unknown name. `batch_size` overrides the backend's default; `stanza_dir` is Stanza's
    resources folder. The same arguments return the same (cached) tagger."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown POS backend {backend!r}; valid backends: {', '.join(BACKENDS)}")
    return _load(backend, batch_size, stanza_dir)


@functools.cache
def _load(backend: str, batch_size: int | None, stanza_dir: Path | None) -> Tagger:
    """Build a tagger once per distinct arguments (failures are not cached: they raise)."""
    if backend == "spacy":
        return SpacyTagger(batch_size=batch_size or SPACY_BATCH_SIZE)
    return StanzaTagger(model_dir=stanza_dir, batch_size=batch_size or STANZA_BATCH_SIZE)
