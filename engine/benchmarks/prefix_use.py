"""Does a PermGen model read its source? Held-out targets scored after their own source, another's, and none.

    python -m engine.benchmarks.prefix_use --bundle B [--count 50] [--data-root DIR]

For the first `--count` paragraphs of the bundle task's evaluation split (`variorum eval`'s), the natural-order
NLL of each target (words, marks and end, summed; engine/permgen/heldout.py's measure) is taken three ways: after
its own title and keywords, after the next paragraph's, and after an empty title and no keywords. A model that
writes from its source scores its own far better than the other two; one that ignores it scores all three alike.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from engine.benchmarks.held_out_paragraphs import TASK_SPLITS
from engine.data.paragraphs import ParagraphExample
from engine.evaluation.splits import DEFAULT_FRACTION, load_split
from engine.permgen.bundle import load_permgen_bundle
from engine.permgen.heldout import encode_for_bundle, target_nll, target_tokens
from engine.permgen.model import EncodedExample
from engine.permgen.network import PermGenNetwork


def summed_nll(model: PermGenNetwork[Any], examples: list[EncodedExample]) -> float:
    """The NLL of `examples`' targets summed over all their tokens (one example a batch: no padding)."""
    tokens = target_tokens(examples)
    return target_nll(model, examples, 1) * tokens


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, required=True)
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--data-root", type=Path, default=None)
    parser.add_argument("--split-fraction", type=float, default=DEFAULT_FRACTION)
    args = parser.parse_args(argv)
    bundle = load_permgen_bundle(args.bundle)
    config = bundle.model.config
    split = load_split(TASK_SPLITS[config.task], args.data_root, args.split_fraction)
    data = encode_for_bundle(bundle, split.examples[: args.count + 1])
    own, targets = data[:-1], [e.sentences for e in data[:-1]]
    other = [EncodedExample(data[i + 1].source, t) for i, t in enumerate(targets)]
    blank = encode_for_bundle(bundle, [ParagraphExample("", (), ())])[0].source  # "title : keywords :"
    empty = [EncodedExample(blank, t) for t in targets]
    print(f"{args.bundle} · {len(own)} held-out targets of {split.name}, NLL summed per target (nats):")
    sources = (("own source", own), ("next paragraph's source", other), ("empty title and keywords", empty))
    for name, examples in sources:
        print(f"  after its {name}: {summed_nll(bundle.model, examples) / len(examples):.1f}")


if __name__ == "__main__":
    main()
