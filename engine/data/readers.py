"""Readers for the larger text sources of ../shared/data, as language-model documents.

- ROCStories Plan-and-Write `…titlesepkeysepstory….txt` (lowercased, word-tokenized): each
  story's sentences detokenized and sentence-cased as PermGen's display does
  (engine/data/text.py), one document per story; its titles and storylines are dropped.
- Brown `corpus/cXNN.txt`: `word/tag` tokens, one sentence a line. `read_brown_tagged` keeps
  the gold tags (sentences of (word, tag)); as documents each file is one text of its words.
- WikiText-2 `wiki.*.tokens.txt`: one document per paragraph line (as the evaluation splits
  use it), headings (` = Title = `, ` = = Part = = `) left out, `@-@` / `@,@` / `@.@` joins undone.
- Project Gutenberg books: `…/gutenberg/*.txt` (hard-wrapped, one document per paragraph) and
  `…/nltk-tokenized/*.txt` (PTB-tokenized sentences, detokenized in runs of five): engine/data/prose.py.

Malformed lines raise `CorpusError` naming file:line.
"""

from __future__ import annotations

import re
from pathlib import Path

from engine.data.corpus import CorpusError, read_text_lines
from engine.data.paragraphs import ReaderError, read_plan_and_write
from engine.data.prose import read_tokenized_sentences, read_wrapped_paragraphs
from engine.data.text import display_paragraph

BROWN_FILE = re.compile(r"c[a-r]\d\d(\.txt)?$")
WIKI_JOINS = {" @-@ ": "-", " @,@ ": ",", " @.@ ": "."}


def corpus_kind(path: Path) -> str:
    """'plan_and_write', 'brown', 'wikitext', 'gutenberg', 'ptb_prose' or '' (the generic readers), from the path."""
    name = path.name
    if "titlesepkeysepstory" in name:
        return "plan_and_write"
    if BROWN_FILE.match(name) and path.parent.name == "corpus":
        return "brown"
    if name.startswith("wiki.") and ".tokens" in name:
        return "wikitext"
    if path.suffix == ".txt" and path.parent.name in ("gutenberg", "nltk-tokenized"):
        return "gutenberg" if path.parent.name == "gutenberg" else "ptb_prose"
    return ""


def is_lowercased(path: Path) -> bool:
    """Whether the documents of `path` come lowercased (their names need their case back)."""
    return corpus_kind(path) == "plan_and_write"


def read_plan_and_write_documents(path: Path) -> list[str]:
    """One cased, detokenized story per line of a Plan-and-Write file."""
    try:
        return [display_paragraph(example.sentences) for example in read_plan_and_write(path)]
    except ReaderError as error:
        raise CorpusError(str(error)) from None


def read_brown_tagged(path: Path) -> list[list[tuple[str, str]]]:
    """Sentences of (word, gold Brown tag); the tag follows the last '/' of each token."""
    sentences = []
    for number, line in enumerate(read_text_lines(path), start=1):
        tokens = line.split()
        pairs = [tuple(token.rsplit("/", 1)) for token in tokens]
        bad = next((t for t, p in zip(tokens, pairs, strict=True) if len(p) != 2 or not p[0] or not p[1]), None)
        if bad is not None:
            raise CorpusError(f"{path}:{number}: token {bad!r} is not word/tag")
        if pairs:
            sentences.append([(word, tag) for word, tag in pairs])
    return sentences


def read_brown_documents(path: Path) -> list[str]:
    """A Brown file as one document of its words (whole files: coherent running text)."""
    words = [word for sentence in read_brown_tagged(path) for word, _ in sentence]
    return [" ".join(words)] if words else []


def _heading_level(path: Path, number: int, text: str) -> int:
    """0 for a paragraph; n for a heading written with n '=' tokens each side ("= = History = =" is 2)."""
    tokens = text.split()
    level = next((i for i, t in enumerate(tokens) if t != "="), len(tokens))
    if level and (len(tokens) <= 2 * level or tokens[-level:] != ["="] * level or tokens[-level - 1] == "="):
        raise CorpusError(f"{path}:{number}: unbalanced heading {text[:40]!r}")
    return level


def read_wikitext(path: Path) -> list[str]:
    """One document per WikiText paragraph line (see the module docstring); headings are checked and left out."""
    paragraphs = []
    for number, line in enumerate(read_text_lines(path), start=1):
        text = line.strip()
        if text and _heading_level(path, number, text) == 0:
            for joined, plain in WIKI_JOINS.items():
                text = text.replace(joined, plain)
            paragraphs.append(text)
    return paragraphs


READERS = {
    "plan_and_write": read_plan_and_write_documents, "brown": read_brown_documents, "wikitext": read_wikitext,
    "gutenberg": read_wrapped_paragraphs, "ptb_prose": read_tokenized_sentences,
}
