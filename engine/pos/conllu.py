"""Reader for CoNLL-U files (UD English-EWT) with gold PTB tags (XPOS, column 5).

Only syntactic word lines are kept: multi-word token lines (`1-2`, their parts follow as ordinary
word lines) and empty nodes (`8.1`) are skipped. Each sentence's text is its `# text = ...`
comment; without one, the forms are joined by single spaces.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

CONLLU_COLUMNS = 10


@dataclass(frozen=True)
class GoldSentence:
    """One CoNLL-U sentence: id, raw text, word forms and their gold XPOS tags."""

    sent_id: str
    text: str
    forms: tuple[str, ...]
    xpos: tuple[str, ...]

    def spans(self) -> list[tuple[int, int]]:
        """Character span of each form in `text`, found left to right. A form that does not occur at
        or after the previous form's end gets the empty span at that point (it matches no word)."""
        spans: list[tuple[int, int]] = []
        cursor = 0
        for form in self.forms:
            found = self.text.find(form, cursor)
            if found < 0:
                spans.append((cursor, cursor))
                continue
            spans.append((found, found + len(form)))
            cursor = found + len(form)
        return spans


def read_conllu(path: Path) -> Iterator[GoldSentence]:
    """Yield the sentences of the CoNLL-U file at `path`, in file order."""
    block: list[str] = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                block.append(line.rstrip("\n"))
            elif block:
                yield _parse_sentence(block, path)
                block = []
    if block:
        yield _parse_sentence(block, path)


def _parse_sentence(lines: list[str], path: Path) -> GoldSentence:
    """Build a GoldSentence from the comment and word lines of one block."""
    comments: dict[str, str] = {}
    forms: list[str] = []
    xpos: list[str] = []
    for line in lines:
        if line.startswith("#"):
            key, sep, value = line[1:].partition("=")
            if sep:
                comments[key.strip()] = value.strip()
            continue
        columns = line.split("\t")
        if len(columns) != CONLLU_COLUMNS:
            raise ValueError(f"{path}: expected {CONLLU_COLUMNS} tab-separated columns, got: {line!r}")
        if "-" in columns[0] or "." in columns[0]:
            continue
        forms.append(columns[1])
        xpos.append(columns[4])
    text = comments.get("text", " ".join(forms))
    return GoldSentence(comments.get("sent_id", ""), text, tuple(forms), tuple(xpos))
