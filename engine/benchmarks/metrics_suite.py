"""Time the full continuation metric suite on 2,000 generated × 2,000 reference texts of 100 tokens.

    python -m engine.benchmarks.metrics_suite [--texts 2000] [--length 100] [--rounds 3] [--naive 3]

Texts are synthetic token ids drawn from a Zipf(1.1) distribution over an 8,192-token
vocabulary (seeded), so n-gram statistics look like text rather than uniform noise. Prints the
median time of each metric and of `continuation_metrics` (KLD, MS-Jaccard-1..3,
Self-BLEU-1..4 over all pairs, Distinct-1..3, Rep, seq-rep-4, Uniq). With `--naive K` it also
times K calls of sacrebleu's `sentence_bleu` (one hypothesis against all 1,999 others) and
extrapolates to all texts — the per-sentence approach this suite replaces.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections.abc import Callable

import numpy as np
import sacrebleu

from engine.metrics.bleu import self_bleu_orders
from engine.metrics.diversity import distinct_n_per_text, uniq
from engine.metrics.repetition import rep
from engine.metrics.similarity import ms_jaccard, unigram_kld
from engine.metrics.suite import continuation_metrics


def synthetic_texts(count: int, length: int, vocab: int, seed: int) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    ids = np.minimum(rng.zipf(1.1, size=(count, length)), vocab) - 1
    return [row.tolist() for row in ids]


def median_seconds(run: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def naive_self_bleu_seconds(texts: list[list[int]], calls: int) -> float:
    """Seconds for `calls` sacrebleu sentence_bleu calls, extrapolated to every text."""
    strings = [" ".join(map(str, t)) for t in texts]
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(calls):
            refs = strings[:i] + strings[i + 1 :]
            sacrebleu.sentence_bleu(strings[i], refs, tokenize="none", smooth_method="floor")
    return (time.perf_counter() - start) / calls * len(texts)


def main(argv: list[str] | None = None) -> int:
    prog = "python -m engine.benchmarks.metrics_suite"
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--length", type=int, default=100)
    parser.add_argument("--vocab", type=int, default=8192)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--naive", type=int, default=0, help="time K sacrebleu calls and extrapolate (0 = skip)")
    args = parser.parse_args(argv)
    generated = synthetic_texts(args.texts, args.length, args.vocab, seed=0)
    references = synthetic_texts(args.texts, args.length, args.vocab, seed=1)
    parts: dict[str, Callable[[], object]] = {
        "Self-BLEU-1..4 (all pairs)": lambda: self_bleu_orders(generated, 4),
        "MS-Jaccard-1..3": lambda: ms_jaccard(references, generated, 3),
        "KLD": lambda: unigram_kld(references, generated),
        "Distinct-1..3": lambda: [distinct_n_per_text(generated, n) for n in (1, 2, 3)],
        "Rep": lambda: rep(generated),
        "Uniq": lambda: uniq(generated),
        "full suite (generated + human row)": lambda: (
            continuation_metrics(generated, references), continuation_metrics(references)),
    }
    print(f"{args.texts} generated + {args.texts} reference texts × {args.length} tokens, "
          f"median of {args.rounds} rounds")
    for name, run in parts.items():
        print(f"  {name:38s} {median_seconds(run, args.rounds):8.2f} s")
    if args.naive:
        estimate = naive_self_bleu_seconds(generated, args.naive)
        print(f"  sacrebleu sentence_bleu per text, extrapolated from {args.naive} calls: {estimate:8.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
