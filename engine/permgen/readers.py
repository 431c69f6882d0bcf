"""Readers for the paragraph-generation data in ../shared/data (see each SOURCE.md).

Every reader returns `ParagraphExample`s (title, keywords, sentences — normalised lowercase,
word-tokenized text, engine/data/text.py) and raises `ReaderError` naming the file and line
of the first malformed line.

- Plan-and-Write ROCStories `…titlesepkeysepstory.{dev,test}.txt`: engine/data/paragraphs.py (the
  language model reads them too).
- Diffusion-LM `roc_valid.json`: JSON lines `["s1 s2 … s5"]` — no title, no keywords; sentences
  split at . ! ? before a capital letter, storyline keywords extracted (engine/permgen/keywords.py).
- Story Cloze 2016 TSV (header line): 4 context sentences + the right ending; keywords extracted.
- AGENDA `preprocessed.{val,test}.tsv`: title, entities (` ; `-separated) as keywords, abstract
  with its `<type_idx>` placeholders replaced by the entity strings, split after . ? ! tokens.
- Paper abstracts `*.jsonl` (one object a line with string `title` and `abstract`, as in
  ../shared/data/abstracts): sentences split like the Diffusion-LM stories; the text keeps its
  case (tokenized with `normalize(…, lowercase=False)`), so a model with `lowercase: false` writes
  cased abstracts; a lowercase model lowercases it when encoding (engine/permgen/data.py). The
  storyline keywords are extracted from the lowercased sentences.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

from engine.data.corpus import CorpusError, story_cloze_sentences
from engine.data.paragraphs import ParagraphExample, ReaderError, line_error, numbered_lines, read_plan_and_write
from engine.data.text import is_abbreviation, normalize
from engine.files.small_reads import file_problem
from engine.permgen.keywords import storyline

_RAW_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[\"'A-Z])")


def split_raw_sentences(text: str) -> list[str]:
    """Cased prose → its sentences: split after . ! ? before a capital or a quote, but not after an
    abbreviation ("The U.S. Army was …" stays one sentence)."""
    sentences: list[str] = []
    for piece in _RAW_SPLIT.split(text):
        if sentences and is_abbreviation(sentences[-1].rsplit(maxsplit=1)[-1]):
            sentences[-1] += " " + piece
        else:
            sentences.append(piece)
    return sentences


def _with_storyline(sentences: list[str], title: str = "", lowercase: bool = True) -> ParagraphExample:
    normalised = tuple(normalize(s, lowercase) for s in sentences if s.strip())
    keywords = storyline([s.lower() for s in normalised])
    return ParagraphExample(title, tuple(keywords), normalised)


def read_diffusion_lm(path: Path) -> list[ParagraphExample]:
    examples = []
    for number, line in numbered_lines(path):
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise line_error(path, number, f"not JSON ({error.msg})") from None
        if not (isinstance(row, list) and len(row) == 1 and isinstance(row[0], str) and row[0].strip()):
            raise line_error(path, number, 'expected a one-element list holding the story text, ["…"]')
        examples.append(_with_storyline(split_raw_sentences(row[0].strip())))
    return examples


def read_story_cloze(path: Path) -> list[ParagraphExample]:
    try:
        stories = story_cloze_sentences(path)
    except CorpusError as error:  # this module's readers raise ReaderError, with the same file:line message
        raise ReaderError(str(error)) from None
    return [_with_storyline(story) for story in stories]


def read_abstracts(path: Path) -> list[ParagraphExample]:
    """Title + abstract objects (JSON Lines) → cased examples with extracted storyline keywords."""
    examples = []
    for number, line in numbered_lines(path):
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            raise line_error(path, number, "not a JSON object") from None
        if not (isinstance(row, dict) and all(isinstance(row.get(k), str) and row[k].strip()
                                              for k in ("title", "abstract"))):
            raise line_error(path, number, 'expected an object with non-empty strings "title" and "abstract"')
        sentences = split_raw_sentences(" ".join(row["abstract"].split()))
        examples.append(_with_storyline(sentences, " ".join(row["title"].split()), lowercase=False))
    return examples


_PLACEHOLDER = re.compile(r"<[a-z]+_(\d+)>")


def read_agenda(path: Path) -> list[ParagraphExample]:
    examples = []
    for number, line in numbered_lines(path):
        fields = line.split("\t")
        if len(fields) != 6:
            raise line_error(path, number, f"expected 6 TAB-separated fields (src ent nerd rel out sorder), "
                                      f"got {len(fields)}")
        title, entity_field, _, _, abstract, _ = fields
        entities = [e.strip() for e in entity_field.split(" ; ") if e.strip()]

        def entity(match: re.Match[str], entities: list[str] = entities, number: int = number) -> str:
            index = int(match.group(1))
            if index >= len(entities):
                raise line_error(path, number, f"placeholder {match.group(0)} but only {len(entities)} entities")
            return entities[index]

        text = _PLACEHOLDER.sub(entity, abstract)
        sentences = [s.strip() for s in re.split(r"(?<= [.?!])\s+", f" {text.strip()}") if s.strip()]
        if not title.strip() or not sentences:
            raise line_error(path, number, "empty title or abstract")
        examples.append(ParagraphExample(normalize(title), tuple(entities), tuple(sentences)))
    return examples


READERS: dict[str, Callable[[Path], list[ParagraphExample]]] = {
    "plan_and_write": read_plan_and_write,
    "diffusion_lm": read_diffusion_lm,
    "story_cloze": read_story_cloze,
    "agenda": read_agenda,
    "abstracts": read_abstracts,
}


def detect_format(path: Path) -> str:
    """Which reader fits `path`, from its name (the shared data keeps the original names)."""
    name = path.name
    if "titlesepkeysepstory" in name:
        return "plan_and_write"
    if name.endswith(".json"):
        return "diffusion_lm"
    if "cloze_test" in name:
        return "story_cloze"
    if name.startswith("preprocessed.") and name.endswith(".tsv"):
        return "agenda"
    if name.endswith(".jsonl"):
        return "abstracts"
    raise ReaderError(f"{path}: unknown data file; name it like the shared data or pass the format ({sorted(READERS)})")


def read_examples(path: Path, data_format: str = "") -> list[ParagraphExample]:
    """Read `path` with the named reader (or the one its name implies)."""
    problem = file_problem(path)
    if problem is not None:
        raise ReaderError(f"data file {path} {problem}")
    fmt = data_format or detect_format(path)
    if fmt not in READERS:
        raise ReaderError(f"unknown data format {fmt!r}; known: {sorted(READERS)}")
    return READERS[fmt](path)
