"""Training data for PermGen: read, split, tokenize (engine/permgen/readers.py → EncodedExample).

Held-out data stays held out: either given files (`valid_files`, e.g. the Plan-and-Write test
split) or a deterministic hash split of the training files (`is_validation` on the target text,
so duplicates land on one side). Paragraphs with more than 10 sentences cannot be marked
(⟨B-1..10⟩) and are dropped and counted; sentences longer than max_sentence_len − 2 tokens and
sources longer than max_source_len are cut (both counted).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from engine.data.corpus import is_validation
from engine.permgen.model import EncodedExample
from engine.permgen.readers import ParagraphExample, read_examples
from engine.permgen.text import format_source
from engine.tokenizer import MAX_SENTENCES, VariorumTokenizer


@dataclass
class DataStats:
    """What reading and encoding dropped or cut (reported in the bundle card)."""

    read: int = 0
    dropped_too_many_sentences: int = 0
    cut_sentences: int = 0
    cut_sources: int = 0
    files: list[str] = field(default_factory=list)


def load_examples(paths: Sequence[Path], stats: DataStats, limit: int = 0) -> list[ParagraphExample]:
    """All examples of `paths` with 1..10 sentences (first `limit` when limit > 0)."""
    examples: list[ParagraphExample] = []
    for path in paths:
        stats.files.append(str(path))
        for example in read_examples(Path(path)):
            stats.read += 1
            if len(example.sentences) > MAX_SENTENCES:
                stats.dropped_too_many_sentences += 1
            else:
                examples.append(example)
    return examples[:limit] if limit else examples


def split_examples(
    examples: Sequence[ParagraphExample], valid_fraction: float
) -> tuple[list[ParagraphExample], list[ParagraphExample]]:
    """(train, valid) by a hash of the target paragraph."""
    train = [e for e in examples if not is_validation(" ".join(e.sentences), valid_fraction)]
    valid = [e for e in examples if is_validation(" ".join(e.sentences), valid_fraction)]
    return train, valid


def tokenizer_texts(examples: Sequence[ParagraphExample], lowercase: bool = True) -> list[str]:
    """The texts a PermGen tokenizer is trained on: every source and every sentence."""
    return [format_source(e.title, e.keywords, lowercase) for e in examples] + [
        s for e in examples for s in e.sentences]


def encode_examples(
    examples: Sequence[ParagraphExample], tokenizer: VariorumTokenizer, max_source_len: int,
    max_sentence_len: int, stats: DataStats | None = None, lowercase: bool = True,
) -> list[EncodedExample]:
    """Token ids of each source and sentence, cut to the model's limits."""
    stats = stats if stats is not None else DataStats()
    sources = tokenizer.encode_batch([format_source(e.title, e.keywords, lowercase) for e in examples])
    width = max_sentence_len - 2
    encoded = []
    for example, source in zip(examples, sources, strict=True):
        sentences = tokenizer.encode_batch(list(example.sentences))
        stats.cut_sentences += sum(len(s) > width for s in sentences)
        stats.cut_sources += len(source) > max_source_len
        encoded.append(EncodedExample(source[:max_source_len], [s[:width] for s in sentences]))
    return encoded
