"""On-disk cache of tagged corpora, so re-tagging the same corpus with the same model is instant.

One file per `tag_texts` call, named by the sha256 of the backend name, the model version and
every text (each length-prefixed, so text boundaries are part of the key). The file is a NumPy
`.npz` of word spans and tag ids (no pickles); word strings are sliced back out of the texts.
Writes go to a temporary file in the cache folder and are moved into place with `os.replace`,
so a reader never sees half a file. An unreadable or inconsistent entry is re-tagged and rewritten.

Each file also records the backend name and model version that made it, so a machine without the
tagger (a GPU box without spaCy, say) can train on tags made elsewhere: backend `"cache"`
(`stored_tagger`) finds the file whose key matches the corpus and answers only from it.
"""

from __future__ import annotations

import hashlib
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from platformdirs import user_cache_dir

from engine.files.atomic_writes import atomic_file
from engine.pos.tagger import TaggedWord, Tagger, TaggerUnavailableError

CACHE_SUFFIX = ".pos.npz"
STORED_BACKEND = "cache"  # answer only from tags cached by another backend


def default_cache_dir() -> Path:
    """`<user cache dir>/variorum/pos` (platformdirs)."""
    return Path(user_cache_dir("variorum")) / "pos"


def corpus_key(backend: str, model_version: str, texts: Sequence[str]) -> str:
    """sha256 hex digest of the backend, its model version and the texts."""
    digest = hashlib.sha256()
    for part in (backend, model_version, *texts):
        data = part.encode("utf-8", "surrogatepass")
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


class CachedTagger:
    """A Tagger that answers from `cache_dir` when it has tagged the same texts before."""

    def __init__(self, tagger: Tagger, cache_dir: Path | None = None) -> None:
        self.tagger = tagger
        self.cache_dir = cache_dir if cache_dir is not None else default_cache_dir()

    @property
    def name(self) -> str:
        """The wrapped backend's name."""
        return self.tagger.name

    @property
    def model_version(self) -> str:
        """The wrapped backend's model version."""
        return self.tagger.model_version

    def path_for(self, texts: Sequence[str]) -> Path:
        """Cache file for `texts` (it may not exist yet)."""
        return self.cache_dir / f"{corpus_key(self.name, self.model_version, texts)}{CACHE_SUFFIX}"

    def tag_texts(self, texts: Sequence[str], progress: bool = True) -> list[list[TaggedWord]]:
        """Cached tags of `texts`, tagging (and caching) them with the wrapped tagger on a miss."""
        path = self.path_for(texts)
        cached = _load(path, texts)
        if cached is not None:
            return cached
        tagged = self.tagger.tag_texts(texts, progress=progress)
        _save(path, tagged, (self.name, self.model_version))
        return tagged


class StoredTags:
    """The identity of a tagger whose output for one corpus is in the cache; it cannot tag anew."""

    def __init__(self, name: str, model_version: str) -> None:
        self._name = name
        self._model_version = model_version

    @property
    def name(self) -> str:
        return self._name

    @property
    def model_version(self) -> str:
        return self._model_version

    def tag_texts(self, texts: Sequence[str], progress: bool = True) -> list[list[TaggedWord]]:
        raise TaggerUnavailableError(f"the cached tags of {self.name} {self.model_version} do not cover these texts")


def stored_tagger(texts: Sequence[str], cache_dir: Path | None = None) -> StoredTags:
    """The tagger that cached tags for exactly `texts` in `cache_dir` (TaggerUnavailableError if none did)."""
    folder = cache_dir if cache_dir is not None else default_cache_dir()
    for path in sorted(folder.glob(f"*{CACHE_SUFFIX}")) if folder.is_dir() else []:
        try:
            with np.load(path, allow_pickle=False) as data:
                name, version = (str(v) for v in data["tagger"]) if "tagger" in data else ("", "")
        except (OSError, ValueError, EOFError, zipfile.BadZipFile):
            continue
        if name and path.name == f"{corpus_key(name, version, texts)}{CACHE_SUFFIX}":
            return StoredTags(name, version)
    raise TaggerUnavailableError(
        f"no tags cached in {folder} for this corpus: tag it once where the tagger is installed, with the same "
        f"data and --pos-cache-dir, then copy that folder here")


def _save(path: Path, tagged: Sequence[Sequence[TaggedWord]], tagger: tuple[str, str]) -> None:
    """Write `tagged` to `path` atomically (engine/files/atomic_writes.py)."""
    words = [word for text_words in tagged for word in text_words]
    labels = sorted({word.tag_ for word in words})
    label_id = {label: i for i, label in enumerate(labels)}
    arrays = {
        "counts": np.array([len(text_words) for text_words in tagged], dtype=np.int64),
        "spans": np.array([(word.start, word.end) for word in words], dtype=np.int64).reshape(-1, 2),
        "tag_ids": np.array([label_id[word.tag_] for word in words], dtype=np.int32),
        "labels": np.array(labels, dtype=np.str_),
        "tagger": np.array(tagger, dtype=np.str_),  # (backend name, model version): see stored_tagger
    }
    with atomic_file(path) as temp, temp.open("wb") as handle:
        np.savez(handle, **arrays)  # type: ignore[arg-type]


def _load(path: Path, texts: Sequence[str]) -> list[list[TaggedWord]] | None:
    """Tagged words stored at `path` for `texts`, or None if absent, unreadable or inconsistent."""
    try:
        with np.load(path, allow_pickle=False) as data:
            counts, spans, tag_ids, labels = (data[k] for k in ("counts", "spans", "tag_ids", "labels"))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None
    if not _consistent(counts, spans, tag_ids, labels, texts):
        return None
    result: list[list[TaggedWord]] = []
    position = 0
    tag_names = [str(label) for label in labels]
    for text, count in zip(texts, counts.tolist(), strict=True):
        rows = zip(spans[position : position + count].tolist(), tag_ids[position : position + count].tolist(),
                   strict=True)
        result.append([TaggedWord(text[start:end], start, end, tag_names[tag]) for (start, end), tag in rows])
        position += count
    return result


def _consistent(counts: np.ndarray, spans: np.ndarray, tag_ids: np.ndarray, labels: np.ndarray,
                texts: Sequence[str]) -> bool:
    """Whether the arrays have the shapes, totals and index ranges that `texts` require."""
    total = int(counts.sum()) if counts.ndim == 1 else -1
    return (
        all(array.dtype.kind == "i" for array in (counts, spans, tag_ids))
        and counts.shape == (len(texts),)
        and spans.shape == (total, 2)
        and tag_ids.shape == (total,)
        and labels.ndim == 1
        and (total == 0 or (int(tag_ids.min()) >= 0 and int(tag_ids.max()) < len(labels)))
        and bool((counts >= 0).all())
        and _spans_inside(counts, spans, texts)
    )


def _spans_inside(counts: np.ndarray, spans: np.ndarray, texts: Sequence[str]) -> bool:
    """Whether every stored span lies inside its own text."""
    if not len(spans):
        return True
    lengths = np.repeat(np.array([len(text) for text in texts], dtype=np.int64), counts)
    return bool(((spans[:, 0] >= 0) & (spans[:, 0] < spans[:, 1]) & (spans[:, 1] <= lengths)).all())
