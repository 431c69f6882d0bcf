"""The word set of a bundle's training text, rebuilt from its provenance (or given files).

A bundle records its training files and held-out fraction; reading those files with the trainer's own
readers and keeping the training side of its hash split gives exactly the text it learnt from. A
language model's words come from its raw documents; a PermGen model's from its normalised sources
and target sentences (engine/permgen/data.py), as its evaluation compares normalised words.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from engine.data.corpus import read_corpus, split_documents
from engine.data.text import normalize
from engine.metrics.invented import word_set
from engine.permgen.data import DataStats, load_examples, split_examples
from engine.small_files import file_problem


def recorded_files(provenance: dict[str, Any], override: list[Path] | None = None) -> list[Path]:
    """The training files to read: `override` (each must exist), else those the bundle recorded; [] (with
    a note on stderr: the rate is then left out) when none is named or a recorded one is not here."""
    if override:
        problems = [f"{f} {problem}" for f in override if (problem := file_problem(f)) is not None]
        if problems:
            raise ValueError(f"training file {problems[0]}")
        return override
    files = [Path(p) for p in provenance.get("train", {}).get("train_files", [])]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        print(f"note: no invented-word rate: the recorded training files {', '.join(missing)} are not here "
              "(run from the directory the bundle was trained in, or pass --train-files)", file=sys.stderr)
        return []
    return files


def lm_training_words(provenance: dict[str, Any], override: list[Path] | None = None) -> frozenset[str] | None:
    """Words of a language model's training documents (the training side of its hash split); None when
    no training file is known."""
    files = recorded_files(provenance, override)
    if not files:
        return None
    train = provenance.get("train", {})
    documents = read_corpus(files)
    documents = documents[: train["max_docs"]] if train.get("max_docs") else documents  # as engine/train.py
    return word_set(split_documents(documents, float(train.get("valid_fraction", 0.05)))[0])


def permgen_training_words(provenance: dict[str, Any], task: str, lowercase: bool,
                           override: list[Path] | None = None) -> frozenset[str] | None:
    """Words of a PermGen model's normalised training sources and targets; None when no file is known."""
    files = recorded_files(provenance, override)
    if not files:
        return None
    fraction = float(provenance.get("train", {}).get("valid_fraction", 0.05))
    examples = split_examples(load_examples(files, DataStats(), task=task), fraction)[0]
    texts = [normalize(t, lowercase) for e in examples for t in (e.title, *e.keywords, *e.sentences)]
    return word_set(texts)
