"""Stanza POS backend: English `tokenize` + `pos` (+ `mwt` when the package has one), offline only.

Models are never downloaded: the pipeline is built with `download_method=None` from a local
resources folder (`model_dir`, default Stanza's own: `$STANZA_RESOURCES_DIR` or its user cache
dir). If the folder, its `resources.json`, its `en/` models or Stanza itself are missing,
TaggerUnavailableError says which paths are missing and how to install them offline.

A multi-word token whose words Stanza could not place in the text (no word offsets) contributes
one word: its first word, spanning the whole token; the other words of that token are left out.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from engine.pos.tagger import TaggedWord, TaggerUnavailableError, with_progress

LANG = "en"
PROCESSORS = "tokenize,pos"
FALLBACK_MODEL_DIR = Path.home() / "stanza_resources"
STANZA_BATCH_SIZE = 64

_INSTALL_STANZA = "Install Stanza with `pip install 'variorum[stanza]'`."
_INSTALL_MODELS = (
    "To install its models offline: on a machine "
    "with internet run `python -c \"import stanza; stanza.download('en', processors='tokenize,pos', "
    "model_dir='stanza_resources')\"`, then copy that stanza_resources folder (resources.json + en/) to "
    "{model_dir} on this machine, or pass its path as model_dir / set STANZA_RESOURCES_DIR."
)


def _import_stanza() -> Any | None:
    """The `stanza` module, or None when it is not installed."""
    try:
        import stanza
    except ImportError:
        return None
    return stanza


def default_model_dir(stanza: Any | None) -> Path:
    """Stanza's default resources folder, or `~/stanza_resources` when Stanza is not importable."""
    if stanza is None:
        return Path(os.environ.get("STANZA_RESOURCES_DIR", FALLBACK_MODEL_DIR))
    from stanza.resources.common import DEFAULT_MODEL_DIR

    return Path(DEFAULT_MODEL_DIR)


def missing_resources(model_dir: Path) -> list[Path]:
    """Paths Stanza needs before it can even resolve the English models in `model_dir`."""
    needed = [model_dir, model_dir / "resources.json", model_dir / LANG]
    return [path for path in needed if not path.exists()]


def _unavailable(problems: list[str], model_dir: Path, installed: bool = True) -> TaggerUnavailableError:
    """TaggerUnavailableError listing `problems` followed by the offline install recipe."""
    lines = "\n".join(f"- {problem}" for problem in problems)
    recipe = _INSTALL_MODELS.format(model_dir=model_dir)
    if not installed:
        recipe = f"{_INSTALL_STANZA} {recipe}"
    return TaggerUnavailableError(f"Stanza POS tagger unavailable:\n{lines}\n{recipe}")


def _build_pipeline(stanza: Any, directory: Path, package: str) -> Any:
    """An offline Stanza English pipeline; missing model files become TaggerUnavailableError."""
    try:
        return stanza.Pipeline(LANG, dir=str(directory), package=package, processors=PROCESSORS,
                               download_method=None, logging_level="WARN")
    except (FileNotFoundError, ValueError) as err:
        filename = getattr(err, "filename", None)
        problem = f"missing model file: {filename}" if filename else f"cannot load models from {directory}: {err}"
        raise _unavailable([problem], directory) from err


class StanzaTagger:
    """PTB tagger backed by a local Stanza English pipeline (XPOS = PTB tags)."""

    name = "stanza"

    def __init__(self, model_dir: Path | None = None, package: str = "default",
                 batch_size: int = STANZA_BATCH_SIZE) -> None:
        stanza = _import_stanza()
        directory = model_dir if model_dir is not None else default_model_dir(stanza)
        problems = [] if stanza is not None else ["the `stanza` package is not installed"]
        problems += [f"missing: {path}" for path in missing_resources(directory)]
        if problems or stanza is None:
            raise _unavailable(problems, directory, installed=stanza is not None)
        self._nlp = _build_pipeline(stanza, directory, package)
        resources = (directory / "resources.json").read_bytes()
        self._version = f"{package}/{hashlib.sha256(resources).hexdigest()[:12]}/stanza-{stanza.__version__}"
        self._batch_size = batch_size

    @property
    def model_version(self) -> str:
        """Stanza package, a hash of the local resources.json and the Stanza version."""
        return self._version

    def tag_texts(self, texts: Sequence[str], progress: bool = True) -> list[list[TaggedWord]]:
        """Tag `texts` in batches of `batch_size` documents; blank texts give no words."""
        return list(with_progress(self._iter_words(texts), len(texts), progress, "POS tagging (Stanza)"))

    def _iter_words(self, texts: Sequence[str]) -> Iterator[list[TaggedWord]]:
        """Words of each text in order, tagging `batch_size` texts at a time."""
        for begin in range(0, len(texts), self._batch_size):
            yield from self._tag_batch(texts[begin : begin + self._batch_size])

    def _tag_batch(self, texts: Sequence[str]) -> list[list[TaggedWord]]:
        """Tag one batch with `bulk_process` (Stanza rejects blank documents, so they skip it)."""
        filled = [i for i, text in enumerate(texts) if text.strip()]
        docs = self._nlp.bulk_process([texts[i] for i in filled]) if filled else []
        result: list[list[TaggedWord]] = [[] for _ in texts]
        for i, doc in zip(filled, docs, strict=True):
            result[i] = _words_of(doc)
        return result


def _words_of(doc: Any) -> list[TaggedWord]:
    """Words of a Stanza Document as TaggedWords (see the module docstring for multi-word tokens)."""
    words: list[TaggedWord] = []
    for sentence in doc.sentences:
        for token in sentence.tokens:
            placed = [w for w in token.words if w.start_char is not None and w.end_char is not None]
            if len(placed) == len(token.words):
                words.extend(TaggedWord(w.text, w.start_char, w.end_char, w.xpos or "XX") for w in placed)
            else:
                first = token.words[0]
                words.append(TaggedWord(token.text, token.start_char, token.end_char, first.xpos or "XX"))
    return words
