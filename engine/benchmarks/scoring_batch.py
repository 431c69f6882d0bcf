"""How fast a PermGen bundle scores held-out paragraphs at several batch sizes, side by side in one run.

`variorum eval` scores a paragraph split's perplexity before it generates (engine/evaluation/story_checks.py);
this prints the seconds per batch size and each one's ratio to the first, over the same paragraphs, rounds
interleaved so a machine that slows down mid-run slows every size alike. Run it with nothing else on the cores.

    python -m engine.benchmarks.scoring_batch --bundle resources/models/smollm2-permgen-abstract \\
        --split abstracts --paragraphs 32 --batch-sizes 4 8 32
"""

from __future__ import annotations

import argparse
import time

import torch

from engine.evaluation.splits import load_split
from engine.permgen.bundle import load_permgen_bundle
from engine.permgen.heldout import encode_for_bundle, target_nll


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", required=True)
    parser.add_argument("--split", default="abstracts")
    parser.add_argument("--paragraphs", type=int, default=32)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[4, 8, 32])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    torch.manual_seed(0)
    bundle = load_permgen_bundle(args.bundle, torch.device("cpu"))
    data = encode_for_bundle(bundle, load_split(args.split, max_documents=args.paragraphs).examples)
    target_nll(bundle.model, data[: args.batch_sizes[0]], args.batch_sizes[0])  # warm-up
    seconds = dict.fromkeys(args.batch_sizes, 0.0)
    for _ in range(args.rounds):
        for size in args.batch_sizes:
            start = time.perf_counter()
            target_nll(bundle.model, data, size)
            seconds[size] += time.perf_counter() - start
    first = seconds[args.batch_sizes[0]]
    print(f"{len(data)} paragraphs of {args.split}, {args.rounds} rounds, torch threads {torch.get_num_threads()}")
    for size, total in seconds.items():
        ratio = total / first
        print(f"batch {size:3d}: {total / args.rounds:7.2f} s a round, {ratio:.2f}x batch {args.batch_sizes[0]}")


if __name__ == "__main__":
    main()
