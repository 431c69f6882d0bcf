"""The Story Cloze Test (2016): four sentences of a story and two fifth sentences, one right and one wrong.

Each TSV row holds an id, `InputSentence1-4`, `RandomFifthSentenceQuiz1-2` and `AnswerRightEnding` (1 or 2).
A scorer is right on a story when it scores the right ending above the wrong one; chance is 50%.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from engine.files.small_reads import read_small_text

COLUMNS = ("InputSentence1", "InputSentence2", "InputSentence3", "InputSentence4",
           "RandomFifthSentenceQuiz1", "RandomFifthSentenceQuiz2", "AnswerRightEnding")


class StoryClozeError(ValueError):
    """A Story Cloze file that cannot be read as one (missing columns, an answer that is not 1 or 2)."""


@dataclass(frozen=True)
class ClozeStory:
    """Four sentences, two candidate endings and which one is right (0 or 1)."""

    context: str
    endings: tuple[str, str]
    right: int


def read_story_cloze(path: Path) -> list[ClozeStory]:
    """Every story of a Story Cloze TSV file; a malformed file raises StoryClozeError naming the row."""
    rows = csv.DictReader(io.StringIO(read_small_text(path, f"{path} (Story Cloze file)")), delimiter="\t")
    missing = [c for c in COLUMNS if c not in (rows.fieldnames or [])]
    if missing:
        raise StoryClozeError(f"{path}: not a Story Cloze file (no column {missing[0]})")
    stories = []
    for number, row in enumerate(rows, start=2):
        answer = (row.get("AnswerRightEnding") or "").strip()
        if answer not in ("1", "2"):
            raise StoryClozeError(f"{path}, line {number}: AnswerRightEnding must be 1 or 2, got {answer!r}")
        context = " ".join((row.get(c) or "").strip() for c in COLUMNS[:4])
        endings = ((row.get(COLUMNS[4]) or "").strip(), (row.get(COLUMNS[5]) or "").strip())
        stories.append(ClozeStory(context, endings, int(answer) - 1))
    if not stories:
        raise StoryClozeError(f"{path}: no stories")
    return stories


def pair_texts(stories: list[ClozeStory]) -> tuple[list[str], list[str]]:
    """(prompts, continuations) with both endings of story i at rows 2i and 2i + 1, as a writer's text would
    continue (a space before the ending)."""
    prompts = [s.context for s in stories for _ in (0, 1)]
    continuations = [" " + ending for s in stories for ending in s.endings]
    return prompts, continuations
