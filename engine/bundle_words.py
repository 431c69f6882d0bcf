"""`variorum bundle-words`: write a bundle's training words (`words.txt`) for real words only.

    variorum bundle-words --bundle resources/models/roc-stories-tiny [--files a.json b.tsv]

The words are rebuilt exactly as `variorum eval` rebuilds them (engine/evaluation/training_words.py):
the training side of the hash split of the files the bundle records (or `--files`), read with the
trainer's readers; a PermGen bundle's words in its normalised form. The trainers write the same file
when they write a bundle, so this command is for bundles made before that (engine/word_sources.py
says how the real-words control uses it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.bundle import PERMGEN_KIND, BundleError, read_bundle_config
from engine.cli_errors import reports_user_errors
from engine.evaluation.training_words import lm_training_words, permgen_training_words
from engine.word_sources import write_bundle_words


def training_words(directory: Path, files: list[Path] | None = None) -> frozenset[str] | None:
    """The words of a bundle's training text, from `files` or the files it records (None: none is here)."""
    config = read_bundle_config(directory)
    provenance = config.get("provenance", {})
    if config["kind"] == PERMGEN_KIND:
        permgen = config.get("permgen", {})
        task, lowercase = str(permgen.get("task", "story")), bool(permgen.get("lowercase", True))
        return permgen_training_words(provenance, task, lowercase, files)
    return lm_training_words(provenance, files)


def write_training_words(directory: Path, files: list[Path] | None = None) -> Path:
    """Write `directory/words.txt` from its training text; BundleError when no training file is here."""
    found = training_words(directory, files)
    if found is None:
        raise BundleError(f"bundle {directory}: none of its training files is here; pass them with --files")
    return write_bundle_words(directory, found)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="variorum bundle-words", description=__doc__.splitlines()[0])
    p.add_argument("--bundle", type=Path, required=True, help="bundle directory")
    p.add_argument("--files", type=Path, nargs="+", help="training files (default: those the bundle records)")
    return p


@reports_user_errors("bundle-words")
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    path = write_training_words(args.bundle, args.files)
    count = sum(1 for _ in path.open(encoding="utf-8"))
    print(f"wrote {count} training words to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
