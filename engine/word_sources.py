"""Where "real words" come from: the bundle's training words, an English word list, the writer's own text.

The real-words control (engine/decoding/real_words.py) allows the union of

- the **bundle's training words**: `words.txt` in the bundle (one case-folded word per line, written
  by the trainers and by `variorum bundle-words` for older bundles); a bundle without it still works
  with the two other sources, and says so;
- an **English word list** installed from a package: `wordfreq`'s "large" English list (frequency
  ranked, built from many sources), keeping words of Zipf frequency ≥ `ZIPF_FLOOR` (at least once
  per million words). The floor cuts the rare and junk entries a larger list carries (archaic
  spellings, fragments), which would let a model's invented fragments pass as words; rarer real
  words come from the training text and the writer's text. An entry's words are split as the
  invented-word rate splits them ("don't" → don, t);
- the **writer's words**: every word of the prompt, document, title, keywords or passage, so names
  they invent are theirs to reuse.

Words are split and case-folded exactly as engine/metrics/invented.py counts them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import torch

from engine.bundled_model import BundleError
from engine.data.text import normalize
from engine.decoding.real_words import AllowedWords, TokenPieces, WordSpeller
from engine.files.atomic_writes import write_text_atomic
from engine.files.small_reads import UnusableFileError, read_small_text
from engine.metrics.invented import words

WORDS_FILE = "words.txt"
ZIPF_FLOOR = 3.0  # wordfreq's Zipf scale: log10 of occurrences per billion words
LIST_NAME = "wordfreq 'large' English list, Zipf >= 3"


def read_bundle_words(directory: Path) -> frozenset[str] | None:
    """The words of `directory/words.txt`, or None when the bundle has none (`BundleError` when unreadable)."""
    path = Path(directory) / WORDS_FILE
    if not path.exists():
        return None
    try:
        text = read_small_text(path, WORDS_FILE)
    except UnusableFileError as error:
        raise BundleError(f"bundle {directory}: {error}") from None
    return frozenset(w for w in text.split("\n") if w)


def write_bundle_words(directory: Path, vocabulary: Iterable[str]) -> Path:
    """Write `vocabulary` (case-folded, sorted, one per line) as `directory/words.txt`."""
    path = Path(directory) / WORDS_FILE
    write_text_atomic(path, "".join(f"{w}\n" for w in sorted({w.casefold() for w in vocabulary})))
    return path


@functools.cache
def english_words(normalised: bool = False) -> frozenset[str]:
    """The package word list's words (see the module docstring), read once per process; `normalised`:
    split as normalised text is ("don't" → "do n't" → do, n, t; engine/data/text.py), for models that
    write it (PermGen)."""
    try:
        from wordfreq import get_frequency_dict
    except ImportError:  # a required dependency, but an environment may predate it
        raise ValueError("real words only needs the wordfreq package (pip install 'wordfreq>=3.1,<4'); "
                         "or let the model write any word (--any-words, or untick Real words only)") from None
    floor = 10 ** (ZIPF_FLOOR - 9)  # Zipf z ⇔ frequency 10^(z − 9)
    entries = [e for e, frequency in get_frequency_dict("en", "large").items() if frequency >= floor]
    return frozenset(w for entry in entries for w in words(normalize(entry) if normalised else entry))


def text_words(texts: Iterable[str]) -> frozenset[str]:
    """The writer's words in `texts`."""
    return frozenset(w for text in texts for w in words(text))


class RealWordVocabulary:
    """One loaded model's real words (its training words and the word list) and a speller per request.

    Requests whose writer's words are all known share one speller, so its cached masks carry over."""

    def __init__(self, training: frozenset[str] | None, pieces: Sequence[bytes | None], boundary_ids: Iterable[int],
                 device: torch.device, normalise: Callable[[str], str] | None = None) -> None:
        """`training`: the bundle's training words (None: it has none); `pieces`, `boundary_ids`: see
        `TokenPieces`; `normalise`: how the model's text is written (PermGen's `normalize`), None = as typed."""
        self.has_training_words = training is not None
        self.normalise = normalise
        self.base = AllowedWords(english_words(normalise is not None) | (training or frozenset()))
        self.pieces = TokenPieces(pieces, boundary_ids)
        self.device = device
        self.base_speller = WordSpeller(self.pieces, self.base, device)

    def speller(self, texts: Iterable[str]) -> WordSpeller:
        """The speller of these real words and every word of the writer's `texts`."""
        written = texts if self.normalise is None else map(self.normalise, texts)
        allowed = self.base.union(text_words(written))
        return self.base_speller if allowed is self.base else WordSpeller(self.pieces, allowed, self.device)


def missing_words_note(bundle: Path) -> str:
    """What a writer reads when real words are on and the bundle has no training words."""
    return (f"{bundle} has no {WORDS_FILE}: real words come from the word list ({LIST_NAME}) and your text only; "
            f"`variorum bundle-words --bundle {bundle}` adds its training words")
