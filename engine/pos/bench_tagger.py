"""Benchmark a POS backend on a CoNLL-U file: accuracy vs gold XPOS and tagging speed.

    python -m engine.pos.bench_tagger --conllu /work/shared/data/ud_english_ewt/en_ewt-ud-test.conllu \\
        [--backend spacy|stanza] [--limit N] [--batch-size B] [--stanza-dir DIR]

Speed is gold tokens per second of `tag_texts` time (model loading excluded, no tag cache).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from engine.pos.accuracy import AccuracyReport, tagging_accuracy
from engine.pos.backends import BACKENDS, DEFAULT_BACKEND, load_tagger
from engine.pos.conllu import read_conllu
from engine.pos.tagger import TaggerUnavailableError


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(prog="python -m engine.pos.bench_tagger", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--conllu", type=Path, required=True, help="CoNLL-U file with gold XPOS tags")
    parser.add_argument("--backend", choices=BACKENDS, default=DEFAULT_BACKEND)
    parser.add_argument("--limit", type=int, default=None, help="only the first N sentences")
    parser.add_argument("--batch-size", type=int, default=None, help="texts per batch (backend default if unset)")
    parser.add_argument("--stanza-dir", type=Path, default=None, help="Stanza resources folder (offline models)")
    return parser.parse_args(argv)


def format_report(backend: str, model_version: str, load_seconds: float, report: AccuracyReport) -> str:
    """Human-readable summary of one benchmark run."""
    return "\n".join([
        f"backend:          {backend} ({model_version})",
        f"model load:       {load_seconds:.2f} s",
        f"sentences:        {report.sentences}",
        f"gold tokens:      {report.tokens}",
        f"accuracy (XPOS):  {report.accuracy:.4f} ({report.correct}/{report.tokens})",
        f"span agreement:   {report.span_match_rate:.4f}",
        f"tagging time:     {report.seconds:.2f} s",
        f"tokens/s:         {report.tokens_per_second:,.0f}",
    ])


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark; returns the process exit status."""
    args = parse_args(argv)
    sentences = list(itertools.islice(read_conllu(args.conllu), args.limit))
    started = time.perf_counter()
    try:
        tagger = load_tagger(args.backend, batch_size=args.batch_size, stanza_dir=args.stanza_dir)
    except TaggerUnavailableError as err:
        print(err, file=sys.stderr)
        return 2
    load_seconds = time.perf_counter() - started
    report = tagging_accuracy(tagger, sentences)
    print(format_report(tagger.name, tagger.model_version, load_seconds, report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
