"""The tagger interface shared by every POS backend: tagged words with character spans."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from tqdm import tqdm

PROGRESS_MIN_TEXTS = 256
"""A progress bar is shown only for calls with at least this many texts."""

_T = TypeVar("_T")


class TaggerUnavailableError(RuntimeError):
    """A backend cannot run here: its library or its model files are missing. The message says how
    to install them (nothing is ever downloaded at run time)."""


@dataclass(frozen=True, slots=True)
class TaggedWord:
    """One word of a text: its surface form, character span `[start, end)` in the text, PTB tag."""

    text: str
    start: int
    end: int
    tag_: str


class Tagger(Protocol):
    """A PTB POS tagger. `name` and `model_version` identify its output (they key the tag cache)."""

    @property
    def name(self) -> str:
        """Backend name, e.g. "spacy"."""
        ...

    @property
    def model_version(self) -> str:
        """Model and library versions; a change invalidates cached tags."""
        ...

    def tag_texts(self, texts: Sequence[str], progress: bool = True) -> list[list[TaggedWord]]:
        """Tag each text; words are sorted by `start`, do not overlap and exclude whitespace.
        `progress` shows a bar when there are at least `PROGRESS_MIN_TEXTS` texts."""
        ...


def with_progress(items: Iterable[_T], total: int, progress: bool, desc: str) -> Iterator[_T]:
    """Wrap `items` in a tqdm bar when `progress` is on and `total` is long enough to matter."""
    disabled = not progress or total < PROGRESS_MIN_TEXTS
    yield from tqdm(items, total=total, desc=desc, unit="text", disable=disabled)
