"""Training data for PermGen: read, split, tokenize (engine/permgen/readers.py → EncodedExample).

Held-out data stays held out: either given files (`valid_files`, e.g. the Plan-and-Write test
split) or a deterministic hash split of the training files (`is_validation` on the target text,
so duplicates land on one side). Paragraphs with more than 10 sentences cannot be marked
(⟨B-1..10⟩) and are dropped and counted; sentences longer than max_sentence_len − 2 tokens and
sources longer than max_source_len are cut (both counted).

The encoder input depends on the task (`example_source`): "title : … keywords : …" for stories
and abstracts, the normalised input sentence itself for paraphrases (whose readers are in
engine/permgen/paraphrase_readers.py; a task reads only its own kind of file), or its content words
for a content-words paraphrase model, which also reads prose files as sentence → itself pairs
(`prose_sentence_pairs`, engine/permgen/content_words.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.bundles.words import recorded_files
from engine.data.corpus import CorpusError, is_validation, read_documents
from engine.data.paragraphs import ParagraphExample, ReaderError
from engine.data.text import normalize
from engine.metrics.invented import word_set
from engine.paraphrase.passage import split_passage
from engine.permgen.content_words import paraphrase_source
from engine.permgen.model import EncodedExample
from engine.permgen.paraphrase_readers import paraphrase_format, read_paraphrase_pairs
from engine.permgen.readers import read_examples
from engine.permgen.text import ProseForm, encode_sources, format_source
from engine.tokenizer import MAX_SENTENCES, VariorumTokenizer


@dataclass
class DataStats:
    """What reading and encoding dropped or cut (reported in the bundle card)."""

    read: int = 0
    dropped_too_many_sentences: int = 0
    cut_sentences: int = 0
    cut_sources: int = 0
    dropped_pairs: int = 0  # paraphrase pairs that do not rephrase (engine/permgen/rephrasings.py)
    files: list[str] = field(default_factory=list)


def example_source(example: ParagraphExample, task: str = "story", lowercase: bool = True,
                   source_form: str = "sentence") -> str:
    """The encoder input of an example: title + keywords, or what a paraphrase model reads of its sentence."""
    if task == "paraphrase":
        return paraphrase_source(example.title, source_form, lowercase)
    return format_source(example.title, example.keywords, lowercase)


def prose_sentence_pairs(path: Path) -> list[ParagraphExample]:
    """Each sentence of a prose file (any corpus file the language model reads) as a sentence → itself
    pair, with its case kept: training data for a content-words paraphrase model."""
    try:
        documents = read_documents(path)
    except CorpusError as error:
        raise ReaderError(str(error)) from None
    sentences = (normalize(document[a:b], lowercase=False) for document in documents
                 for a, b in split_passage(document))
    return [ParagraphExample(sentence, (), (sentence,)) for sentence in sentences if sentence]


def read_task_file(path: Path, task: str, source_form: str = "sentence") -> list[ParagraphExample]:
    """Read `path` with its reader, checking it holds data for `task` (and a paraphrase model's source form)."""
    is_pairs = bool(paraphrase_format(path))
    if task == "paraphrase" and not is_pairs and source_form == "content_words":
        return prose_sentence_pairs(path)
    if is_pairs != (task == "paraphrase"):
        wanted = ("paraphrase pairs (ParaSCI *.src.txt, MRPC msr_paraphrase_*.txt, TurkCorpus "
                  "*.8turkers.organized.tsv); prose files too when \"paraphrase_source\" is \"content_words\"") \
            if task == "paraphrase" else "paragraphs (stories or abstracts)"
        raise ReaderError(f"{path}: a {task} model trains on {wanted}, not this file")
    return read_paraphrase_pairs(path) if is_pairs else read_examples(path)


def load_examples(
    paths: Sequence[Path], stats: DataStats, limit: int = 0, task: str = "story", source_form: str = "sentence",
) -> list[ParagraphExample]:
    """All examples of `paths` with 1..10 sentences (first `limit` when limit > 0)."""
    examples: list[ParagraphExample] = []
    for path in paths:
        stats.files.append(str(path))
        for example in read_task_file(Path(path), task, source_form):
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


def permgen_training_words(provenance: dict[str, Any], task: str, lowercase: bool,
                           override: list[Path] | None = None,
                           source_form: str = "sentence") -> frozenset[str] | None:
    """Words of a PermGen model's normalised training sources and targets; None when no file is known
    (engine/bundles/words.py)."""
    files = recorded_files(provenance, override)
    if not files:
        return None
    fraction = float(provenance.get("train", {}).get("valid_fraction", 0.05))
    examples = split_examples(load_examples(files, DataStats(), task=task, source_form=source_form), fraction)[0]
    texts = [normalize(t, lowercase) for e in examples for t in (e.title, *e.keywords, *e.sentences)]
    return word_set(texts)


def target_sentences(example: ParagraphExample, lowercase: bool = True) -> list[str]:
    """The target sentences as the model sees them (readers of cased sets keep case; a lowercase model lowers it)."""
    return [s.lower() for s in example.sentences] if lowercase else list(example.sentences)


def tokenizer_texts(examples: Sequence[ParagraphExample], lowercase: bool = True, task: str = "story",
                    source_form: str = "sentence") -> list[str]:
    """The texts a PermGen tokenizer is trained on: every source and every sentence."""
    return [example_source(e, task, lowercase, source_form) for e in examples] + [
        s for e in examples for s in target_sentences(e, lowercase)]


def encode_examples(
    examples: Sequence[ParagraphExample], tokenizer: VariorumTokenizer, max_source_len: int,
    max_sentence_len: int, stats: DataStats | None = None, lowercase: bool = True, task: str = "story",
    source_form: str = "sentence", prose: ProseForm | None = None,
) -> list[EncodedExample]:
    """Token ids of each source and sentence, cut to the model's limits; `prose`: written as a prose model reads
    and writes them (engine/permgen/text.py)."""
    stats = stats if stats is not None else DataStats()
    texts = [example_source(e, task, lowercase, source_form) if prose is None else prose.source(e.title, e.keywords)
             for e in examples]
    sources, cut = encode_sources(tokenizer, texts, max_source_len, prose)
    stats.cut_sources += cut
    width = max_sentence_len - 2
    encoded = []
    for example, source in zip(examples, sources, strict=True):
        written = target_sentences(example, lowercase)
        sentences = tokenizer.encode_batch(written if prose is None else [prose.sentence(s) for s in written])
        stats.cut_sentences += sum(len(s) > width for s in sentences)
        encoded.append(EncodedExample(source, [s[:width] for s in sentences]))
    return encoded
