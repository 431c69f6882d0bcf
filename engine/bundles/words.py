"""`variorum bundle-words`: write a bundle's training words (`words.txt`) for real words only.

    variorum bundle-words --bundle resources/models/roc-stories-tiny [--files a.json b.tsv]
    variorum bundle-words --bundle resources/models/permgen-story --case-from cased.json cased.tsv

`--case-from` also writes the bundle's case table (`case.json`, engine/data/truecase.py), learnt
from those cased files: a model trained on lowercased text (PermGen's normalised stories) then
shows names as cased text writes them ("Tom", not "tom"). A recipe's "case_from" does the same
when `variorum build-recipe` builds it.

The words are rebuilt exactly as `variorum eval` rebuilds them, by the bundle's family
(engine/families `training_words`): a bundle records its training files and held-out fraction, and
reading those files with the trainer's own readers and keeping the training side of its hash split
gives exactly the text it learnt from. A language model's words come from its raw documents
(`lm_training_words`); a PermGen model's from its normalised sources and target sentences
(engine/permgen/data.py), as its evaluation compares normalised words. The trainers write the same
file when they write a bundle, so this command is for bundles made before that
(engine/word_sources.py says how the real-words control uses it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from engine.bundles.bundle import BundleError, read_bundle_config
from engine.cli_errors import reports_user_errors
from engine.data.corpus import read_corpus, split_documents
from engine.data.truecase import CaseTable
from engine.families import model_family
from engine.files.small_reads import file_problem
from engine.metrics.invented import word_set
from engine.word_sources import read_bundle_words, write_bundle_words


def existing_files(files: list[Path], what: str) -> list[Path]:
    """`files`, each checked to be a readable file (ValueError naming the first that is not)."""
    problems = [f"{f} {problem}" for f in files if (problem := file_problem(f)) is not None]
    if problems:
        raise ValueError(f"{what} {problems[0]}")
    return files


def recorded_files(provenance: dict[str, Any], override: list[Path] | None = None) -> list[Path]:
    """The training files to read: `override` (each must exist), else those the bundle recorded; [] (with
    a note on stderr: the rate is then left out) when none is named or a recorded one is not here."""
    if override:
        return existing_files(override, "training file")
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
    documents = documents[: train["max_docs"]] if train.get("max_docs") else documents  # as engine/lm/train.py
    return word_set(split_documents(documents, float(train.get("valid_fraction", 0.05)))[0])


def training_words(directory: Path, files: list[Path] | None = None) -> frozenset[str] | None:
    """The words of a bundle's training text, from `files` or the files it records (None: none is here)."""
    config = read_bundle_config(directory)
    return model_family(config["kind"]).training_words(config, files)


def known_training_words(directory: Path, files: list[Path] | None = None) -> frozenset[str] | None:
    """A bundle's training words as evaluation takes them: rebuilt from `files` when given, else its
    `words.txt`, else rebuilt from the files it records (None when none is here)."""
    stored = None if files else read_bundle_words(directory)
    return stored if stored is not None else training_words(directory, files)


def write_training_words(directory: Path, files: list[Path] | None = None) -> Path:
    """Write `directory/words.txt` from its training text; BundleError when no training file is here."""
    found = training_words(directory, files)
    if found is None:
        raise BundleError(f"bundle {directory}: none of its training files is here; pass them with --files")
    return write_bundle_words(directory, found)


def write_case_table(directory: Path, files: list[Path]) -> tuple[Path, int]:
    """Write `directory/case.json` learnt from the cased `files`; returns its path and its number of words."""
    table = learn_case_table(files)
    return table.write(directory), len(table)


def learn_case_table(files: list[Path]) -> CaseTable:
    """The case table of the cased `files` (engine/data/truecase.py)."""
    return CaseTable.learn(read_corpus(existing_files(files, "cased file")))


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="variorum bundle-words", description=__doc__.splitlines()[0])
    p.add_argument("--bundle", type=Path, required=True, help="bundle directory")
    p.add_argument("--files", type=Path, nargs="+", help="training files (default: those the bundle records)")
    p.add_argument("--case-from", type=Path, nargs="+", metavar="FILE",
                   help="cased corpus files: also write the bundle's case table (case.json) from them")
    return p


@reports_user_errors("bundle-words")
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    path = write_training_words(args.bundle, args.files)
    count = sum(1 for _ in path.open(encoding="utf-8"))
    print(f"wrote {count} training words to {path}")
    if args.case_from:
        path, count = write_case_table(args.bundle, args.case_from)
        print(f"wrote the case of {count} words to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
