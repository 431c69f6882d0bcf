"""Corpus readers: text, JSON Lines and Story Cloze TSV files → a list of documents.

- `.txt`: one document per non-empty line (the story and paragraph sets are line-based).
- `.jsonl` / `.json` (one JSON value per line): a string, a list of strings (joined with a
  space, as in Diffusion-LM's ROCStories), or an object with a string `"text"` field.
- `.tsv` with the Story Cloze header: the four context sentences plus the right ending.
- Plan-and-Write stories, Brown and WikiText-2 files, recognised by name: engine/data/readers.py.

`read_corpus` reads several files as one corpus: the documents of lowercased sources (Plan-and-Write)
get the case of names back from a table learned on the corpus's cased documents
(engine/data/truecase.py), so a model trained on the mix writes "Tom", not "tom".

Malformed lines raise `CorpusError` naming the file and line number. Splits are by a hash of
each document's text, so they do not depend on file order and held-out stays held out.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from engine.files.small_reads import file_problem

STORY_CLOZE_HEADER = "InputStoryid\tInputSentence1"


class CorpusError(ValueError):
    """A corpus file is missing, of an unknown kind, or has a malformed line."""


def read_text_lines(path: Path) -> list[str]:
    """The lines of a UTF-8 file (CorpusError when it is missing or not UTF-8)."""
    problem = file_problem(path)
    if problem is not None:
        raise CorpusError(f"corpus file {path} {problem}")
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as error:
        raise CorpusError(f"{path} is not UTF-8 text ({error})") from None


def _json_document(value: object, path: Path, number: int) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return " ".join(value)
    if isinstance(value, dict) and isinstance(value.get("text"), str):
        return str(value["text"])
    raise CorpusError(f"{path}:{number}: expected a string, a list of strings or {{'text': ...}}")


def read_jsonl(path: Path) -> list[str]:
    documents = []
    for number, line in enumerate(read_text_lines(path), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            raise CorpusError(f"{path}:{number}: invalid JSON ({error.msg})") from None
        except RecursionError:  # json's parser recurses once per nesting level
            raise CorpusError(f"{path}:{number}: JSON nested too deeply to be a document") from None
        documents.append(_json_document(value, path, number))
    return documents


def story_cloze_sentences(path: Path) -> list[list[str]]:
    """Story Cloze rows → each story's five sentences (the four of the context, then the right ending)."""
    lines = read_text_lines(path)
    if not lines or not lines[0].startswith(STORY_CLOZE_HEADER):
        raise CorpusError(f"{path}:1: expected the Story Cloze header 'InputStoryid\\tInputSentence1…'")
    stories = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        cells = line.split("\t")
        if len(cells) != 8 or cells[7].strip() not in ("1", "2"):
            raise CorpusError(f"{path}:{number}: expected 8 tab-separated cells ending in the right ending (1 or 2)")
        stories.append([*cells[1:5], cells[5] if cells[7].strip() == "1" else cells[6]])
    return stories


def read_story_cloze(path: Path) -> list[str]:
    """Story Cloze rows → five-sentence stories (context + the right ending) as one document each."""
    return [" ".join(story) for story in story_cloze_sentences(path)]


def read_documents(path: Path) -> list[str]:
    """Documents of one corpus file, by its kind (see the module docstring)."""
    from engine.data.readers import READERS, corpus_kind  # lazy: those readers use this module

    path = Path(path)
    if corpus_kind(path):
        return READERS[corpus_kind(path)](path)
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json"):
        return read_jsonl(path)
    if suffix == ".tsv":
        lines = read_text_lines(path)
        if lines and lines[0].startswith(STORY_CLOZE_HEADER):
            return read_story_cloze(path)
        raise CorpusError(f"{path}: unknown TSV layout (expected the Story Cloze header)")
    if suffix in (".txt", ".tokens", ""):
        return [line.strip() for line in read_text_lines(path) if line.strip()]
    raise CorpusError(f"{path}: unknown corpus kind {suffix!r}; use .txt, .jsonl/.json or .tsv")


def read_corpus(paths: Iterable[Path]) -> list[str]:
    """Documents of all `paths`; those of lowercased sources get their case back from the cased ones."""
    from engine.data.readers import is_lowercased  # lazy, as in read_documents
    from engine.data.truecase import restore_lowercased

    documents = restore_lowercased([(document, is_lowercased(Path(path)))
                                    for path in paths for document in read_documents(Path(path))])
    if not documents:
        raise CorpusError("the corpus has no documents")
    return documents


def is_validation(document: str, valid_fraction: float) -> bool:
    """Deterministic split: a document is held out if its text hash falls below the fraction."""
    digest = hashlib.sha256(document.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < valid_fraction


def split_documents(documents: Sequence[str], valid_fraction: float) -> tuple[list[str], list[str]]:
    """(train, valid) by `is_validation`; duplicate texts always land on the same side."""
    train = [d for d in documents if not is_validation(d, valid_fraction)]
    valid = [d for d in documents if is_validation(d, valid_fraction)]
    return train, valid


def file_sha256(path: Path) -> str:
    with Path(path).open("rb") as file:  # read in chunks: a checkpoint's weights are hundreds of MB
        return hashlib.file_digest(file, "sha256").hexdigest()
