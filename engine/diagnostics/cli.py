"""`variorum diagnose`: embedding and per-frequency-group diagnostics of one or more bundles.

    variorum diagnose --bundle runs/mle/bundle --bundle runs/agg/bundle --files data.txt \
        [--all] [--max-blocks 200] [--png singular_values.png]

For each bundle it prints one JSON object: I(W) overall and per frequency group, the mean
cosine similarity between groups, and teacher-forced PPL / Uniq per group on the held-out
split of `--files` (the documents the bundle's own training split held out, as `variorum
perplexity` does; `--all` uses every document). Groups come from the bundle tokenizer's
training counts. `--png` draws the normalized singular values of every bundle's W in one
figure (AGG paper Fig. 3c).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from engine.bundles.bundle import Bundle, load_bundle
from engine.cli_errors import check_output_file, reports_user_errors
from engine.diagnostics.embedding import (
    agg_group_ids,
    embedding_report,
    normalized_singular_values,
    output_embedding,
)
from engine.diagnostics.predictions import group_prediction_stats
from engine.perplexity import held_out_blocks


def diagnose(bundle: Bundle, blocks: Any) -> dict[str, Any]:
    """Embedding geometry and per-group PPL / Uniq of one bundle on blocks [n, T + 1]."""
    weight, which = output_embedding(bundle.model)
    groups = agg_group_ids(bundle.tokenizer.counts)
    report: dict[str, Any] = {"bundle": str(bundle.path), "matrix": which,
                              "group_sizes": {k: len(v) for k, v in groups.items()}}
    report.update(embedding_report(weight, groups))
    report.update(group_prediction_stats(bundle.model, blocks, groups))
    return report


def plot_singular_values(curves: dict[str, list[float]], png: Path) -> None:
    figure, axis = plt.subplots(figsize=(6, 4))
    for label, values in curves.items():
        axis.plot(range(1, len(values) + 1), values, label=label)
    axis.set_yscale("log")
    axis.set_xlabel("index")
    axis.set_ylabel("normalized singular value σ_k / σ_1")
    axis.legend()
    axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(png, dpi=100, format="png")  # matplotlib would add ".png" to a name without a suffix
    plt.close(figure)


@reports_user_errors("diagnose")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="variorum diagnose", description=__doc__.splitlines()[0])
    parser.add_argument("--bundle", type=Path, action="append", required=True, help="repeat to compare bundles")
    parser.add_argument("--files", type=Path, nargs="+", required=True)
    parser.add_argument("--valid-fraction", type=float, help="default: each bundle's training split")
    parser.add_argument("--all", action="store_true", help="every document, not the held-out split")
    parser.add_argument("--max-blocks", type=int, default=0, help="evaluate at most this many blocks (0 = all)")
    parser.add_argument("--png", type=Path, help="write the normalized singular values of W here")
    args = parser.parse_args(argv)
    if args.png:
        check_output_file("--png", args.png)
    curves: dict[str, list[float]] = {}
    for path in args.bundle:
        bundle = load_bundle(path)
        _, blocks = held_out_blocks(bundle, args.files, args.valid_fraction, args.all)
        if args.max_blocks > 0:
            blocks = blocks[: args.max_blocks]
        print(json.dumps(diagnose(bundle, blocks), indent=2))
        curves[str(path)] = normalized_singular_values(output_embedding(bundle.model)[0])
    if args.png:
        plot_singular_values(curves, args.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
