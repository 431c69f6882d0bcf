"""Paragraph examples (a title, keywords and the target's sentences) and the Plan-and-Write reader.

A `ParagraphExample` is what the paragraph data sets hold: its sentences are normalised,
lowercase word-tokenized text (engine/data/text.py). The Plan-and-Write ROCStories files
(`…titlesepkeysepstory.{dev,test}.txt`) are read here because both the language model (its
stories as documents, engine/data/readers.py) and PermGen (title, storyline and story,
engine/permgen/readers.py) train on them:

    title <EOT> k1 … k5 <EOL> </s> s1 </s> … </s> s5

The `.3.1.1` variant has TAB-separated keywords with `#` between sentence groups (all keywords are
kept, in order). Readers raise `ReaderError` naming the file and line of the first malformed line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


class ReaderError(ValueError):
    """A data file is malformed; the message names the file and line."""


@dataclass(frozen=True)
class ParagraphExample:
    """One input (title + keywords) and its target paragraph as sentences, normalised."""

    title: str
    keywords: tuple[str, ...]
    sentences: tuple[str, ...]


def numbered_lines(path: Path) -> list[tuple[int, str]]:
    """(line number, line) of every non-blank line of a UTF-8 file; `ReaderError` when it cannot be read."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ReaderError(f"{path}: cannot read ({error})") from None
    return [(number, line) for number, line in enumerate(text.splitlines(), start=1) if line.strip()]


def line_error(path: Path, number: int, why: str) -> ReaderError:
    """The `ReaderError` of line `number` of `path`."""
    return ReaderError(f"{path}:{number}: {why}")


def read_plan_and_write(path: Path) -> list[ParagraphExample]:
    examples = []
    for number, line in numbered_lines(path):
        if line.count("<EOT>") != 1 or line.count("<EOL>") != 1:
            raise line_error(path, number, "expected 'title <EOT> keywords <EOL> </s> sentence …'")
        title, rest = line.split("<EOT>")
        storyline_text, story = rest.split("<EOL>")
        sentences = [s.strip() for s in story.split("</s>") if s.strip()]
        keywords = [k for k in re.split(r"[\t ]+", storyline_text.strip()) if k and k != "#"]
        if not title.strip() or not sentences or story.split("</s>")[0].strip():
            raise line_error(path, number, "missing title or story sentences (each must follow '</s>')")
        examples.append(ParagraphExample(" ".join(title.split()), tuple(keywords), tuple(sentences)))
    return examples
