"""Readers for book-length prose (Project Gutenberg texts), as language-model documents.

Two layouts, recognised by folder name (as in ../shared/data/gutenberg):

- plain (`…/gutenberg/*.txt`): hard-wrapped lines, a blank line between paragraphs. Each
  paragraph, its lines joined, is one document.
- PTB-tokenized (`…/nltk-tokenized/*.txt`, NLTK's Gutenberg selection): one sentence a line,
  words split from punctuation and clitics (`I' m`, `did n't`, ``` `` ``` / `''` quotes). Lines are
  detokenized (`detokenize_ptb`) and runs of up to `SENTENCES_PER_DOCUMENT` consecutive sentences
  become one document, close to a ROCStories story in length.

Both drop what is not running prose: `[ Title by Author Year ]` lines, "Produced by …" credits, headings (a line or
paragraph without a lowercase letter, e.g. "ETYMOLOGY.", or starting "CHAPTER") and paragraphs of fewer
than `MIN_WORDS` words. A paragraph is kept as the writer would read it: cased, untokenized.
"""

from __future__ import annotations

import re
from pathlib import Path

from engine.data.corpus import read_text_lines

MIN_WORDS = 4
SENTENCES_PER_DOCUMENT = 5

_CLITIC = re.compile(r"(\w)' ?(m|s|re|ll|ve|d|t|clock)\b")  # "I' m" → "I'm", "o' clock" → "o'clock"
_SPLIT_CLITIC = re.compile(r"(\w) (n't|'s|'re|'ll|'ve|'m|'d)\b")  # "did n't" → "didn't"
_SPACE_BEFORE = re.compile(r" ([.,;:!?%)\]}])")
_SPACE_AFTER = re.compile(r"([(\[{]) ")
_DOUBLE_QUOTES = re.compile(r"``\s*(.*?)\s*''")
_SINGLE_QUOTES = re.compile(r"`\s*(.*?)\s*'(?=\s|$|[.,;:!?])")
_CHAPTER = re.compile(r"(CHAPTER|Chapter|BOOK|PART|VOLUME)\b")
_EMPHASIS = re.compile(r"_ (.*?) _")  # "_ tap, tap _" (italics marks) → "tap, tap"


def detokenize_ptb(line: str) -> str:
    """PTB-tokenized text → ordinary prose, keeping case ("It 's `` mine , '' he said ." → "It's "mine," he said.")."""
    text = " ".join(line.split())
    text = _SPLIT_CLITIC.sub(r"\1\2", text)
    text = _CLITIC.sub(r"\1'\2", text)
    text = _DOUBLE_QUOTES.sub(lambda m: f'"{m.group(1)}"', text)
    text = _SINGLE_QUOTES.sub(lambda m: f"'{m.group(1)}'", text)
    text = _EMPHASIS.sub(r"\1", text)
    text = _SPACE_BEFORE.sub(r"\1", text)
    text = _SPACE_AFTER.sub(r"\1", text)
    text = text.replace("``", '"').replace("''", '"').replace("`", "'")
    return re.sub(r'(^|\s)" ', r'\1"', text).strip()


def is_prose(text: str) -> bool:
    """Running text, not a heading or a bracketed title line."""
    stripped = text.strip()
    return (len(stripped.split()) >= MIN_WORDS and not _is_heading_line(stripped)
            and not stripped.startswith("Produced by"))  # a Gutenberg transcriber's credit


def read_wrapped_paragraphs(path: Path) -> list[str]:
    """One document per blank-line-separated paragraph of a hard-wrapped text."""
    paragraphs: list[str] = []
    current: list[str] = []
    for line in [*read_text_lines(path), ""]:
        if line.strip():
            current.append(line.strip())
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    return [p for p in paragraphs if is_prose(p)]


def _is_heading_line(line: str) -> bool:
    stripped = line.strip()
    return (not any(c.islower() for c in stripped) or stripped.startswith("[")
            or bool(_CHAPTER.match(stripped)))


def read_tokenized_sentences(path: Path) -> list[str]:
    """Runs of up to SENTENCES_PER_DOCUMENT sentences, detokenized together (quotes span lines)."""
    documents: list[str] = []
    run: list[str] = []
    for line in [*read_text_lines(path), ""]:
        prose = bool(line.strip()) and not _is_heading_line(line)
        if prose:
            run.append(line)
        if run and (not prose or len(run) == SENTENCES_PER_DOCUMENT):
            raw = " ".join(run)
            document = detokenize_ptb(raw[2:] if raw.startswith("' ") else raw)  # a quote closed on a cut line
            if len(document.split()) >= MIN_WORDS:
                documents.append(document)
            run = []
    return documents
